//===- mlir_fuzz_util.h - What the compiler harnesses share -----*- C++ -*-===//
//
// Each input gets its own MLIRContext (single-threaded, every OTC dialect
// registered), so no attribute or type of one input outlives it. Errors the
// compiler reports as diagnostics are the expected outcome of a bad input;
// a failure without an error diagnostic is a finding, as is anything that
// crashes, trips a sanitizer or an assert, or throws.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_TEST_FUZZ_HARNESS_MLIR_FUZZ_UTIL_H
#define OTC_TEST_FUZZ_HARNESS_MLIR_FUZZ_UTIL_H

#include "fuzz_util.h"

#include "dialects/InitAll.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace otc::fuzz {

/// The dialects OTC's tools register (otc-opt, otc-compile).
inline const mlir::DialectRegistry &registry() {
  static const mlir::DialectRegistry r = [] {
    mlir::DialectRegistry r;
    otc::registerAllDialects(r);
    return r;
  }();
  return r;
}

/// Takes every diagnostic of `context` while it lives: counts the errors
/// and, with OTC_FUZZ_VERBOSE set, prints them.
class Diagnostics {
public:
  explicit Diagnostics(mlir::MLIRContext &context)
      : handler(&context, [this](mlir::Diagnostic &d) {
          std::string text = d.str();
          if (d.getSeverity() == mlir::DiagnosticSeverity::Error) {
            ++errors;
            lastError = text;
          }
          verbose(text.c_str());
          return mlir::success();
        }) {}

  bool anyError() const { return errors != 0; }
  /// The message of the latest error ("" before the first).
  const std::string &last() const { return lastError; }

private:
  int errors = 0;
  std::string lastError;
  mlir::ScopedDiagnosticHandler handler;
};

/// A broken promise of the code under test (not of the input): reported,
/// with what the compiler said last, and turned into a crash that
/// libFuzzer records.
[[noreturn]] inline void finding(const char *what,
                                 const std::string &said = "") {
  std::fprintf(stderr, "fuzz finding: %s\n", what);
  if (!said.empty())
    std::fprintf(stderr, "  last error: %s\n", said.c_str());
  std::abort();
}

} // namespace otc::fuzz

#endif // OTC_TEST_FUZZ_HARNESS_MLIR_FUZZ_UTIL_H
