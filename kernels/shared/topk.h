//===- topk.h - The order of otck_topk_f32 ----------------------*- C++ -*-===//
//
// Internal to the kernel libraries: which of two elements TopK ranks first
// (otc/kernels.h states the rule), shared by the CPU kernel and its CUDA
// twin, and the same order as an unsigned key for radix sorts.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_SHARED_TOPK_H
#define OTC_KERNELS_SHARED_TOPK_H

#include "random.h" // OTCK_HD

#include <stdint.h>
#include <string.h>

namespace otc::kernels {
inline namespace OTCK_ISA {

/// ONNX TopK order: is element i ranked before element j? NaN ranks above
/// every number; equal values (-0 and +0 among them) rank by index.
struct TopKOrder {
  const float *x;
  int64_t stride;
  bool largest;
  OTCK_HD bool operator()(int64_t i, int64_t j) const {
    const float a = x[i * stride], b = x[j * stride];
    const bool an = a != a, bn = b != b;
    if (an || bn) {
      if (an && bn)
        return i < j;
      return largest ? an : bn;
    }
    if (a != b)
      return largest ? a > b : a < b;
    return i < j;
  }
};

/// A key of v whose unsigned order is TopKOrder's up to the index: i ranks
/// before j exactly when topkKey(x[i]) < topkKey(x[j]), or the keys are
/// equal and i < j (what a stable ascending sort gives). Every NaN maps to
/// one key, -0 to +0's.
OTCK_HD uint32_t topkKey(float v, bool largest) {
  uint32_t u;
  if (v != v) {
    u = 0xffffffffu; // Above +inf (0xff800000).
  } else {
    if (v == 0.0f)
      v = 0.0f;
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    u = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  }
  return largest ? ~u : u;
}

} // namespace OTCK_ISA
} // namespace otc::kernels

#endif // OTC_KERNELS_SHARED_TOPK_H
