//===- pad.h - The index arithmetic of otck_pad -------------------*- C++
//-*-===//
//
// Internal to the kernel libraries: which input element each output element
// of ONNX Pad copies (otc/kernels.h states the rules), shared by the CPU
// kernels and their CUDA twins so that both copy and sum alike.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_SHARED_PAD_H
#define OTC_KERNELS_SHARED_PAD_H

#include "otc/kernels.h"

#include "random.h" // OTCK_HD

#include <stdint.h>

namespace otc::kernels {
inline namespace OTCK_ISA {

/// One dimension of a pad: the input is cropped to [lo, lo + m), then
/// `before` elements are added in front; `out` is the padded size.
struct PadDim {
  int64_t n, out, lo, m, before;
};

OTCK_HD PadDim makePadDim(int64_t n, int64_t pb, int64_t pe) {
  PadDim d;
  d.n = n;
  d.out = n + pb + pe;
  d.lo = pb < 0 ? -pb : 0;
  d.m = n - d.lo - (pe < 0 ? -pe : 0);
  d.before = pb > 0 ? pb : 0;
  return d;
}

/// Input index that output index o copies, or -1 for a constant element.
OTCK_HD int64_t padSource(const PadDim &d, int mode, int64_t o) {
  int64_t t = o - d.before;
  if (t >= 0 && t < d.m)
    return d.lo + t;
  if (mode == OTCK_PAD_CONSTANT || d.m <= 0)
    return -1;
  if (mode == OTCK_PAD_EDGE) {
    t = t < 0 ? 0 : d.m - 1;
  } else if (d.m == 1) {
    t = 0;
  } else {
    // Reflection without repeating the edge has period 2 (m - 1).
    const int64_t period = 2 * (d.m - 1);
    t %= period;
    if (t < 0)
      t += period;
    if (t >= d.m)
      t = period - t;
  }
  return d.lo + t;
}

/// Smallest output index >= o that copies input index i, or d.out.
OTCK_HD int64_t nextPreimage(const PadDim &d, int mode, int64_t i, int64_t o) {
  const int64_t interiorEnd = d.before + (d.m > 0 ? d.m : 0);
  for (; o < d.out; ++o) {
    if (o >= d.before && o < interiorEnd) {
      // The interior holds at most one preimage: jump to it or past it.
      const int64_t oi = i - d.lo + d.before;
      if (i >= d.lo && i < d.lo + d.m && oi >= o)
        return oi;
      o = interiorEnd - 1;
      continue;
    }
    if (padSource(d, mode, o) == i)
      return o;
  }
  return d.out;
}

OTCK_HD bool makePadDims(int rank, const int64_t *inShape, const int64_t *pb,
                         const int64_t *pe, PadDim *dims, int64_t &outTotal,
                         int64_t &inTotal) {
  outTotal = inTotal = 1;
  for (int d = 0; d < rank; ++d) {
    dims[d] = makePadDim(inShape[d], pb[d], pe[d]);
    if (dims[d].out < 0 || dims[d].m < 0)
      return false;
    outTotal *= dims[d].out;
    inTotal *= inShape[d];
  }
  return true;
}

} // namespace OTCK_ISA
} // namespace otc::kernels

#endif // OTC_KERNELS_SHARED_PAD_H
