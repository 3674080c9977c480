//===- Pipeline.cpp - the otc-compile pipeline ----------------------------===//

#include "compiler/Pipeline.h"

#include "compiler/Config.h"
#include "dialects/dist/DistDialect.h"
#include "passes/Attributes.h"
#include "passes/EmitCpp.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace otc;

void otc::buildTrainingPipeline(OpPassManager &pm,
                                const CompileOptions &options) {
  pm.addPass(createBuildTraining(options.training));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  InsertAllReduceOptions ar;
  ar.worldSize = options.worldSize;
  pm.addPass(createInsertAllReduce(ar));
}

void otc::buildExecPipeline(OpPassManager &pm) {
  pm.addPass(createLowerToExec());
  pm.addPass(createPlanMemory());
}

namespace {

LogicalResult writeFile(StringRef path, llvm::function_ref<void(raw_ostream &)> fn) {
  std::string err;
  auto out = openOutputFile(path, &err);
  if (!out) {
    llvm::errs() << "otc-compile: cannot write '" << path << "': " << err
                 << "\n";
    return failure();
  }
  fn(out->os());
  out->keep();
  return success();
}

/// Ring all-reduce traffic of one rank for `bytes` of gradients.
int64_t ringBytes(int64_t bytes, int64_t world) {
  return world <= 1 ? 0 : 2 * (world - 1) * bytes / world;
}

llvm::json::Value reportJson(ModuleOp module, int64_t world) {
  auto memory = module->getAttrOfType<DictionaryAttr>(attr::kMemory);
  llvm::json::Object mem;
  for (NamedAttribute a : memory)
    mem[a.getName().getValue()] = llvm::cast<IntegerAttr>(a.getValue()).getInt();
  int64_t comm = ringBytes(memory.getAs<IntegerAttr>("grads").getInt(), world);
  llvm::json::Array ranks;
  for (int64_t r = 0; r < world; ++r)
    ranks.push_back(llvm::json::Object{
        {"rank", r},
        {"memory", llvm::json::Object(mem)},
        {"comm", llvm::json::Object{{"bytes_sent_per_step", comm},
                                    {"bytes_received_per_step", comm}}}});
  return llvm::json::Object{{"world_size", world}, {"ranks", std::move(ranks)}};
}

std::string humanBytes(int64_t b) {
  char buf[32];
  if (b >= (1 << 20))
    snprintf(buf, sizeof(buf), "%.2f MiB", b / 1048576.0);
  else if (b >= 1024)
    snprintf(buf, sizeof(buf), "%.1f KiB", b / 1024.0);
  else
    snprintf(buf, sizeof(buf), "%lld B", static_cast<long long>(b));
  return buf;
}

void printReport(ModuleOp module, int64_t world) {
  auto memory = module->getAttrOfType<DictionaryAttr>(attr::kMemory);
  auto get = [&](StringRef k) { return memory.getAs<IntegerAttr>(k).getInt(); };
  llvm::outs() << "memory per rank (static plan, " << world << " rank"
               << (world == 1 ? "" : "s") << ", all ranks alike):\n";
  auto row = [](StringRef k, int64_t v) {
    llvm::outs() << llvm::formatv("  {0,-12} {1,12}  ({2})\n", k, v,
                                  humanBytes(v));
  };
  for (StringRef k : {"params", "grads", "optimizer", "activations", "inputs",
                      "outputs", "comm_buffers", "peak"})
    row(k, get(k));
  int64_t comm = ringBytes(get("grads"), world);
  llvm::outs() << "communication per step per rank (ring all-reduce):\n";
  row("sent", comm);
  row("received", comm);
}

LogicalResult hostCompile(StringRef source, const CompileOptions &options) {
  std::string cxx = OTC_HOST_CXX;
  if (const char *env = getenv("OTC_CXX"))
    cxx = env;
  auto program = llvm::sys::findProgramByName(cxx);
  if (!program) {
    llvm::errs() << "otc-compile: host compiler '" << cxx
                 << "' not found (set OTC_CXX)\n";
    return failure();
  }
  std::string rpath = std::string("-Wl,-rpath,") + OTC_LIBRARY_DIR;
  SmallVector<std::string> args{*program, "-O2", "-std=c++17", "-fPIC",
                                "-I" OTC_KERNELS_INCLUDE_DIR,
                                "-I" OTC_RUNTIME_INCLUDE_DIR};
  if (options.emit == Stage::Lib)
    args.push_back("-shared");
  args.append({source.str(), "-o", options.output, "-L" OTC_LIBRARY_DIR,
               "-lotc_runtime", "-lotc_kernels", rpath});
  SmallVector<StringRef> argRefs(args.begin(), args.end());
  SmallString<128> log;
  llvm::sys::fs::createTemporaryFile("otc-cxx", "log", log);
  std::optional<StringRef> redirects[] = {std::nullopt, log.str(), log.str()};
  std::string err;
  int rc = llvm::sys::ExecuteAndWait(*program, argRefs, std::nullopt,
                                     redirects, 0, 0, &err);
  auto text = llvm::MemoryBuffer::getFile(log);
  llvm::sys::fs::remove(log);
  if (rc != 0) {
    llvm::errs() << "otc-compile: the host compiler failed (exit " << rc
                 << ")" << (err.empty() ? "" : ": " + err) << "\n";
    if (text)
      llvm::errs() << (*text)->getBuffer();
    return failure();
  }
  return success();
}

} // namespace

int otc::compile(const CompileOptions &options, MLIRContext &context,
                 void (*configurePassManager)(PassManager &)) {
  OwningOpRef<ModuleOp> module =
      importOnnxFile(options.input, &context, options.import);
  if (!module)
    return 1;
  (*module)->setAttr(attr::kSeed, IntegerAttr::get(IntegerType::get(&context, 64),
                                                   options.seed));
  auto run = [&](void (*build)(OpPassManager &, const CompileOptions &)) {
    PassManager pm(&context);
    if (configurePassManager)
      configurePassManager(pm);
    build(pm, options);
    return pm.run(*module);
  };
  auto emitMlir = [&]() {
    return failed(writeFile(options.output,
                            [&](raw_ostream &os) { module->print(os); }))
               ? 1
               : 0;
  };
  if (options.emit == Stage::Graph)
    return emitMlir();
  if (failed(run(buildTrainingPipeline)))
    return 1;
  if (options.emit == Stage::Train)
    return emitMlir();
  if (failed(run([](OpPassManager &pm, const CompileOptions &) {
        buildExecPipeline(pm);
      })))
    return 1;
  int64_t world = options.worldSize;
  if (options.report)
    printReport(*module, world);
  if (!options.reportJson.empty() &&
      failed(writeFile(options.reportJson, [&](raw_ostream &os) {
        os << llvm::formatv("{0:2}", reportJson(*module, world)) << "\n";
      })))
    return 1;
  if (options.emit == Stage::Exec)
    return emitMlir();

  EmitCppOptions emitOptions;
  emitOptions.withMain = options.emit == Stage::Exe;
  std::string source;
  llvm::raw_string_ostream os(source);
  if (failed(emitCpp(*module, os, emitOptions)))
    return 1;
  if (options.emit == Stage::Cpp)
    return failed(writeFile(options.output,
                            [&](raw_ostream &out) { out << source; }))
               ? 1
               : 0;
  SmallString<128> cpp;
  if (llvm::sys::fs::createTemporaryFile("otc-program", "cpp", cpp)) {
    llvm::errs() << "otc-compile: cannot create a temporary file\n";
    return 1;
  }
  if (failed(writeFile(cpp, [&](raw_ostream &out) { out << source; })))
    return 1;
  LogicalResult built = hostCompile(cpp, options);
  llvm::sys::fs::remove(cpp);
  return failed(built) ? 1 : 0;
}
