//===- plans.h - Host-side plans shared by the CPU and CUDA kernels -*- C++
//-*-===//
//
// Internal to the kernel libraries (the CPU kernels and their CUDA twins,
// which hand a plan to device code by value). Host code only:
//  - StridePlan: the dimensions of an elementwise walk over two strided
//    operands (binary ops: a and b; copies: source and destination) after
//    dropping size-1 dimensions and merging the dimensions that are
//    contiguous in both;
//  - gradReads: which forward tensor otck_unary_grad_f32 reads.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_PLANS_H
#define OTC_KERNELS_PLANS_H

#include "otc/kernels.h"

#include <cstdint>

namespace otc::kernels {

template <int MaxRank> struct StridePlan {
  int rank = 0; ///< 0 for a walk over one element
  int64_t shape[MaxRank];
  int64_t a[MaxRank]; ///< strides of the first operand (a copy's source)
  int64_t b[MaxRank]; ///< of the second (a copy's destination)
  int64_t total = 1;  ///< elements walked
};

/// The plan of `rank` (at most MaxRank) dimensions `shape` with strides
/// `as` and `bs`.
template <int MaxRank>
StridePlan<MaxRank> planStrides(int rank, const int64_t *shape,
                                const int64_t *as, const int64_t *bs) {
  StridePlan<MaxRank> p;
  for (int d = 0; d < rank; ++d) {
    p.total *= shape[d];
    if (shape[d] == 1)
      continue;
    if (p.rank > 0) {
      const int prev = p.rank - 1;
      if (p.a[prev] == as[d] * shape[d] && p.b[prev] == bs[d] * shape[d]) {
        p.shape[prev] *= shape[d];
        p.a[prev] = as[d];
        p.b[prev] = bs[d];
        continue;
      }
    }
    p.shape[p.rank] = shape[d];
    p.a[p.rank] = as[d];
    p.b[p.rank] = bs[d];
    ++p.rank;
  }
  return p;
}

enum class GradReads { None, X, Y };

/// The forward tensor otck_unary_grad_f32 reads for `op` (the table in
/// otc/kernels.h).
inline GradReads gradReads(otck_unary_op op) {
  switch (op) {
  case OTCK_RELU:
  case OTCK_SIGMOID:
  case OTCK_TANH:
  case OTCK_EXP:
  case OTCK_SQRT:
  case OTCK_HARD_SIGMOID:
  case OTCK_RECIPROCAL:
  case OTCK_TAN:
    return GradReads::Y;
  case OTCK_NEG:
  case OTCK_SCALE:
  case OTCK_SIGN:
  case OTCK_FLOOR:
  case OTCK_CEIL:
  case OTCK_ROUND:
  case OTCK_ADD_SCALAR:
  case OTCK_IDENTITY:
    return GradReads::None;
  default:
    return GradReads::X;
  }
}

} // namespace otc::kernels

#endif // OTC_KERNELS_PLANS_H
