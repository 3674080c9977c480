//===- integer.cu - Integer binary ops and typed comparisons --------------===//
//
// The CUDA twins of otck_binary_int and otck_compare: one thread per output
// element in grid-stride loops over the host-simplified broadcast plan, one
// kernel instance per element type (int_ops.h, shared with the CPU, says
// what each op computes). A division by zero is recorded in the device
// status word.
//
//===----------------------------------------------------------------------===//

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

bool knownCompare(otck_compare_op op) {
  return int(op) >= int(OTCK_CMP_EQUAL) &&
         int(op) <= int(OTCK_CMP_GREATER_OR_EQUAL);
}

} // namespace
} // namespace otc::kernels::cuda

using namespace otc::kernels;
using namespace otc::kernels::cuda;

extern "C" int otckd_binary_int(otck_binary_op op, int dtype, int rank,
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
        op, p, static_cast<const T *>(a), static_cast<const T *>(b),
        static_cast<T *>(out), status);
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
