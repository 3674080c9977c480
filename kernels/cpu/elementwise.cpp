//===- elementwise.cpp - Unary, binary and cast kernels, with backwards ---===//
//
// Binary ops take numpy broadcasting as strides. The iteration space is first
// simplified (size-1 dimensions dropped, dimensions that are contiguous in
// both operands merged), so the common cases become one flat loop or a loop
// over rows whose inner loop has unit or zero stride on each side. The
// binary backward and the integer ops walk the same plan.
//
// Unary ops and their gradients are unary_kernels.h's, compiled per
// instruction set.
//
//===----------------------------------------------------------------------===//

// First: it opens `generic` as the inline namespace.
#include "unary_kernels.h"

#include "otc/kernels.h"

#include "cast_ops.h"
#include "compress_format.h"
#include "compress_isa.h"
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

#if defined(OTCK_HAVE_X86_VARIANTS)
#define OTCK_DECLARE_UNARY_VARIANT(ns)                                         \
  namespace otc::kernels::unary::ns {                                          \
  decltype(unary) unary;                                                       \
  decltype(unaryGrad) unaryGrad;                                               \
  }
OTCK_DECLARE_UNARY_VARIANT(avx2)
OTCK_DECLARE_UNARY_VARIANT(avx512)
#undef OTCK_DECLARE_UNARY_VARIANT

#endif

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

/// out[0, n) = a[i * sa] op b[i * sb], specialised for unit and zero strides.
template <typename Op>
void binaryRow(Op op, int64_t n, const float *a, int64_t sa, const float *b,
               int64_t sb, float *out) {
  if constexpr (std::is_same_v<Op, PowOp>) {
    // A broadcast exponent: pow(tensor, scalar) semantics.
    if (sa == 1 && sb == 0) {
      unary::dispatchPow(b[0], [&](auto f) {
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
  OTCK_ISA_DISPATCH(otc::kernels::unary, unary, op, n, x, y, alpha, beta);
}

extern "C" void otck_unary_grad_f32(otck_unary_op op, int64_t n,
                                    const float *dy, const float *x,
                                    const float *y, float *dx, float alpha,
                                    float beta) {
  // gradReads is plans.h's, outside the per-instruction-set namespaces:
  // called here, not in unary_kernels.h's builds.
  const GradReads reads = gradReads(op);
  if ((reads == GradReads::X && !x) || (reads == GradReads::Y && !y))
    return;
  const float *s = reads == GradReads::X ? x : y;
  OTCK_ISA_DISPATCH(otc::kernels::unary, unaryGrad, op, n, dy, s, dx, alpha,
                    beta);
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
