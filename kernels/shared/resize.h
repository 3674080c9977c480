//===- resize.h - The sampling rule of otck_resize --------------*- C++ -*-===//
//
// Internal to the kernel libraries: which input elements, with which
// weights, each output element of ONNX Resize reads (otc/kernels.h states
// the rules), shared by the CPU kernels and their CUDA twins so that both
// sample, weight and sum alike.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_SHARED_RESIZE_H
#define OTC_KERNELS_SHARED_RESIZE_H

#include "otc/kernels.h"

#include "random.h" // OTCK_HD

#include <math.h>
#include <stdint.h>

namespace otc::kernels {
inline namespace OTCK_ISA {

/// Input samples of one output index along one dimension: value =
/// (1 - w1) * x[i0] + w1 * x[i1]; nearest uses i0 alone (w1 == 0).
struct Tap {
  int64_t i0, i1;
  float w1;
};

struct ResizeDim {
  int64_t n, m;
  double scale;
};

OTCK_HD Tap resizeTap(const ResizeDim &d, int64_t o, int mode, int coord,
                      int nearest) {
  const double n = double(d.n);
  double x;
  switch (coord) {
  case OTCK_RESIZE_PYTORCH_HALF_PIXEL:
    x = d.m > 1 ? (double(o) + 0.5) / d.scale - 0.5 : 0.0;
    break;
  case OTCK_RESIZE_ALIGN_CORNERS: {
    // ONNX divides by the unrounded resized length (n * scale).
    double resized = n * d.scale;
    x = resized > 1.0 ? double(o) * (n - 1.0) / (resized - 1.0) : 0.0;
    break;
  }
  case OTCK_RESIZE_ASYMMETRIC:
    x = double(o) / d.scale;
    break;
  case OTCK_RESIZE_TF_HALF_PIXEL_FOR_NN:
    x = (double(o) + 0.5) / d.scale;
    break;
  case OTCK_RESIZE_HALF_PIXEL:
  default:
    x = (double(o) + 0.5) / d.scale - 0.5;
    break;
  }
  Tap t;
  if (mode == OTCK_RESIZE_NEAREST) {
    const double f = floor(x), frac = x - f;
    double r;
    switch (nearest) {
    case OTCK_RESIZE_ROUND_PREFER_CEIL:
      r = frac >= 0.5 ? f + 1.0 : f;
      break;
    case OTCK_RESIZE_FLOOR:
      r = f;
      break;
    case OTCK_RESIZE_CEIL:
      r = ceil(x);
      break;
    case OTCK_RESIZE_ROUND_PREFER_FLOOR:
    default:
      r = frac > 0.5 ? f + 1.0 : f;
      break;
    }
    r = r < 0.0 ? 0.0 : (r > n - 1.0 ? n - 1.0 : r);
    t.i0 = t.i1 = int64_t(r);
    t.w1 = 0.0f;
    return t;
  }
  // Linear: samples outside the input take the edge value.
  x = x < 0.0 ? 0.0 : (x > n - 1.0 ? n - 1.0 : x);
  t.i0 = int64_t(x);
  t.w1 = float(x - double(t.i0));
  t.i1 = t.i0 + 1 < d.n && t.w1 != 0.0f ? t.i0 + 1 : t.i0;
  t.w1 = t.i1 == t.i0 ? 0.0f : t.w1;
  return t;
}

/// One weighted input position of a row's outer dimensions.
struct Corner {
  int64_t off;
  float w;
};
constexpr int kMaxCorners = 1 << (OTCK_MAX_RANK - 1);

/// The corners (offsets in x, weights) of output row `idx` over dims
/// [first, last) of the resize; returns their number.
OTCK_HD int rowCorners(const ResizeDim *dims, int first, int last,
                       const int64_t *idx, const int64_t *inStride, int mode,
                       int coord, int nearest, Corner *c) {
  int count = 1;
  c[0] = {0, 1.0f};
  for (int d = first; d < last; ++d) {
    Tap t = resizeTap(dims[d], idx[d], mode, coord, nearest);
    if (t.w1 == 0.0f) {
      for (int k = 0; k < count; ++k)
        c[k].off += t.i0 * inStride[d];
      continue;
    }
    // Each corner splits in two; i0's half first.
    for (int k = count - 1; k >= 0; --k) {
      Corner base = c[k];
      c[2 * k] = {base.off + t.i0 * inStride[d], base.w * (1.0f - t.w1)};
      c[2 * k + 1] = {base.off + t.i1 * inStride[d], base.w * t.w1};
    }
    count *= 2;
  }
  return count;
}

OTCK_HD bool makeResizeDims(int rank, const int64_t *inShape,
                            const int64_t *outShape, const float *scales,
                            ResizeDim *dims, int64_t *inStride,
                            int64_t &inTotal, int64_t &outTotal) {
  inTotal = outTotal = 1;
  for (int d = rank - 1; d >= 0; --d) {
    dims[d] = {inShape[d], outShape[d], double(scales[d])};
    inStride[d] = inTotal;
    inTotal *= inShape[d];
    outTotal *= outShape[d];
  }
  return inTotal > 0 && outTotal > 0;
}

/// One output element: the row corners' samples at tap t, weighted and
/// added in order; a sole sample of weight 1 is copied (its bits kept: -0,
/// NaN payloads). Zero weights skip their sample: an infinite neighbour
/// must not turn the result into NaN.
OTCK_HD float resizeSample(const float *x, const Corner *c, int count,
                           const Tap &t) {
  if (count == 1 && c[0].w == 1.0f && t.w1 == 0.0f)
    return x[c[0].off + t.i0];
  float acc = 0.0f;
  if (t.w1 == 0.0f) {
    for (int k = 0; k < count; ++k)
      acc += c[k].w * x[c[k].off + t.i0];
  } else {
    for (int k = 0; k < count; ++k) {
      const float *xr = x + c[k].off;
      acc += c[k].w * ((1.0f - t.w1) * xr[t.i0] + t.w1 * xr[t.i1]);
    }
  }
  return acc;
}

/// True when output index o reads input index o alone for every o.
OTCK_HD bool isIdentityDim(const ResizeDim &d, int mode, int coord,
                           int nearest) {
  if (d.n != d.m)
    return false;
  for (int64_t o = 0; o < d.m; ++o) {
    Tap t = resizeTap(d, o, mode, coord, nearest);
    if (t.i0 != o || t.w1 != 0.0f)
      return false;
  }
  return true;
}

} // namespace OTCK_ISA
} // namespace otc::kernels

#endif // OTC_KERNELS_SHARED_RESIZE_H
