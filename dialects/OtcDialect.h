//===- OtcDialect.h - the otc.* attributes, verified ------------*- C++ -*-===//
//
// A dialect without ops: it owns the `otc.` attribute namespace
// (Attributes.h) so that MLIR's verifier checks those attributes wherever
// they appear, and no pass indexes with a value it has not seen checked.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_DIALECTS_OTCDIALECT_H
#define OTC_DIALECTS_OTCDIALECT_H

#include "mlir/IR/Dialect.h"

namespace otc {

class OtcDialect : public mlir::Dialect {
public:
  explicit OtcDialect(mlir::MLIRContext *context);
  static llvm::StringRef getDialectNamespace() { return "otc"; }

  mlir::LogicalResult
  verifyRegionArgAttribute(mlir::Operation *op, unsigned regionIndex,
                           unsigned argIndex,
                           mlir::NamedAttribute attribute) override;
  mlir::LogicalResult
  verifyRegionResultAttribute(mlir::Operation *op, unsigned regionIndex,
                              unsigned resultIndex,
                              mlir::NamedAttribute attribute) override;
  mlir::LogicalResult
  verifyOperationAttribute(mlir::Operation *op,
                           mlir::NamedAttribute attribute) override;
};

} // namespace otc

MLIR_DECLARE_EXPLICIT_TYPE_ID(otc::OtcDialect)

#endif // OTC_DIALECTS_OTCDIALECT_H
