//===- conv_onednn.cpp - Convolutions through oneDNN's primitives ---------===//
//
// The kernels of ungrouped convolutions, run by oneDNN's direct JIT
// convolutions on blocked layouts (about twice the speed of im2col + GEMM).
// oneDNN's threaded kernels cut their work by the thread count, and bits
// must not depend on it, so the work is cut as planDnnl says (conv_plan.h)
// and every item runs primitives made for one thread: the item's images are
// reordered into blocked copies in the worker's buffer, convolved with the
// weights' blocked copy (made once per call), and the result reordered back
// into the caller's NCHW tensor (the weight gradient's partial sums are
// added in the blocked layout first). Primitives are made on a descriptor's
// first call and kept.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "conv_plan.h"
#include "onednn.h"
#include "parallel.h"

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

using namespace otc::kernels;
using namespace otc::kernels::conv;

namespace {

using dnnl::memory;
using Dims = memory::dims;

/// One operand: the caller's layout, the primitive's, and the reorder
/// between them (none when they are the same: the caller's memory is used
/// in place).
struct Operand {
  memory::desc user, inner;
  std::optional<dnnl::reorder> reorder;
};

/// The primitives of one item shape (nb or fewer images, cb or fewer
/// channels): the convolution's two inputs and its output (forward x, w, y;
/// input gradient dy, w, dx; weight gradient x, dy, dw), and their oneDNN
/// argument numbers.
struct Variant {
  bool ok = false;
  dnnl::primitive conv;
  Operand in0, in1, out;
  int arg0 = 0, arg1 = 0, argOut = 0;
  memory::desc bias, scratchpad;
};

/// A descriptor's plan and primitives: variants[shorter last chunk][shorter
/// last channel block].
struct Entry {
  bool ok = false;
  DnnlPlan plan;
  Variant variants[2][2];
};

/// A plain (NCHW-like) tensor [n, ch, spatial...] inside one whose channel
/// count is chTotal: the strides of the whole tensor.
memory::desc plain(int64_t n, int64_t ch, int64_t chTotal,
                   const Dims &spatial) {
  int64_t size = 1;
  for (int64_t s : spatial)
    size *= s;
  Dims dims{n, ch}, strides{chTotal * size, size};
  int64_t inner = size;
  for (int64_t s : spatial) {
    inner /= s;
    dims.push_back(s);
    strides.push_back(inner);
  }
  return memory::desc(dims, memory::data_type::f32, strides);
}

memory::desc any(int64_t n, int64_t ch, const Dims &spatial,
                 memory::data_type type) {
  Dims dims{n, ch};
  dims.insert(dims.end(), spatial.begin(), spatial.end());
  return memory::desc(dims, type, memory::format_tag::any);
}

/// The operand, false when the primitive's layout needs more than `floats`.
bool makeOperand(const memory::desc &user, const memory::desc &inner,
                 bool toInner, int64_t floats, Operand &op) {
  op.user = user;
  op.inner = inner;
  if (inner == user)
    return true;
  if (int64_t(inner.get_size()) > floats * 4)
    return false;
  auto &e = cpuEngine();
  op.reorder =
      toInner ? dnnl::reorder(dnnl::reorder::primitive_desc(e, user, e, inner))
              : dnnl::reorder(dnnl::reorder::primitive_desc(e, inner, e, user));
  return true;
}

/// A JIT kernel: oneDNN's GEMM-based and reference convolutions are no
/// faster than the im2col path.
bool isJit(const char *impl) {
  return !std::strstr(impl, "gemm") && !std::strstr(impl, "ref");
}

/// The last `spatial` of the geometry's 3 slots.
Dims slots(const int64_t *v, int spatial, int64_t add = 0) {
  Dims d;
  for (int i = 3 - spatial; i < 3; ++i)
    d.push_back(v[i] + add);
  return d;
}

/// Fills v from a primitive descriptor: false when it is not a JIT kernel
/// or needs more than the plan's buffers.
template <typename Prim, typename Pd>
bool finish(Variant &v, const Pd &pd, const DnnlPlan &p, memory::desc in0,
            memory::desc in1, memory::desc out, int arg0, int arg1, int argOut,
            const memory::desc &inner0, const memory::desc &inner1,
            const memory::desc &innerOut) {
  if (!isJit(pd.impl_info_str()) ||
      int64_t(pd.scratchpad_desc().get_size()) > p.scratchFloats * 4)
    return false;
  if (!makeOperand(in0, inner0, true, p.srcFloats, v.in0) ||
      !makeOperand(in1, inner1, true, p.weightFloats, v.in1) ||
      !makeOperand(out, innerOut, false, p.dstFloats, v.out))
    return false;
  v.conv = Prim(pd);
  v.scratchpad = pd.scratchpad_desc();
  v.arg0 = arg0;
  v.arg1 = arg1;
  v.argOut = argOut;
  return true;
}

Variant makeVariant(const ConvGeom &g, int spatial, const DnnlPlan &p,
                    DnnlOp op, bool withBias, int64_t nb, int64_t cb) {
  Variant v;
  const Dims in = slots(g.in, spatial), out = slots(g.out, spatial),
             k = slots(g.k, spatial), strides = slots(g.s, spatial),
             dilates = slots(g.dil, spatial, -1), padL = slots(g.pb, spatial);
  Dims padR;
  for (int i = 3 - spatial; i < 3; ++i)
    padR.push_back((g.out[i] - 1) * g.s[i] + (g.k[i] - 1) * g.dil[i] + 1 -
                   g.in[i] - g.pb[i]);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  auto &e = cpuEngine();
  const auto algo = dnnl::algorithm::convolution_direct;
  const auto prop = dnnl::prop_kind::forward_training;
  // Channels of x, w, y for this item.
  const bool blockC = op == DnnlOp::GradInput;
  const int64_t c = blockC ? cb : g.c, m = blockC ? g.m : cb;
  // In bfloat16, the two operands of each kernel are (their reorders into
  // the blocked copies round them); the result and the bias stay float.
  using dt = memory::data_type;
  const dt low = g.bf16 ? dt::bf16 : dt::f32;
  // The forward (also the gradients' hint, which oneDNN wants in the
  // forward's types), and the gradients' own operands.
  const auto xAny = any(nb, c, in, low), wAny = any(m, c, k, low),
             yAny = any(nb, m, out, dt::f32);
  const auto dxAny = any(nb, c, in, dt::f32), dwAny = any(m, c, k, dt::f32),
             dyAny = any(nb, m, out, low);
  // The item's operands in the caller's tensors.
  const memory::desc x = plain(nb, c, g.c, in), y = plain(nb, m, g.m, out),
                     w = plain(m, c, g.c, k);
  dnnl::convolution_forward::primitive_desc fwd;
  if (withBias) {
    v.bias = memory::desc({m}, memory::data_type::f32, memory::format_tag::x);
    fwd = dnnl::convolution_forward::primitive_desc(
        {prop, algo, xAny, wAny, v.bias, yAny, strides, dilates, padL, padR},
        attr, e);
  } else {
    fwd = dnnl::convolution_forward::primitive_desc(
        {prop, algo, xAny, wAny, yAny, strides, dilates, padL, padR}, attr, e);
  }
  switch (op) {
  case DnnlOp::Forward:
    v.ok = finish<dnnl::convolution_forward>(
        v, fwd, p, x, w, y, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST,
        fwd.src_desc(), fwd.weights_desc(), fwd.dst_desc());
    break;
  case DnnlOp::GradInput: {
    dnnl::convolution_backward_data::primitive_desc bwd(
        {algo, dxAny, wAny, dyAny, strides, dilates, padL, padR}, attr, e, fwd);
    v.ok = finish<dnnl::convolution_backward_data>(
        v, bwd, p, y, w, x, DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS,
        DNNL_ARG_DIFF_SRC, bwd.diff_dst_desc(), bwd.weights_desc(),
        bwd.diff_src_desc());
    break;
  }
  case DnnlOp::GradWeight: {
    dnnl::convolution_backward_weights::primitive_desc bwd(
        {algo, xAny, dwAny, dyAny, strides, dilates, padL, padR}, attr, e, fwd);
    v.ok = finish<dnnl::convolution_backward_weights>(
        v, bwd, p, x, y, w, DNNL_ARG_SRC, DNNL_ARG_DIFF_DST,
        DNNL_ARG_DIFF_WEIGHTS, bwd.src_desc(), bwd.diff_dst_desc(),
        bwd.diff_weights_desc());
    break;
  }
  }
  return v;
}

/// The entry of `d`, made on first use (with one OpenMP thread, which is
/// what oneDNN's kernels then cut their work for); not ok when any of its
/// variants is not a JIT kernel within the plan's buffers.
const Entry &entryFor(const otck_conv_desc *d, const ConvGeom &g, DnnlOp op,
                      bool withBias) {
  static std::mutex mutex;
  static auto *entries = new std::map<std::string, std::unique_ptr<Entry>>;
  std::string key(reinterpret_cast<const char *>(d), sizeof(*d));
  key.push_back(char(op));
  key.push_back(char(withBias));
  std::lock_guard<std::mutex> lock(mutex);
  auto &slot = (*entries)[key];
  if (slot)
    return *slot;
  slot = std::make_unique<Entry>();
  Entry &entry = *slot;
  entry.plan = planDnnl(g, op);
  const DnnlPlan &p = entry.plan;
  if (!p.use)
    return entry;
  const int64_t channels = op == DnnlOp::GradInput ? g.c : g.m;
  const int64_t lastNb = g.n - (p.chunks - 1) * p.nb;
  const int64_t lastCb = channels - (p.blocks - 1) * p.cb;
  OmpThreads one(1);
  bool ok = true;
  try {
    for (int shortN = 0; shortN < 2; ++shortN)
      for (int shortC = 0; shortC < 2; ++shortC) {
        const int64_t nb = shortN ? lastNb : p.nb;
        const int64_t cb = shortC ? lastCb : std::min(p.cb, channels);
        if ((shortN && nb == p.nb) || (shortC && cb == p.cb))
          continue;
        Variant &v = entry.variants[shortN][shortC];
        v = makeVariant(g, d->spatial, p, op, withBias, nb, cb);
        ok = ok && v.ok;
      }
  } catch (...) {
    // oneDNN declines the shape, or memory ran out: im2col runs it.
    ok = false;
  }
  // A channel block's items share one copy of the weights (forward, input
  // gradient) or one partial-sum layout (weight gradient): the last chunk's
  // primitives must use the other chunks' layout, and either every block's
  // weights are reordered (into the shared copy) or none (read in place;
  // the workers' buffers hold no copy of them).
  const Variant &first = entry.variants[0][0];
  for (int shortN = 0; ok && shortN < 2; ++shortN)
    for (int shortC = 0; ok && shortC < 2; ++shortC) {
      const Variant &v = entry.variants[shortN][shortC];
      const Variant &full = entry.variants[0][shortC];
      if (!v.ok)
        continue;
      ok = op == DnnlOp::GradWeight
               ? v.out.inner == full.out.inner
               : v.in1.inner == full.in1.inner &&
                     bool(v.in1.reorder) == bool(first.in1.reorder);
    }
  entry.ok = ok;
  return entry;
}

/// Memory of `desc` at `data` (const for inputs: oneDNN does not write them).
memory at(const memory::desc &desc, const float *data) {
  return memory(desc, cpuEngine(), const_cast<float *>(data));
}

/// Runs one item in buffer buf: in0 at the item's first element in the
/// caller's tensor; in1 likewise, or already in the primitive's layout
/// when in1Inner (the weights' shared copy); out likewise, or left in the
/// primitive's layout when outInner (a weight-gradient partial sum); bias
/// null when none.
void runItem(const DnnlPlan &p, const Variant &v, const float *in0,
             const float *in1, bool in1Inner, const float *bias, float *out,
             bool outInner, float *buf, dnnl::stream &stream) {
  float *buf0 = buf, *buf1 = buf0 + p.srcFloats;
  float *bufOut = buf1 + (v.in1.reorder && !in1Inner ? p.weightFloats : 0);
  float *scratch = bufOut + (outInner ? 0 : p.dstFloats);
  auto input = [&](const Operand &op, const float *data, float *copy) {
    memory user = at(op.user, data);
    if (!op.reorder)
      return user;
    memory inner = at(op.inner, copy);
    op.reorder->execute(stream, user, inner);
    return inner;
  };
  const bool copyOut = v.out.reorder && !outInner;
  memory outMem = at(v.out.inner, copyOut ? bufOut : out);
  std::unordered_map<int, memory> args{
      {v.arg0, input(v.in0, in0, buf0)},
      {v.arg1, in1Inner ? at(v.in1.inner, in1) : input(v.in1, in1, buf1)},
      {v.argOut, outMem},
      {DNNL_ARG_SCRATCHPAD, at(v.scratchpad, scratch)}};
  if (bias)
    args.emplace(DNNL_ARG_BIAS, at(v.bias, bias));
  v.conv.execute(stream, args);
  if (copyOut) {
    memory user = at(v.out.user, out);
    v.out.reorder->execute(stream, outMem, user);
  }
}

/// Runs fn(i, worker, stream) for i in [0, count) on at most `workers`
/// threads, or on the calling thread with one OpenMP thread when the
/// work (`cost` multiply-adds in all) is small. False when oneDNN failed
/// (out of memory for the library's own buffers, say): the outputs are
/// then partly written, and the caller runs the im2col path, which
/// overwrites them.
template <typename Fn>
bool runParallel(int64_t count, int64_t workers, int64_t cost, Fn fn) {
  std::atomic<bool> failed{false};
  auto body = [&](int64_t i, int worker) {
    if (failed.load(std::memory_order_relaxed))
      return;
    try {
      thread_local dnnl::stream stream(cpuEngine());
      fn(i, worker, stream);
    } catch (...) {
      failed = true;
    }
  };
  workers = std::min<int64_t>({workers, count, omp_get_max_threads()});
  if (workers <= 1 || !shouldParallelize(cost, kConvGrain)) {
    OmpThreads one(1);
    for (int64_t i = 0; i < count; ++i)
      body(i, 0);
    return !failed;
  }
#pragma omp parallel num_threads(int(workers))
  {
#pragma omp for schedule(dynamic, 1)
    for (int64_t i = 0; i < count; ++i)
      body(i, omp_get_thread_num());
  }
  return !failed;
}

/// The multiply-adds of one call of the kernels for g.
int64_t callCost(const ConvGeom &g) {
  return g.n * g.m * g.colRows * g.outSize;
}

/// Runs every item of `entry`: fn(first image, first channel, variant,
/// buffer, stream), each worker with its own buffer.
template <typename Fn>
bool runItems(const Entry &entry, const ConvGeom &g, int64_t channels,
              float *ws, Fn fn) {
  const DnnlPlan &p = entry.plan;
  float *buffers = ws + p.extraFloats;
  return runParallel(
      p.items, p.workers, callCost(g),
      [&](int64_t item, int worker, dnnl::stream &stream) {
        const int64_t n0 = item / p.blocks * p.nb, c0 = item % p.blocks * p.cb;
        fn(n0, c0, entry.variants[g.n - n0 < p.nb][channels - c0 < p.cb],
           buffers + worker * p.bufFloats, stream);
      });
}

/// The variant that runs channel block `block` of every chunk but the last.
const Variant &blockVariant(const Entry &e, int64_t channels, int64_t block) {
  return e.variants[0][channels - block * e.plan.cb < e.plan.cb];
}

/// Whether the items read the weights from a copy in their primitives'
/// layout (entryFor has checked that every variant agrees).
bool sharesWeights(const Entry &e) {
  return bool(e.variants[0][0].in1.reorder);
}

/// The weights w in the layout of each channel block's primitive, made
/// once for all the block's items at ws + block * weightFloats; false when
/// oneDNN failed. `offset` is the floats from one block's first weight to
/// the next's.
bool blockWeights(const Entry &e, const ConvGeom &g, int64_t channels,
                  const float *w, int64_t offset, float *ws) {
  const DnnlPlan &p = e.plan;
  return runParallel(p.blocks, p.workers, callCost(g),
                     [&](int64_t b, int, dnnl::stream &stream) {
                       const Operand &op = blockVariant(e, channels, b).in1;
                       memory user = at(op.user, w + b * offset);
                       memory inner = at(op.inner, ws + b * p.weightFloats);
                       op.reorder->execute(stream, user, inner);
                     });
}

} // namespace

bool otc::kernels::conv::dnnlForward(const otck_conv_desc *d, const ConvGeom &g,
                                     const float *x, const float *w,
                                     const float *bias, float *y,
                                     void *workspace) {
  const Entry &e = entryFor(d, g, DnnlOp::Forward, bias != nullptr);
  if (!e.ok)
    return false;
  const DnnlPlan &p = e.plan;
  float *ws = static_cast<float *>(workspace);
  const bool shared = sharesWeights(e);
  if (shared && !blockWeights(e, g, g.m, w, p.cb * g.colRows, ws))
    return false;
  return runItems(
      e, g, g.m, ws,
      [&](int64_t n0, int64_t m0, const Variant &v, float *buf,
          dnnl::stream &stream) {
        runItem(p, v, x + n0 * g.c * g.inSize,
                shared ? ws + m0 / p.cb * p.weightFloats : w + m0 * g.colRows,
                shared, bias ? bias + m0 : nullptr,
                y + (n0 * g.m + m0) * g.outSize, false, buf, stream);
      });
}

bool otc::kernels::conv::dnnlGradInput(const otck_conv_desc *d,
                                       const ConvGeom &g, const float *dy,
                                       const float *w, float *dx,
                                       void *workspace) {
  const Entry &e = entryFor(d, g, DnnlOp::GradInput, false);
  if (!e.ok)
    return false;
  const DnnlPlan &p = e.plan;
  float *ws = static_cast<float *>(workspace);
  const bool shared = sharesWeights(e);
  if (shared && !blockWeights(e, g, g.c, w, p.cb * g.kSize, ws))
    return false;
  return runItems(e, g, g.c, ws,
                  [&](int64_t n0, int64_t c0, const Variant &v, float *buf,
                      dnnl::stream &stream) {
                    runItem(p, v, dy + n0 * g.m * g.outSize,
                            shared ? ws + c0 / p.cb * p.weightFloats
                                   : w + c0 * g.kSize,
                            shared, nullptr, dx + (n0 * g.c + c0) * g.inSize,
                            false, buf, stream);
                  });
}

bool otc::kernels::conv::dnnlGradWeight(const otck_conv_desc *d,
                                        const ConvGeom &g, const float *dy,
                                        const float *x, float *dw,
                                        void *workspace) {
  const Entry &e = entryFor(d, g, DnnlOp::GradWeight, false);
  if (!e.ok)
    return false;
  const DnnlPlan &p = e.plan;
  float *ws = static_cast<float *>(workspace);
  // Item i leaves its partial sum at ws + i * dstFloats in the primitive's
  // layout; per channel block, chunk 0's gathers the others in chunk order
  // and is reordered into dw once.
  auto partial = [&](int64_t chunk, int64_t block) {
    return ws + (chunk * p.blocks + block) * p.dstFloats;
  };
  if (!runItems(e, g, g.m, ws,
                [&](int64_t n0, int64_t m0, const Variant &v, float *buf,
                    dnnl::stream &stream) {
                  runItem(p, v, x + n0 * g.c * g.inSize,
                          dy + (n0 * g.m + m0) * g.outSize, false, nullptr,
                          partial(n0 / p.nb, m0 / p.cb), true, buf, stream);
                }))
    return false;
  return runParallel(
      p.blocks, p.workers, callCost(g),
      [&](int64_t b, int, dnnl::stream &stream) {
        const Operand &op = blockVariant(e, g.m, b).out;
        float *sum = partial(0, b);
        const int64_t n = int64_t(op.inner.get_size() / sizeof(float));
        addPartialSums(sum, n, partial(1, b), p.blocks * p.dstFloats, p.chunks);
        float *target = dw + b * p.cb * g.colRows;
        if (!op.reorder) {
          std::copy(sum, sum + n, target);
          return;
        }
        memory inner = at(op.inner, sum), user = at(op.user, target);
        op.reorder->execute(stream, inner, user);
      });
}
