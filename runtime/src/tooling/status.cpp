//===- status.cpp - Failures in tooling code ------------------------------===//

#include "tooling/status.h"
#include "core/status.h"

namespace otc {

void check(otc_status_t status) { throwIfError(status); }

void fail(otc_status_code_t code, const std::string &message) {
  throw Error(code, message);
}

std::optional<otc_status_code_t> failureCode(const std::exception &e) {
  if (const auto *error = dynamic_cast<const Error *>(&e))
    return error->code();
  return std::nullopt;
}

} // namespace otc
