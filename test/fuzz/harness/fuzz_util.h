//===- fuzz_util.h - What the harnesses share -------------------*- C++ -*-===//
//
// The loaders (and the ONNX importer) read files, so each input goes to a
// file of this process in /dev/shm (memory) or $TMPDIR first. Errors the
// loaders report (otc::Error) are the expected outcome of a bad input;
// anything else escapes and is a finding. The compiler harnesses' errors are
// diagnostics (mlir_fuzz_util.h).
//
//===----------------------------------------------------------------------===//

#ifndef OTC_TEST_FUZZ_HARNESS_FUZZ_UTIL_H
#define OTC_TEST_FUZZ_HARNESS_FUZZ_UTIL_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace otc::fuzz {

/// `data` written to this process's file with suffix `ext`; its path.
inline std::string writeInput(const uint8_t *data, size_t size,
                              const char *ext) {
  const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : nullptr;
  if (!dir)
    dir = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
  std::string path =
      std::string(dir) + "/otc-fuzz-" + std::to_string(getpid()) + ext;
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    std::abort(); // the harness, not the input, failed
  if (size && std::fwrite(data, 1, size, f) != size)
    std::abort();
  std::fclose(f);
  return path;
}

/// With OTC_FUZZ_VERBOSE set, what the loader said of an input (to check
/// that the seeds load and see where mutations stop).
inline void verbose(const char *outcome) {
  static const bool on = std::getenv("OTC_FUZZ_VERBOSE") != nullptr;
  if (on)
    std::fprintf(stderr, "%s\n", outcome);
}

} // namespace otc::fuzz

#endif // OTC_TEST_FUZZ_HARNESS_FUZZ_UTIL_H
