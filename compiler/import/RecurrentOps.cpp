//===- RecurrentOps.cpp - LSTM, GRU and RNN -------------------------------===//
//
// A recurrent layer over a static sequence is unrolled into the graph ops
// it is made of: one Gemm of the whole input with W per direction, then per
// time step a Gemm with R, gate slices and elementwise activations. The
// gradient through time is then reverse mode over those ops, on every
// target that has their kernels, and every step's activations are planned
// by the memory planner like any other value. ONNX semantics (opset 14):
// gates i, o, f, c (LSTM), z, r, h (GRU); `layout` 0 ([T, B, I]) and 1
// ([B, T, I]); directions forward, reverse and bidirectional; initial
// states; LSTM peepholes; activations Sigmoid, Tanh and Relu. Refused
// with a reason: sequence_lens that are not all the sequence length, clip,
// input_forget.
//
//===----------------------------------------------------------------------===//

#include "compiler/import/Importer.h"

using namespace mlir;

namespace otc::importer {

namespace {

enum class Act { Sigmoid, Tanh, Relu };

struct Cell {
  int64_t gates;              // blocks of H rows in W and R
  SmallVector<StringRef> act; // default activations of one direction
};

Cell cellOf(StringRef op) {
  if (op == "LSTM")
    return {4, {"Sigmoid", "Tanh", "Tanh"}};
  if (op == "GRU")
    return {3, {"Sigmoid", "Tanh"}};
  return {1, {"Tanh"}};
}

} // namespace

LogicalResult Importer::importRecurrent(const onnx::NodeProto &node) {
  StringRef op = node.op_type();
  Location loc = nodeLoc(node);
  Cell cell = cellOf(op);
  bool lstm = op == "LSTM", gru = op == "GRU";

  FailureOr<Value> xv = tensor(node, 0), wv = tensor(node, 1),
                   rv = tensor(node, 2);
  if (failed(xv) || failed(wv) || failed(rv))
    return failure();
  auto xt = typeOf(*xv), wt = typeOf(*wv), rt = typeOf(*rv);
  if (!xt.getElementType().isF32() || !wt.getElementType().isF32() ||
      !rt.getElementType().isF32())
    return nodeError(node) << "X, W and R must be float32";
  int64_t layout = intAttr(node, "layout", 0);
  if (layout != 0 && layout != 1)
    return nodeError(node) << "layout must be 0 or 1, got " << layout;
  if (xt.getRank() != 3 || wt.getRank() != 3 || rt.getRank() != 3)
    return nodeError(node) << "X, W and R must be 3-D, got " << xt << ", " << wt
                           << " and " << rt;

  std::string direction = "forward";
  if (auto *a = attr(node, "direction"))
    direction = a->s();
  if (direction != "forward" && direction != "reverse" &&
      direction != "bidirectional")
    return nodeError(node) << "unknown direction '" << direction << "'";
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  int64_t hidden = intAttr(node, "hidden_size", rt.getDimSize(2));
  int64_t seq = xt.getDimSize(layout == 0 ? 0 : 1);
  int64_t batch = xt.getDimSize(layout == 0 ? 1 : 0);
  // (R holds rows * hidden elements: a hidden size beyond kMaxElements
  // fits no R.)
  int64_t in = xt.getDimSize(2),
          rows = hidden <= kMaxElements ? cell.gates * hidden : -1;
  if (hidden <= 0 || rows < 0 ||
      wt.getShape() != ArrayRef<int64_t>{dirs, rows, in} ||
      rt.getShape() != ArrayRef<int64_t>{dirs, rows, hidden})
    return nodeError(node) << "with " << dirs << " direction(s), hidden size "
                           << hidden << " and input size " << in
                           << ", W must be [" << dirs << ", " << rows << ", "
                           << in << "] and R [" << dirs << ", " << rows << ", "
                           << hidden << "], got " << wt << " and " << rt;
  if (seq <= 0 || batch <= 0)
    return nodeError(node) << "X of type " << xt << " is empty";

  if (attr(node, "clip"))
    return nodeError(node) << "the clip attribute is not supported";
  if (lstm && intAttr(node, "input_forget", 0) != 0)
    return nodeError(node) << "input_forget is not supported";
  if (hasInput(node, 4)) {
    FailureOr<Const *> lens = constant(node, 4);
    if (failed(lens))
      return failure();
    for (int64_t i = 0; i < (*lens)->size(); ++i)
      if ((*lens)->at(i) != seq)
        return nodeError(node)
               << "sequence_lens must all be the sequence "
               << "length " << seq << " (padded sequences "
               << "are not supported), got " << saturateToInt64((*lens)->at(i));
  }

  // Activations: cell.act.size() per direction.
  SmallVector<Act> acts;
  SmallVector<std::string> names;
  if (auto *a = attr(node, "activations"))
    for (const std::string &s : a->strings())
      names.push_back(s);
  else
    for (int64_t d = 0; d < dirs; ++d)
      for (StringRef s : cell.act)
        names.push_back(s.str());
  if (static_cast<int64_t>(names.size()) !=
      dirs * static_cast<int64_t>(cell.act.size()))
    return nodeError(node) << "expects " << dirs * cell.act.size()
                           << " activations, got " << names.size();
  for (const std::string &s : names) {
    if (s == "Sigmoid")
      acts.push_back(Act::Sigmoid);
    else if (s == "Tanh")
      acts.push_back(Act::Tanh);
    else if (s == "Relu")
      acts.push_back(Act::Relu);
    else
      return nodeError(node) << "unsupported activation '" << s
                             << "' (Sigmoid, Tanh and Relu are)";
  }

  auto f32 = [&](ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getF32Type());
  };
  Value bias, h0, c0;
  // An optional float32 input of a known shape (B, initial states, P).
  auto optionalInput = [&](int i, ArrayRef<int64_t> shape,
                           Value &out) -> LogicalResult {
    if (!hasInput(node, i))
      return success();
    FailureOr<Value> v = tensor(node, i);
    if (failed(v))
      return failure();
    if (typeOf(*v).getShape() != shape || !typeOf(*v).getElementType().isF32())
      return nodeError(node) << "input #" << i << " must be " << f32(shape)
                             << ", got " << v->getType();
    out = *v;
    return success();
  };
  SmallVector<int64_t> stateShape =
      layout == 0 ? SmallVector<int64_t>{dirs, batch, hidden}
                  : SmallVector<int64_t>{batch, dirs, hidden};
  Value peep;
  if (failed(optionalInput(3, {dirs, 2 * rows}, bias)) ||
      failed(optionalInput(5, stateShape, h0)) ||
      (lstm && failed(optionalInput(6, stateShape, c0))) ||
      (lstm && failed(optionalInput(7, {dirs, 3 * hidden}, peep))))
    return failure();

  auto reshape = [&](Value v, ArrayRef<int64_t> shape) -> Value {
    if (typeOf(v).getShape() == shape)
      return v;
    return b.create<graph::ReshapeOp>(loc, f32(shape), v);
  };
  auto slice = [&](Value v, ArrayRef<int64_t> starts, ArrayRef<int64_t> shape) {
    return createSlice(loc, v, starts, SmallVector<int64_t>(starts.size(), 1),
                       shape);
  };
  auto gemmT = [&](Value a, Value w, Value c) -> Value {
    return b.create<graph::GemmOp>(loc, a, w, c, b.getF32FloatAttr(1.0f),
                                   b.getF32FloatAttr(1.0f),
                                   b.getBoolAttr(false), b.getBoolAttr(true));
  };
  auto apply = [&](Act a, Value v) -> Value {
    switch (a) {
    case Act::Sigmoid:
      return b.create<graph::SigmoidOp>(loc, v);
    case Act::Tanh:
      return b.create<graph::TanhOp>(loc, v);
    case Act::Relu:
      return b.create<graph::ReluOp>(loc, v);
    }
    llvm_unreachable("activation");
  };
  auto add = [&](Value l, Value r) -> Value {
    return b.create<graph::AddOp>(loc, l, r);
  };
  auto mul = [&](Value l, Value r) -> Value {
    return b.create<graph::MulOp>(loc, l, r);
  };
  auto concat = [&](ArrayRef<Value> vs, int64_t axis) -> Value {
    if (vs.size() == 1)
      return vs[0];
    SmallVector<int64_t> shape(typeOf(vs[0]).getShape());
    shape[axis] = 0;
    for (Value v : vs)
      shape[axis] += typeOf(v).getDimSize(axis);
    return b.create<graph::ConcatOp>(loc, f32(shape), vs,
                                     b.getI64IntegerAttr(axis));
  };
  // The state of direction d, [batch, hidden], from a [D, B, H] (layout 0)
  // or [B, D, H] (layout 1) initial state; zeros when absent.
  auto initial = [&](Value v, int64_t d) -> Value {
    if (!v)
      return f32Splat(b, loc, {batch, hidden}, 0.0f);
    return reshape(layout == 0 ? slice(v, {d, 0, 0}, {1, batch, hidden})
                               : slice(v, {0, d, 0}, {batch, 1, hidden}),
                   {batch, hidden});
  };

  // X as [T * B, I], time-major.
  Value x = *xv;
  if (layout == 1)
    x = b.create<graph::TransposeOp>(loc, x, b.getDenseI64ArrayAttr({1, 0, 2}));
  x = reshape(x, {seq * batch, in});

  SmallVector<Value> ys, lastH, lastC;
  for (int64_t d = 0; d < dirs; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    Value w = reshape(slice(*wv, {d, 0, 0}, {1, rows, in}), {rows, in});
    Value r = reshape(slice(*rv, {d, 0, 0}, {1, rows, hidden}), {rows, hidden});
    Value wb, rb;
    if (bias) {
      wb = reshape(slice(bias, {d, 0}, {1, rows}), {rows});
      rb = reshape(slice(bias, {d, rows}, {1, rows}), {rows});
    }
    // The input's share of every step at once. The recurrent bias joins it
    // except in GRU, where the reset gate multiplies its h block.
    Value inBias = wb && rb && !gru ? add(wb, rb) : wb;
    Value xw = reshape(gemmT(x, w, inBias), {seq, batch, rows});
    ArrayRef<Act> act =
        ArrayRef<Act>(acts).slice(d * cell.act.size(), cell.act.size());
    Value h = initial(h0, d), c = lstm ? initial(c0, d) : Value();
    // Peepholes, in P's order i, o, f.
    Value pi, po, pf;
    if (peep) {
      auto part = [&](int64_t k) {
        return reshape(slice(peep, {d, k * hidden}, {1, hidden}), {hidden});
      };
      pi = part(0), po = part(1), pf = part(2);
    }
    auto peephole = [&](Value gate, Value p, Value state) {
      return p ? add(gate, mul(p, state)) : gate;
    };
    // GRU: z and r come from one Gemm of h with their two blocks of R; the
    // candidate's block is separate (the reset gate acts before or after
    // it). Sliced once, outside the steps.
    Value rzr, rbzr, rh, rbh;
    if (gru) {
      rzr =
          reshape(slice(r, {0, 0}, {2 * hidden, hidden}), {2 * hidden, hidden});
      rh = reshape(slice(r, {2 * hidden, 0}, {hidden, hidden}),
                   {hidden, hidden});
      if (rb) {
        rbzr = slice(rb, {0}, {2 * hidden});
        rbh = slice(rb, {2 * hidden}, {hidden});
      }
    }
    bool linearBeforeReset = intAttr(node, "linear_before_reset", 0) != 0;
    SmallVector<Value> hs(seq);
    auto block = [&](Value v, int64_t k) {
      return slice(v, {0, k * hidden}, {batch, hidden});
    };
    for (int64_t step = 0; step < seq; ++step) {
      int64_t t = reverse ? seq - 1 - step : step;
      Value xs = reshape(slice(xw, {t, 0, 0}, {1, batch, rows}), {batch, rows});
      if (lstm) {
        Value g = add(xs, gemmT(h, r, Value()));
        Value i = apply(act[0], peephole(block(g, 0), pi, c));
        Value f = apply(act[0], peephole(block(g, 2), pf, c));
        Value cc = apply(act[1], block(g, 3));
        c = add(mul(f, c), mul(i, cc));
        Value o = apply(act[0], peephole(block(g, 1), po, c));
        h = mul(o, apply(act[2], c));
      } else if (gru) {
        Value xz = block(xs, 0), xr = block(xs, 1), xh = block(xs, 2);
        Value hzr = gemmT(h, rzr, rbzr);
        Value z = apply(act[0], add(xz, block(hzr, 0)));
        Value rg = apply(act[0], add(xr, block(hzr, 1)));
        Value hh;
        if (linearBeforeReset)
          hh = mul(rg, gemmT(h, rh, rbh));
        else
          hh = gemmT(mul(rg, h), rh, rbh);
        Value n = apply(act[1], add(xh, hh));
        // (1 - z) * n + z * h
        h = add(n, mul(z, b.create<graph::SubOp>(loc, h, n)));
      } else {
        h = apply(act[0], add(xs, gemmT(h, r, Value())));
      }
      hs[t] = reshape(h, {1, 1, batch, hidden});
    }
    ys.push_back(concat(hs, 0));
    lastH.push_back(reshape(h, {1, batch, hidden}));
    if (lstm)
      lastC.push_back(reshape(c, {1, batch, hidden}));
  }

  // Y [T, D, B, H] (layout 1: [B, T, D, H]); Y_h, Y_c [D, B, H] ([B, D, H]).
  Value y = concat(ys, 1);
  Value yh = concat(lastH, 0), yc = lstm ? concat(lastC, 0) : Value();
  if (layout == 1) {
    y = b.create<graph::TransposeOp>(loc, y,
                                     b.getDenseI64ArrayAttr({2, 0, 1, 3}));
    yh = b.create<graph::TransposeOp>(loc, yh,
                                      b.getDenseI64ArrayAttr({1, 0, 2}));
    if (yc)
      yc = b.create<graph::TransposeOp>(loc, yc,
                                        b.getDenseI64ArrayAttr({1, 0, 2}));
  }
  Value outs[] = {y, yh, yc};
  for (int i = 0; i < node.output_size() && i < 3; ++i)
    if (!node.output(i).empty() && outs[i])
      define(node, i, outs[i]);
  return success();
}

} // namespace otc::importer
