//===- DistOps.cpp - dist dialect -----------------------------------------===//

#include "dialects/dist/DistDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

using namespace mlir;
using namespace otc::dist;

#include "dialects/dist/DistDialect.cpp.inc"
#include "dialects/dist/DistEnums.cpp.inc"

void DistDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/dist/DistOps.cpp.inc"
      >();
}

LogicalResult CompressedAllReduceOp::verify() {
  StringRef method = getMethod();
  bool sparse = method == "topk" || method == "topk-int8" ||
                method == "randomk";
  bool lossy = method != "none";
  bool dense = llvm::is_contained(
      ArrayRef<StringRef>{"none", "fp16", "bf16", "int8"}, method);
  if (!sparse && !dense)
    return emitOpError("unknown method '")
           << method
           << "' (expected none, fp16, bf16, int8, topk, topk-int8 or randomk)";
  if (getInput().getType().getRank() != 1)
    return emitOpError("expects a flat gradient bucket (rank 1), got ")
           << getInput().getType();
  int64_t block = getBlockSize();
  if (block < 1 || block > 65536)
    return emitOpError("block_size must be in [1, 65536], got ") << block;
  float ratio = getRatio().convertToFloat();
  if (sparse && !(ratio > 0.0f && ratio <= 1.0f))
    return emitOpError("ratio must be in (0, 1] for '")
           << method << "', got " << ratio;
  if (!lossy && getErrorFeedback())
    return emitOpError("error feedback needs a lossy method; 'none' sends "
                       "the gradient exactly");
  if (getAdaptive() && !sparse)
    return emitOpError("adaptive ratio applies to topk, topk-int8 and "
                       "randomk, not '")
           << method << "'";
  if (getWarmupSteps() < 0)
    return emitOpError("warmup_steps must be non-negative, got ")
           << getWarmupSteps();
  return success();
}

#define GET_OP_CLASSES
#include "dialects/dist/DistOps.cpp.inc"
