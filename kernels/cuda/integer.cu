//===- integer.cu - Integer and boolean ops, comparisons, casts -----------===//
//
// The CUDA twins of otck_binary_int, otck_compare, otck_logic, otck_not and
// otck_cast: one thread per output element in grid-stride loops over the
// host-simplified broadcast plan, one kernel instance per element type (or
// pair of types), computing what the headers shared with the CPU say
// (int_ops.h, cast_ops.h). A division by zero is recorded in the device
// status word.
//
//===----------------------------------------------------------------------===//

#include "cast_ops.h"
#include "cuda_common.h"
#include "int_ops.h"

namespace otc::kernels::cuda {
namespace {

template <typename T>
__global__ void intBinaryKernel(otck_binary_op op, BinaryPlan p, const T *a,
                                const T *b, T *out, int *status) {
  bool zero = false;
  for (int64_t i = globalThread(); i < p.total; i += gridThreads()) {
    int64_t offA, offB;
    binaryOffsets(p, i, offA, offB);
    out[i] = intBinary(op, a[offA], b[offB], zero);
  }
  if (zero)
    recordStatus(status, OTCK_ERR_DIVISION_BY_ZERO);
}

template <typename T>
__global__ void compareKernel(otck_compare_op op, BinaryPlan p, const T *a,
                              const T *b, uint8_t *out) {
  for (int64_t i = globalThread(); i < p.total; i += gridThreads()) {
    int64_t offA, offB;
    binaryOffsets(p, i, offA, offB);
    out[i] = uint8_t(compareValues(op, a[offA], b[offB]));
  }
}

__global__ void logicKernel(otck_logic_op op, BinaryPlan p, const uint8_t *a,
                            const uint8_t *b, uint8_t *out) {
  for (int64_t i = globalThread(); i < p.total; i += gridThreads()) {
    int64_t offA, offB;
    binaryOffsets(p, i, offA, offB);
    const bool x = a[offA] != 0, y = b[offB] != 0;
    out[i] = uint8_t(op == OTCK_LOGIC_AND  ? (x && y)
                     : op == OTCK_LOGIC_OR ? (x || y)
                                           : (x != y));
  }
}

__global__ void notKernel(int64_t n, const uint8_t *x, uint8_t *y) {
  for (int64_t i = globalThread(); i < n; i += gridThreads())
    y[i] = uint8_t(x[i] == 0);
}

template <typename From, typename To>
__global__ void castKernel(int64_t n, const From *x, To *y) {
  for (int64_t i = globalThread(); i < n; i += gridThreads())
    y[i] = cast::castOne<To>(x[i]);
}

bool knownCompare(otck_compare_op op) {
  return int(op) >= int(OTCK_CMP_EQUAL) &&
         int(op) <= int(OTCK_CMP_GREATER_OR_EQUAL);
}

} // namespace
} // namespace otc::kernels::cuda

using namespace otc::kernels;
using namespace otc::kernels::cuda;

extern "C" int otckd_binary_int(int op, int dtype, int rank,
                                const int64_t *out_shape, const void *a,
                                const int64_t *a_strides, const void *b,
                                const int64_t *b_strides, void *out) {
  if (rank < 0 || rank > OTCK_MAX_RANK || !knownIntBinary(op)) {
    recordFailure("otckd_binary_int", "unknown op or rank out of range");
    return 0;
  }
  const BinaryPlan p = planBinary(rank, out_shape, a_strides, b_strides);
  const bool known = withIntDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if (p.total <= 0)
      return;
    int *status = deviceStatusWord();
    if (!status)
      return;
    intBinaryKernel<T><<<gridFor(p.total), kThreads, 0, currentStream()>>>(
        otck_binary_op(op), p, static_cast<const T *>(a),
        static_cast<const T *>(b), static_cast<T *>(out), status);
    checkLaunch("otckd_binary_int");
  });
  if (!known)
    recordFailure("otckd_binary_int", "not an integer type code");
  return 0;
}

extern "C" int otckd_compare(otck_compare_op op, int dtype, int rank,
                             const int64_t *out_shape, const void *a,
                             const int64_t *a_strides, const void *b,
                             const int64_t *b_strides, uint8_t *out) {
  if (rank < 0 || rank > OTCK_MAX_RANK || !knownCompare(op)) {
    recordFailure("otckd_compare", "unknown predicate or rank out of range");
    return 0;
  }
  const BinaryPlan p = planBinary(rank, out_shape, a_strides, b_strides);
  const bool known = withCompareDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if (p.total <= 0)
      return;
    compareKernel<T><<<gridFor(p.total), kThreads, 0, currentStream()>>>(
        op, p, static_cast<const T *>(a), static_cast<const T *>(b), out);
    checkLaunch("otckd_compare");
  });
  if (!known)
    recordFailure("otckd_compare", "type code the comparisons do not take");
  return 0;
}

extern "C" void otckd_logic(otck_logic_op op, int rank,
                            const int64_t *out_shape, const uint8_t *a,
                            const int64_t *a_strides, const uint8_t *b,
                            const int64_t *b_strides, uint8_t *out) {
  if (rank < 0 || rank > OTCK_MAX_RANK ||
      (op != OTCK_LOGIC_AND && op != OTCK_LOGIC_OR && op != OTCK_LOGIC_XOR)) {
    recordFailure("otckd_logic", "unknown op or rank out of range");
    return;
  }
  const BinaryPlan p = planBinary(rank, out_shape, a_strides, b_strides);
  if (p.total <= 0)
    return;
  logicKernel<<<gridFor(p.total), kThreads, 0, currentStream()>>>(op, p, a, b,
                                                                  out);
  checkLaunch("otckd_logic");
}

extern "C" void otckd_not(int64_t n, const uint8_t *x, uint8_t *y) {
  if (n <= 0)
    return;
  notKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(n, x, y);
  checkLaunch("otckd_not");
}

extern "C" int otckd_cast(int64_t n, int from_type, const void *x, int to_type,
                          void *y) {
  int status = OTCK_ERR_UNSUPPORTED;
  cast::withDtype(from_type, [&](auto from) {
    cast::withDtype(to_type, [&](auto to) {
      using From = decltype(from);
      using To = decltype(to);
      status = OTCK_OK;
      if (n <= 0)
        return;
      castKernel<From, To><<<gridFor(n), kThreads, 0, currentStream()>>>(
          n, static_cast<const From *>(x), static_cast<To *>(y));
      checkLaunch("otckd_cast");
    });
  });
  return status;
}
