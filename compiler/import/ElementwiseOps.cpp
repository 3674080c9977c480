//===- ElementwiseOps.cpp - Elementwise ONNX operators -------------------===//
//
// Arithmetic with numpy broadcasting (folded when both sides are
// constants), activations and the softmax family.
//
//===----------------------------------------------------------------------===//

#include "compiler/import/Importer.h"

using namespace mlir;

namespace otc::importer {

// Everything below computes on runtime tensors.
LogicalResult Importer::importArithmetic(const onnx::NodeProto &node) {
  StringRef op = node.op_type();
  Location loc = nodeLoc(node);
  FailureOr<Entry *> l = operand(node, 0), r = operand(node, 1);
  if (failed(l) || failed(r))
    return failure();
  if ((*l)->folded && (*r)->folded) {
    if (op == "Div" && !(*l)->folded->isFloat && !(*r)->folded->isFloat &&
        llvm::is_contained((*r)->folded->ints, 0))
      return nodeError(node) << "integer division by zero";
    auto fold = [&](auto fn) {
      return foldBinary(*(*l)->folded, *(*r)->folded, fn);
    };
    FailureOr<Const> c =
        op == "Add"   ? fold([](double a, double b) { return a + b; })
        : op == "Sub" ? fold([](double a, double b) { return a - b; })
        : op == "Mul" ? fold([](double a, double b) { return a * b; })
                      : fold([](double a, double b) { return a / b; });
    if (failed(c))
      return nodeError(node) << "cannot fold constants: shapes are not "
                                "broadcastable or the result is too large";
    defineConst(node, 0, std::move(*c));
    return success();
  }
  FailureOr<Value> lv = tensor(node, 0), rv = tensor(node, 1);
  if (failed(lv) || failed(rv))
    return failure();
  auto lt = llvm::cast<RankedTensorType>(lv->getType());
  auto rt = llvm::cast<RankedTensorType>(rv->getType());
  if (failed(graph::broadcastShapes(lt.getShape(), rt.getShape())))
    return nodeError(node) << "operand shapes " << lt << " and " << rt
                           << " are not broadcastable";
  if (!lt.getElementType().isF32() || !rt.getElementType().isF32())
    return nodeError(node)
           << "OTC computes in float32, got " << lt << " and " << rt;
  Value v = op == "Add"   ? b.create<graph::AddOp>(loc, *lv, *rv).getResult()
            : op == "Sub" ? b.create<graph::SubOp>(loc, *lv, *rv).getResult()
            : op == "Mul" ? b.create<graph::MulOp>(loc, *lv, *rv).getResult()
                          : b.create<graph::DivOp>(loc, *lv, *rv).getResult();
  define(node, 0, v);
  return success();
}

LogicalResult Importer::importUnary(const onnx::NodeProto &node) {
  StringRef op = node.op_type();
  Location loc = nodeLoc(node);
  FailureOr<Value> x = tensor(node, 0);
  if (failed(x))
    return failure();
  if (!llvm::cast<RankedTensorType>(x->getType()).getElementType().isF32())
    return nodeError(node) << "expects a float32 input";
  Value v;
  if (op == "Relu")
    v = b.create<graph::ReluOp>(loc, *x);
  else if (op == "Sigmoid")
    v = b.create<graph::SigmoidOp>(loc, *x);
  else if (op == "Tanh")
    v = b.create<graph::TanhOp>(loc, *x);
  else if (op == "Neg")
    v = b.create<graph::NegOp>(loc, *x);
  else if (op == "Exp")
    v = b.create<graph::ExpOp>(loc, *x);
  else if (op == "Log")
    v = b.create<graph::LogOp>(loc, *x);
  else
    v = b.create<graph::SqrtOp>(loc, *x);
  define(node, 0, v);
  return success();
}

LogicalResult Importer::importSoftmax(const onnx::NodeProto &node) {
  StringRef op = node.op_type();
  Location loc = nodeLoc(node);
  FailureOr<Value> x = tensor(node, 0);
  if (failed(x))
    return failure();
  int64_t rank = llvm::cast<RankedTensorType>(x->getType()).getRank();
  int64_t axis = intAttr(node, "axis", -1);
  if (axis < -rank || axis >= rank)
    return nodeError(node)
           << "axis " << axis << " out of range for rank " << rank;
  Value v = op == "Softmax"
                ? b.create<graph::SoftmaxOp>(loc, *x, axis).getResult()
                : b.create<graph::LogSoftmaxOp>(loc, *x, axis).getResult();
  define(node, 0, v);
  return success();
}

} // namespace otc::importer
