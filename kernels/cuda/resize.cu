//===- resize.cu - Resize and its gradient on CUDA ------------------------===//
//
// The CUDA twins of otck_resize_f32 and otck_resize_grad_f32
// (cpu/movement.cpp), bit for bit. Both libraries take the sampling rule
// (which input elements, with which float weights, each output element
// reads) from shared/resize.h:
//  - the forward gives each y element to one thread, which adds its
//    corners' weighted samples in the CPU's order;
//  - the gradient gives each dx element to one thread, which gathers the dy
//    elements that read it, in the order in which the CPU scatters them
//    (increasing output index), with the CPU's products: no atomics. Along
//    each dimension the outputs reading input index i are those whose first
//    sample is i - 1 or i; since the sample index never decreases with the
//    output index for a positive scale, a binary search finds them (any
//    other scale scans the whole dimension).
//
//===----------------------------------------------------------------------===//

#include "cuda_common.h"
#include "resize.h"

namespace otc::kernels::cuda {
namespace {

struct ResizePlan {
  int rank, mode, coord, nearest;
  ResizeDim dims[OTCK_MAX_RANK];
  int64_t inStride[OTCK_MAX_RANK];
};

__device__ Tap tapOf(const ResizePlan &p, int d, int64_t o) {
  return resizeTap(p.dims[d], o, p.mode, p.coord, p.nearest);
}

/// One thread per y element: otck_resize_f32's sum for that element.
__global__ void resizeKernel(ResizePlan p, int64_t total, const float *x,
                             float *y) {
  const int last = p.rank - 1;
  for (int64_t u = globalThread(); u < total; u += gridThreads()) {
    int64_t idx[OTCK_MAX_RANK], rem = u;
    for (int d = last; d >= 0; --d) {
      idx[d] = rem % p.dims[d].m;
      rem /= p.dims[d].m;
    }
    Corner c[kMaxCorners];
    const int count = rowCorners(p.dims, 0, last, idx, p.inStride, p.mode,
                                 p.coord, p.nearest, c);
    const Tap t = tapOf(p, last, idx[last]);
    y[u] = resizeSample(x, c, count, t);
  }
}

/// Whether output index o of dimension d reads input index i.
__device__ bool reads(const Tap &t, int64_t i) {
  return t.i0 == i || (t.w1 != 0.0f && t.i1 == i);
}

/// The first output index of dimension d whose first sample is >= v
/// (the sample index never decreases with the output index).
__device__ int64_t firstSampleAtLeast(const ResizePlan &p, int d, int64_t v) {
  int64_t lo = 0, hi = p.dims[d].m;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (tapOf(p, d, mid).i0 >= v)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

/// The smallest output index >= o in [o, end) of dimension d that reads
/// input index i, or end.
__device__ int64_t nextReader(const ResizePlan &p, int d, int64_t i, int64_t o,
                              int64_t end) {
  while (o < end && !reads(tapOf(p, d, o), i))
    ++o;
  return o;
}

/// One thread per dx element: the sum, from 0 in increasing output index
/// (otck_resize_grad_f32's scatter order), of the dy elements that read it,
/// each times the CPU's weight: its outer dimensions' factors multiplied in
/// dimension order (rowCorners), then the last dimension's.
__global__ void resizeGradKernel(ResizePlan p, int64_t total, const float *dy,
                                 float *dx) {
  const int last = p.rank - 1;
  for (int64_t e = globalThread(); e < total; e += gridThreads()) {
    int64_t idx[OTCK_MAX_RANK], lo[OTCK_MAX_RANK], hi[OTCK_MAX_RANK],
        o[OTCK_MAX_RANK], outStride[OTCK_MAX_RANK];
    int64_t rem = e, s = 1;
    for (int d = last; d >= 0; --d) {
      idx[d] = rem % p.dims[d].n;
      rem /= p.dims[d].n;
      outStride[d] = s;
      s *= p.dims[d].m;
      if (p.dims[d].scale > 0.0) {
        lo[d] = firstSampleAtLeast(p, d, idx[d] - 1);
        hi[d] = firstSampleAtLeast(p, d, idx[d] + 1);
      } else {
        lo[d] = 0;
        hi[d] = p.dims[d].m;
      }
    }
    float acc = 0.0f;
    bool any = true;
    for (int d = 0; d < last; ++d) {
      o[d] = nextReader(p, d, idx[d], lo[d], hi[d]);
      any = any && o[d] < hi[d];
    }
    const int64_t j = idx[last];
    while (any) {
      int64_t off = 0;
      float w = 1.0f;
      for (int d = 0; d < last; ++d) {
        off += o[d] * outStride[d];
        const Tap t = tapOf(p, d, o[d]);
        if (t.w1 != 0.0f)
          w = w * (t.i0 == idx[d] ? 1.0f - t.w1 : t.w1);
      }
      const float *g = dy + off;
      for (int64_t k = lo[last]; k < hi[last]; ++k) {
        const Tap t = tapOf(p, last, k);
        if (!reads(t, j))
          continue;
        const float gw = w * g[k];
        acc += t.i0 == j ? (1.0f - t.w1) * gw : t.w1 * gw;
      }
      int d = last - 1;
      for (; d >= 0; --d) {
        o[d] = nextReader(p, d, idx[d], o[d] + 1, hi[d]);
        if (o[d] < hi[d])
          break;
        o[d] = nextReader(p, d, idx[d], lo[d], hi[d]);
      }
      any = d >= 0;
    }
    dx[e] = acc;
  }
}

/// The plan of a resize; false (and nothing to do) when either side is
/// empty. inTotal/outTotal as makeResizeDims.
bool makePlan(int rank, const int64_t *inShape, const int64_t *outShape,
              const float *scales, int mode, int coord, int nearest,
              ResizePlan &p, int64_t &inTotal, int64_t &outTotal) {
  p.rank = rank;
  p.mode = mode;
  p.coord = coord;
  p.nearest = nearest;
  return makeResizeDims(rank, inShape, outShape, scales, p.dims, p.inStride,
                        inTotal, outTotal);
}

} // namespace
} // namespace otc::kernels::cuda

using namespace otc::kernels::cuda;

extern "C" void otckd_resize_f32(int rank, const int64_t *in_shape,
                                 const int64_t *out_shape, const float *scales,
                                 int mode, int coord_mode, int nearest_mode,
                                 const float *x, float *y) {
  if (rank < 0 || rank > OTCK_MAX_RANK)
    return;
  if (rank == 0) {
    otckd_copy(sizeof(float), x, y);
    return;
  }
  ResizePlan p;
  int64_t inTotal, outTotal;
  if (!makePlan(rank, in_shape, out_shape, scales, mode, coord_mode,
                nearest_mode, p, inTotal, outTotal))
    return;
  resizeKernel<<<gridFor(outTotal), kThreads, 0, currentStream()>>>(p, outTotal,
                                                                    x, y);
  checkLaunch("otckd_resize_f32");
}

extern "C" void otckd_resize_grad_f32(int rank, const int64_t *in_shape,
                                      const int64_t *out_shape,
                                      const float *scales, int mode,
                                      int coord_mode, int nearest_mode,
                                      const float *dy, float *dx) {
  if (rank < 0 || rank > OTCK_MAX_RANK)
    return;
  if (rank == 0) {
    otckd_copy(sizeof(float), dy, dx);
    return;
  }
  ResizePlan p;
  int64_t inTotal, outTotal;
  if (!makePlan(rank, in_shape, out_shape, scales, mode, coord_mode,
                nearest_mode, p, inTotal, outTotal)) {
    otckd_fill_f32(inTotal, 0.0f, dx);
    return;
  }
  // Every dimension maps each index to itself: the CPU copies dy (a sum
  // would turn -0 into +0).
  bool identity = true;
  for (int d = 0; d < rank && identity; ++d)
    identity = isIdentityDim(p.dims[d], mode, coord_mode, nearest_mode);
  if (identity) {
    otckd_copy(inTotal * int64_t(sizeof(float)), dy, dx);
    return;
  }
  resizeGradKernel<<<gridFor(inTotal), kThreads, 0, currentStream()>>>(
      p, inTotal, dy, dx);
  checkLaunch("otckd_resize_grad_f32");
}
