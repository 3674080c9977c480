//===- elementwise.cpp - Unary, binary and cast kernels, with backwards ---===//
//
// Binary ops take numpy broadcasting as strides. The iteration space is first
// simplified (size-1 dimensions dropped, dimensions that are contiguous in
// both operands merged), so the common cases become one flat loop or a loop
// over rows whose inner loop has unit or zero stride on each side. The
// binary backward and the integer ops walk the same plan.
//
// Unary ops are branch-free lambdas over cpu/vmath.h in `omp simd` loops;
// the rare ops with no vmath.h counterpart (tan, the inverse and hyperbolic
// trigonometric functions, pow to a general exponent, fmod) call libm.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "cast_ops.h"
#include "compress_format.h"
#include "int_ops.h"
#include "parallel.h"
#include "plans.h"
#include "vmath.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

using namespace otc::kernels;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

//===----------------------------------------------------------------------===//
// Strided iteration
//===----------------------------------------------------------------------===//

/// Calls row(len, offA, strideA, offB, strideB, pos) for the row pieces that
/// cover flat output indices [begin, end): output elements [pos, pos + len)
/// read a[offA + i * strideA] and b[offB + i * strideB].
template <typename Row>
void forEachRow(const BinaryPlan &p, int64_t begin, int64_t end, Row row) {
  const int last = p.rank - 1;
  const int64_t inner = p.shape[last];
  const int64_t ia = p.a[last], ib = p.b[last];
  // Multi-index of the row holding `begin`, and the operands' offsets there.
  int64_t idx[OTCK_MAX_RANK];
  int64_t r = begin / inner, j = begin % inner;
  int64_t offA = 0, offB = 0;
  for (int d = last - 1; d >= 0; --d) {
    idx[d] = r % p.shape[d];
    r /= p.shape[d];
    offA += idx[d] * p.a[d];
    offB += idx[d] * p.b[d];
  }
  for (int64_t pos = begin; pos < end;) {
    int64_t len = std::min(inner - j, end - pos);
    row(len, offA + j * ia, ia, offB + j * ib, ib, pos);
    pos += len;
    j = 0;
    for (int d = last - 1; d >= 0; --d) {
      offA += p.a[d];
      offB += p.b[d];
      if (++idx[d] < p.shape[d])
        break;
      offA -= p.a[d] * p.shape[d];
      offB -= p.b[d] * p.shape[d];
      idx[d] = 0;
    }
  }
}

/// forEachRow over the whole plan, one range per thread above `grain`.
template <typename Row>
void runPlan(const BinaryPlan &p, int64_t grain, Row row) {
  if (p.total <= 0)
    return;
  parallelFor(p.total, 1, grain, [&](int64_t begin, int64_t end) {
    forEachRow(p, begin, end, row);
  });
}

/// f(i, i * sa, i * sb) for i in [0, n), specialised for unit and zero
/// strides so the loop vectorises.
template <typename F> void stridedRow(int64_t n, int64_t sa, int64_t sb, F f) {
  if (sa == 1 && sb == 1) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      f(i, i, i);
  } else if (sa == 1 && sb == 0) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      f(i, i, int64_t(0));
  } else if (sa == 0 && sb == 1) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      f(i, int64_t(0), i);
  } else {
    for (int64_t i = 0; i < n; ++i)
      f(i, i * sa, i * sb);
  }
}

//===----------------------------------------------------------------------===//
// Float binary
//===----------------------------------------------------------------------===//

struct AddOp {
  float operator()(float a, float b) const { return a + b; }
};
struct SubOp {
  float operator()(float a, float b) const { return a - b; }
};
struct MulOp {
  float operator()(float a, float b) const { return a * b; }
};
struct DivOp {
  float operator()(float a, float b) const { return a / b; }
};
struct PowOp {
  float operator()(float a, float b) const { return std::pow(a, b); }
};
struct MaxOp {
  float operator()(float a, float b) const {
    float m = a > b ? a : b; // a NaN b gives b
    return a != a ? a : m;
  }
};
struct MinOp {
  float operator()(float a, float b) const {
    float m = a < b ? a : b;
    return a != a ? a : m;
  }
};
/// PyTorch's remainder: the sign of the divisor.
struct ModOp {
  float operator()(float a, float b) const {
    float r = std::fmod(a, b);
    return r != 0.0f && ((r < 0.0f) != (b < 0.0f)) ? r + b : r;
  }
};
struct FmodOp {
  float operator()(float a, float b) const { return std::fmod(a, b); }
};
struct PReluOp {
  float operator()(float a, float b) const { return a >= 0.0f ? a : b * a; }
};

/// Calls body(f) with f(v) = v^e, as PyTorch's pow(tensor, scalar): exact
/// special cases (no libm call) for the common exponents, std::pow else.
template <typename Body> void dispatchPow(float e, Body body) {
  if (e == 2.0f)
    body([](float v) { return v * v; });
  else if (e == 3.0f)
    body([](float v) { return v * v * v; });
  else if (e == 0.5f)
    body([](float v) { return std::sqrt(v); });
  else if (e == -0.5f)
    body([](float v) { return 1.0f / std::sqrt(v); });
  else if (e == -1.0f)
    body([](float v) { return 1.0f / v; });
  else if (e == -2.0f)
    body([](float v) { return 1.0f / (v * v); });
  else if (e == 1.0f)
    body([](float v) { return v; });
  else if (e == 0.0f)
    body([](float) { return 1.0f; });
  else
    body([e](float v) { return std::pow(v, e); });
}

/// out[0, n) = a[i * sa] op b[i * sb], specialised for unit and zero strides.
template <typename Op>
void binaryRow(Op op, int64_t n, const float *a, int64_t sa, const float *b,
               int64_t sb, float *out) {
  if constexpr (std::is_same_v<Op, PowOp>) {
    // A broadcast exponent: pow(tensor, scalar) semantics.
    if (sa == 1 && sb == 0) {
      dispatchPow(b[0], [&](auto f) {
#pragma omp simd
        for (int64_t i = 0; i < n; ++i)
          out[i] = f(a[i]);
      });
      return;
    }
  }
  if (sa == 1 && sb == 1) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      out[i] = op(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const float bv = b[0];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      out[i] = op(a[i], bv);
  } else if (sa == 0 && sb == 1) {
    const float av = a[0];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      out[i] = op(av, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i)
      out[i] = op(a[i * sa], b[i * sb]);
  }
}

template <typename Op>
void binaryImpl(Op op, int rank, const int64_t *shape, const float *a,
                const int64_t *as, const float *b, const int64_t *bs,
                float *out, int64_t grain = kParallelGrain) {
  BinaryPlan p = planBinary(rank, shape, as, bs);
  runPlan(p, grain,
          [&](int64_t len, int64_t offA, int64_t sa, int64_t offB, int64_t sb,
              int64_t pos) {
            binaryRow(op, len, a + offA, sa, b + offB, sb, out + pos);
          });
}

//===----------------------------------------------------------------------===//
// Float binary backward
//===----------------------------------------------------------------------===//

/// torch.div(a, b, rounding_mode="floor") for floats: from fmod, so that the
/// quotient is exact where floor(a / b) would round across an integer.
float floorDivide(float a, float b) {
  if (b == 0.0f)
    return a / b;
  float mod = std::fmod(a, b);
  float div = (a - mod) / b;
  if (mod != 0.0f && ((b < 0.0f) != (mod < 0.0f)))
    div -= 1.0f;
  if (div == 0.0f)
    return std::copysign(0.0f, a / b);
  float fl = std::floor(div);
  return div - fl > 0.5f ? fl + 1.0f : fl;
}

/// Backward rows: f(a, b, dy, da, db) per element; WantA / WantB drop the
/// stores (and, once inlined, the arithmetic) of a NULL gradient.
template <bool WantA, bool WantB, typename F>
void gradRows(const BinaryPlan &p, const float *a, const float *b,
              const float *dy, float *da, float *db, int64_t grain, F f) {
  runPlan(p, grain,
          [&](int64_t len, int64_t offA, int64_t sa, int64_t offB, int64_t sb,
              int64_t pos) {
            const float *ar = a + offA, *br = b + offB, *g = dy + pos;
            float *dar = WantA ? da + pos : nullptr;
            float *dbr = WantB ? db + pos : nullptr;
            stridedRow(len, sa, sb, [&](int64_t i, int64_t ja, int64_t jb) {
              float ga, gb;
              f(ar[ja], br[jb], g[i], ga, gb);
              if constexpr (WantA)
                dar[i] = ga;
              if constexpr (WantB)
                dbr[i] = gb;
            });
          });
}

template <typename F>
void gradImpl(const BinaryPlan &p, const float *a, const float *b,
              const float *dy, float *da, float *db, int64_t grain, F f) {
  if (da && db)
    gradRows<true, true>(p, a, b, dy, da, db, grain, f);
  else if (da)
    gradRows<true, false>(p, a, b, dy, da, db, grain, f);
  else if (db)
    gradRows<false, true>(p, a, b, dy, da, db, grain, f);
}

//===----------------------------------------------------------------------===//
// Integer binary
//===----------------------------------------------------------------------===//

template <typename T, typename Op>
int intImpl(Op op, int rank, const int64_t *shape, const T *a,
            const int64_t *as, const T *b, const int64_t *bs, T *out) {
  BinaryPlan p = planBinary(rank, shape, as, bs);
  std::atomic<bool> failed{false};
  runPlan(p, kParallelGrain,
          [&](int64_t len, int64_t offA, int64_t sa, int64_t offB, int64_t sb,
              int64_t pos) {
            bool zero = false;
            const T *ar = a + offA, *br = b + offB;
            T *o = out + pos;
            for (int64_t i = 0; i < len; ++i)
              o[i] = op(ar[i * sa], br[i * sb], zero);
            if (zero)
              failed.store(true, std::memory_order_relaxed);
          });
  return failed.load() ? OTCK_ERR_DIVISION_BY_ZERO : OTCK_OK;
}

/// The integer binary op `op` on T (int_ops.h), one loop per op.
template <typename T>
int binaryInt(int op, int rank, const int64_t *shape, const T *a,
              const int64_t *as, const T *b, const int64_t *bs, T *out) {
  // Checked before op becomes an otck_binary_op: another value is not one.
  if (rank < 0 || rank > OTCK_MAX_RANK || !knownIntBinary(op))
    return OTCK_ERR_UNSUPPORTED;
  int status = OTCK_ERR_UNSUPPORTED;
  withIntOp<T>(otck_binary_op(op), [&](auto f) {
    status = intImpl<T>(f, rank, shape, a, as, b, bs, out);
  });
  return status;
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

// mapRange and gradRange take f by value and are flattened. GCC leaves a
// large lambda as a call, which does not vectorise; and a parameter that f
// captured, read through a reference, is a load GCC will not hoist out of
// a select's untaken side, which keeps the loop scalar, with branches.

template <typename F>
__attribute__((flatten)) void mapRange(F f, const float *x, float *y,
                                       int64_t begin, int64_t end) {
#pragma omp simd
  for (int64_t i = begin; i < end; ++i)
    y[i] = f(x[i]);
}

template <typename F>
__attribute__((flatten)) void gradRange(F f, const float *dy, const float *s,
                                        float *dx, int64_t begin, int64_t end) {
#pragma omp simd
  for (int64_t i = begin; i < end; ++i)
    dx[i] = f(dy[i], s[i]);
}

/// y[i] = f(x[i]) over [0, n); parallel above `grain` elements.
template <typename F>
void unaryMap(int64_t n, const float *x, float *y, int64_t grain, F f) {
  parallelFor(n, 1, grain, [=](int64_t begin, int64_t end) {
    mapRange(f, x, y, begin, end);
  });
}

/// dx[i] = f(dy[i], s[i]) over [0, n), s being x or y.
template <typename F>
void gradMap(int64_t n, const float *dy, const float *s, float *dx,
             int64_t grain, F f) {
  parallelFor(n, 1, grain, [=](int64_t begin, int64_t end) {
    gradRange(f, dy, s, dx, begin, end);
  });
}

/// dx[i] = f(dy[i]) over [0, n).
template <typename F>
void gradMap0(int64_t n, const float *dy, float *dx, F f) {
  unaryMap(n, dy, dx, kParallelGrain, f);
}

/// Block of sinCosMap and sinCosGrad, small enough for a stack copy of x.
constexpr int64_t kSinCosBlock = 256;

/// out[0, n) = sin(x) or cos(x), n <= kSinCosBlock: vsinCos, then libm for
/// the elements beyond its range. x is copied first, so out may alias x.
template <bool Cosine> void sinCosBlock(const float *x, float *out, int64_t n) {
  float in[kSinCosBlock];
  std::copy(x, x + n, in);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    out[i] = vsinCos(in[i], Cosine);
  int outside = 0;
#pragma omp simd reduction(| : outside)
  for (int64_t i = 0; i < n; ++i)
    outside |= !(std::fabs(in[i]) <= kSinCosMaxArg);
  if (outside)
    for (int64_t i = 0; i < n; ++i)
      if (!(std::fabs(in[i]) <= kSinCosMaxArg))
        out[i] = Cosine ? std::cos(in[i]) : std::sin(in[i]);
}

template <bool Cosine> void sinCosMap(int64_t n, const float *x, float *y) {
  parallelFor(n, 1, kParallelGrainHeavy, [=](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; b += kSinCosBlock)
      sinCosBlock<Cosine>(x + b, y + b, std::min(kSinCosBlock, end - b));
  });
}

/// dx = sign * dy * (Cosine ? cos(x) : sin(x)).
template <bool Cosine>
void sinCosGrad(int64_t n, const float *dy, const float *x, float *dx,
                float sign) {
  parallelFor(n, 1, kParallelGrainHeavy, [=](int64_t begin, int64_t end) {
    float t[kSinCosBlock];
    for (int64_t b = begin; b < end; b += kSinCosBlock) {
      int64_t len = std::min(kSinCosBlock, end - b);
      sinCosBlock<Cosine>(x + b, t, len);
#pragma omp simd
      for (int64_t i = 0; i < len; ++i)
        dx[b + i] = sign * dy[b + i] * t[i];
    }
  });
}

/// 0.5 * x * (1 + tanh(u)) = x * sigmoid(2u), u = sqrt(2/pi) (x + k x^3): the
/// sigmoid keeps relative precision where 1 + tanh(u) would cancel.
constexpr float kGeluTanhBeta = 0.7978845608028654f; // sqrt(2 / pi)
constexpr float kGeluTanhKappa = 0.044715f;

OTC_VINLINE float geluTanhInner(float v) {
  return kGeluTanhBeta * (v + kGeluTanhKappa * (v * v * v));
}

/// tanh(softplus(x)) = w / (w + 2) with w = e^x (e^x + 2); `r` receives
/// 1 - tanh(softplus(x)) = 2 / (w + 2) without cancellation.
OTC_VINLINE float mishTanh(float v, float &r) {
  float n = vexp(v);
  float w = n * (n + 2.0f);
  r = 2.0f / (w + 2.0f);
  return w < kInf ? w / (w + 2.0f) : 1.0f;
}

/// sigmoid(v) and sigmoid(v) * (1 - sigmoid(v)) from one exp.
OTC_VINLINE float sigmoidAndSlope(float v, float &slope) {
  float ax = v < 0.0f ? -v : v;
  float e = vexp(-ax);
  float inv = 1.0f / (1.0f + e);
  slope = e * inv * inv;
  return v >= 0.0f ? inv : e * inv;
}

//===----------------------------------------------------------------------===//
// Cast (each element as cast_ops.h converts it)
//===----------------------------------------------------------------------===//

template <typename From, typename To>
void castLoop(int64_t n, const void *x, void *y) {
  const char *xs = static_cast<const char *>(x);
  char *ys = static_cast<char *>(y);
  parallelFor(n, 1, kParallelGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      From v;
      std::memcpy(&v, xs + i * int64_t(sizeof(From)), sizeof(From));
      To r = cast::castOne<To>(v);
      std::memcpy(ys + i * int64_t(sizeof(To)), &r, sizeof(To));
    }
  });
}

} // namespace

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

extern "C" void otck_binary_f32(otck_binary_op op, int rank,
                                const int64_t *out_shape, const float *a,
                                const int64_t *a_strides, const float *b,
                                const int64_t *b_strides, float *out) {
  if (rank < 0 || rank > OTCK_MAX_RANK)
    return;
  auto run = [&](auto f, int64_t grain) {
    binaryImpl(f, rank, out_shape, a, a_strides, b, b_strides, out, grain);
  };
  switch (op) {
  case OTCK_ADD:
    return run(AddOp(), kParallelGrain);
  case OTCK_SUB:
    return run(SubOp(), kParallelGrain);
  case OTCK_MUL:
    return run(MulOp(), kParallelGrain);
  case OTCK_DIV:
    return run(DivOp(), kParallelGrain);
  case OTCK_POW:
    return run(PowOp(), kParallelGrainHeavy);
  case OTCK_MAX:
    return run(MaxOp(), kParallelGrain);
  case OTCK_MIN:
    return run(MinOp(), kParallelGrain);
  case OTCK_MOD:
    return run(ModOp(), kParallelGrainHeavy);
  case OTCK_FMOD:
    return run(FmodOp(), kParallelGrainHeavy);
  case OTCK_PRELU:
    return run(PReluOp(), kParallelGrain);
  case OTCK_SHIFT_LEFT: // integers only
  case OTCK_SHIFT_RIGHT:
    return;
  }
}

extern "C" void otck_binary_grad_f32(otck_binary_op op, int rank,
                                     const int64_t *out_shape, const float *a,
                                     const int64_t *a_strides, const float *b,
                                     const int64_t *b_strides, const float *dy,
                                     float *da, float *db) {
  if (rank < 0 || rank > OTCK_MAX_RANK)
    return;
  if (op == OTCK_ADD || op == OTCK_SUB) {
    // Contiguous out_shape buffers: no operand to index.
    int64_t total = 1;
    for (int d = 0; d < rank; ++d)
      total *= out_shape[d];
    const float sign = op == OTCK_ADD ? 1.0f : -1.0f;
    parallelFor(total, 1, kParallelGrain, [&](int64_t begin, int64_t end) {
#pragma omp simd
      for (int64_t i = begin; i < end; ++i) {
        float g = dy[i];
        if (da)
          da[i] = g;
        if (db)
          db[i] = sign * g;
      }
    });
    return;
  }
  BinaryPlan p = planBinary(rank, out_shape, a_strides, b_strides);
  auto run = [&](int64_t grain, auto f) {
    gradImpl(p, a, b, dy, da, db, grain, f);
  };
  switch (op) {
  case OTCK_ADD:
  case OTCK_SUB:
    return;
  case OTCK_MUL:
    return run(kParallelGrain,
               [](float av, float bv, float g, float &ga, float &gb) {
                 ga = g * bv;
                 gb = g * av;
               });
  case OTCK_DIV:
    return run(kParallelGrain,
               [](float av, float bv, float g, float &ga, float &gb) {
                 ga = g / bv;
                 gb = -g * ((av / bv) / bv);
               });
  case OTCK_POW:
    return run(kParallelGrainHeavy, [](float av, float bv, float g, float &ga,
                                       float &gb) {
      ga = bv == 0.0f ? 0.0f : g * (bv * std::pow(av, bv - 1.0f));
      gb = av == 0.0f && bv >= 0.0f ? 0.0f
                                    : g * (std::pow(av, bv) * std::log(av));
    });
  case OTCK_MAX:
    return run(kParallelGrain,
               [](float av, float bv, float g, float &ga, float &gb) {
                 float share = av == bv ? 0.5f * g : g;
                 ga = av < bv ? 0.0f : share;
                 gb = av > bv ? 0.0f : share;
               });
  case OTCK_MIN:
    return run(kParallelGrain,
               [](float av, float bv, float g, float &ga, float &gb) {
                 float share = av == bv ? 0.5f * g : g;
                 ga = av > bv ? 0.0f : share;
                 gb = av < bv ? 0.0f : share;
               });
  case OTCK_MOD:
    return run(kParallelGrainHeavy,
               [](float av, float bv, float g, float &ga, float &gb) {
                 ga = g;
                 gb = -g * floorDivide(av, bv);
               });
  case OTCK_FMOD:
    return run(kParallelGrain,
               [](float av, float bv, float g, float &ga, float &gb) {
                 ga = g;
                 gb = -g * std::trunc(av / bv);
               });
  case OTCK_PRELU:
    return run(kParallelGrain,
               [](float av, float bv, float g, float &ga, float &gb) {
                 ga = av > 0.0f ? g : bv * g;
                 gb = av > 0.0f ? 0.0f : av * g;
               });
  case OTCK_SHIFT_LEFT: // integers only
  case OTCK_SHIFT_RIGHT:
    return;
  }
}

extern "C" int otck_binary_i32(int op, int rank, const int64_t *out_shape,
                               const int32_t *a, const int64_t *a_strides,
                               const int32_t *b, const int64_t *b_strides,
                               int32_t *out) {
  return binaryInt(op, rank, out_shape, a, a_strides, b, b_strides, out);
}

extern "C" int otck_binary_i64(int op, int rank, const int64_t *out_shape,
                               const int64_t *a, const int64_t *a_strides,
                               const int64_t *b, const int64_t *b_strides,
                               int64_t *out) {
  return binaryInt(op, rank, out_shape, a, a_strides, b, b_strides, out);
}

extern "C" int otck_binary_int(int op, int dtype, int rank,
                               const int64_t *out_shape, const void *a,
                               const int64_t *a_strides, const void *b,
                               const int64_t *b_strides, void *out) {
  int status = OTCK_ERR_UNSUPPORTED;
  withIntDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    status =
        binaryInt(op, rank, out_shape, static_cast<const T *>(a), a_strides,
                  static_cast<const T *>(b), b_strides, static_cast<T *>(out));
  });
  return status;
}

extern "C" void otck_unary_f32(otck_unary_op op, int64_t n, const float *x,
                               float *y, float alpha, float beta) {
  constexpr int64_t kCheap = kParallelGrain, kHeavy = kParallelGrainHeavy;
  auto map = [&](int64_t grain, auto f) { unaryMap(n, x, y, grain, f); };
  switch (op) {
  case OTCK_RELU:
    // NaN propagates (as torch.relu); -0 stays -0.
    return map(kCheap, [](float v) { return v < 0.0f ? 0.0f : v; });
  case OTCK_SIGMOID:
    return map(kHeavy, [](float v) { return vsigmoid(v); });
  case OTCK_TANH:
    return map(kHeavy, [](float v) { return vtanh(v); });
  case OTCK_NEG:
    return map(kCheap, [](float v) { return -v; });
  case OTCK_EXP:
    return map(kHeavy, [](float v) { return vexp(v); });
  case OTCK_LOG:
    return map(kHeavy, [](float v) { return vlog(v); });
  case OTCK_SQRT:
    return map(kCheap, [](float v) { return std::sqrt(v); });
  case OTCK_SCALE:
    return map(kCheap, [alpha](float v) { return alpha * v; });
  case OTCK_LEAKY_RELU:
    return map(kCheap, [alpha](float v) { return v > 0.0f ? v : v * alpha; });
  case OTCK_ELU:
    return map(kHeavy,
               [alpha](float v) { return v > 0.0f ? v : vexpm1(v) * alpha; });
  case OTCK_SELU: {
    // PyTorch's association: expm1(x) * (alpha * scale).
    const float neg = alpha * beta;
    return map(kHeavy, [beta, neg](float v) {
      return v > 0.0f ? v * beta : vexpm1(v) * neg;
    });
  }
  case OTCK_CELU: {
    const float inv = float(1.0 / double(alpha));
    return map(kHeavy, [alpha, inv](float v) {
      return v > 0.0f ? v : vexpm1(v * inv) * alpha;
    });
  }
  case OTCK_GELU:
    return map(kHeavy,
               [](float v) { return v == -kInf ? 0.0f : v * vnormcdf(v); });
  case OTCK_GELU_TANH:
    return map(kHeavy, [](float v) {
      float s = vsigmoid(2.0f * geluTanhInner(v));
      return v == -kInf ? 0.0f : v * s;
    });
  case OTCK_HARD_SIGMOID:
    return map(kCheap, [alpha, beta](float v) {
      float t = alpha * v + beta;
      t = t > 1.0f ? 1.0f : t;
      return t < 0.0f ? 0.0f : t; // NaN passes both
    });
  case OTCK_HARD_SWISH:
    return map(kCheap, [](float v) {
      float c = v + 3.0f;
      c = c < 0.0f ? 0.0f : c;
      c = c > 6.0f ? 6.0f : c;
      return v == -kInf ? 0.0f : v * c / 6.0f;
    });
  case OTCK_MISH:
    return map(kHeavy, [](float v) {
      float r;
      float t = mishTanh(v, r);
      return v == -kInf ? 0.0f : v * t;
    });
  case OTCK_SOFTPLUS:
    // log1p(exp(x)) = max(x, 0) + log1p(exp(-|x|)) never overflows.
    return map(kHeavy, [](float v) {
      float ax = v < 0.0f ? -v : v;
      return (v > 0.0f ? v : 0.0f) + vlog1p(vexp(-ax));
    });
  case OTCK_SOFTSIGN:
    return map(kCheap, [](float v) {
      float ax = std::fabs(v);
      return ax == kInf ? copySign(1.0f, v) : v / (1.0f + ax);
    });
  case OTCK_ABS:
    return map(kCheap, [](float v) { return std::fabs(v); });
  case OTCK_RECIPROCAL:
    return map(kCheap, [](float v) { return 1.0f / v; });
  case OTCK_SIN:
    return sinCosMap<false>(n, x, y);
  case OTCK_COS:
    return sinCosMap<true>(n, x, y);
  case OTCK_ERF:
    return map(kHeavy, [](float v) { return verf(v); });
  case OTCK_SIGN:
    return map(kCheap, [](float v) {
      return v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : v == 0.0f ? 0.0f : v;
    });
  case OTCK_FLOOR:
    return map(kCheap, [](float v) { return vfloor(v); });
  case OTCK_CEIL:
    return map(kCheap, [](float v) { return vceil(v); });
  case OTCK_ROUND:
    return map(kCheap, [](float v) { return vroundEven(v); });
  case OTCK_CLIP:
    return map(kCheap, [alpha, beta](float v) {
      float m = v < alpha ? alpha : v;
      return m > beta ? beta : m; // NaN passes both; alpha > beta gives beta
    });
  case OTCK_POW_SCALAR:
    return dispatchPow(alpha, [&](auto f) { map(kHeavy, f); });
  case OTCK_ADD_SCALAR:
    return map(kCheap, [alpha](float v) { return v + alpha; });
  case OTCK_IDENTITY:
    return map(kCheap, [](float v) { return v; });
  case OTCK_THRESHOLDED_RELU:
    return map(kCheap, [alpha](float v) { return v <= alpha ? 0.0f : v; });
  case OTCK_SHRINK:
    return map(kCheap, [alpha, beta](float v) {
      return v >= -alpha && v <= alpha ? 0.0f : v < 0.0f ? v + beta : v - beta;
    });
  case OTCK_TAN:
    return map(kHeavy, [](float v) { return std::tan(v); });
  case OTCK_ASIN:
    return map(kHeavy, [](float v) { return std::asin(v); });
  case OTCK_ACOS:
    return map(kHeavy, [](float v) { return std::acos(v); });
  case OTCK_ATAN:
    return map(kHeavy, [](float v) { return std::atan(v); });
  case OTCK_SINH:
    return map(kHeavy, [](float v) { return std::sinh(v); });
  case OTCK_COSH:
    return map(kHeavy, [](float v) { return std::cosh(v); });
  case OTCK_ASINH:
    return map(kHeavy, [](float v) { return std::asinh(v); });
  case OTCK_ACOSH:
    return map(kHeavy, [](float v) { return std::acosh(v); });
  case OTCK_ATANH:
    return map(kHeavy, [](float v) { return std::atanh(v); });
  }
}

extern "C" void otck_unary_grad_f32(otck_unary_op op, int64_t n,
                                    const float *dy, const float *x,
                                    const float *y, float *dx, float alpha,
                                    float beta) {
  const GradReads reads = gradReads(op);
  if ((reads == GradReads::X && !x) || (reads == GradReads::Y && !y))
    return;
  constexpr int64_t kCheap = kParallelGrain, kHeavy = kParallelGrainHeavy;
  // s is the one forward tensor the op reads.
  const float *s = reads == GradReads::X ? x : y;
  auto map = [&](int64_t grain, auto f) { gradMap(n, dy, s, dx, grain, f); };
  switch (op) {
  case OTCK_RELU:
    return map(kCheap, [](float g, float v) { return v <= 0.0f ? 0.0f : g; });
  case OTCK_SIGMOID:
    return map(kCheap, [](float g, float v) { return g * (v * (1.0f - v)); });
  case OTCK_TANH:
    return map(kCheap, [](float g, float v) { return g * (1.0f - v * v); });
  case OTCK_EXP:
    return map(kCheap, [](float g, float v) { return g * v; });
  case OTCK_LOG:
    return map(kCheap, [](float g, float v) { return g / v; });
  case OTCK_SQRT:
    return map(kCheap, [](float g, float v) { return g / (2.0f * v); });
  case OTCK_NEG:
    return gradMap0(n, dy, dx, [](float g) { return -g; });
  case OTCK_SCALE:
    return gradMap0(n, dy, dx, [alpha](float g) { return alpha * g; });
  case OTCK_LEAKY_RELU:
    return map(kCheap,
               [alpha](float g, float v) { return v > 0.0f ? g : g * alpha; });
  case OTCK_ELU:
    return map(kHeavy, [alpha](float g, float v) {
      return v > 0.0f ? g : g * alpha * vexp(v);
    });
  case OTCK_SELU: {
    const float neg = alpha * beta;
    return map(kHeavy, [beta, neg](float g, float v) {
      return v > 0.0f ? g * beta : g * neg * vexp(v);
    });
  }
  case OTCK_CELU: {
    const float inv = float(1.0 / double(alpha));
    return map(kHeavy, [inv](float g, float v) {
      return v > 0.0f ? g : g * vexp(v * inv);
    });
  }
  case OTCK_GELU:
    return map(kHeavy, [](float g, float v) {
      constexpr float kInvSqrt2Pi = 0.3989422804014327f;
      float pdf = kInvSqrt2Pi * vexpNegSquare(v, 0.5f);
      float xpdf = pdf == 0.0f ? 0.0f : v * pdf; // 0 at +-inf, not NaN
      return g * (vnormcdf(v) + xpdf);
    });
  case OTCK_GELU_TANH:
    return map(kHeavy, [](float g, float v) {
      // d/dx x sigmoid(2u) = sigmoid(2u) + 2 x sigmoid'(2u) u'.
      float slope;
      float sg = sigmoidAndSlope(2.0f * geluTanhInner(v), slope);
      float du = kGeluTanhBeta * (1.0f + 3.0f * kGeluTanhKappa * (v * v));
      float right = slope == 0.0f ? 0.0f : 2.0f * v * slope * du;
      return g * (sg + right);
    });
  case OTCK_HARD_SIGMOID:
    return map(kCheap, [alpha](float g, float v) {
      return v > 0.0f && v < 1.0f ? g * alpha : 0.0f;
    });
  case OTCK_HARD_SWISH:
    return map(kCheap, [](float g, float v) {
      float r = v > 3.0f ? g : g * (v / 3.0f + 0.5f);
      return v < -3.0f ? 0.0f : r;
    });
  case OTCK_MISH:
    return map(kHeavy, [](float g, float v) {
      // tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2), 1 - t^2 = r (1 + t).
      float r;
      float t = mishTanh(v, r);
      float sg = vsigmoid(v);
      // 0, not inf * 0, at +-inf (as separate selects, which vectorise).
      float right = v * sg * (r * (1.0f + t));
      right = r == 0.0f ? 0.0f : right;
      right = sg == 0.0f ? 0.0f : right;
      return g * (t + right);
    });
  case OTCK_SOFTPLUS:
    return map(kHeavy, [](float g, float v) { return g * vsigmoid(v); });
  case OTCK_SOFTSIGN:
    return map(kCheap, [](float g, float v) {
      float d = 1.0f + std::fabs(v);
      return g / (d * d);
    });
  case OTCK_ABS:
    return map(kCheap, [](float g, float v) {
      return v > 0.0f ? g : v < 0.0f ? -g : 0.0f;
    });
  case OTCK_RECIPROCAL:
    return map(kCheap, [](float g, float v) { return -g * (v * v); });
  case OTCK_SIN:
    return sinCosGrad<true>(n, dy, x, dx, 1.0f);
  case OTCK_COS:
    return sinCosGrad<false>(n, dy, x, dx, -1.0f);
  case OTCK_ERF:
    return map(kHeavy, [](float g, float v) {
      constexpr float kTwoOverSqrtPi = 1.1283791670955126f;
      return g * (kTwoOverSqrtPi * vexpNegSquare(v, 1.0f));
    });
  case OTCK_SIGN:
  case OTCK_FLOOR:
  case OTCK_CEIL:
  case OTCK_ROUND:
    return gradMap0(n, dy, dx, [](float) { return 0.0f; });
  case OTCK_CLIP:
    // torch.clamp's backward: the bounds themselves pass the gradient.
    return map(kCheap, [alpha, beta](float g, float v) {
      return v >= alpha && v <= beta ? g : 0.0f;
    });
  case OTCK_POW_SCALAR:
    if (alpha == 0.0f)
      return gradMap0(n, dy, dx, [](float) { return 0.0f; });
    return dispatchPow(alpha - 1.0f, [&](auto f) {
      map(kHeavy, [alpha, f](float g, float v) { return g * (alpha * f(v)); });
    });
  case OTCK_ADD_SCALAR:
  case OTCK_IDENTITY:
    return gradMap0(n, dy, dx, [](float g) { return g; });
  case OTCK_THRESHOLDED_RELU:
    return map(kCheap,
               [alpha](float g, float v) { return v > alpha ? g : 0.0f; });
  case OTCK_SHRINK:
    return map(kCheap, [alpha](float g, float v) {
      return v >= -alpha && v <= alpha ? 0.0f : g;
    });
  case OTCK_TAN:
    return map(kCheap, [](float g, float v) { return g * (1.0f + v * v); });
  case OTCK_ASIN:
    return map(kHeavy, [](float g, float v) {
      return g / std::sqrt((1.0f - v) * (1.0f + v));
    });
  case OTCK_ACOS:
    return map(kHeavy, [](float g, float v) {
      return -g / std::sqrt((1.0f - v) * (1.0f + v));
    });
  case OTCK_ATAN:
    return map(kCheap, [](float g, float v) { return g / (1.0f + v * v); });
  case OTCK_SINH:
    return map(kHeavy, [](float g, float v) { return g * std::cosh(v); });
  case OTCK_COSH:
    return map(kHeavy, [](float g, float v) { return g * std::sinh(v); });
  case OTCK_ASINH:
    return map(kHeavy,
               [](float g, float v) { return g / std::sqrt(v * v + 1.0f); });
  case OTCK_ACOSH:
    return map(kHeavy, [](float g, float v) {
      return g / std::sqrt((v - 1.0f) * (v + 1.0f));
    });
  case OTCK_ATANH:
    return map(kCheap,
               [](float g, float v) { return g / ((1.0f - v) * (1.0f + v)); });
  }
}

extern "C" int otck_cast(int64_t n, int from_type, const void *x, int to_type,
                         void *y) {
  int status = OTCK_ERR_UNSUPPORTED;
  cast::withDtype(from_type, [&](auto from) {
    cast::withDtype(to_type, [&](auto to) {
      castLoop<decltype(from), decltype(to)>(n, x, y);
      status = OTCK_OK;
    });
  });
  return status;
}
