//===- status.h - Runtime errors and the C API status -----------*- C++ -*-===//
//
// Inside the runtime failures are C++ exceptions of type otc::Error (a code
// and a message); every C entry point converts them into an otc_status_t so
// that no exception crosses the C boundary.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_RUNTIME_CORE_STATUS_H
#define OTC_RUNTIME_CORE_STATUS_H

#include "otc/runtime.h"

#include <stdexcept>
#include <string>
#include <utility>

struct otc_status {
  otc_status_code_t code;
  std::string message;
};

namespace otc {

class Error : public std::runtime_error {
public:
  Error(otc_status_code_t code, const std::string &message)
      : std::runtime_error(message), code_(code) {}
  otc_status_code_t code() const { return code_; }

private:
  otc_status_code_t code_;
};

/// Builds a status object; OK yields NULL.
otc_status_t makeStatus(otc_status_code_t code, std::string message);

/// Name of a status code, e.g. "DATA_LOSS".
const char *statusCodeName(otc_status_code_t code);

/// Runs `fn` and maps any exception to a status (NULL on success).
template <typename Fn> otc_status_t guard(Fn &&fn) noexcept {
  try {
    std::forward<Fn>(fn)();
    return nullptr;
  } catch (const Error &e) {
    return makeStatus(e.code(), e.what());
  } catch (const std::bad_alloc &) {
    return makeStatus(OTC_INTERNAL, "out of memory");
  } catch (const std::exception &e) {
    return makeStatus(OTC_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return makeStatus(OTC_INTERNAL, "internal error: unknown exception");
  }
}

/// Throws the error a non-OK status describes and frees the status.
void throwIfError(otc_status_t status);

} // namespace otc

#endif // OTC_RUNTIME_CORE_STATUS_H
