//===- status.h - Failures in tooling code ----------------------*- C++ -*-===//
//
// Tooling code (data files, the loader, metrics, the driver) reports
// failures as C++ exceptions carrying a C API status code, so that a C API
// call's status and a bad data file reach the driver's exit codes alike.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_RUNTIME_TOOLING_STATUS_H
#define OTC_RUNTIME_TOOLING_STATUS_H

#include "otc/runtime.h"

#include <exception>
#include <optional>
#include <string>

namespace otc {

/// Throws the failure a non-OK status describes and frees the status.
void check(otc_status_t status);
/// Throws a failure with `code` and `message`.
[[noreturn]] void fail(otc_status_code_t code, const std::string &message);
/// The code of a failure thrown by check, fail or other tooling code;
/// nothing for any other exception (a bug rather than a failure).
std::optional<otc_status_code_t> failureCode(const std::exception &e);

} // namespace otc

#endif // OTC_RUNTIME_TOOLING_STATUS_H
