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

#define GET_OP_CLASSES
#include "dialects/dist/DistOps.cpp.inc"
