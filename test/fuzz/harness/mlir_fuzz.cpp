//===- mlir_fuzz.cpp - otc-opt's parser, verifiers and printer ------------===//
//
// The input is MLIR text as otc-opt reads it, every OTC dialect registered:
// parsed (an implicit module around it) and verified; a module that
// verifies must print as text that parses and verifies again, and goes
// through otc-verify-plan, the memory-plan checker (which refuses, with an
// error, a module that is not planned). Text nested deeper than MLIR's
// recursive parser can take is left out (dialects/TextNesting.h; otc-opt
// refuses it).
//
//===----------------------------------------------------------------------===//

#include "fuzz_util.h"
#include "mlir_fuzz_util.h"

#include "dialects/TextNesting.h"
#include "passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (otc::textNesting(llvm::StringRef(reinterpret_cast<const char *>(data),
                                       size)) > otc::kMaxTextNesting)
    return 0;
  // A std::string ends in NUL, as MLIR's lexer expects of its buffer.
  std::string text(reinterpret_cast<const char *>(data), size);
  mlir::MLIRContext context(otc::fuzz::registry(),
                            mlir::MLIRContext::Threading::DISABLED);
  otc::fuzz::Diagnostics diagnostics(context);
  mlir::ParserConfig config(&context); // verifies after parsing
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, config, "input");
  if (!module) {
    if (!diagnostics.anyError())
      otc::fuzz::finding("parsing failed without an error");
    return 0;
  }

  std::string printed;
  llvm::raw_string_ostream os(printed);
  module->print(os);
  os.flush();
  if (!mlir::parseSourceString<mlir::ModuleOp>(printed, config, "printed")) {
    otc::fuzz::verbose(printed.c_str());
    otc::fuzz::finding("a verified module prints as text that does not "
                       "parse and verify again",
                       diagnostics.last());
  }

  mlir::PassManager pm(&context);
  pm.addPass(otc::createVerifyPlan());
  if (mlir::failed(pm.run(*module))) {
    if (!diagnostics.anyError())
      otc::fuzz::finding("otc-verify-plan failed without an error");
    otc::fuzz::verbose("plan refused");
    return 0;
  }
  otc::fuzz::verbose("verified");
  return 0;
}
