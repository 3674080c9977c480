//===- LinalgOps.cpp - Gemm and MatMul -----------------------------------===//
//
//===----------------------------------------------------------------------===//

#include "compiler/import/Importer.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cctype>

using namespace mlir;

namespace otc::importer {

LogicalResult Importer::importGemm(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  FailureOr<Value> a = tensor(node, 0), bb = tensor(node, 1);
  if (failed(a) || failed(bb))
    return failure();
  Value c;
  if (hasInput(node, 2)) {
    FailureOr<Value> cv = tensor(node, 2);
    if (failed(cv))
      return failure();
    c = *cv;
  }
  auto at = llvm::cast<RankedTensorType>(a->getType());
  auto bt = llvm::cast<RankedTensorType>(bb->getType());
  bool ta = intAttr(node, "transA", 0), tb = intAttr(node, "transB", 0);
  if (at.getRank() != 2 || bt.getRank() != 2)
    return nodeError(node) << "Gemm needs 2-D A and B, got " << at << " and "
                           << bt;
  if (at.getDimSize(ta ? 0 : 1) != bt.getDimSize(tb ? 1 : 0))
    return nodeError(node) << "inner dimensions differ: " << at << " and "
                           << bt;
  auto g = b.create<graph::GemmOp>(
      loc, *a, *bb, c, b.getF32FloatAttr(floatAttr(node, "alpha", 1.0f)),
      b.getF32FloatAttr(floatAttr(node, "beta", 1.0f)), b.getBoolAttr(ta),
      b.getBoolAttr(tb));
  if (c) {
    auto shape = graph::broadcastShapes(
        llvm::cast<RankedTensorType>(c.getType()).getShape(),
        g.getType().getShape());
    if (failed(shape) || ArrayRef<int64_t>(*shape) != g.getType().getShape())
      return nodeError(node) << "C of type " << c.getType()
                             << " does not broadcast to " << g.getType();
  }
  define(node, 0, g);
  return success();
}

LogicalResult Importer::importMatMul(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  FailureOr<Value> a = tensor(node, 0), bb = tensor(node, 1);
  if (failed(a) || failed(bb))
    return failure();
  auto at = llvm::cast<RankedTensorType>(a->getType());
  auto bt = llvm::cast<RankedTensorType>(bb->getType());
  if (!at.getElementType().isF32() || !bt.getElementType().isF32())
    return nodeError(node) << "unsupported element types " << at << " and "
                           << bt << " (float32 only)";
  if (at.getRank() == 0 || bt.getRank() == 0)
    return nodeError(node) << "MatMul operands must not be scalars";
  // numpy: a 1-D lhs is a row, a 1-D rhs a column, removed afterwards.
  Value lhs = *a, rhs = *bb;
  if (at.getRank() == 1)
    lhs = b.create<graph::ReshapeOp>(loc, at.clone({1, at.getDimSize(0)}), lhs);
  if (bt.getRank() == 1)
    rhs = b.create<graph::ReshapeOp>(loc, bt.clone({bt.getDimSize(0), 1}), rhs);
  auto lt = llvm::cast<RankedTensorType>(lhs.getType());
  auto rt = llvm::cast<RankedTensorType>(rhs.getType());
  if (lt.getShape().back() != rt.getDimSize(rt.getRank() - 2))
    return nodeError(node) << "inner dimensions differ: " << at << " and "
                           << bt;
  if (failed(graph::broadcastShapes(lt.getShape().drop_back(2),
                                    rt.getShape().drop_back(2))))
    return nodeError(node) << "batch dimensions of " << at << " and " << bt
                           << " do not broadcast";
  Value y = b.create<graph::MatMulOp>(loc, lhs, rhs, b.getBoolAttr(false),
                                      b.getBoolAttr(false));
  auto yt = llvm::cast<RankedTensorType>(y.getType());
  SmallVector<int64_t> shape(yt.getShape());
  if (bt.getRank() == 1)
    shape.pop_back();
  if (at.getRank() == 1)
    shape.erase(shape.end() - (bt.getRank() == 1 ? 1 : 2));
  return reshapeTo(node, y, shape);
}

/// Einsum without ellipsis or repeated labels within an operand: one
/// operand is a transpose and sum; two operands become sums of labels only
/// one side has, a transpose of each to [batch, free, contracted] /
/// [batch, contracted, free], one batched MatMul and a transpose to the
/// output order (the contractions attention and bilinear layers use).
LogicalResult Importer::importEinsum(const onnx::NodeProto &node) {
  Location loc = nodeLoc(node);
  std::string eq;
  if (auto *a = attr(node, "equation"))
    eq = a->s();
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  size_t arrow = eq.find("->");
  SmallVector<StringRef> parts;
  llvm::SplitString(StringRef(eq).take_front(arrow), parts, ",");
  SmallVector<std::string> inputs(parts.begin(), parts.end());
  if (static_cast<int>(inputs.size()) != node.input_size() || inputs.empty() ||
      inputs.size() > 2)
    return nodeError(node) << "unsupported equation '" << eq
                           << "' (one or two operands)";
  SmallVector<Value> xs;
  for (int i = 0; i < node.input_size(); ++i) {
    FailureOr<Value> x = floatTensor(node, i);
    if (failed(x))
      return failure();
    xs.push_back(*x);
  }
  // An ellipsis stands for the leading dimensions not labelled: they get
  // labels '0', '1', ... (not letters), right-aligned across operands.
  int64_t ellipsisRank = 0;
  for (auto [i, labels] : llvm::enumerate(inputs)) {
    size_t at = labels.find("...");
    if (at == std::string::npos)
      continue;
    int64_t n = typeOf(xs[i]).getRank() - int64_t(labels.size() - 3);
    if (n < 0 || n > 10)
      return nodeError(node)
             << "operand " << i << " has rank " << typeOf(xs[i]).getRank()
             << " but " << labels.size() - 3 << " labels and '...'";
    ellipsisRank = std::max(ellipsisRank, n);
  }
  auto ellipsis = [&](int64_t n) {
    std::string l;
    for (int64_t k = ellipsisRank - n; k < ellipsisRank; ++k)
      l += static_cast<char>('0' + k);
    return l;
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string &labels = inputs[i];
    size_t at = labels.find("...");
    if (at != std::string::npos)
      labels.replace(
          at, 3,
          ellipsis(typeOf(xs[i]).getRank() - int64_t(labels.size() - 3)));
  }
  std::string out;
  if (arrow == std::string::npos) {
    // Implicit output: the ellipsis, then the labels used once, sorted.
    std::string all = inputs[0] + (inputs.size() > 1 ? inputs[1] : "");
    out = ellipsis(ellipsisRank);
    std::string once;
    for (char c : all)
      if (std::isalpha(static_cast<unsigned char>(c)) &&
          llvm::count(all, c) == 1)
        once += c;
    llvm::sort(once);
    out += once;
  } else {
    out = eq.substr(arrow + 2);
    size_t at = out.find("...");
    if (at != std::string::npos)
      out.replace(at, 3, ellipsis(ellipsisRank));
  }
  llvm::DenseMap<char, int64_t> size;
  auto f32 = b.getF32Type();
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string &labels = inputs[i];
    auto t = typeOf(xs[i]);
    if (static_cast<int64_t>(labels.size()) != t.getRank())
      return nodeError(node) << "operand " << i << " has rank " << t.getRank()
                             << " but " << labels.size() << " labels";
    for (auto [d, c] : llvm::enumerate(labels)) {
      auto [it, inserted] = size.insert({c, t.getDimSize(d)});
      if (!inserted && it->second != t.getDimSize(d))
        return nodeError(node) << "label '" << c << "' has sizes " << it->second
                               << " and " << t.getDimSize(d);
    }
    // A label repeated within an operand takes its diagonal: x times an
    // identity mask over the two axes, summed over the second.
    for (size_t d1 = 0; d1 < labels.size(); ++d1) {
      size_t d2 = labels.find(labels[d1], d1 + 1);
      if (d2 == std::string::npos)
        continue;
      int64_t n = size[labels[d1]];
      if (n > 0 && n > kMaxFoldedElements / n)
        return nodeError(node) << "the diagonal of a repeated label of size "
                               << n << " needs an identity mask of more than "
                               << kMaxFoldedElements << " elements";
      auto xt = typeOf(xs[i]);
      SmallVector<int64_t> maskShape(xt.getRank(), 1);
      maskShape[d1] = maskShape[d2] = n;
      SmallVector<float> eye(n * n, 0.0f);
      for (int64_t k = 0; k < n; ++k)
        eye[k * n + k] = 1.0f;
      auto maskType = RankedTensorType::get(maskShape, f32);
      Value mask = b.create<graph::ConstantOp>(
          loc, DenseElementsAttr::get(maskType, ArrayRef<float>(eye)));
      SmallVector<int64_t> shape(xt.getShape());
      shape.erase(shape.begin() + d2);
      xs[i] = b.create<graph::ReduceOp>(
          loc, RankedTensorType::get(shape, f32), b.getStringAttr("sum"),
          b.create<graph::MulOp>(loc, xs[i], mask),
          b.getDenseI64ArrayAttr({static_cast<int64_t>(d2)}),
          b.getBoolAttr(false));
      labels.erase(d2, 1);
      --d1; // the label may occur a third time
    }
  }
  for (char c : out)
    if (!size.count(c) || llvm::count(out, c) > 1)
      return nodeError(node)
             << "output label '" << c << "' is repeated or not in an input";
  // Sums away the labels of `x` that `keep` lacks; returns the new labels.
  auto sumAway = [&](Value &x, std::string labels,
                     StringRef keep) -> std::string {
    SmallVector<int64_t> axes, shape;
    std::string left;
    for (auto [d, c] : llvm::enumerate(labels)) {
      if (keep.contains(c)) {
        left += c;
        shape.push_back(size[c]);
      } else {
        axes.push_back(d);
      }
    }
    if (!axes.empty())
      x = b.create<graph::ReduceOp>(
          loc, RankedTensorType::get(shape, f32), b.getStringAttr("sum"), x,
          b.getDenseI64ArrayAttr(axes), b.getBoolAttr(false));
    return left;
  };
  auto permute = [&](Value x, StringRef from, StringRef to) -> Value {
    SmallVector<int64_t> perm;
    for (char c : to)
      perm.push_back(from.find(c));
    bool identity = true;
    for (auto [i, p] : llvm::enumerate(perm))
      identity &= static_cast<int64_t>(i) == p;
    return identity ? x : b.create<graph::TransposeOp>(loc, x, perm);
  };
  if (xs.size() == 1) {
    std::string left = sumAway(xs[0], inputs[0], out);
    define(node, 0, permute(xs[0], left, out));
    return success();
  }
  std::string a = sumAway(xs[0], inputs[0], inputs[1] + out);
  std::string bl = sumAway(xs[1], inputs[1], a + out);
  std::string batch, freeA, freeB, contracted;
  for (char c : a) {
    bool inB = bl.find(c) != std::string::npos;
    bool inOut = out.find(c) != std::string::npos;
    (inB ? (inOut ? batch : contracted) : freeA) += c;
  }
  for (char c : bl)
    if (a.find(c) == std::string::npos)
      freeB += c;
  auto prod = [&](StringRef labels) {
    int64_t n = 1;
    for (char c : labels)
      n *= size[c];
    return n;
  };
  SmallVector<int64_t> bshape;
  for (char c : batch)
    bshape.push_back(size[c]);
  auto shaped = [&](ArrayRef<int64_t> tail) {
    SmallVector<int64_t> s(bshape);
    s.append(tail.begin(), tail.end());
    return RankedTensorType::get(s, f32);
  };
  Value lhs =
      b.create<graph::ReshapeOp>(loc, shaped({prod(freeA), prod(contracted)}),
                                 permute(xs[0], a, batch + freeA + contracted));
  Value rhs = b.create<graph::ReshapeOp>(
      loc, shaped({prod(contracted), prod(freeB)}),
      permute(xs[1], bl, batch + contracted + freeB));
  Value y = b.create<graph::MatMulOp>(loc, lhs, rhs, b.getBoolAttr(false),
                                      b.getBoolAttr(false));
  std::string ylabels = batch + freeA + freeB;
  SmallVector<int64_t> yshape;
  for (char c : ylabels)
    yshape.push_back(size[c]);
  y = b.create<graph::ReshapeOp>(loc, RankedTensorType::get(yshape, f32), y);
  define(node, 0, permute(y, ylabels, out));
  return success();
}

LogicalResult Importer::importCastLike(const onnx::NodeProto &node) {
  FailureOr<Entry *> x = operand(node, 0), like = operand(node, 1);
  if (failed(x) || failed(like))
    return failure();
  Type target = (*like)->value
                    ? llvm::cast<RankedTensorType>((*like)->value.getType())
                          .getElementType()
                    : ((*like)->folded->isFloat ? Type(b.getF32Type())
                                                : Type(b.getI64Type()));
  // A constant cast like another value stays a constant (the torch 2.x
  // exporter casts Range's bounds so).
  if (const std::optional<Const> &in = (*x)->folded;
      in && (target.isF32() || target.isInteger(64) || target.isInteger(32) ||
             target.isInteger(1))) {
    Const c;
    c.shape = in->shape;
    c.isFloat = target.isF32();
    c.isBool = target.isInteger(1);
    for (int64_t i = 0; i < in->size(); ++i) {
      double v = in->at(i);
      if (c.isFloat)
        c.floats.push_back(static_cast<float>(v));
      else if (c.isBool)
        c.ints.push_back(v != 0);
      else if (!in->isFloat)
        c.ints.push_back(in->ints[i]);
      else if (v >= -9.2e18 && v <= 9.2e18)
        c.ints.push_back(static_cast<int64_t>(v));
      else
        return nodeError(node) << "cannot cast " << v << " to an integer";
    }
    defineConst(node, 0, std::move(c));
    return success();
  }
  FailureOr<Value> v = tensor(node, 0);
  if (failed(v))
    return failure();
  auto t = llvm::cast<RankedTensorType>(v->getType());
  define(node, 0,
         t.getElementType() == target
             ? *v
             : b.create<graph::CastOp>(nodeLoc(node), t.clone(target), *v)
                   .getResult());
  return success();
}

} // namespace otc::importer
