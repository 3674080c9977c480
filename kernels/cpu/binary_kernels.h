//===- binary_kernels.h - Float binary ops and their gradients --*- C++ -*-===//
//
// Internal to the kernel library, included once per instruction set
// (elementwise.cpp: baseline, the C API and the integer ops;
// kernels_avx2.cpp, kernels_avx512.cpp) and dispatched at run time as the
// unary ops are: add, mul and the other float binary ops are a load or two,
// an operation and a store, which baseline x86-64 runs 4 lanes wide. Without
// FMA contraction (-ffp-contract=off) every variant writes the same bits.
//
// Binary ops take numpy broadcasting as strides. The iteration space is first
// simplified (size-1 dimensions dropped, dimensions that are contiguous in
// both operands merged), so the common cases become one flat loop or a loop
// over rows whose inner loop has unit or zero stride on each side. The
// backward and elementwise.cpp's integer ops walk the same plan.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_CPU_BINARY_KERNELS_H
#define OTC_KERNELS_CPU_BINARY_KERNELS_H

#include "otc/kernels.h"

#include "parallel.h"
#include "plans.h"
#include "unary_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace otc::kernels::binary {
inline namespace OTCK_ISA {

namespace {

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

} // namespace

//===----------------------------------------------------------------------===//
// Entry points (the C API checks the rank)
//===----------------------------------------------------------------------===//

/// otck_binary_f32 for a checked rank.
void binary(otck_binary_op op, int rank, const int64_t *out_shape,
            const float *a, const int64_t *a_strides, const float *b,
            const int64_t *b_strides, float *out) {
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

/// otck_binary_grad_f32 for a checked rank.
void binaryGrad(otck_binary_op op, int rank, const int64_t *out_shape,
                const float *a, const int64_t *a_strides, const float *b,
                const int64_t *b_strides, const float *dy, float *da,
                float *db) {
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

} // namespace OTCK_ISA
} // namespace otc::kernels::binary

#endif // OTC_KERNELS_CPU_BINARY_KERNELS_H
