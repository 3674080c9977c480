//===- manifest_fuzz.cpp - The program manifest parser --------------------===//

#include "core/program.h"
#include "core/status.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  try {
    otc::Manifest m = otc::parseManifest(text, 0);
    (void)m;
  } catch (const otc::Error &e) {
    otc::fuzz::verbose(e.what());
    return 0;
  }
  otc::fuzz::verbose("loaded");
  return 0;
}
