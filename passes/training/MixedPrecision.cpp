//===- MixedPrecision.cpp - the ops that compute in bf16 ------------------===//
//
// `--precision bf16` as an attribute on the ops that tolerate it: matrix
// products and convolutions, whose operands the kernels round to bfloat16
// and whose products they sum in float32 (torch.autocast's CPU list of
// lower-precision ops: mm, bmm, matmul, linear, addmm, conv*, their
// gradients). Everything else, and every tensor in memory, stays float32.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphDialect.h"
#include "passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"

namespace otc {
#define GEN_PASS_DEF_MIXEDPRECISION
#include "passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

struct MixedPrecision : otc::impl::MixedPrecisionBase<MixedPrecision> {
  using MixedPrecisionBase::MixedPrecisionBase;

  void runOnOperation() override {
    if (precision == "fp32")
      return;
    if (precision != "bf16") {
      getOperation().emitError("otc-mixed-precision: unknown precision '")
          << precision << "' (fp32 or bf16)";
      return signalPassFailure();
    }
    StringAttr bf16 = StringAttr::get(&getContext(), "bf16");
    getOperation().walk([&](Operation *op) {
      if (!llvm::isa<graph::GemmOp, graph::MatMulOp, graph::ConvOp,
                     graph::ConvTransposeOp, graph::ConvGradInputOp,
                     graph::ConvGradWeightOp>(op))
        return;
      auto t = llvm::dyn_cast<ShapedType>(op->getResult(0).getType());
      if (t && t.getElementType().isF32())
        op->setAttr("compute", bf16);
    });
  }
};

} // namespace
