//===- ExecOps.cpp - exec dialect -----------------------------------------===//

#include "dialects/dist/DistDialect.h"
#include "dialects/exec/ExecDialect.h"
#include "dialects/exec/KernelDescs.h"
#include "dialects/exec/KernelTable.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

using namespace mlir;
using namespace otc::exec;

#include "dialects/exec/ExecDialect.cpp.inc"

void ExecDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/exec/ExecOps.cpp.inc"
      >();
}

LogicalResult ViewOp::verify() {
  // Buffers are 64-byte aligned, except gradients packed into a bucket,
  // which only keep their element's alignment.
  auto type = getResult().getType();
  int64_t align = std::max<int64_t>(type.getElementTypeBitWidth() / 8, 1);
  int64_t offset = getOffsetAttr().getInt(); // the getter is unsigned
  if (offset < 0 || offset % align != 0)
    return emitOpError("offset ")
           << offset << " is not a non-negative multiple of " << align;
  // Every byte of the view has an int64 offset.
  std::optional<int64_t> size = checkedByteSize(type);
  int64_t end;
  if (!size || llvm::AddOverflow(offset, *size, end))
    return emitOpError("a view of ")
           << type << " at offset " << offset
           << " ends beyond the largest byte offset (2^63 - 1)";
  if (!type.getLayout().isIdentity())
    return emitOpError("views must have the identity layout");
  return success();
}

LogicalResult ConstantOp::verify() {
  auto type = getResult().getType();
  auto value = llvm::cast<ShapedType>(getValue().getType());
  if (value.getShape() != type.getShape() ||
      value.getElementType() != type.getElementType())
    return emitOpError("value of type ")
           << value << " does not match the buffer " << type;
  return success();
}

LogicalResult KernelOp::verify() {
  const KernelInfo *k = lookupKernel(getKernel());
  if (!k)
    return emitOpError("unknown kernel '") << getKernel() << "'";
  unsigned ins = getIns().size(), outs = getOuts().size();
  if (ins < k->minIns || (k->maxIns != 0 && ins > k->maxIns))
    return emitOpError("kernel '")
           << getKernel() << "' takes " << k->minIns
           << (k->minIns == k->maxIns ? ""
               : k->maxIns == 0       ? " or more"
                                      : " to " + std::to_string(k->maxIns))
           << " inputs, got " << ins;
  if (k->outs == 0 && outs == 0)
    return emitOpError("kernel '") << getKernel() << "' writes outputs";
  if (k->outs != 0 && outs != k->outs)
    return emitOpError("kernel '")
           << getKernel() << "' writes " << k->outs << " outputs, got " << outs;
  for (Value v : getOperands())
    if (llvm::cast<MemRefType>(v.getType()).getRank() > kMaxKernelRank)
      return emitOpError("operands of rank above ")
             << kMaxKernelRank << " are not supported by the kernels";
  if (failed(verifyKernelAttrs(*this, *k)))
    return failure();
  if (unsigned per = updateOutsPerParameter(getKernel())) {
    if (outs != ins * per)
      return emitOpError("kernel '")
             << getKernel() << "' writes " << per
             << " outputs per gradient (the parameter, then its state): " << ins
             << " gradients, " << outs << " outputs";
    for (unsigned i = 0; i < ins; ++i)
      for (unsigned j = 0; j < per; ++j)
        if (llvm::cast<MemRefType>(getOuts()[i * per + j].getType())
                .getNumElements() !=
            llvm::cast<MemRefType>(getIns()[i].getType()).getNumElements())
          return emitOpError("output ")
                 << i * per + j << " of kernel '" << getKernel()
                 << "' does not have as many elements as gradient " << i;
  }
  auto rank = [](Value v) {
    return llvm::cast<MemRefType>(v.getType()).getRank();
  };
  if (getKernel() == "gemm" &&
      (rank(getIns()[0]) != 2 || rank(getIns()[1]) != 2 ||
       rank(getOuts()[0]) != 2))
    return emitOpError("gemm takes 2-D operands");
  if (getKernel() == "matmul" &&
      llvm::any_of(ArrayRef<StringRef>{"permA", "permB", "permY"},
                   [&](StringRef a) { return (*this)->hasAttr(a); })) {
    StridedMatmul s;
    std::string why;
    if (computesBf16(*this))
      return emitOpError("a matmul in bfloat16 reads no permuted operands");
    if (!stridedMatmulOf(*this, getIns()[0], getIns()[1], getOuts()[0], s,
                         &why))
      return emitOpError("matmul through permutations: ") << why;
  }
  if (auto axis = (*this)->getAttrOfType<IntegerAttr>("axis")) {
    int64_t r = 0;
    for (Value v : getOperands())
      r = std::max<int64_t>(r, rank(v));
    if (axis.getInt() < -r || axis.getInt() >= r)
      return emitOpError("axis ")
             << axis.getInt() << " out of range for rank " << r;
  }
  return success();
}

void KernelOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  for (OpOperand &in : getInsMutable())
    effects.emplace_back(MemoryEffects::Read::get(), &in);
  for (OpOperand &out : getOutsMutable()) {
    effects.emplace_back(MemoryEffects::Read::get(), &out);
    effects.emplace_back(MemoryEffects::Write::get(), &out);
  }
}

bool otc::exec::mayWrite(Operation *op, Value v) {
  auto iface = llvm::dyn_cast<MemoryEffectOpInterface>(op);
  if (!iface)
    return true;
  SmallVector<MemoryEffects::EffectInstance> effects;
  iface.getEffects(effects);
  return llvm::any_of(effects, [&](const MemoryEffects::EffectInstance &e) {
    return llvm::isa<MemoryEffects::Write>(e.getEffect()) &&
           (!e.getValue() || e.getValue() == v);
  });
}

LogicalResult AllReduceOp::verify() {
  if (std::optional<ArrayRef<int64_t>> range = getRange()) {
    int64_t n = getBuffer().getType().getNumElements();
    if (range->size() != 2 || (*range)[0] < 0 || (*range)[0] >= (*range)[1] ||
        (*range)[1] > n)
      return emitOpError("range must be [begin, end) with 0 <= begin < end "
                         "<= ")
             << n;
  }
  return success();
}

LogicalResult CompressedAllReduceOp::verify() {
  // The emitter reads the step's hyperparameter of that name.
  if (getVelocityDecay() != "momentum" && getVelocityDecay() != "beta1")
    return emitOpError("velocity_decay must be 'momentum' or 'beta1', got '")
           << getVelocityDecay() << "'";
  if (getNesterov() && (!getVelocity() || getVelocityDecay() != "momentum"))
    return emitOpError("nesterov needs a velocity decayed by momentum");
  if (failed(dist::verifyLowRank(
          getOperation(), getMethod() == "powersgd", getPowersgdRank(),
          getMatrices(), getBuffer().getType().getNumElements(),
          getState() ? getState().getType().getNumElements() : -1,
          getExchange(), getVelocity() != nullptr)))
    return failure();
  // The emitter names the runtime's exchange.
  StringRef exchange = getExchange();
  if (exchange != "all-gather" && exchange != "reduce-scatter" &&
      exchange != "all-reduce")
    return emitOpError("exchange must be all-gather, reduce-scatter or "
                       "all-reduce, got '")
           << exchange << "'";
  if (exchange == "all-reduce" && getMethod() != "none" &&
      getMethod() != "powersgd")
    return emitOpError("exchange 'all-reduce' takes method 'none' or "
                       "'powersgd', not '")
           << getMethod() << "'";
  return success();
}

#include "dialects/exec/ExecEnums.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/exec/ExecOps.cpp.inc"
