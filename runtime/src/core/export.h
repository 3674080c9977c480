//===- export.h - Parameters from and to the source ONNX model --*- C++ -*-===//

#ifndef OTC_RUNTIME_CORE_EXPORT_H
#define OTC_RUNTIME_CORE_EXPORT_H

#include "otc/runtime.h"

#include <cstdint>
#include <string>

namespace otc {

struct Manifest;

/// Fills every parameter of `m` in `arena` from the initializers of the
/// source model (SDP: only the feature ranges the manifest keeps).
void loadInitialParams(const Manifest &m, uint8_t *arena);

/// Which values export writes for the trained parameters.
enum class ExportWeights {
  Trained, ///< the parameters themselves
  /// Their EMA (the state "<param>.ema"); buffers (BatchNorm statistics),
  /// which are not averaged, keep their current values.
  Ema,
};

/// Writes the source model with `m`'s parameters in `arena` (or their EMA)
/// as initializers.
void exportOnnx(const Manifest &m, const uint8_t *arena,
                const std::string &path,
                ExportWeights weights = ExportWeights::Trained);

} // namespace otc

#endif // OTC_RUNTIME_CORE_EXPORT_H
