//===- InitAll.h - The dialects OTC's tools register ------------*- C++ -*-===//

#ifndef OTC_DIALECTS_INITALL_H
#define OTC_DIALECTS_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace otc {
/// Registers the OTC dialects (and the upstream ones they use).
void registerAllDialects(mlir::DialectRegistry &registry);
} // namespace otc

#endif // OTC_DIALECTS_INITALL_H
