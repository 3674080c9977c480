//===- GraphOps.cpp - graph dialect ops -----------------------------------===//
//
// Dialect registration, verifiers, result type inference and folders.
// Gradients live in GraphGradients.cpp.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace otc::graph;

#include "dialects/graph/GraphDialect.cpp.inc"
#include "dialects/graph/GraphInterfaces.cpp.inc"

void GraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/graph/GraphOps.cpp.inc"
      >();
}

Operation *GraphDialect::materializeConstant(OpBuilder &builder,
                                             Attribute value, Type type,
                                             Location loc) {
  auto elements = llvm::dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, elements);
}

//===----------------------------------------------------------------------===//
// Shape helpers
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>>
otc::graph::broadcastShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return failure();
    out[i] = da == 1 ? db : da;
  }
  return out;
}

LogicalResult otc::graph::inferBroadcastResult(std::optional<Location> loc,
                                               Type lhs, Type rhs,
                                               SmallVectorImpl<Type> &results) {
  auto l = llvm::cast<RankedTensorType>(lhs);
  auto r = llvm::cast<RankedTensorType>(rhs);
  if (l.getElementType() != r.getElementType())
    return emitOptionalError(loc, "operand element types differ: ", lhs, " vs ",
                             rhs);
  auto shape = broadcastShapes(l.getShape(), r.getShape());
  if (failed(shape))
    return emitOptionalError(loc, "operand shapes are not broadcastable: ", lhs,
                             " vs ", rhs);
  results.push_back(RankedTensorType::get(*shape, l.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// ClipGradientsOp
//===----------------------------------------------------------------------===//

LogicalResult ClipGradientsOp::verify() {
  if (getGrads().empty())
    return emitOpError("needs at least one gradient");
  if (getClipped().getTypes() != getGrads().getTypes())
    return emitOpError("clipped gradients must have the gradients' types");
  float norm = getMaxNorm().convertToFloat(),
        value = getMaxValue().convertToFloat();
  if ((norm > 0 && value > 0) || norm < 0 || value < 0)
    return emitOpError("takes at most one of max_norm and max_value, "
                       "positive");
  return success();
}

//===----------------------------------------------------------------------===//
// HyperparameterOp
//===----------------------------------------------------------------------===//

LogicalResult HyperparameterOp::verify() {
  if (!llvm::is_contained(kHyperparameters, getName()))
    return emitOpError("unknown hyperparameter '")
           << getName() << "' (expected one of "
           << llvm::join(llvm::ArrayRef(kHyperparameters), ", ") << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto in = getInput().getType();
  auto out = getResult().getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type changes from ")
           << in.getElementType() << " to " << out.getElementType();
  if (!in.hasStaticShape() || !out.hasStaticShape())
    return emitOpError("requires static shapes");
  if (in.getNumElements() != out.getNumElements())
    return emitOpError("cannot reshape ")
           << in.getNumElements() << " elements into " << out << " with "
           << out.getNumElements() << " elements";
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto dense =
          llvm::dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(getType());
  return {};
}

//===----------------------------------------------------------------------===//
// TransposeOp
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto in = llvm::cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if (perm.size() != static_cast<size_t>(in.getRank()))
    return emitOptionalError(loc, "perm has ", perm.size(),
                             " entries for a rank-", in.getRank(), " input");
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= in.getRank())
      return emitOptionalError(loc, "perm entry ", p, " out of range");
    shape.push_back(in.getDimSize(p));
  }
  types.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

LogicalResult TransposeOp::verify() {
  SmallVector<bool> seen(getPerm().size(), false);
  for (int64_t p : getPerm()) {
    if (p < 0 || p >= static_cast<int64_t>(seen.size()) || seen[p])
      return emitOpError("perm is not a permutation");
    seen[p] = true;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ReduceSumToOp
//===----------------------------------------------------------------------===//

LogicalResult ReduceSumToOp::verify() {
  auto in = getInput().getType().getShape();
  auto out = getResult().getType().getShape();
  auto b = broadcastShapes(in, out);
  if (out.size() > in.size() || failed(b) || ArrayRef<int64_t>(*b) != in)
    return emitOpError("result shape does not broadcast to the input shape");
  return success();
}

OpFoldResult ReduceSumToOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// GemmOp / MatMulOp
//===----------------------------------------------------------------------===//

LogicalResult GemmOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  auto a = llvm::cast<RankedTensorType>(adaptor.getA().getType());
  auto b = llvm::cast<RankedTensorType>(adaptor.getB().getType());
  if (a.getRank() != 2 || b.getRank() != 2)
    return emitOptionalError(loc, "Gemm operands must be 2-D, got ", a, " and ",
                             b);
  bool ta = adaptor.getTransA(), tb = adaptor.getTransB();
  int64_t m = a.getDimSize(ta ? 1 : 0), ka = a.getDimSize(ta ? 0 : 1);
  int64_t kb = b.getDimSize(tb ? 1 : 0), n = b.getDimSize(tb ? 0 : 1);
  if (ka != kb)
    return emitOptionalError(loc, "Gemm inner dimensions differ: ", ka, " vs ",
                             kb);
  types.push_back(RankedTensorType::get({m, n}, a.getElementType()));
  return success();
}

LogicalResult GemmOp::verify() {
  if (!getC())
    return success();
  auto c = getC().getType().getShape();
  auto y = getResult().getType().getShape();
  auto b = broadcastShapes(c, y);
  if (failed(b) || ArrayRef<int64_t>(*b) != y)
    return emitOpError("C of shape [")
           << c << "] does not broadcast to the result [" << y << "]";
  return success();
}

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto a = llvm::cast<RankedTensorType>(adaptor.getA().getType());
  auto b = llvm::cast<RankedTensorType>(adaptor.getB().getType());
  if (a.getRank() < 2 || b.getRank() < 2)
    return emitOptionalError(loc, "matmul needs operands of rank >= 2, got ", a,
                             " and ", b);
  bool ta = adaptor.getTransA(), tb = adaptor.getTransB();
  int64_t ra = a.getRank(), rb = b.getRank();
  int64_t m = a.getDimSize(ta ? ra - 1 : ra - 2);
  int64_t ka = a.getDimSize(ta ? ra - 2 : ra - 1);
  int64_t kb = b.getDimSize(tb ? rb - 1 : rb - 2);
  int64_t n = b.getDimSize(tb ? rb - 2 : rb - 1);
  if (ka != kb)
    return emitOptionalError(loc, "matmul inner dimensions differ: ", ka,
                             " vs ", kb);
  auto batch =
      broadcastShapes(a.getShape().drop_back(2), b.getShape().drop_back(2));
  if (failed(batch))
    return emitOptionalError(loc, "matmul batch dimensions of ", a, " and ", b,
                             " do not broadcast");
  SmallVector<int64_t> shape(*batch);
  shape.append({m, n});
  types.push_back(RankedTensorType::get(shape, a.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  // x + 0 -> x when no broadcasting changes the shape.
  if (auto rhs = llvm::dyn_cast_or_null<DenseFPElementsAttr>(adaptor.getRhs()))
    if (rhs.isSplat() && rhs.getSplatValue<APFloat>().isZero() &&
        getLhs().getType() == getType())
      return getLhs();
  return {};
}

bool otc::graph::unaryGradUsesOutput(StringRef kind) {
  return llvm::is_contained({"relu", "sigmoid", "tanh", "exp", "sqrt",
                             "hard_sigmoid", "reciprocal", "tan"},
                            kind);
}

bool otc::graph::unaryGradTakesBoth(StringRef kind) { return kind == "gelu"; }

LogicalResult UnaryGradOp::verify() {
  bool useY = unaryGradUsesOutput(getKind());
  if (unaryGradTakesBoth(getKind())) {
    if (!getInput())
      return emitOpError("the derivative of '")
             << getKind() << "' reads the forward's input (x), and its output "
             << "(y) if given";
  } else if (useY ? (!getOutput() || getInput())
                  : (!getInput() || getOutput())) {
    return emitOpError("the derivative of '")
           << getKind() << "' reads the forward's "
           << (useY ? "output (y)" : "input (x)") << " only";
  }
  // The operands' types are the result's: the op's type constraints.
  return success();
}

LogicalResult BinaryGradOp::verify() {
  if (!llvm::is_contained({"pow", "max", "min", "prelu", "mod", "fmod"},
                          getKind()))
    return emitOpError("unknown kind '") << getKind() << "'";
  if (getOperandAttr().getInt() != 0 && getOperandAttr().getInt() != 1)
    return emitOpError("operand must be 0 or 1");
  if (getResult().getType() != getGrad().getType())
    return emitOpError("result must have the gradient's type");
  return success();
}

/// Shape of the broadcast of `types`, or failure.
static FailureOr<SmallVector<int64_t>> broadcastAll(TypeRange types) {
  SmallVector<int64_t> shape;
  for (Type t : types) {
    auto s = broadcastShapes(shape, llvm::cast<ShapedType>(t).getShape());
    if (failed(s))
      return failure();
    shape = *s;
  }
  return shape;
}

LogicalResult CompareOp::verify() {
  if (!llvm::is_contained({"eq", "lt", "le", "gt", "ge"}, getPredicate()))
    return emitOpError("unknown predicate '") << getPredicate() << "'";
  if (getLhs().getType().getElementType() !=
      getRhs().getType().getElementType())
    return emitOpError("operand element types differ");
  auto shape = broadcastAll({getLhs().getType(), getRhs().getType()});
  if (failed(shape) || ArrayRef<int64_t>(*shape) != getType().getShape())
    return emitOpError("result shape is not the operands' broadcast");
  return success();
}

LogicalResult LogicalOp::verify() {
  if (!llvm::is_contained({"and", "or", "xor"}, getKind()))
    return emitOpError("unknown kind '") << getKind() << "'";
  auto shape = broadcastAll({getLhs().getType(), getRhs().getType()});
  if (failed(shape) || ArrayRef<int64_t>(*shape) != getType().getShape())
    return emitOpError("result shape is not the operands' broadcast");
  return success();
}

LogicalResult WhereOp::verify() {
  if (getLhs().getType().getElementType() !=
          getRhs().getType().getElementType() ||
      getType().getElementType() != getLhs().getType().getElementType())
    return emitOpError("branches and result must share an element type");
  auto shape = broadcastAll(
      {getCondition().getType(), getLhs().getType(), getRhs().getType()});
  if (failed(shape) || ArrayRef<int64_t>(*shape) != getType().getShape())
    return emitOpError("result shape is not the operands' broadcast");
  return success();
}

LogicalResult CastOp::verify() {
  if (getInput().getType().getShape() != getType().getShape())
    return emitOpError("cast changes the shape");
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

LogicalResult DropoutOp::verify() {
  float r = getRatio().convertToFloat();
  if (!(r >= 0.0f && r < 1.0f))
    return emitOpError("ratio must be in [0, 1), got ") << r;
  if (getMask().getType() != getInput().getType() ||
      getResult().getType() != getInput().getType())
    return emitOpError("result and mask must have the input's type");
  return success();
}

static LogicalResult verifyAxis(Operation *op, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return op->emitOpError("axis ")
           << axis << " out of range for rank " << rank;
  return success();
}

template <typename OpT> static LogicalResult verifySoftmax(OpT op) {
  return verifyAxis(op, op.getAxis(), op.getInput().getType().getRank());
}
LogicalResult SoftmaxOp::verify() { return verifySoftmax(*this); }
LogicalResult SoftmaxGradOp::verify() {
  return verifyAxis(*this, getAxis(), getResult().getType().getRank());
}
LogicalResult LogSoftmaxGradOp::verify() {
  return verifyAxis(*this, getAxis(), getResult().getType().getRank());
}
LogicalResult LogSoftmaxOp::verify() { return verifySoftmax(*this); }

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxCrossEntropyOp::verify() {
  auto logits = getLogits().getType();
  auto labels = getLabels().getType();
  if (logits.getRank() != 2)
    return emitOpError("expects logits of shape [N, C], got ") << logits;
  if (labels.getRank() != 1 || labels.getDimSize(0) != logits.getDimSize(0))
    return emitOpError("expects labels of shape [")
           << logits.getDimSize(0) << "], got " << labels;
  if (getProbs().getType() != logits)
    return emitOpError("probs must have the logits' type");
  return success();
}

LogicalResult MseOp::verify() {
  if (getPred().getType() != getTarget().getType())
    return emitOpError("prediction ") << getPred().getType() << " and target "
                                      << getTarget().getType() << " differ";
  return success();
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

/// `: type` of an update whose state operands and results all have the
/// parameter's type: one type printed, the state's types filled in from it.
static ParseResult
parseSameStateTypes(OpAsmParser &parser, Type &param,
                    ArrayRef<OpAsmParser::UnresolvedOperand> state,
                    SmallVectorImpl<Type> &stateTypes,
                    SmallVectorImpl<Type> &newStateTypes) {
  if (parser.parseColonType(param))
    return failure();
  stateTypes.assign(state.size(), param);
  newStateTypes.assign(state.size(), param);
  return success();
}

static void printSameStateTypes(OpAsmPrinter &p, Operation *, Type param,
                                OperandRange, TypeRange, TypeRange) {
  p << ": " << param;
}

LogicalResult RmspropUpdateOp::verify() {
  size_t want = 1 + getCentered() + getWithMomentum();
  if (getState().size() != want)
    return emitOpError("expects ")
           << want << " state operand" << (want == 1 ? "" : "s")
           << " (square_avg" << (getCentered() ? ", grad_avg" : "")
           << (getWithMomentum() ? ", momentum_buffer" : "") << "), got "
           << getState().size();
  if (getNewState().size() != want)
    return emitOpError("expects ")
           << want << " new state results, got " << getNewState().size();
  for (Value v : getState())
    if (v.getType() != getParam().getType())
      return emitOpError("state of type ")
             << v.getType() << " for a parameter of type "
             << getParam().getType();
  for (Value v : getNewState())
    if (v.getType() != getParam().getType())
      return emitOpError("new state of type ")
             << v.getType() << " for a parameter of type "
             << getParam().getType();
  return success();
}

LogicalResult EmaUpdateOp::verify() {
  float decay = getDecay().convertToFloat();
  if (!(decay > 0.0f && decay < 1.0f))
    return emitOpError("decay must be in (0, 1), got ") << decay;
  return success();
}

#define GET_OP_CLASSES
#include "dialects/graph/GraphOps.cpp.inc"
