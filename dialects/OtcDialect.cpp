//===- OtcDialect.cpp - the otc.* attributes, verified --------------------===//
//
// Checks what the passes rely on: names are strings, an `otc.updates`
// result names an existing argument of its own type that is not a model
// input, and no two results update one argument; numbers in the module's
// plan are integers. Other `otc.` names are annotations and pass.
//
//===----------------------------------------------------------------------===//

#include "dialects/OtcDialect.h"

#include "dialects/Attributes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace otc;

MLIR_DEFINE_EXPLICIT_TYPE_ID(otc::OtcDialect)

OtcDialect::OtcDialect(MLIRContext *context)
    : Dialect(getDialectNamespace(), context, TypeID::get<OtcDialect>()) {}

static LogicalResult mustBeString(Operation *op, NamedAttribute a) {
  if (llvm::isa<StringAttr>(a.getValue()))
    return success();
  return op->emitError("'") << a.getName().getValue() << "' must be a string";
}

LogicalResult OtcDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                   unsigned, NamedAttribute a) {
  StringRef name = a.getName().getValue();
  if (llvm::is_contained(
          {attr::kParam, attr::kState, attr::kInput, attr::kRole}, name))
    return mustBeString(op, a);
  return success();
}

LogicalResult OtcDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                      unsigned resultIndex,
                                                      NamedAttribute a) {
  StringRef name = a.getName().getValue();
  if (name == attr::kOutput)
    return mustBeString(op, a);
  if (name != attr::kUpdates)
    return success();
  auto fn = llvm::dyn_cast<FunctionOpInterface>(op);
  auto index = llvm::dyn_cast<IntegerAttr>(a.getValue());
  if (!fn || !index)
    return op->emitError("'otc.updates' must be an integer on a function "
                         "result");
  int64_t arg = index.getValue().getSExtValue();
  int64_t args = fn.getNumArguments();
  if (arg < 0 || arg >= args)
    return op->emitError("result ") << resultIndex << " updates argument "
                                    << arg << ", but the function has " << args
                                    << " argument" << (args == 1 ? "" : "s");
  if (fn.getArgAttr(arg, attr::kInput))
    return op->emitError("result ")
           << resultIndex << " updates argument " << arg
           << ", a model input, not a parameter or state";
  if (fn.getArgumentTypes()[arg] != fn.getResultTypes()[resultIndex])
    return op->emitError("result ")
           << resultIndex << " updates argument " << arg << " of type "
           << fn.getArgumentTypes()[arg] << " with a value of type "
           << fn.getResultTypes()[resultIndex];
  for (unsigned r = 0; r < resultIndex; ++r)
    if (auto other = fn.getResultAttrOfType<IntegerAttr>(r, attr::kUpdates))
      if (other.getValue().getSExtValue() == arg)
        return op->emitError("results ") << r << " and " << resultIndex
                                         << " both update argument " << arg;
  return success();
}

LogicalResult OtcDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute a) {
  StringRef name = a.getName().getValue();
  if (name == attr::kModelPath)
    return mustBeString(op, a);
  if (name == attr::kSeed || name == attr::kArenaBytes) {
    auto v = llvm::dyn_cast<IntegerAttr>(a.getValue());
    if (!v || (name == attr::kArenaBytes && v.getValue().isNegative()))
      return op->emitError("'")
             << name << "' must be "
             << (name == attr::kSeed ? "an integer" : "a non-negative integer");
  }
  return success();
}
