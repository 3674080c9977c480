//===- reduce.cpp - Reductions, their gradients, arg/cum/top-k kernels ----===//
//
// One engine serves otck_reduce_f32, otck_reduce_grad_f32 and
// otck_strided_add_f32: an iteration space of dimensions with an x stride
// and a y stride, where y stride 0 marks a reduced dimension. It is
// simplified like the binary kernels' (size-1 dimensions dropped, mergeable
// neighbours merged) and then walked in one of three ways, chosen from the
// shape alone so that results never depend on the thread count:
//
//  - rows: the innermost dimension is reduced; every output element reduces
//    its own runs of x, outputs split across threads;
//  - columns: the innermost dimension is kept; blocks of adjacent outputs
//    are reduced together so the inner loops are contiguous;
//  - chunks: few outputs, many inputs each; every output's inputs are cut
//    into a fixed number of chunks reduced in parallel and merged in order.
//
// Sums accumulate in double. Within an output element the order of the
// inputs is fixed by the path, so the results are reproducible.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "parallel.h"
#include "topk.h"
#include "vmath.h"

#include <cmath>
#include <cstdint>
#include <limits>

using namespace otc::kernels;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// Outputs below which, with at least kChunkMin inputs each, the chunked path
/// is used.
constexpr int64_t kFewKept = 32;
constexpr int64_t kChunkMin = int64_t(1) << 14;
/// Fixed number of chunks of the chunked path.
constexpr int kChunks = 64;
/// Most adjacent outputs the column path reduces together.
constexpr int64_t kColsMax = 256;

//===----------------------------------------------------------------------===//
// Plan and walkers
//===----------------------------------------------------------------------===//

struct RPlan {
  int rank = 0;
  int64_t shape[OTCK_MAX_RANK];
  int64_t xs[OTCK_MAX_RANK];
  int64_t ys[OTCK_MAX_RANK]; // 0 on reduced dimensions.
  int64_t kept = 1, red = 1; // Output elements, inputs per output.
};

/// Plans a reduction whose sizes are all >= 1.
RPlan planR(int rank, const int64_t *shape, const int64_t *xs,
            const int64_t *ys) {
  RPlan p;
  for (int d = 0; d < rank; ++d) {
    if (shape[d] == 1)
      continue;
    if (ys[d] == 0)
      p.red *= shape[d];
    else
      p.kept *= shape[d];
    if (p.rank > 0 && p.xs[p.rank - 1] == xs[d] * shape[d] &&
        p.ys[p.rank - 1] == ys[d] * shape[d]) {
      p.shape[p.rank - 1] *= shape[d];
      p.xs[p.rank - 1] = xs[d];
      p.ys[p.rank - 1] = ys[d];
      continue;
    }
    p.shape[p.rank] = shape[d];
    p.xs[p.rank] = xs[d];
    p.ys[p.rank] = ys[d];
    ++p.rank;
  }
  return p;
}

/// Multi-index over a list of a plan's dimensions, tracking x and y offsets.
struct Walker {
  int count = 0;
  int dims[OTCK_MAX_RANK];
  int64_t idx[OTCK_MAX_RANK];
  int64_t xo = 0, yo = 0;

  void seek(const RPlan &p, int64_t linear) {
    xo = yo = 0;
    for (int i = count - 1; i >= 0; --i) {
      const int d = dims[i];
      idx[i] = linear % p.shape[d];
      linear /= p.shape[d];
      xo += idx[i] * p.xs[d];
      yo += idx[i] * p.ys[d];
    }
  }
  void next(const RPlan &p) {
    for (int i = count - 1; i >= 0; --i) {
      const int d = dims[i];
      xo += p.xs[d];
      yo += p.ys[d];
      if (++idx[i] < p.shape[d])
        return;
      xo -= p.xs[d] * p.shape[d];
      yo -= p.ys[d] * p.shape[d];
      idx[i] = 0;
    }
  }
};

/// The walkers of a plan (rank >= 1, kept >= 1, red >= 1).
struct Layout {
  bool rows;      // Innermost dimension reduced.
  Walker kept;    // All kept dims.
  Walker keptOut; // Kept dims but the innermost (column path).
  Walker redOut;  // Reduced dims but the innermost reduced one.
  Walker redAll;  // All reduced dims (column path).
  int64_t runLen = 1, runStride = 0;    // Innermost reduced dim.
  int64_t cols = 1, colX = 0, colY = 0; // Innermost dim (column path).
};

Layout makeLayout(const RPlan &p) {
  Layout l;
  const int last = p.rank - 1;
  l.rows = p.ys[last] == 0;
  int innerRed = -1;
  for (int d = 0; d < p.rank; ++d)
    if (p.ys[d] == 0)
      innerRed = d;
  for (int d = 0; d < p.rank; ++d) {
    if (p.ys[d] != 0) {
      l.kept.dims[l.kept.count++] = d;
      if (d != last)
        l.keptOut.dims[l.keptOut.count++] = d;
    } else {
      l.redAll.dims[l.redAll.count++] = d;
      if (d != innerRed)
        l.redOut.dims[l.redOut.count++] = d;
    }
  }
  if (innerRed >= 0) {
    l.runLen = p.shape[innerRed];
    l.runStride = p.xs[innerRed];
  }
  l.cols = p.shape[last];
  l.colX = p.xs[last];
  l.colY = p.ys[last];
  return l;
}

/// Calls fn(xOffset, n) for the runs of reduced inputs [r0, r1) of one
/// output (offsets relative to the output's first input; runs have stride
/// l.runStride), in order.
template <typename Fn>
void visitRuns(const RPlan &p, const Layout &l, int64_t r0, int64_t r1, Fn fn) {
  if (r0 >= r1)
    return;
  Walker w = l.redOut;
  w.seek(p, r0 / l.runLen);
  int64_t t = r0 % l.runLen;
  for (int64_t r = r0; r < r1;) {
    const int64_t n = std::min(l.runLen - t, r1 - r);
    fn(w.xo + t * l.runStride, n);
    r += n;
    t = 0;
    w.next(p);
  }
}

/// Column block width for `cols` outputs in a row of the column path; any
/// width gives the same results (each output is reduced sequentially).
int64_t colBlockFor(int64_t cols, int64_t rowsOfCols) {
  const int threads = std::max(1, omp_get_max_threads());
  int64_t want = (cols * rowsOfCols + threads - 1) / threads;
  want = (want + 15) / 16 * 16;
  return std::max<int64_t>(16, std::min(kColsMax, std::min(want, cols)));
}

//===----------------------------------------------------------------------===//
// Accumulators
//===----------------------------------------------------------------------===//

/// Sum of g(x, c) in double. Kind: 0 x, 1 x^2, 2 |x|, 3 exp(x - c).
template <int Kind> struct SumAcc {
  using Acc = double;
  static double init() { return 0.0; }
  static double map(float v, float c) {
    if (Kind == 1)
      return double(v) * double(v);
    if (Kind == 2)
      return double(std::fabs(v));
    if (Kind == 3)
      return double(vexp(v - c));
    (void)c;
    return double(v);
  }
  static double step(double a, float v, float c) { return a + map(v, c); }
  static double merge(double a, double b) { return a + b; }
  static double run(const float *x, int64_t n, int64_t s, float c, double a) {
    if (s == 1) {
      double acc[kSumLanes] = {};
      forEachLane(0, n, [&](int64_t i, int64_t l) { acc[l] += map(x[i], c); });
      return a + laneTotal(acc);
    }
    for (int64_t i = 0; i < n; ++i)
      a += map(x[i * s], c);
    return a;
  }
};

struct ProdAcc {
  using Acc = double;
  static double init() { return 1.0; }
  static double step(double a, float v, float) { return a * double(v); }
  static double merge(double a, double b) { return a * b; }
  static double run(const float *x, int64_t n, int64_t s, float, double a) {
    if (s == 1) {
      double acc[kSumLanes];
      std::fill_n(acc, kSumLanes, 1.0);
      forEachLane(0, n, [&](int64_t i, int64_t l) { acc[l] *= double(x[i]); });
      double p = acc[0];
      for (int64_t l = 1; l < kSumLanes; ++l)
        p *= acc[l];
      return a * p;
    }
    for (int64_t i = 0; i < n; ++i)
      a *= double(x[i * s]);
    return a;
  }
};

/// Max (IsMax) or min that propagates NaN.
template <bool IsMax> struct ExtremeAcc {
  using Acc = float;
  static float init() { return IsMax ? -kInf : kInf; }
  static float step(float a, float v, float) {
    return ((IsMax ? v > a : v < a) || v != v) ? v : a;
  }
  static float merge(float a, float b) { return step(a, b, 0.0f); }
  static float run(const float *x, int64_t n, int64_t s, float, float a) {
    if (s != 1) {
      for (int64_t i = 0; i < n; ++i)
        a = step(a, x[i * s], 0.0f);
      return a;
    }
    // Independent lanes so the loop vectorises.
    constexpr int kLanes = 8;
    float lanes[kLanes];
    for (int k = 0; k < kLanes; ++k)
      lanes[k] = a;
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int k = 0; k < kLanes; ++k)
        lanes[k] = step(lanes[k], x[i + k], 0.0f);
    for (; i < n; ++i)
      lanes[0] = step(lanes[0], x[i], 0.0f);
    for (int k = 1; k < kLanes; ++k)
      lanes[0] = step(lanes[0], lanes[k], 0.0f);
    return lanes[0];
  }
};

/// Number of inputs equal to c (NaN counts as equal to a NaN c).
struct CountEqualAcc {
  using Acc = double;
  static double init() { return 0.0; }
  static bool equal(float v, float c) { return v == c || (v != v && c != c); }
  static double step(double a, float v, float c) {
    return a + (equal(v, c) ? 1.0 : 0.0);
  }
  static double merge(double a, double b) { return a + b; }
  static double run(const float *x, int64_t n, int64_t s, float c, double a) {
    for (int64_t i = 0; i < n; ++i)
      a = step(a, x[i * s], c);
    return a;
  }
};

/// Zero count and product of the non-zero inputs.
struct ZeroProd {
  double zeros = 0.0, prod = 1.0;
};
struct ZeroProdAcc {
  using Acc = ZeroProd;
  static ZeroProd init() { return ZeroProd(); }
  static ZeroProd step(ZeroProd a, float v, float) {
    if (v == 0.0f)
      a.zeros += 1.0;
    else
      a.prod *= double(v);
    return a;
  }
  static ZeroProd merge(ZeroProd a, ZeroProd b) {
    a.zeros += b.zeros;
    a.prod *= b.prod;
    return a;
  }
  static ZeroProd run(const float *x, int64_t n, int64_t s, float, ZeroProd a) {
    for (int64_t i = 0; i < n; ++i)
      a = step(a, x[i * s], 0.0f);
    return a;
  }
};

//===----------------------------------------------------------------------===//
// Forward engine
//===----------------------------------------------------------------------===//

/// Reduces x over the plan with accumulator Op; store(yPtr, acc, c) writes
/// an output. `center`, when not null, gives each output's c (read at its y
/// offset before the output is stored); otherwise c = 0.
template <typename Op, typename Store>
void reduceForward(const RPlan &p, const float *x, float *y,
                   const float *center, Store store) {
  using Acc = typename Op::Acc;
  const Layout l = makeLayout(p);
  const int64_t K = p.kept, R = p.red;

  if (K < kFewKept && R >= kChunkMin) {
    Walker k = l.kept;
    k.seek(p, 0);
    for (int64_t e = 0; e < K; ++e) {
      const float *xe = x + k.xo;
      const float c = center ? center[k.yo] : 0.0f;
      Acc parts[kChunks];
#pragma omp parallel for schedule(                                             \
    static) if (shouldParallelize(R, kParallelGrain))
      for (int ch = 0; ch < kChunks; ++ch) {
        Acc a = Op::init();
        visitRuns(p, l, R * ch / kChunks, R * (ch + 1) / kChunks,
                  [&](int64_t off, int64_t n) {
                    a = Op::run(xe + off, n, l.runStride, c, a);
                  });
        parts[ch] = a;
      }
      Acc a = parts[0];
      for (int ch = 1; ch < kChunks; ++ch)
        a = Op::merge(a, parts[ch]);
      store(y + k.yo, a, c);
      k.next(p);
    }
    return;
  }

  if (l.rows) {
    parallelFor(
        K, R, kParallelGrain,
        [&](int64_t begin, int64_t end) {
          Walker k = l.kept;
          k.seek(p, begin);
          for (int64_t e = begin; e < end; ++e) {
            const float *xe = x + k.xo;
            const float c = center ? center[k.yo] : 0.0f;
            Acc a = Op::init();
            visitRuns(p, l, 0, R, [&](int64_t off, int64_t n) {
              a = Op::run(xe + off, n, l.runStride, c, a);
            });
            store(y + k.yo, a, c);
            k.next(p);
          }
        },
        1);
    return;
  }

  const int64_t rowsOfCols = K / l.cols;
  const int64_t block = colBlockFor(l.cols, rowsOfCols);
  const int64_t blocks = (l.cols + block - 1) / block;
  parallelFor(
      rowsOfCols * blocks, block * R, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        Acc acc[kColsMax];
        float cs[kColsMax];
        Walker ko = l.keptOut;
        for (int64_t item = begin; item < end; ++item) {
          ko.seek(p, item / blocks);
          const int64_t j0 = (item % blocks) * block;
          const int64_t w = std::min(block, l.cols - j0);
          const float *xb = x + ko.xo + j0 * l.colX;
          float *yb = y + ko.yo + j0 * l.colY;
          for (int64_t j = 0; j < w; ++j) {
            acc[j] = Op::init();
            cs[j] = center ? center[ko.yo + (j0 + j) * l.colY] : 0.0f;
          }
          Walker r = l.redAll;
          r.seek(p, 0);
          for (int64_t i = 0; i < R; ++i) {
            const float *xr = xb + r.xo;
            if (l.colX == 1) {
#pragma omp simd
              for (int64_t j = 0; j < w; ++j)
                acc[j] = Op::step(acc[j], xr[j], cs[j]);
            } else {
              for (int64_t j = 0; j < w; ++j)
                acc[j] = Op::step(acc[j], xr[j * l.colX], cs[j]);
            }
            r.next(p);
          }
          for (int64_t j = 0; j < w; ++j)
            store(yb + j * l.colY, acc[j], cs[j]);
        }
      },
      1);
}

//===----------------------------------------------------------------------===//
// Backward engine
//===----------------------------------------------------------------------===//

/// dx = write(x, y_k, dy_k, aux_k) for every input, where aux_k is the
/// reduction of output k's inputs with accumulator Aux (c = y_k) when
/// NeedAux, else Aux::init().
template <typename Aux, bool NeedAux, typename Write>
void reduceBackward(const RPlan &p, const float *x, const float *y,
                    const float *dy, float *dx, Write write) {
  using Acc = typename Aux::Acc;
  const Layout l = makeLayout(p);
  const int64_t K = p.kept, R = p.red;
  const int64_t rs = l.runStride;
  auto writeRun = [&](int64_t off, int64_t n, float yk, float gk, Acc aux) {
    const float *xr = x + off;
    float *dr = dx + off;
    if (rs == 1) {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i)
        dr[i] = write(xr[i], yk, gk, aux);
    } else {
      for (int64_t i = 0; i < n; ++i)
        dr[i * rs] = write(xr[i * rs], yk, gk, aux);
    }
  };

  if (K < kFewKept && R >= kChunkMin) {
    Walker k = l.kept;
    k.seek(p, 0);
    for (int64_t e = 0; e < K; ++e) {
      const int64_t xoff = k.xo;
      const float yk = y[k.yo], gk = dy[k.yo];
      Acc aux = Aux::init();
      if (NeedAux) {
        Acc parts[kChunks];
#pragma omp parallel for schedule(                                             \
    static) if (shouldParallelize(R, kParallelGrain))
        for (int ch = 0; ch < kChunks; ++ch) {
          Acc a = Aux::init();
          visitRuns(p, l, R * ch / kChunks, R * (ch + 1) / kChunks,
                    [&](int64_t off, int64_t n) {
                      a = Aux::run(x + xoff + off, n, rs, yk, a);
                    });
          parts[ch] = a;
        }
        aux = parts[0];
        for (int ch = 1; ch < kChunks; ++ch)
          aux = Aux::merge(aux, parts[ch]);
      }
      parallelFor(
          R, 1, kParallelGrain,
          [&](int64_t begin, int64_t end) {
            visitRuns(p, l, begin, end, [&](int64_t off, int64_t n) {
              writeRun(xoff + off, n, yk, gk, aux);
            });
          },
          1);
      k.next(p);
    }
    return;
  }

  if (l.rows) {
    parallelFor(
        K, R, kParallelGrain,
        [&](int64_t begin, int64_t end) {
          Walker k = l.kept;
          k.seek(p, begin);
          for (int64_t e = begin; e < end; ++e) {
            const float yk = y[k.yo], gk = dy[k.yo];
            Acc aux = Aux::init();
            if (NeedAux)
              visitRuns(p, l, 0, R, [&](int64_t off, int64_t n) {
                aux = Aux::run(x + k.xo + off, n, rs, yk, aux);
              });
            visitRuns(p, l, 0, R, [&](int64_t off, int64_t n) {
              writeRun(k.xo + off, n, yk, gk, aux);
            });
            k.next(p);
          }
        },
        1);
    return;
  }

  const int64_t rowsOfCols = K / l.cols;
  const int64_t block = colBlockFor(l.cols, rowsOfCols);
  const int64_t blocks = (l.cols + block - 1) / block;
  parallelFor(
      rowsOfCols * blocks, block * R, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        Acc aux[kColsMax];
        float ys[kColsMax], gs[kColsMax];
        Walker ko = l.keptOut;
        for (int64_t item = begin; item < end; ++item) {
          ko.seek(p, item / blocks);
          const int64_t j0 = (item % blocks) * block;
          const int64_t w = std::min(block, l.cols - j0);
          const int64_t xb = ko.xo + j0 * l.colX;
          for (int64_t j = 0; j < w; ++j) {
            const int64_t yo = ko.yo + (j0 + j) * l.colY;
            ys[j] = y[yo];
            gs[j] = dy[yo];
            aux[j] = Aux::init();
          }
          Walker r = l.redAll;
          if (NeedAux) {
            r.seek(p, 0);
            for (int64_t i = 0; i < R; ++i) {
              const float *xr = x + xb + r.xo;
              for (int64_t j = 0; j < w; ++j)
                aux[j] = Aux::step(aux[j], xr[j * l.colX], ys[j]);
              r.next(p);
            }
          }
          r.seek(p, 0);
          for (int64_t i = 0; i < R; ++i) {
            const float *xr = x + xb + r.xo;
            float *dr = dx + xb + r.xo;
            if (l.colX == 1) {
#pragma omp simd
              for (int64_t j = 0; j < w; ++j)
                dr[j] = write(xr[j], ys[j], gs[j], aux[j]);
            } else {
              for (int64_t j = 0; j < w; ++j)
                dr[j * l.colX] = write(xr[j * l.colX], ys[j], gs[j], aux[j]);
            }
            r.next(p);
          }
        }
      },
      1);
}

//===----------------------------------------------------------------------===//
// Entry helpers
//===----------------------------------------------------------------------===//

/// Strides of a contiguous x and of the contiguous y over x's kept dims.
/// Returns false when a dimension is negative.
bool reduceStrides(int rank, const int64_t *shape, const uint8_t *reduced,
                   int64_t *xs, int64_t *ys, int64_t &kept, int64_t &red) {
  int64_t sx = 1, sy = 1;
  kept = red = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (shape[d] < 0)
      return false;
    xs[d] = sx;
    sx *= shape[d];
    if (reduced[d]) {
      ys[d] = 0;
      red *= shape[d];
    } else {
      ys[d] = sy;
      sy *= shape[d];
      kept *= shape[d];
    }
  }
  return true;
}

float emptyValue(otck_reduce_op op) {
  switch (op) {
  case OTCK_REDUCE_MEAN:
    return kNaN;
  case OTCK_REDUCE_MAX:
  case OTCK_REDUCE_LOG_SUM_EXP:
    return -kInf;
  case OTCK_REDUCE_MIN:
    return kInf;
  case OTCK_REDUCE_PROD:
    return 1.0f;
  default:
    return 0.0f;
  }
}

/// Restores the heap below `pos` of a heap whose root is the lowest-ranked
/// element (slots of stride `s`).
void topkSiftDown(int64_t *h, int64_t s, int64_t size, int64_t pos,
                  const TopKOrder &before) {
  for (;;) {
    int64_t c = 2 * pos + 1;
    if (c >= size)
      return;
    if (c + 1 < size && before(h[c * s], h[(c + 1) * s]))
      ++c; // The lower-ranked child.
    if (!before(h[pos * s], h[c * s]))
      return;
    std::swap(h[pos * s], h[c * s]);
    pos = c;
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

extern "C" void otck_strided_add_f32(int rank, const int64_t *shape,
                                     const float *src,
                                     const int64_t *src_strides, float *dst,
                                     const int64_t *dst_strides) {
  if (rank < 0 || rank > OTCK_MAX_RANK)
    return;
  for (int d = 0; d < rank; ++d)
    if (shape[d] <= 0)
      return;
  RPlan p = planR(rank, shape, src_strides, dst_strides);
  if (p.rank == 0) {
    dst[0] += src[0];
    return;
  }
  reduceForward<SumAcc<0>>(p, src, dst, nullptr, [](float *o, double a, float) {
    *o = float(double(*o) + a);
  });
}

extern "C" void otck_reduce_f32(otck_reduce_op op, int rank,
                                const int64_t *in_shape, const uint8_t *reduced,
                                const float *x, float *y) {
  if (rank < 0 || rank > OTCK_MAX_RANK)
    return;
  int64_t xs[OTCK_MAX_RANK], ys[OTCK_MAX_RANK], kept, red;
  if (!reduceStrides(rank, in_shape, reduced, xs, ys, kept, red) || kept == 0)
    return;
  if (red == 0) {
    otck_fill_f32(kept, emptyValue(op), y);
    return;
  }
  RPlan p = planR(rank, in_shape, xs, ys);
  if (p.rank == 0) {
    // One element: reduce it on its own (x^2, |x|, sqrt(x^2), ...).
    p.rank = 1;
    p.shape[0] = 1;
    p.xs[0] = 1;
    p.ys[0] = 0;
  }
  const double count = double(red);
  switch (op) {
  case OTCK_REDUCE_SUM:
  case OTCK_REDUCE_SUM_SQUARE:
  case OTCK_REDUCE_L1: {
    auto store = [](float *o, double a, float) { *o = float(a); };
    if (op == OTCK_REDUCE_SUM)
      reduceForward<SumAcc<0>>(p, x, y, nullptr, store);
    else if (op == OTCK_REDUCE_SUM_SQUARE)
      reduceForward<SumAcc<1>>(p, x, y, nullptr, store);
    else
      reduceForward<SumAcc<2>>(p, x, y, nullptr, store);
    return;
  }
  case OTCK_REDUCE_MEAN:
    reduceForward<SumAcc<0>>(p, x, y, nullptr, [&](float *o, double a, float) {
      *o = float(a / count);
    });
    return;
  case OTCK_REDUCE_L2:
    reduceForward<SumAcc<1>>(p, x, y, nullptr, [](float *o, double a, float) {
      *o = float(std::sqrt(a));
    });
    return;
  case OTCK_REDUCE_PROD:
    reduceForward<ProdAcc>(p, x, y, nullptr,
                           [](float *o, double a, float) { *o = float(a); });
    return;
  case OTCK_REDUCE_MAX:
    reduceForward<ExtremeAcc<true>>(p, x, y, nullptr,
                                    [](float *o, float a, float) { *o = a; });
    return;
  case OTCK_REDUCE_MIN:
    reduceForward<ExtremeAcc<false>>(p, x, y, nullptr,
                                     [](float *o, float a, float) { *o = a; });
    return;
  case OTCK_REDUCE_LOG_SUM_EXP:
    // Max first (into y), then log(sum(exp(x - max))) + max; an infinite or
    // NaN max is the result itself.
    reduceForward<ExtremeAcc<true>>(p, x, y, nullptr,
                                    [](float *o, float a, float) { *o = a; });
    reduceForward<SumAcc<3>>(p, x, y, y, [](float *o, double a, float c) {
      if (std::isfinite(c))
        *o = float(double(c) + std::log(a));
    });
    return;
  }
}

extern "C" void otck_reduce_grad_f32(otck_reduce_op op, int rank,
                                     const int64_t *in_shape,
                                     const uint8_t *reduced, const float *x,
                                     const float *y, const float *dy,
                                     float *dx) {
  if (rank < 0 || rank > OTCK_MAX_RANK)
    return;
  int64_t xs[OTCK_MAX_RANK], ys[OTCK_MAX_RANK], kept, red;
  if (!reduceStrides(rank, in_shape, reduced, xs, ys, kept, red) || kept == 0 ||
      red == 0)
    return;
  RPlan p = planR(rank, in_shape, xs, ys);
  if (p.rank == 0) {
    p.rank = 1;
    p.shape[0] = 1;
    p.xs[0] = 1;
    p.ys[0] = 0;
  }
  using None = SumAcc<0>;
  const float invCount = float(1.0 / double(red));
  switch (op) {
  case OTCK_REDUCE_SUM:
    reduceBackward<None, false>(
        p, x, y, dy, dx, [](float, float, float g, double) { return g; });
    return;
  case OTCK_REDUCE_MEAN:
    reduceBackward<None, false>(
        p, x, y, dy, dx,
        [invCount](float, float, float g, double) { return g * invCount; });
    return;
  case OTCK_REDUCE_SUM_SQUARE:
    reduceBackward<None, false>(
        p, x, y, dy, dx,
        [](float v, float, float g, double) { return 2.0f * v * g; });
    return;
  case OTCK_REDUCE_L1:
    reduceBackward<None, false>(
        p, x, y, dy, dx, [](float v, float, float g, double) {
          return v > 0.0f ? g : (v < 0.0f ? -g : (v == 0.0f ? 0.0f : v));
        });
    return;
  case OTCK_REDUCE_L2:
    reduceBackward<None, false>(p, x, y, dy, dx,
                                [](float v, float yk, float g, double) {
                                  return yk == 0.0f ? 0.0f : g * (v / yk);
                                });
    return;
  case OTCK_REDUCE_LOG_SUM_EXP:
    reduceBackward<None, false>(p, x, y, dy, dx,
                                [](float v, float yk, float g, double) {
                                  return yk == -kInf ? 0.0f : g * vexp(v - yk);
                                });
    return;
  case OTCK_REDUCE_MAX:
  case OTCK_REDUCE_MIN:
    reduceBackward<CountEqualAcc, true>(
        p, x, y, dy, dx, [](float v, float yk, float g, double ties) {
          return CountEqualAcc::equal(v, yk) ? float(double(g) / ties) : 0.0f;
        });
    return;
  case OTCK_REDUCE_PROD:
    // Without zeros: dy * y / x (y = 0 from underflow: the product of the
    // others in double). One zero: only it gets dy * (product of the rest).
    reduceBackward<ZeroProdAcc, true>(
        p, x, y, dy, dx, [](float v, float yk, float g, ZeroProd zp) {
          if (yk != 0.0f)
            return float(double(g) * double(yk) / double(v));
          if (zp.zeros == 0.0)
            return float(double(g) * zp.prod / double(v));
          if (zp.zeros == 1.0 && v == 0.0f)
            return float(double(g) * zp.prod);
          return 0.0f;
        });
    return;
  }
}

namespace {
/// ArgMax/ArgMin over float32 or int64: blocks of `inner` scanned along n.
template <typename T>
void argReduce(int is_max, int64_t outer, int64_t n, int64_t inner,
               int select_last_index, const T *x, int64_t *y) {
  if (outer <= 0 || inner <= 0)
    return;
  if (n <= 0) {
    for (int64_t i = 0; i < outer * inner; ++i)
      y[i] = 0;
    return;
  }
  const bool last = select_last_index != 0, mx = is_max != 0;
  // Does v replace the current best b? (NaN only exists for float.)
  auto takes = [last, mx](T v, T b) {
    if (b != b)
      return last && v != v;
    if (v != v)
      return true;
    if (last)
      return mx ? v >= b : v <= b;
    return mx ? v > b : v < b;
  };
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  parallelFor(
      outer * blocks, n * std::min(inner, kBlock), kParallelGrain,
      [&](int64_t begin, int64_t end) {
        T best[kBlock];
        int64_t at[kBlock];
        for (int64_t item = begin; item < end; ++item) {
          const int64_t o = item / blocks, j0 = (item % blocks) * kBlock;
          const int64_t w = std::min(kBlock, inner - j0);
          const T *xo = x + o * n * inner + j0;
          for (int64_t j = 0; j < w; ++j) {
            best[j] = xo[j];
            at[j] = 0;
          }
          for (int64_t k = 1; k < n; ++k) {
            const T *xr = xo + k * inner;
            for (int64_t j = 0; j < w; ++j) {
              if (takes(xr[j], best[j])) {
                best[j] = xr[j];
                at[j] = k;
              }
            }
          }
          for (int64_t j = 0; j < w; ++j)
            y[o * inner + j0 + j] = at[j];
        }
      },
      1);
}
} // namespace

extern "C" void otck_arg_reduce_f32(int is_max, int64_t outer, int64_t n,
                                    int64_t inner, int select_last_index,
                                    const float *x, int64_t *y) {
  argReduce(is_max, outer, n, inner, select_last_index, x, y);
}

extern "C" void otck_arg_reduce_i64(int is_max, int64_t outer, int64_t n,
                                    int64_t inner, int select_last_index,
                                    const int64_t *x, int64_t *y) {
  argReduce(is_max, outer, n, inner, select_last_index, x, y);
}

extern "C" void otck_cumsum_i64(int64_t outer, int64_t n, int64_t inner,
                                int exclusive, int reverse, const int64_t *x,
                                int64_t *y) {
  if (outer <= 0 || n <= 0 || inner <= 0)
    return;
  parallelFor(
      outer * inner, n, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        for (int64_t line = begin; line < end; ++line) {
          const int64_t o = line / inner, j = line % inner;
          uint64_t acc = 0; // unsigned: wraps instead of overflowing
          for (int64_t s = 0; s < n; ++s) {
            const int64_t at = (o * n + (reverse ? n - 1 - s : s)) * inner + j;
            const uint64_t v = uint64_t(x[at]); // Read before y (may be x).
            if (!exclusive)
              acc += v;
            y[at] = int64_t(acc);
            if (exclusive)
              acc += v;
          }
        }
      },
      1);
}

extern "C" void otck_cumsum_f32(int64_t outer, int64_t n, int64_t inner,
                                int exclusive, int reverse, const float *x,
                                float *y) {
  if (outer <= 0 || n <= 0 || inner <= 0)
    return;
  if (inner == 1) {
    parallelFor(
        outer, n, kParallelGrain,
        [&](int64_t begin, int64_t end) {
          for (int64_t o = begin; o < end; ++o) {
            const float *xo = x + o * n;
            float *yo = y + o * n;
            const int64_t step = reverse ? -1 : 1;
            int64_t k = reverse ? n - 1 : 0;
            double acc = 0.0;
            for (int64_t s = 0; s < n; ++s, k += step) {
              const float v = xo[k]; // Read before y (which may be x).
              if (!exclusive)
                acc += double(v);
              yo[k] = float(acc);
              if (exclusive)
                acc += double(v);
            }
          }
        },
        1);
    return;
  }
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  parallelFor(
      outer * blocks, n * std::min(inner, kBlock), kParallelGrain,
      [&](int64_t begin, int64_t end) {
        double acc[kBlock];
        for (int64_t item = begin; item < end; ++item) {
          const int64_t o = item / blocks, j0 = (item % blocks) * kBlock;
          const int64_t w = std::min(kBlock, inner - j0);
          const float *xo = x + o * n * inner + j0;
          float *yo = y + o * n * inner + j0;
          for (int64_t j = 0; j < w; ++j)
            acc[j] = 0.0;
          for (int64_t s = 0; s < n; ++s) {
            const int64_t k = reverse ? n - 1 - s : s;
            const float *xr = xo + k * inner;
            float *yr = yo + k * inner;
            if (exclusive) {
              for (int64_t j = 0; j < w; ++j) {
                const float v = xr[j]; // Read before y (which may be x).
                yr[j] = float(acc[j]);
                acc[j] += double(v);
              }
            } else {
#pragma omp simd
              for (int64_t j = 0; j < w; ++j) {
                acc[j] += double(xr[j]);
                yr[j] = float(acc[j]);
              }
            }
          }
        }
      },
      1);
}

extern "C" void otck_topk_f32(int64_t outer, int64_t n, int64_t inner,
                              int64_t k, int largest, int sorted,
                              const float *x, float *values, int64_t *indices) {
  (void)sorted; // Always sorted, which sorted == 0 allows.
  if (outer <= 0 || inner <= 0 || k <= 0 || k > n)
    return;
  parallelFor(
      outer * inner, n + k * 8, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        for (int64_t slice = begin; slice < end; ++slice) {
          const int64_t o = slice / inner, j = slice % inner;
          const TopKOrder before{x + o * n * inner + j, inner, largest != 0};
          int64_t *h = indices + o * k * inner + j;
          const int64_t s = inner;
          // A heap of the k best so far with the lowest-ranked at the root.
          for (int64_t i = 0; i < k; ++i)
            h[i * s] = i;
          for (int64_t i = k / 2 - 1; i >= 0; --i)
            topkSiftDown(h, s, k, i, before);
          for (int64_t i = k; i < n; ++i) {
            if (before(i, h[0])) {
              h[0] = i;
              topkSiftDown(h, s, k, 0, before);
            }
          }
          // Heap sort: moving the lowest-ranked to the back leaves the best
          // first.
          for (int64_t size = k - 1; size > 0; --size) {
            std::swap(h[0], h[size * s]);
            topkSiftDown(h, s, size, 0, before);
          }
          float *v = values + o * k * inner + j;
          for (int64_t i = 0; i < k; ++i)
            v[i * s] = before.x[h[i * s] * inner];
        }
      },
      1);
}
