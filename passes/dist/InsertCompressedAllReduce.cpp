//===- InsertCompressedAllReduce.cpp - compressed bucket reduction --------===//

#include "dialects/Attributes.h"
#include "dialects/dist/DistDialect.h"
#include "passes/Passes.h"
#include "passes/dist/SdpTiles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

namespace otc {
#define GEN_PASS_DEF_INSERTCOMPRESSEDALLREDUCE
#include "passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

struct InsertCompressedAllReduce
    : otc::impl::InsertCompressedAllReduceBase<InsertCompressedAllReduce> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (worldSize < 1) {
      mlir::emitError(module.getLoc(), "world size must be at least 1, got ")
          << worldSize;
      return signalPassFailure();
    }
    OpBuilder b(&getContext());
    module->setAttr(dist::kWorldSizeAttr, b.getI64IntegerAttr(worldSize));
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn.getSymName() == attr::kTrainFn ||
          fn.getSymName().starts_with(attr::kTrainRankPrefix))
        if (failed(insert(fn)))
          return signalPassFailure();
    sdp::broadcastOwnedUpdates(module, worldSize);
  }

private:
  LogicalResult insert(func::FuncOp fn) {
    OpBuilder b(&getContext());
    bool feedback = errorFeedback && method != "none";
    auto ret = llvm::cast<func::ReturnOp>(fn.front().getTerminator());
    SmallVector<dist::BucketOp> buckets(fn.front().getOps<dist::BucketOp>());
    for (auto [i, bucket] : llvm::enumerate(buckets)) {
      Type type = bucket.getType();
      Value residual;
      if (feedback) {
        unsigned arg = fn.getNumArguments();
        (void)fn.insertArgument(
            arg, type,
            b.getDictionaryAttr(
                {b.getNamedAttr(attr::kState,
                                b.getStringAttr("bucket" + std::to_string(i) +
                                                ".residual")),
                 b.getNamedAttr(attr::kRole, b.getStringAttr("residual"))}),
            fn.getLoc());
        residual = fn.getArgument(arg);
      }
      b.setInsertionPointAfter(bucket);
      auto reduce = b.create<dist::CompressedAllReduceOp>(
          bucket.getLoc(), type, feedback ? type : Type(), bucket.getResult(),
          residual, b.getStringAttr(method),
          b.getF32FloatAttr(static_cast<float>(ratio)),
          b.getF32FloatAttr(static_cast<float>(ratioMin)),
          b.getI64IntegerAttr(blockSize), b.getBoolAttr(adaptive),
          b.getI64IntegerAttr(warmupSteps), b.getI64IntegerAttr(i),
          bucket->getAttrOfType<DenseI64ArrayAttr>("ranks"));
      if (failed(mlir::verify(reduce)))
        return failure();
      bucket.getResult().replaceAllUsesExcept(reduce.getResult(), reduce);
      if (feedback) {
        // The new residual replaces the argument, like optimizer state.
        unsigned result = fn.getNumResults();
        ret->insertOperands(ret.getNumOperands(), reduce.getNewResidual());
        (void)fn.insertResult(
            result, type,
            b.getDictionaryAttr(
                b.getNamedAttr(attr::kUpdates,
                               b.getI64IntegerAttr(fn.getNumArguments() - 1))));
      }
    }
    return success();
  }
};

} // namespace
