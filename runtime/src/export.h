//===- export.h - Parameters from and to the source ONNX model ---*- C++
//-*-===//

#ifndef OTC_RUNTIME_EXPORT_H
#define OTC_RUNTIME_EXPORT_H

#include "otc/runtime.h"

#include <string>

namespace otc {

/// Fills every manifest parameter of the session's arena from the
/// initializers of the program's source model.
void loadInitialParams(otc_session_t *session);

/// Writes the source model with the session's parameters as initializers.
void exportOnnx(const otc_session_t *session, const std::string &path);

} // namespace otc

#endif // OTC_RUNTIME_EXPORT_H
