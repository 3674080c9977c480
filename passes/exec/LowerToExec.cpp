//===- LowerToExec.cpp - graph/dist on tensors to exec on buffers ---------===//
//
// One generic pattern turns each graph op into an `exec.kernel` of the same
// name writing freshly allocated result buffers; optimizer updates and
// all-reduces get their own patterns because they work in place.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attributes.h"
#include "dialects/dist/DistDialect.h"
#include "dialects/dist/SdpAttributes.h"
#include "dialects/exec/ExecDialect.h"
#include "dialects/exec/KernelDescs.h"
#include "dialects/exec/KernelTable.h"
#include "dialects/graph/GraphDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/DialectConversion.h"

namespace otc {
#define GEN_PASS_DEF_LOWERTOEXEC
#include "passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

/// Kernel of a graph op: the op's mnemonic, except where the kernel library
/// serves several ops with one entry.
StringRef kernelFor(Operation *op) {
  StringRef name = op->getName().stripDialect();
  if (name == "matmul") {
    auto rank = [&](unsigned i) {
      return llvm::cast<ShapedType>(op->getOperand(i).getType()).getRank();
    };
    return rank(0) == 2 && rank(1) == 2 ? "gemm" : "matmul";
  }
  if (name == "reshape")
    return "copy";
  return name;
}

/// True when `op` is the last reader of `v` in its block, so `v`'s buffer
/// may be overwritten by `op`.
bool isLastUse(Value v, Operation *op) {
  return llvm::all_of(v.getUsers(), [&](Operation *user) {
    return user == op ||
           (user->getBlock() == op->getBlock() && user->isBeforeInBlock(op));
  });
}

/// A buffer of `v` that `op` may overwrite: `buffer` itself when `op` is
/// the last use of the block argument / single-use value `v`, else a copy.
Value writableBuffer(ConversionPatternRewriter &rewriter, Operation *op,
                     Value v, Value buffer) {
  // Constants are read-only static data: never written in place.
  if (isLastUse(v, op) && !buffer.getDefiningOp<exec::ConstantOp>())
    return buffer;
  auto type = llvm::cast<MemRefType>(buffer.getType());
  Value copy = rewriter.create<exec::AllocOp>(op->getLoc(), type);
  rewriter.create<exec::KernelOp>(op->getLoc(), "copy", ValueRange{buffer},
                                  ValueRange{copy});
  return copy;
}

/// Any graph op except constants and optimizer updates: allocate results,
/// call the kernel, copy the op's attributes onto the call.
struct KernelPattern : ConversionPattern {
  KernelPattern(const TypeConverter &converter, MLIRContext *ctx,
                bool convScratch)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), /*benefit=*/1, ctx),
        convScratch(convScratch) {}

  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    if (!llvm::isa<graph::GraphDialect>(op->getDialect()) ||
        llvm::isa<graph::ConstantOp, graph::EmaUpdateOp>(op) ||
        graph::isOptimizerUpdate(op))
      return rewriter.notifyMatchFailure(op, "not a plain kernel op");
    StringRef kernel = kernelFor(op);
    if (!exec::lookupKernel(kernel))
      return op->emitError("no kernel implements '") << op->getName() << "'";
    SmallVector<Value> outs;
    for (Type t : op->getResultTypes()) {
      Type bufferType = getTypeConverter()->convertType(t);
      if (!bufferType)
        return rewriter.notifyMatchFailure(op, "unconvertible result type");
      outs.push_back(rewriter.create<exec::AllocOp>(op->getLoc(), bufferType));
    }
    // Convolutions get their scratch memory from the arena, sized by the
    // kernel library for this exact descriptor (the CUDA twins use none).
    otck_conv_desc desc;
    if (convScratch &&
        convDescOf(op, kernel, op->getOperands(), op->getResult(0), desc)) {
      int64_t bytes = otck_conv_workspace_bytes(&desc);
      if (bytes > 0)
        outs.push_back(rewriter.create<exec::AllocOp>(
            op->getLoc(), MemRefType::get({bytes}, rewriter.getI8Type())));
    }
    // Products in bfloat16 round their operands into workspace copies (on
    // both targets).
    if ((kernel == "gemm" || kernel == "matmul") && computesBf16(op)) {
      auto numel = [&](unsigned i) {
        return llvm::cast<ShapedType>(op->getOperand(i).getType())
            .getNumElements();
      };
      int64_t bytes = otck_gemm_bf16_workspace_bytes(numel(0), numel(1));
      outs.push_back(rewriter.create<exec::AllocOp>(
          op->getLoc(), MemRefType::get({bytes}, rewriter.getI8Type())));
    }
    auto call =
        rewriter.create<exec::KernelOp>(op->getLoc(), kernel, operands, outs);
    for (NamedAttribute a : op->getAttrs())
      call->setAttr(a.getName(), a.getValue());
    rewriter.replaceOp(op, ValueRange(outs).take_front(op->getNumResults()));
    return success();
  }

  bool convScratch;
};

struct ConstantPattern : OpConversionPattern<graph::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(graph::ConstantOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type type = getTypeConverter()->convertType(op.getType());
    rewriter.replaceOpWithNewOp<exec::ConstantOp>(op, type, op.getValue());
    return success();
  }
};

/// Optimizer updates write the parameter and state buffers in place.
struct UpdatePattern : ConversionPattern {
  UpdatePattern(const TypeConverter &converter, MLIRContext *ctx)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), /*benefit=*/2, ctx) {}

  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    if (!graph::isOptimizerUpdate(op))
      return rewriter.notifyMatchFailure(op, "not an optimizer update");
    // Operands: param, grad, state...; results: param, state...
    SmallVector<Value> outs{
        writableBuffer(rewriter, op, op->getOperand(0), operands[0])};
    for (unsigned i = 2; i < operands.size(); ++i)
      outs.push_back(
          writableBuffer(rewriter, op, op->getOperand(i), operands[i]));
    auto call = rewriter.create<exec::KernelOp>(op->getLoc(),
                                                op->getName().stripDialect(),
                                                ValueRange{operands[1]}, outs);
    for (NamedAttribute a : op->getAttrs())
      call->setAttr(a.getName(), a.getValue());
    rewriter.replaceOp(op, outs);
    return success();
  }
};

/// Clipping rewrites the gradients in place and writes their norm.
struct ClipPattern : OpConversionPattern<graph::ClipGradientsOp> {
  ClipPattern(const TypeConverter &converter, MLIRContext *ctx)
      : OpConversionPattern(converter, ctx, /*benefit=*/2) {}
  LogicalResult
  matchAndRewrite(graph::ClipGradientsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> outs;
    for (auto [v, buffer] : llvm::zip(op.getGrads(), adaptor.getGrads()))
      outs.push_back(writableBuffer(rewriter, op, v, buffer));
    auto normType = llvm::cast<MemRefType>(
        getTypeConverter()->convertType(op.getNorm().getType()));
    outs.push_back(rewriter.create<exec::AllocOp>(op.getLoc(), normType));
    SmallVector<Value> ins;
    if (adaptor.getTotal())
      ins.push_back(adaptor.getTotal());
    auto call = rewriter.create<exec::KernelOp>(op.getLoc(), "clip_gradients",
                                                ins, outs);
    call->setAttr("max_norm", op.getMaxNormAttr());
    call->setAttr("max_value", op.getMaxValueAttr());
    rewriter.replaceOp(op, outs);
    return success();
  }
};

/// The weight EMA updates its state in place from the updated parameter.
struct EmaPattern : OpConversionPattern<graph::EmaUpdateOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(graph::EmaUpdateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value ema = writableBuffer(rewriter, op, op.getEma(), adaptor.getEma());
    auto call = rewriter.create<exec::KernelOp>(op.getLoc(), "ema_update",
                                                ValueRange{adaptor.getParam()},
                                                ValueRange{ema});
    call->setAttr("decay", op.getDecayAttr());
    rewriter.replaceOp(op, ema);
    return success();
  }
};

/// An SDP owner group runs on the sub-communicator of its index in the
/// module's plan; no group (null) means all ranks.
FailureOr<IntegerAttr> groupAttr(OpBuilder &b, Operation *op,
                                 std::optional<ArrayRef<int64_t>> ranks) {
  if (!ranks)
    return IntegerAttr();
  if (std::optional<int64_t> i =
          dist::ownerGroupIndex(op->getParentOfType<ModuleOp>(), *ranks))
    return b.getI64IntegerAttr(*i);
  return op->emitOpError("owner group is not among the module's SDP groups");
}

struct AllReducePattern : OpConversionPattern<dist::AllReduceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::AllReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<IntegerAttr> group = groupAttr(rewriter, op, op.getRanks());
    if (failed(group))
      return failure();
    Value buffer =
        writableBuffer(rewriter, op, op.getInput(), adaptor.getInput());
    rewriter.create<exec::AllReduceOp>(op.getLoc(), buffer,
                                       op.getKind() == dist::ReduceKind::mean
                                           ? exec::ReduceKind::mean
                                           : exec::ReduceKind::sum,
                                       *group, op.getRangeAttr());
    rewriter.replaceOp(op, buffer);
    return success();
  }
};

struct BroadcastPattern : OpConversionPattern<dist::BroadcastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::BroadcastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value buffer =
        writableBuffer(rewriter, op, op.getInput(), adaptor.getInput());
    rewriter.create<exec::BroadcastOp>(op.getLoc(), buffer, op.getRootAttr());
    rewriter.replaceOp(op, buffer);
    return success();
  }
};

/// Buckets become a "pack" into one buffer and an "unpack" out of it; the
/// memory planner places the gradients inside the bucket and drops both.
struct BucketPattern : OpConversionPattern<dist::BucketOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::BucketOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type =
        llvm::cast<MemRefType>(getTypeConverter()->convertType(op.getType()));
    Value buffer = rewriter.create<exec::AllocOp>(op.getLoc(), type);
    rewriter.create<exec::KernelOp>(op.getLoc(), "pack", adaptor.getGrads(),
                                    ValueRange{buffer});
    rewriter.replaceOp(op, buffer);
    return success();
  }
};

struct UnbucketPattern : OpConversionPattern<dist::UnbucketOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::UnbucketOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> outs;
    for (Type t : op.getResultTypes())
      outs.push_back(rewriter.create<exec::AllocOp>(
          op.getLoc(),
          llvm::cast<MemRefType>(getTypeConverter()->convertType(t))));
    rewriter.create<exec::KernelOp>(op.getLoc(), "unpack",
                                    ValueRange{adaptor.getBucket()}, outs);
    rewriter.replaceOp(op, outs);
    return success();
  }
};

struct CompressedAllReducePattern
    : OpConversionPattern<dist::CompressedAllReduceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::CompressedAllReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value buffer =
        writableBuffer(rewriter, op, op.getInput(), adaptor.getInput());
    Value residual, velocity, state;
    if (op.getResidual())
      residual =
          writableBuffer(rewriter, op, op.getResidual(), adaptor.getResidual());
    if (op.getVelocity())
      velocity =
          writableBuffer(rewriter, op, op.getVelocity(), adaptor.getVelocity());
    if (op.getState())
      state = writableBuffer(rewriter, op, op.getState(), adaptor.getState());
    FailureOr<IntegerAttr> group = groupAttr(rewriter, op, op.getRanks());
    if (failed(group))
      return failure();
    rewriter.create<exec::CompressedAllReduceOp>(
        op.getLoc(), buffer, residual, velocity, state, op.getMethodAttr(),
        op.getRatioAttr(), op.getRatioMinAttr(), op.getBlockSizeAttr(),
        op.getAdaptiveAttr(), op.getWarmupStepsAttr(), op.getBucketAttr(),
        *group, op.getVelocityDecayAttr(), op.getExchangeAttr(),
        op.getNesterovAttr(), op.getPowersgdRankAttr(), op.getMatricesAttr());
    SmallVector<Value> results{buffer};
    if (residual)
      results.push_back(residual);
    if (velocity)
      results.push_back(velocity);
    if (state)
      results.push_back(state);
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct LowerToExec : otc::impl::LowerToExecBase<LowerToExec> {
  using LowerToExecBase::LowerToExecBase;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    if (target != "cpu" && target != "cuda") {
      mlir::emitError(getOperation().getLoc(), "unknown target '")
          << target << "' (expected cpu or cuda)";
      return signalPassFailure();
    }
    TypeConverter converter;
    converter.addConversion([](Type t) { return t; });
    converter.addConversion([](RankedTensorType t) -> Type {
      return MemRefType::get(t.getShape(), t.getElementType());
    });

    ConversionTarget legal(*ctx);
    legal.addLegalDialect<exec::ExecDialect>();
    legal.addLegalOp<ModuleOp>();
    legal.addIllegalDialect<graph::GraphDialect, dist::DistDialect>();
    legal.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp op) {
      return converter.isSignatureLegal(op.getFunctionType());
    });
    legal.addDynamicallyLegalOp<func::ReturnOp>(
        [&](func::ReturnOp op) { return converter.isLegal(op); });

    RewritePatternSet patterns(ctx);
    patterns.add<KernelPattern>(converter, ctx,
                                /*convScratch=*/target == "cpu");
    patterns.add<UpdatePattern, ClipPattern>(converter, ctx);
    patterns
        .add<ConstantPattern, EmaPattern, AllReducePattern, BroadcastPattern,
             BucketPattern, UnbucketPattern, CompressedAllReducePattern>(
            converter, ctx);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    if (failed(applyFullConversion(getOperation(), legal, std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
