//===- status.cpp - Status objects of the C API ---------------------------===//

#include "core/status.h"

#include <new>

namespace otc {

otc_status_t makeStatus(otc_status_code_t code, std::string message) {
  if (code == OTC_OK)
    return nullptr;
  // A failed allocation here must not throw across the C boundary.
  auto *status = new (std::nothrow) otc_status;
  if (!status)
    return nullptr;
  status->code = code;
  try {
    status->message = std::move(message);
  } catch (...) {
  }
  return status;
}

const char *statusCodeName(otc_status_code_t code) {
  switch (code) {
  case OTC_OK:
    return "OK";
  case OTC_INVALID_ARGUMENT:
    return "INVALID_ARGUMENT";
  case OTC_NOT_FOUND:
    return "NOT_FOUND";
  case OTC_DATA_LOSS:
    return "DATA_LOSS";
  case OTC_FAILED_PRECONDITION:
    return "FAILED_PRECONDITION";
  case OTC_UNAVAILABLE:
    return "UNAVAILABLE";
  case OTC_INTERNAL:
    return "INTERNAL";
  case OTC_IO_ERROR:
    return "IO_ERROR";
  }
  return "UNKNOWN";
}

void throwIfError(otc_status_t status) {
  if (!status)
    return;
  Error error(status->code, status->message);
  otc_status_free(status);
  throw error;
}

} // namespace otc

extern "C" {

otc_status_code_t otc_status_code(otc_status_t status) {
  return status ? status->code : OTC_OK;
}

const char *otc_status_message(otc_status_t status) {
  return status ? status->message.c_str() : "";
}

void otc_status_free(otc_status_t status) { delete status; }

const char *otc_status_code_name(otc_status_code_t code) {
  return otc::statusCodeName(code);
}

} // extern "C"
