//===- elementwise.cpp - Unary, binary and cast kernels, with backwards ---===//
//
// The float unary and binary ops and their gradients are unary_kernels.h's
// and binary_kernels.h's, compiled per instruction set: this file compiles
// the baseline ones and calls the ones compress_isa.h's currentIsa() names.
// The integer binary ops walk binary_kernels.h's broadcasting plan.
//
//===----------------------------------------------------------------------===//

// First: it opens `generic` as the inline namespace.
#include "binary_kernels.h"
#include "unary_kernels.h"

#include "otc/kernels.h"

#include "cast_ops.h"
#include "compress_isa.h"
#include "int_ops.h"
#include "parallel.h"
#include "plans.h"

#include <atomic>
#include <cstring>

using namespace otc::kernels;

#if defined(OTCK_HAVE_X86_VARIANTS)
#define OTCK_DECLARE_ELEMENTWISE_VARIANT(ns)                                   \
  namespace otc::kernels::unary::ns {                                          \
  decltype(unary) unary;                                                       \
  decltype(unaryGrad) unaryGrad;                                               \
  decltype(geluGradFromOutput) geluGradFromOutput;                             \
  }                                                                            \
  namespace otc::kernels::binary::ns {                                         \
  decltype(binary) binary;                                                     \
  decltype(binaryGrad) binaryGrad;                                             \
  }
OTCK_DECLARE_ELEMENTWISE_VARIANT(avx2)
OTCK_DECLARE_ELEMENTWISE_VARIANT(avx512)
#undef OTCK_DECLARE_ELEMENTWISE_VARIANT

#endif

namespace {

using binary::runPlan;

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
  OTCK_ISA_DISPATCH(otc::kernels::binary, binary, op, rank, out_shape, a,
                    a_strides, b, b_strides, out);
}

extern "C" void otck_binary_grad_f32(otck_binary_op op, int rank,
                                     const int64_t *out_shape, const float *a,
                                     const int64_t *a_strides, const float *b,
                                     const int64_t *b_strides, const float *dy,
                                     float *da, float *db) {
  if (rank < 0 || rank > OTCK_MAX_RANK)
    return;
  OTCK_ISA_DISPATCH(otc::kernels::binary, binaryGrad, op, rank, out_shape, a,
                    a_strides, b, b_strides, dy, da, db);
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
  if ((op == OTCK_GELU || op == OTCK_GELU_TANH) && y) {
    OTCK_ISA_DISPATCH(otc::kernels::unary, geluGradFromOutput, op, n, dy, x, y,
                      dx);
    return;
  }
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
