//===- GraphNNOps.cpp - convolution, pooling, normalization ---------------===//
//
// Verifiers and gradients of the ops in GraphNNOps.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace otc::graph;

int64_t otc::graph::windowOutputSize(int64_t in, int64_t kernel, int64_t stride,
                                     int64_t dilation, int64_t padBegin,
                                     int64_t padEnd) {
  int64_t span, padded, rest;
  if (llvm::MulOverflow(dilation, kernel - 1, span) ||
      llvm::AddOverflow(span, int64_t(1), span) ||
      llvm::AddOverflow(in, padBegin, padded) ||
      llvm::AddOverflow(padded, padEnd, padded) ||
      llvm::SubOverflow(padded, span, rest))
    return 0;
  if (rest < 0 || rest / stride == INT64_MAX)
    return 0;
  return rest / stride + 1;
}

/// Checks the window attributes of an op over `spatial` dimensions.
static LogicalResult verifyWindow(Operation *op, int64_t spatial,
                                  ArrayRef<int64_t> strides,
                                  ArrayRef<int64_t> dilations,
                                  ArrayRef<int64_t> padsBegin,
                                  ArrayRef<int64_t> padsEnd) {
  if (spatial < 1 || spatial > 3)
    return op->emitOpError("supports 1 to 3 spatial dimensions, got ")
           << spatial;
  for (ArrayRef<int64_t> a : {strides, dilations, padsBegin, padsEnd})
    if (static_cast<int64_t>(a.size()) != spatial)
      return op->emitOpError("window attributes need ")
             << spatial << " entries each";
  for (int64_t d = 0; d < spatial; ++d)
    if (strides[d] < 1 || dilations[d] < 1 || padsBegin[d] < 0 ||
        padsEnd[d] < 0)
      return op->emitOpError("strides and dilations must be >= 1, pads >= 0");
  return success();
}

/// The convolution output of `in` ([N, C, s...]) with `weight` [M, C/g, k...].
static FailureOr<SmallVector<int64_t>>
convShape(Operation *op, ArrayRef<int64_t> in, ArrayRef<int64_t> weight,
          ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
          ArrayRef<int64_t> padsBegin, ArrayRef<int64_t> padsEnd,
          int64_t group) {
  int64_t spatial = static_cast<int64_t>(in.size()) - 2;
  if (failed(verifyWindow(op, spatial, strides, dilations, padsBegin, padsEnd)))
    return failure();
  if (weight.size() != in.size())
    return op->emitOpError("weight rank must equal the input rank");
  int64_t channels;
  if (group < 1 || in[1] % group != 0 || weight[0] % group != 0 ||
      llvm::MulOverflow(weight[1], group, channels) || channels != in[1])
    return op->emitOpError("channels (input ")
           << in[1] << ", weight [" << weight[0] << ", " << weight[1]
           << "]) do not fit group " << group;
  SmallVector<int64_t> out{in[0], weight[0]};
  for (int64_t d = 0; d < spatial; ++d)
    out.push_back(windowOutputSize(in[2 + d], weight[2 + d], strides[d],
                                   dilations[d], padsBegin[d], padsEnd[d]));
  return out;
}

static Value sumOver(OpBuilder &b, Location loc, Value v,
                     ArrayRef<int64_t> axes, RankedTensorType type) {
  return b.create<ReduceOp>(loc, type, b.getStringAttr("sum"), v,
                            b.getDenseI64ArrayAttr(axes), b.getBoolAttr(false));
}

/// The batch and spatial axes of a rank-`rank` NC... tensor.
static SmallVector<int64_t> nonChannelAxes(int64_t rank) {
  SmallVector<int64_t> axes{0};
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  return axes;
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

LogicalResult ConvOp::verify() {
  auto shape =
      convShape(*this, getInput().getType().getShape(),
                getWeight().getType().getShape(), getStrides(), getDilations(),
                getPadsBegin(), getPadsEnd(), getGroupAttr().getInt());
  if (failed(shape))
    return failure();
  if (getResult().getType().getShape() != ArrayRef<int64_t>(*shape))
    return emitOpError("result must have shape [") << *shape << "]";
  if (getBias() && getBias().getType().getShape() !=
                       ArrayRef<int64_t>{getWeight().getType().getDimSize(0)})
    return emitOpError("bias must have shape [")
           << getWeight().getType().getDimSize(0) << "]";
  return success();
}

LogicalResult ConvOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                     SmallVectorImpl<Value> &out) {
  Location loc = getLoc();
  // The parameters' gradients first, as GemmOp's.
  Value dw = b.create<ConvGradWeightOp>(
      loc, getWeight().getType(), g[0], getInput(), getStridesAttr(),
      getDilationsAttr(), getPadsBeginAttr(), getPadsEndAttr(), getGroupAttr());
  Value dbias;
  if (getBias())
    dbias =
        sumOver(b, loc, g[0], nonChannelAxes(getResult().getType().getRank()),
                getBias().getType());
  Value dx = b.create<ConvGradInputOp>(
      loc, getInput().getType(), g[0], getWeight(), getStridesAttr(),
      getDilationsAttr(), getPadsBeginAttr(), getPadsEndAttr(), getGroupAttr());
  out.assign({dx, dw});
  if (dbias)
    out.push_back(dbias);
  return success();
}

LogicalResult ConvTransposeOp::verify() {
  // The convolution with this op's result as input maps back to the input.
  auto y = getResult().getType().getShape();
  auto w = getWeight().getType().getShape();
  if (w.size() != y.size() || y.size() < 3)
    return emitOpError("weight and result ranks must match (>= 3)");
  SmallVector<int64_t> convWeight(w);
  if (getGroupAttr().getInt() < 1)
    return emitOpError("group must be >= 1");
  auto shape = convShape(*this, y, convWeight, getStrides(), getDilations(),
                         getPadsBegin(), getPadsEnd(), getGroupAttr().getInt());
  if (failed(shape))
    return failure();
  if (getInput().getType().getShape() != ArrayRef<int64_t>(*shape))
    return emitOpError("input shape does not match the result: the "
                       "convolution of the result gives [")
           << *shape << "]";
  if (getBias() && getBias().getType().getShape() != ArrayRef<int64_t>{y[1]})
    return emitOpError("bias must have shape [") << y[1] << "]";
  return success();
}

LogicalResult ConvTransposeOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                              SmallVectorImpl<Value> &out) {
  Location loc = getLoc();
  // y = conv_grad_input(x, w): dx = conv(dy, w); dw = conv_grad_weight
  // with x in the role of the convolution's output gradient.
  Value dw = b.create<ConvGradWeightOp>(
      loc, getWeight().getType(), getInput(), g[0], getStridesAttr(),
      getDilationsAttr(), getPadsBeginAttr(), getPadsEndAttr(), getGroupAttr());
  Value dbias;
  if (getBias())
    dbias =
        sumOver(b, loc, g[0], nonChannelAxes(getResult().getType().getRank()),
                getBias().getType());
  Value dx = b.create<ConvOp>(
      loc, getInput().getType(), g[0], getWeight(), Value(), getStridesAttr(),
      getDilationsAttr(), getPadsBeginAttr(), getPadsEndAttr(), getGroupAttr());
  out.assign({dx, dw});
  if (dbias)
    out.push_back(dbias);
  return success();
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

static LogicalResult verifyPool(Operation *op, RankedTensorType in,
                                RankedTensorType out, ArrayRef<int64_t> kernel,
                                ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> dilations,
                                ArrayRef<int64_t> padsBegin,
                                ArrayRef<int64_t> padsEnd) {
  int64_t spatial = in.getRank() - 2;
  if (failed(verifyWindow(op, spatial, strides, dilations, padsBegin, padsEnd)))
    return failure();
  if (static_cast<int64_t>(kernel.size()) != spatial ||
      llvm::any_of(kernel, [](int64_t k) { return k < 1; }))
    return op->emitOpError("kernel_shape needs ") << spatial << " entries >= 1";
  if (out.getRank() != in.getRank() ||
      out.getShape().take_front(2) != in.getShape().take_front(2))
    return op->emitOpError("result must keep N and C of the input");
  for (int64_t d = 0; d < spatial; ++d) {
    // ceil_mode may add one window beyond the floor count.
    int64_t floorOut =
        windowOutputSize(in.getDimSize(2 + d), kernel[d], strides[d],
                         dilations[d], padsBegin[d], padsEnd[d]);
    int64_t o = out.getDimSize(2 + d);
    if (o != floorOut && o != floorOut + 1)
      return op->emitOpError("spatial dimension ")
             << d << " of the result is " << o << ", expected " << floorOut;
  }
  return success();
}

LogicalResult MaxPoolOp::verify() {
  if (getIndices().getType().getShape() != getResult().getType().getShape())
    return emitOpError("indices must have the result's shape");
  return verifyPool(*this, getInput().getType(), getResult().getType(),
                    getKernelShape(), getStrides(), getDilations(),
                    getPadsBegin(), getPadsEnd());
}

LogicalResult MaxPoolOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                        SmallVectorImpl<Value> &out) {
  out.assign({b.create<MaxPoolGradOp>(getLoc(), getInput().getType(), g[0],
                                      getIndices(), getKernelShapeAttr(),
                                      getStridesAttr(), getDilationsAttr(),
                                      getPadsBeginAttr(), getPadsEndAttr())});
  return success();
}

LogicalResult AvgPoolOp::verify() {
  return verifyPool(*this, getInput().getType(), getResult().getType(),
                    getKernelShape(), getStrides(), getDilations(),
                    getPadsBegin(), getPadsEnd());
}

LogicalResult AvgPoolOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                        SmallVectorImpl<Value> &out) {
  out.assign({b.create<AvgPoolGradOp>(
      getLoc(), getInput().getType(), g[0], getKernelShapeAttr(),
      getStridesAttr(), getDilationsAttr(), getPadsBeginAttr(),
      getPadsEndAttr(), getCountIncludePadAttr())});
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// Scale, bias and statistics are [C] for an [N, C, ...] input.
static LogicalResult verifyPerChannel(Operation *op, RankedTensorType in,
                                      ValueRange perChannel) {
  if (in.getRank() < 2)
    return op->emitOpError("needs an input of rank >= 2");
  for (Value v : perChannel)
    if (llvm::cast<RankedTensorType>(v.getType()).getShape() !=
        ArrayRef<int64_t>{in.getDimSize(1)})
      return op->emitOpError("per-channel operands must have shape [")
             << in.getDimSize(1) << "]";
  return success();
}

LogicalResult BatchNormOp::verify() {
  if (getResult().getType() != getInput().getType())
    return emitOpError("result must have the input's type");
  return verifyPerChannel(*this, getInput().getType(),
                          {getScale(), getBias(), getRunningMean(),
                           getRunningVar(), getNewMean(), getNewVar(),
                           getSavedMean(), getSavedInvstd()});
}

LogicalResult BatchNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                          SmallVectorImpl<Value> &out) {
  if (g[1] || g[2] || g[3] || g[4])
    return emitOpError("no gradient through the running or saved statistics");
  auto grad = b.create<BatchNormGradOp>(
      getLoc(),
      TypeRange{getInput().getType(), getScale().getType(),
                getBias().getType()},
      g[0], getInput(), getScale(), getSavedMean(), getSavedInvstd(),
      b.getI64IntegerAttr(1));
  out.assign(
      {grad.getDinput(), grad.getDscale(), grad.getDbias(), Value(), Value()});
  return success();
}

LogicalResult BatchNormInferenceOp::verify() {
  if (getResult().getType() != getInput().getType())
    return emitOpError("result must have the input's type");
  return verifyPerChannel(*this, getInput().getType(),
                          {getScale(), getBias(), getMean(), getVar()});
}

LogicalResult
BatchNormInferenceOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                     SmallVectorImpl<Value> &out) {
  // An affine map per channel: y = a * x + c, a = scale / sqrt(var + eps).
  Location loc = getLoc();
  auto in = getInput().getType();
  int64_t rank = in.getRank();
  SmallVector<int64_t> bshape(rank, 1);
  bshape[1] = in.getDimSize(1);
  auto perChannel = RankedTensorType::get(bshape, in.getElementType());
  auto scalar = RankedTensorType::get({}, in.getElementType());
  Value eps = b.create<ConstantOp>(
      loc, DenseElementsAttr::get(scalar, getEpsilonAttr()));
  Value invstd = b.create<ReciprocalOp>(
      loc, b.create<SqrtOp>(loc, b.create<AddOp>(loc, getVar(), eps)));
  Value a = b.create<ReshapeOp>(loc, perChannel,
                                b.create<MulOp>(loc, getScale(), invstd));
  Value dx = b.create<MulOp>(loc, g[0], a);
  Value xhat = b.create<MulOp>(
      loc,
      b.create<SubOp>(loc, getInput(),
                      b.create<ReshapeOp>(loc, perChannel, getMean())),
      b.create<ReshapeOp>(loc, perChannel, invstd));
  auto channels = getScale().getType();
  Value dscale = sumOver(b, loc, b.create<MulOp>(loc, g[0], xhat),
                         nonChannelAxes(rank), channels);
  Value dbias = sumOver(b, loc, g[0], nonChannelAxes(rank), channels);
  out.assign({dx, dscale, dbias, Value(), Value()});
  return success();
}

LogicalResult LayerNormOp::verify() {
  auto in = getInput().getType();
  int64_t rank = in.getRank();
  int64_t axis = getAxisAttr().getInt() < 0 ? getAxisAttr().getInt() + rank
                                            : getAxisAttr().getInt();
  if (axis < 0 || axis >= rank)
    return emitOpError("axis ")
           << getAxisAttr().getInt() << " out of range for rank " << rank;
  ArrayRef<int64_t> normalized = in.getShape().drop_front(axis);
  if (getScale().getType().getShape() != normalized ||
      (getBias() && getBias().getType().getShape() != normalized))
    return emitOpError("scale and bias must have shape [") << normalized << "]";
  SmallVector<int64_t> stats(in.getShape().take_front(axis));
  stats.append(rank - axis, 1);
  if (getMean().getType().getShape() != ArrayRef(stats) ||
      getInvstd().getType().getShape() != ArrayRef(stats) ||
      getResult().getType() != in)
    return emitOpError("result must have the input's type and the "
                       "statistics shape [")
           << stats << "]";
  return success();
}

LogicalResult LayerNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                          SmallVectorImpl<Value> &out) {
  if (g[1] || g[2])
    return emitOpError("no gradient through the mean or invstd results");
  int64_t rank = getInput().getType().getRank();
  int64_t axis = getAxisAttr().getInt() < 0 ? getAxisAttr().getInt() + rank
                                            : getAxisAttr().getInt();
  auto scaleType = getScale().getType();
  auto grad = b.create<LayerNormGradOp>(
      getLoc(), TypeRange{getInput().getType(), scaleType, scaleType}, g[0],
      getInput(), getScale(), getMean(), getInvstd(),
      b.getI64IntegerAttr(axis));
  out.assign({grad.getDinput(), grad.getDscale()});
  if (getBias())
    out.push_back(grad.getDbias());
  return success();
}

LogicalResult InstanceNormOp::verify() {
  auto in = getInput().getType();
  if (failed(verifyPerChannel(*this, in, {getScale(), getBias()})))
    return failure();
  ArrayRef<int64_t> stats = in.getShape().take_front(2);
  if (getMean().getType().getShape() != stats ||
      getInvstd().getType().getShape() != stats || getResult().getType() != in)
    return emitOpError("result must have the input's type and the "
                       "statistics shape [")
           << stats << "]";
  return success();
}

LogicalResult InstanceNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> g,
                                             SmallVectorImpl<Value> &out) {
  if (g[1] || g[2])
    return emitOpError("no gradient through the mean or invstd results");
  auto grad = b.create<InstanceNormGradOp>(
      getLoc(),
      TypeRange{getInput().getType(), getScale().getType(),
                getBias().getType()},
      g[0], getInput(), getScale(), getMean(), getInvstd(),
      b.getI64IntegerAttr(1));
  out.assign({grad.getDinput(), grad.getDscale(), grad.getDbias()});
  return success();
}
