//===- ModelCopy.h - The source model a program keeps beside it -*- C++ -*-===//
//
// A compiled program reads its initial weights from its source model and
// export writes that model back with the trained values. otc-compile keeps
// a copy of the model beside the program (`<program>.model.onnx`, with its
// external data in `<program>.model.onnx.data`) and the manifest names the copy
// relative to the program, so the program, moved with its copy, still runs
// and exports.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_COMPILER_MODELCOPY_H
#define OTC_COMPILER_MODELCOPY_H

#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace otc {

/// The copy's file name for a program written to `program`.
std::string modelCopyName(llvm::StringRef program);

/// Writes the ONNX model `model` to `copy` (nothing when they are the same
/// file). External data of initializers moves into one file beside the
/// copy, `<copy>.data`. Errors go to stderr.
mlir::LogicalResult writeModelCopy(llvm::StringRef model, llvm::StringRef copy);

} // namespace otc

#endif // OTC_COMPILER_MODELCOPY_H
