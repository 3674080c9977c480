//===- DistOps.cpp - dist dialect -----------------------------------------===//

#include "dialects/dist/DistDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

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

/// The world size recorded on the enclosing module, if any.
static std::optional<int64_t> worldSizeOf(Operation *op) {
  auto module = op->getParentOfType<ModuleOp>();
  if (!module)
    return std::nullopt;
  if (auto w = module->getAttrOfType<IntegerAttr>(kWorldSizeAttr))
    return w.getInt();
  return std::nullopt;
}

LogicalResult AllReduceOp::verify() {
  if (std::optional<ArrayRef<int64_t>> range = getRange()) {
    int64_t n = getInput().getType().getNumElements();
    if (range->size() != 2 || (*range)[0] < 0 || (*range)[0] >= (*range)[1] ||
        (*range)[1] > n)
      return emitOpError("range must be [begin, end) with 0 <= begin < end "
                         "<= ")
             << n;
  }
  std::optional<ArrayRef<int64_t>> ranks = getRanks();
  if (!ranks)
    return success();
  if (ranks->empty())
    return emitOpError("ranks must not be empty");
  for (size_t i = 0; i < ranks->size(); ++i) {
    if ((*ranks)[i] < 0)
      return emitOpError("ranks must be non-negative, got ") << (*ranks)[i];
    if (i && (*ranks)[i] <= (*ranks)[i - 1])
      return emitOpError("ranks must be sorted and distinct");
  }
  if (std::optional<int64_t> world = worldSizeOf(*this))
    if (ranks->back() >= *world)
      return emitOpError("rank ")
             << ranks->back() << " is outside the world of size " << *world;
  return success();
}

LogicalResult BroadcastOp::verify() {
  int64_t root = getRootAttr().getInt();
  if (root < 0)
    return emitOpError("root must be non-negative, got ") << root;
  if (std::optional<int64_t> world = worldSizeOf(*this))
    if (root >= *world)
      return emitOpError("root ")
             << root << " is outside the world of size " << *world;
  return success();
}

LogicalResult CompressedAllReduceOp::verify() {
  StringRef method = getMethod();
  bool sparse =
      method == "topk" || method == "topk-int8" || method == "randomk";
  bool lossy = method != "none";
  bool lowRank = method == "powersgd";
  bool dense = llvm::is_contained(
      ArrayRef<StringRef>{"none", "fp16", "bf16", "int8"}, method);
  if (!sparse && !dense && !lowRank)
    return emitOpError("unknown method '")
           << method
           << "' (expected none, fp16, bf16, int8, topk, topk-int8, randomk "
              "or powersgd)";
  if (failed(verifyLowRank(getOperation(), lowRank, getPowersgdRank(),
                           getMatrices(), getInput().getType().getNumElements(),
                           getState() ? getState().getType().getNumElements()
                                      : -1,
                           getExchange(), getVelocity() != nullptr)))
    return failure();
  if (static_cast<bool>(getState()) != static_cast<bool>(getNewState()) ||
      (getState() && getState().getType() != getNewState().getType()))
    return emitOpError("returns its state updated, of the state's type");
  StringRef exchange = getExchange();
  if (exchange != "all-gather" && exchange != "reduce-scatter" &&
      exchange != "all-reduce")
    return emitOpError("exchange must be all-gather, reduce-scatter or "
                       "all-reduce, got '")
           << exchange << "'";
  if (exchange == "all-reduce" && method != "none" && !lowRank)
    return emitOpError("exchange 'all-reduce' sends fp32 and takes method "
                       "'none' or 'powersgd', not '")
           << method << "'";
  if (getInput().getType().getRank() != 1)
    return emitOpError("expects a flat gradient bucket (rank 1), got ")
           << getInput().getType();
  int64_t block = getBlockSizeAttr().getInt();
  if (block < 1 || block > 65536)
    return emitOpError("block_size must be in [1, 65536], got ") << block;
  float ratio = getRatio().convertToFloat();
  if (sparse && !(ratio > 0.0f && ratio <= 1.0f))
    return emitOpError("ratio must be in (0, 1] for '")
           << method << "', got " << ratio;
  if (static_cast<bool>(getResidual()) != static_cast<bool>(getNewResidual()))
    return emitOpError("takes a residual exactly when it returns one");
  if (getResidual() && (getResidual().getType() != getInput().getType() ||
                        getNewResidual().getType() != getInput().getType()))
    return emitOpError("residual must have the bucket's type");
  if (static_cast<bool>(getVelocity()) != static_cast<bool>(getNewVelocity()))
    return emitOpError("takes a velocity exactly when it returns one");
  if (getVelocity() && (getVelocity().getType() != getInput().getType() ||
                        getNewVelocity().getType() != getInput().getType()))
    return emitOpError("velocity must have the bucket's type");
  if (getResult().getType() != getInput().getType())
    return emitOpError("result must have the bucket's type");
  if (getVelocityDecay() != "momentum" && getVelocityDecay() != "beta1")
    return emitOpError("velocity_decay must be 'momentum' or 'beta1', got '")
           << getVelocityDecay() << "'";
  if (getNesterov() && (!getVelocity() || getVelocityDecay() != "momentum"))
    return emitOpError("nesterov needs a velocity decayed by momentum");
  if (!lossy && hasErrorFeedback())
    return emitOpError("error feedback needs a lossy method; 'none' sends "
                       "the gradient exactly");
  float ratioMin = getRatioMin().convertToFloat();
  if (getAdaptive() && !(ratioMin > 0.0f && ratioMin <= ratio))
    return emitOpError("ratio_min must be in (0, ratio], got ") << ratioMin;
  if (getAdaptive() && !sparse)
    return emitOpError("adaptive ratio applies to topk, topk-int8 and "
                       "randomk, not '")
           << method << "'";
  // I64Attr getters are unsigned: read the signed values.
  if (getWarmupStepsAttr().getInt() < 0)
    return emitOpError("warmup_steps must be non-negative, got ")
           << getWarmupStepsAttr().getInt();
  return success();
}

int64_t otc::dist::powersgdStateFloats(ArrayRef<int64_t> matrices,
                                       int64_t rank) {
  if (matrices.size() % 3 != 0 || rank < 1)
    return -1;
  int64_t total = 0;
  for (size_t i = 0; i < matrices.size(); i += 3) {
    int64_t rows = matrices[i + 1], cols = matrices[i + 2];
    if (rows < 1 || cols < 1)
      return -1;
    int64_t r = std::min({rank, rows, cols}), q = 0;
    if (llvm::MulOverflow(cols, r, q) || llvm::AddOverflow(total, q, total))
      return -1;
  }
  return total;
}

LogicalResult otc::dist::verifyLowRank(Operation *op, bool lowRank,
                                       int64_t rank,
                                       std::optional<ArrayRef<int64_t>> matrices,
                                       int64_t elements, int64_t stateFloats,
                                       StringRef exchange, bool velocity) {
  if (!lowRank) {
    if (matrices || rank != 0 || stateFloats >= 0)
      return op->emitOpError("takes matrices, a powersgd_rank and a state "
                             "with method 'powersgd' only");
    return success();
  }
  if (rank < 1)
    return op->emitOpError("powersgd_rank must be at least 1, got ") << rank;
  if (exchange != "all-reduce")
    return op->emitOpError("method 'powersgd' all-reduces its factors: its "
                           "exchange is 'all-reduce', not '")
           << exchange << "'";
  if (velocity)
    return op->emitOpError("method 'powersgd' keeps no velocity: it sends "
                           "every element, which momentum-factor masking "
                           "would zero");
  ArrayRef<int64_t> m = matrices.value_or(ArrayRef<int64_t>());
  int64_t floats = powersgdStateFloats(m, rank);
  if (floats < 0)
    return op->emitOpError("matrices must be triples (offset, rows, cols) "
                           "of positive sizes");
  int64_t end = 0;
  for (size_t i = 0; i < m.size(); i += 3) {
    int64_t size = 0, last = 0;
    if (m[i] < end || llvm::MulOverflow(m[i + 1], m[i + 2], size) ||
        llvm::AddOverflow(m[i], size, last) || last > elements)
      return op->emitOpError("matrix ")
             << i / 3 << " at " << m[i] << " (" << m[i + 1] << " x "
             << m[i + 2]
             << ") is not after the previous one within the bucket of "
             << elements << " elements";
    end = last;
  }
  if (stateFloats != (floats > 0 ? floats : -1))
    return op->emitOpError("the matrices' Q take ")
           << floats << " floats, but the state holds "
           << (stateFloats < 0 ? 0 : stateFloats);
  return success();
}

/// The elements of `types` together; -1 beyond int64 (no 1-D tensor has
/// that many).
static int64_t flatSize(TypeRange types) {
  int64_t n = 0;
  for (Type t : types)
    if (llvm::AddOverflow(n, llvm::cast<RankedTensorType>(t).getNumElements(),
                          n))
      return -1;
  return n;
}

LogicalResult BucketOp::verify() {
  if (getGrads().empty())
    return emitOpError("needs at least one gradient");
  auto t = getResult().getType();
  int64_t n = flatSize(getGrads().getTypes());
  if (n < 0)
    return emitOpError("the gradients hold more than 2^63 - 1 elements");
  if (t.getRank() != 1 || t.getNumElements() != n)
    return emitOpError("result must be a 1-D tensor of ")
           << n << " elements, got " << t;
  return success();
}

LogicalResult UnbucketOp::verify() {
  if (getGrads().empty())
    return emitOpError("needs at least one result");
  auto t = getBucket().getType();
  int64_t n = flatSize(getGrads().getTypes());
  if (n < 0)
    return emitOpError("the results hold more than 2^63 - 1 elements");
  if (t.getRank() != 1 || t.getNumElements() != n)
    return emitOpError("bucket of ")
           << t.getNumElements() << " elements does not split into " << n;
  return success();
}

#define GET_OP_CLASSES
#include "dialects/dist/DistOps.cpp.inc"
