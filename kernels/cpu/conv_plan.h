//===- conv_plan.h - How the CPU convolutions cut their work ----*- C++ -*-===//
//
// The convolution kernels' geometry and work plans (conv.cpp), apart from
// the kernels so that the workspace size the compiler asks for
// (otck_conv_workspace_bytes, sizes.cpp) comes from the same plans without
// linking the kernels themselves.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_CPU_CONV_PLAN_H
#define OTC_KERNELS_CPU_CONV_PLAN_H

#include "otc/kernels.h"

#include "parallel.h"
#include "plans.h"

#include <algorithm>
#include <cstdint>

namespace otc::kernels::conv {

/// Floats one column buffer may hold before the work is cut finer (1 MiB,
/// so that a GEMM's column operand stays in a core's L2 cache).
constexpr int64_t kColBudget = int64_t(1) << 18;
/// Fewest output columns of a forward tile (narrower GEMMs lose speed).
constexpr int64_t kMinTile = 128;
/// Fewest GEMM rows (or weight-gradient columns) a channel block aims for.
constexpr int64_t kMinRows = 64;
/// Items the planners aim for, enough to feed kMaxThreads threads.
constexpr int64_t kTargetItems = 64;
/// Multiply-adds below which a kernel stays on the calling thread.
constexpr int64_t kConvGrain = int64_t(1) << 16;
/// Workspace the buffers may take before fewer workers share them.
constexpr int64_t kWorkspaceCap = int64_t(256) << 20;
/// Columns a GEMM aims for when an image's output is smaller than
/// kMinTile: that many positions of several images go into one product.
constexpr int64_t kImageColumns = 256;
/// Fewest GEMM rows (or weight-gradient columns) a channel block aims for
/// when images share a GEMM: its columns are few, so its rows must not be.
constexpr int64_t kMinRowsImages = 256;
/// Channel multiplier up to which depthwise convolutions use direct loops.
constexpr int64_t kDirectMaxMultiplier = 4;

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Rounds a float count up to 64 bytes so that buffers stay aligned alike.
inline int64_t roundFloats(int64_t n) { return ceilDiv(n, 16) * 16; }

/// A convolution with its spatial arrays completed to 3 dimensions
/// (ConvShape) and the CPU's choice of method.
struct ConvGeom : ConvShape {
  int64_t colRows; // cg * kSize
  bool pointwise;  // 1x1, stride 1, no padding: x is its own column matrix.
  bool direct;     // depthwise with a small multiplier: direct loops.
};

inline bool makeGeom(const otck_conv_desc *d, ConvGeom &g) {
  if (!makeConvShape(d, g))
    return false;
  g.pointwise = true;
  for (int i = 0; i < 3; ++i)
    g.pointwise = g.pointwise && g.k[i] == 1 && g.s[i] == 1 && g.pb[i] == 0 &&
                  g.in[i] == g.out[i];
  g.colRows = g.cg * g.kSize;
  g.direct = g.cg == 1 && g.mg <= kDirectMaxMultiplier;
  return true;
}

/// A window that covers the input exactly once: one output position, kernel
/// = input, no padding, one group (a 3x3 convolution on a 1x1 input once
/// its padding taps are cut, a classifier written as a convolution).
/// conv.cpp runs its kernels as one product over the batch each, in float:
/// in bfloat16 only for a batch under kGemmBf16MinEdge, an edge of each
/// product's C or its inner dimension, where the GEMMs compute in float too
/// (oneDNN's bf16 convolutions took 1.2-2.5x float's time there).
inline bool wholeWindow(const ConvGeom &g) {
  if (g.g != 1 || g.n == 0 || (g.bf16 && g.n >= kGemmBf16MinEdge))
    return false;
  for (int i = 0; i < 3; ++i)
    if (g.out[i] != 1 || g.k[i] != g.in[i] || g.pb[i] != 0 ||
        (g.k[i] > 1 && g.dil[i] != 1))
      return false;
  return true;
}

/// Number of parts to cut `total` into: `wanted`, or more so that none
/// exceeds maxPer, but never so many that parts fall below minPer.
inline int64_t splitParts(int64_t total, int64_t maxPer, int64_t minPer,
                          int64_t wanted) {
  const int64_t most = total / std::max<int64_t>(minPer, 1);
  int64_t parts =
      std::max(wanted, ceilDiv(total, std::max<int64_t>(maxPer, 1)));
  parts = std::clamp<int64_t>(std::min(parts, most), 1, total);
  // Balance: the same count with equal sizes, the last possibly shorter.
  return ceilDiv(total, ceilDiv(total, parts));
}

/// Buffers for `items` items of `bufFloats` each next to `extraFloats`:
/// one per worker, as many as the workspace cap allows (at least one).
inline int64_t bufferCount(int64_t items, int64_t bufFloats,
                           int64_t extraFloats) {
  int64_t n = std::min<int64_t>(items, kMaxThreads);
  if (bufFloats > 0) {
    int64_t room = (kWorkspaceCap / 4 - extraFloats) / bufFloats;
    n = std::min(n, std::max<int64_t>(room, 1));
  }
  return std::max<int64_t>(n, 1);
}

/// How a kernel cuts its work: `items` items, buffer b at workspace floats
/// extra + b * bufFloats, `workers` buffers at most.
struct Plan {
  int64_t items = 0;
  int64_t bufFloats = 0;
  int64_t extraFloats = 0;
  int64_t workers = 1;
  int64_t itemCost = 0;    // multiply-adds of one item
  bool sharedCols = false; // forward: columns of every tile in extra
  // Forward: output tiles and output-channel blocks per image and group.
  int64_t tiles = 1, tile = 0, mBlocks = 1, mb = 0;
  // Gradients: input-channel blocks per group, batch chunks (weight only).
  int64_t cBlocks = 1, cb = 0, chunks = 1;
  // Images side by side in one GEMM (1: one image per GEMM).
  int64_t nb = 1;
  int64_t bytes() const { return (extraFloats + workers * bufFloats) * 4; }
};

/// Images per GEMM: 1 when an image's output fills a GEMM (kMinTile
/// positions), else enough images for kImageColumns columns while `rows`
/// rows of columns stay within the column budget; balanced over the batch.
inline int64_t imagesPerGemm(const ConvGeom &g, int64_t rows) {
  if (g.outSize >= kMinTile || g.n <= 1)
    return 1;
  int64_t nb = std::min(g.n, ceilDiv(kImageColumns, g.outSize));
  nb = std::min(nb, kColBudget / std::max<int64_t>(rows * g.outSize, 1));
  if (nb <= 1)
    return 1;
  return ceilDiv(g.n, ceilDiv(g.n, nb));
}

inline Plan planForward(const ConvGeom &g) {
  Plan p;
  if (g.direct || g.n == 0 || g.outSize == 0)
    return p;
  p.nb = imagesPerGemm(g, g.colRows);
  if (p.nb > 1) {
    const int64_t chunks = ceilDiv(g.n, p.nb);
    p.tile = g.outSize;
    p.mBlocks =
        splitParts(g.mg, g.mg, kMinRowsImages, ceilDiv(kTargetItems, chunks));
    p.mb = ceilDiv(g.mg, p.mBlocks);
    p.items = chunks * p.mBlocks;
    p.itemCost = g.g * p.mb * g.colRows * p.nb * g.outSize;
    p.bufFloats = roundFloats(g.colRows * p.nb * g.outSize) +
                  roundFloats(p.mb * p.nb * g.outSize);
    p.workers = bufferCount(p.items, p.bufFloats, 0);
    return p;
  }
  if (g.pointwise) {
    p.tile = g.outSize;
  } else {
    int64_t maxTile = std::max(kMinTile, kColBudget / g.colRows);
    p.tiles =
        splitParts(g.outSize, maxTile, kMinTile, ceilDiv(kTargetItems, g.n));
    p.tile = ceilDiv(g.outSize, p.tiles);
  }
  p.mBlocks =
      splitParts(g.mg, g.mg, kMinRows, ceilDiv(kTargetItems, g.n * p.tiles));
  p.mb = ceilDiv(g.mg, p.mBlocks);
  p.items = g.n * p.tiles * p.mBlocks;
  p.itemCost = g.g * p.mb * g.colRows * p.tile;
  const int64_t colFloats =
      g.pointwise ? 0 : roundFloats(g.c * g.kSize * p.tile);
  const int64_t tmpFloats = p.tiles > 1 ? roundFloats(p.mb * p.tile) : 0;
  // Output-channel blocks of one tile share its columns: built once per
  // tile, first, when they fit in half the cap.
  const int64_t units = g.n * p.tiles;
  p.sharedCols =
      colFloats > 0 && p.mBlocks > 1 && units * colFloats <= kWorkspaceCap / 8;
  if (p.sharedCols) {
    p.extraFloats = units * colFloats;
    p.bufFloats = tmpFloats;
  } else {
    p.bufFloats =
        (g.pointwise ? 0 : roundFloats(g.colRows * p.tile)) + tmpFloats;
  }
  p.workers = bufferCount(p.items, p.bufFloats, p.extraFloats);
  return p;
}

inline Plan planGradInput(const ConvGeom &g) {
  Plan p;
  if (g.direct || g.n == 0 || g.outSize == 0)
    return p;
  p.nb = imagesPerGemm(g, std::max(g.colRows, g.mg));
  const int64_t chunks = ceilDiv(g.n, p.nb);
  const int64_t wanted = ceilDiv(kTargetItems, chunks * g.g);
  const int64_t minRows = p.nb > 1 ? kMinRowsImages : kMinRows;
  if (g.pointwise && p.nb == 1)
    p.cBlocks = splitParts(g.cg, g.cg, kMinRows, wanted);
  else
    p.cBlocks = splitParts(g.cg, kColBudget / (g.kSize * g.outSize * p.nb),
                           ceilDiv(minRows, g.kSize), wanted);
  p.cb = ceilDiv(g.cg, p.cBlocks);
  p.items = chunks * g.g * p.cBlocks;
  p.itemCost = p.cb * g.kSize * g.mg * g.outSize * p.nb;
  if (p.nb > 1) {
    p.bufFloats = roundFloats(p.cb * g.kSize * p.nb * g.outSize) +
                  roundFloats(g.mg * p.nb * g.outSize);
    p.workers = bufferCount(p.items, p.bufFloats, p.extraFloats);
    return p;
  }
  if (!g.pointwise)
    p.bufFloats = roundFloats(p.cb * g.kSize * g.outSize);
  p.workers = bufferCount(p.items, p.bufFloats, p.extraFloats);
  return p;
}

inline Plan planGradWeight(const ConvGeom &g) {
  Plan p;
  if (g.direct || g.n == 0 || g.outSize == 0)
    return p;
  p.nb = imagesPerGemm(g, std::max(g.colRows, g.mg));
  const int64_t wanted = ceilDiv(kTargetItems, g.g);
  const int64_t minRows = p.nb > 1 ? kMinRowsImages : kMinRows;
  if (g.pointwise && p.nb == 1)
    p.cBlocks = splitParts(g.cg, g.cg, kMinRows, wanted);
  else
    p.cBlocks = splitParts(g.cg, kColBudget / (g.kSize * g.outSize * p.nb),
                           ceilDiv(minRows, g.kSize), wanted);
  p.cb = ceilDiv(g.cg, p.cBlocks);
  const int64_t wFloats = g.m * g.colRows;
  // Chunks of whole GEMMs: at least p.nb images each.
  p.chunks = std::clamp<int64_t>(ceilDiv(kTargetItems, g.g * p.cBlocks), 1,
                                 ceilDiv(g.n, p.nb));
  // Partial sums beyond the first chunk's (written to dw) take at most half
  // the cap.
  p.chunks = std::min(p.chunks, 1 + kWorkspaceCap / 8 / wFloats);
  p.items = g.g * p.cBlocks * p.chunks;
  p.itemCost = ceilDiv(g.n, p.chunks) * g.mg * p.cb * g.kSize * g.outSize;
  p.extraFloats = (p.chunks - 1) * roundFloats(wFloats);
  if (p.nb > 1)
    p.bufFloats = roundFloats(p.cb * g.kSize * p.nb * g.outSize) +
                  roundFloats(g.mg * p.nb * g.outSize) +
                  (p.cBlocks > 1 ? roundFloats(g.mg * p.cb * g.kSize) : 0);
  else
    p.bufFloats = roundFloats((g.pointwise ? 0 : p.cb * g.kSize * g.outSize) +
                              (p.cBlocks > 1 ? g.mg * p.cb * g.kSize : 0));
  p.workers = bufferCount(p.items, p.bufFloats, p.extraFloats);
  return p;
}

/// Output positions an item of the oneDNN path aims for: fewer starve
/// its kernels (a 1x1 output of one image is a matrix-vector product).
constexpr int64_t kDnnlPositions = 256;
/// Items the oneDNN path aims for: each runs single-threaded primitives.
constexpr int64_t kDnnlItems = 8;
/// Floats of an item's image copies on the oneDNN path, at most (unless
/// one image needs more).
constexpr int64_t kDnnlItemFloats = int64_t(4) << 20;
/// Fewest channels of a channel block on the oneDNN path.
constexpr int64_t kDnnlMinBlock = 64;
/// Channel padding of oneDNN's blocked layouts (16 floats: AVX-512).
constexpr int64_t kDnnlBlock = 16;
/// Scratchpad floats a primitive may take beyond one input's size at the
/// output's resolution before the kernel falls back to im2col (oneDNN's
/// single-threaded convolutions take none or a padded bias).
constexpr int64_t kDnnlScratchFloats = 16384;

/// The oneDNN path's work (conv_onednn.cpp).
enum class DnnlOp { Forward, GradInput, GradWeight };

/// The oneDNN path's plan, for ungrouped convolutions: items are chunks of
/// nb images times blocks of cb channels (output channels forward and for
/// the weight gradient, input channels for the input gradient), each run by
/// single-threaded oneDNN primitives on blocked copies in one worker's
/// buffer. What several items share sits once in the workspace's first
/// extraFloats: the weights' blocked copy, made once per call (forward and
/// input gradient: per channel block), and the weight gradient's blocked
/// partial sums (per chunk and channel block), added in chunk order before
/// one reorder into dw.
/// Buffer sizes are bounds for any ISA (channels padded to kDnnlBlock); a
/// primitive that needs more, or that oneDNN does not implement with a JIT
/// kernel, leaves the work to the im2col path, whose workspace
/// otck_conv_workspace_bytes also covers.
struct DnnlPlan {
  bool use = false;
  int64_t nb = 0, chunks = 0, cb = 0, blocks = 0, items = 0;
  // Floats of an item's blocked copies of the primitive's two inputs and its
  // output (forward x, w, y; input gradient dy, w, dx; weight gradient x,
  // dy, dw) and of its scratchpad. A worker's buffer holds those the item
  // does not share: all but the weights (forward, input gradient) or dw.
  int64_t srcFloats = 0, weightFloats = 0, dstFloats = 0, scratchFloats = 0;
  int64_t bufFloats = 0, extraFloats = 0, workers = 0;
  int64_t bytes() const {
    return use ? (extraFloats + workers * bufFloats) * 4 : 0;
  }
};

inline int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

inline DnnlPlan planDnnl(const ConvGeom &g, DnnlOp op) {
  DnnlPlan p;
  // 1x1 kernels are GEMMs already (no columns to build, no copies) unless
  // in bfloat16, which the im2col path does not compute; input gradients of
  // few channels (a stem's) run slower on oneDNN's kernels, padded to a
  // whole block, than through im2col.
  if (g.g != 1 || g.direct || (g.kSize == 1 && !g.bf16) || g.n == 0 ||
      g.outSize == 0 || (op == DnnlOp::GradInput && g.c < kDnnlBlock))
    return p;
  const int64_t channels = op == DnnlOp::GradInput ? g.c : g.m;
  const int64_t c = roundUp(g.c, kDnnlBlock), m = roundUp(g.m, kDnnlBlock);
  p.chunks = ceilDiv(g.n, std::min(g.n, ceilDiv(kDnnlPositions, g.outSize)));
  // Each weight-gradient chunk is one partial sum of the (padded) weights,
  // which take at most a quarter of the workspace cap.
  const int64_t partialBudget = kWorkspaceCap / 4 / 4;
  const int64_t partialFloats = roundFloats(m * c * g.kSize);
  if (op == DnnlOp::GradWeight)
    p.chunks = std::min({p.chunks, kDnnlItems, partialBudget / partialFloats});
  if (p.chunks < 1)
    return p;
  // An image's copies (input and output) bound the images of an item.
  const int64_t imageFloats = c * g.inSize + m * g.outSize;
  p.chunks = std::max(
      p.chunks,
      ceilDiv(g.n, std::max<int64_t>(kDnnlItemFloats / imageFloats, 1)));
  if (op == DnnlOp::GradWeight && p.chunks * partialFloats > partialBudget)
    return p;
  p.nb = ceilDiv(g.n, p.chunks);
  p.chunks = ceilDiv(g.n, p.nb);
  p.blocks =
      std::clamp<int64_t>(ceilDiv(kDnnlItems, p.chunks), 1,
                          std::max<int64_t>(channels / kDnnlMinBlock, 1));
  p.cb = roundUp(ceilDiv(channels, p.blocks), kDnnlBlock);
  p.blocks = ceilDiv(channels, p.cb);
  p.items = p.chunks * p.blocks;
  switch (op) {
  case DnnlOp::Forward:
    p.srcFloats = roundFloats(p.nb * c * g.inSize);
    p.weightFloats = roundFloats(p.cb * c * g.kSize);
    p.dstFloats = roundFloats(p.nb * p.cb * g.outSize);
    break;
  case DnnlOp::GradInput:
    p.srcFloats = roundFloats(p.nb * m * g.outSize);
    p.weightFloats = roundFloats(m * p.cb * g.kSize);
    p.dstFloats = roundFloats(p.nb * p.cb * g.inSize);
    break;
  case DnnlOp::GradWeight:
    p.srcFloats = roundFloats(p.nb * c * g.inSize);
    p.weightFloats = roundFloats(p.nb * p.cb * g.outSize);
    p.dstFloats = roundFloats(p.cb * c * g.kSize);
    break;
  }
  p.scratchFloats =
      roundFloats(p.nb * std::max(c, m) * g.outSize + kDnnlScratchFloats);
  p.bufFloats = p.srcFloats + p.scratchFloats;
  if (op == DnnlOp::GradWeight) {
    p.bufFloats += p.weightFloats;
    p.extraFloats = p.items * p.dstFloats;
  } else {
    p.bufFloats += p.dstFloats;
    p.extraFloats = p.blocks * p.weightFloats;
  }
  p.workers = bufferCount(p.items, p.bufFloats, p.extraFloats);
  p.use = true;
  return p;
}

/// A convolution whose window has taps that read only padding at every
/// output position (a 3x3 window on a 1x1 input, a stride-2 one on a 2x2
/// input) run on the window cut to its first through last taps that read
/// the input: the taps cut add nothing to y or dx and their weight gradient
/// is 0. The kernels convolve a copy of the kept taps' weights (the first
/// weightFloats of the workspace; the rest is `inner`'s), and scatter the
/// weight gradient back with zeros at the taps cut.
struct TapTrim {
  otck_conv_desc inner;      // the cut convolution (same input, output, stride)
  int64_t lo[3] = {0, 0, 0}; // first kept tap per Window3 slot
  int64_t weightFloats = 0;  // the kept weights, rounded (roundFloats)
};

/// Fills `t` for `d`; false when there is nothing to cut (every tap
/// reads the input somewhere, d is invalid, or it has no output or no
/// input to read).
inline bool trimTaps(const otck_conv_desc *d, TapTrim &t) {
  ConvShape g;
  if (!makeConvShape(d, g) || g.n == 0 || g.outSize == 0 || g.inSize == 0)
    return false;
  t.inner = *d;
  bool cut = false;
  int64_t kept = 1;
  for (int j = 0; j < d->spatial; ++j) {
    const int64_t in = d->in[j], out = d->out[j], s = d->stride[j],
                  dil = d->dilation[j], pb = d->pad_begin[j];
    // Tap k reads in[o * s + k * dil - pb] for o in [0, out).
    auto reads = [&](int64_t k) {
      const int64_t first = k * dil - pb;
      const int64_t o = first >= 0 ? 0 : ceilDiv(-first, s);
      return o < out && o * s + first < in;
    };
    int64_t lo = 0, hi = d->kernel[j] - 1;
    while (lo <= hi && !reads(lo))
      ++lo;
    while (hi >= lo && !reads(hi))
      --hi;
    if (lo > hi)
      return false; // no tap reads x: the usual paths write y = bias
    // Dilated windows can cut to a negative begin pad, or an end pad of a
    // stride or more inside x, which oneDNN refuses: keep the whole window.
    const int64_t padBegin = pb - lo * dil;
    const int64_t padEnd =
        (out - 1) * s + (hi - lo) * dil - padBegin - (in - 1);
    if (padBegin < 0 || padEnd + s <= 0)
      return false;
    cut = cut || lo > 0 || hi < d->kernel[j] - 1;
    t.lo[j + 3 - d->spatial] = lo;
    t.inner.kernel[j] = hi - lo + 1;
    t.inner.pad_begin[j] = padBegin;
    kept *= hi - lo + 1;
  }
  t.weightFloats = roundFloats(g.m * g.cg * kept);
  return cut;
}

/// Workspace bytes of the kernels for `d` (otck_conv_workspace_bytes).
inline int64_t workspaceBytes(const otck_conv_desc *d) {
  TapTrim t;
  const bool trimmed = trimTaps(d, t);
  ConvGeom g;
  if (!makeGeom(trimmed ? &t.inner : d, g))
    return 0;
  // A whole window's forward stages y^T.
  return (trimmed ? t.weightFloats * 4 : 0) +
         std::max({wholeWindow(g) ? roundFloats(g.n * g.m) * 4 : 0,
                   planForward(g).bytes(), planGradInput(g).bytes(),
                   planGradWeight(g).bytes(),
                   planDnnl(g, DnnlOp::Forward).bytes(),
                   planDnnl(g, DnnlOp::GradInput).bytes(),
                   planDnnl(g, DnnlOp::GradWeight).bytes()});
}

/// The oneDNN path (conv_onednn.cpp): false when it does not take `d`
/// (planDnnl declines, or oneDNN has no JIT kernel for it within the plan's
/// buffers: nothing written) or when oneDNN failed midway (outputs partly
/// written); the im2col path, which overwrites every output, runs it then.
bool dnnlForward(const otck_conv_desc *d, const ConvGeom &g, const float *x,
                 const float *w, const float *bias, float *y, void *workspace);
bool dnnlGradInput(const otck_conv_desc *d, const ConvGeom &g, const float *dy,
                   const float *w, float *dx, void *workspace);
bool dnnlGradWeight(const otck_conv_desc *d, const ConvGeom &g, const float *dy,
                    const float *x, float *dw, void *workspace);

/// dw[0, n) += partial sums 1 .. chunks - 1 of a weight gradient, in chunk
/// order (sum c - 1 at partials + (c - 1) * stride; conv.cpp).
void addPartialSums(float *dw, int64_t n, const float *partials, int64_t stride,
                    int64_t chunks);

} // namespace otc::kernels::conv

#endif // OTC_KERNELS_CPU_CONV_PLAN_H
