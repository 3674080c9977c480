//===- Pipeline.cpp - the otc-compile pipeline ----------------------------===//

#include "compiler/Pipeline.h"

#include "compiler/Config.h"
#include "compiler/ModelCopy.h"
#include "dialects/Attributes.h"
#include "dialects/dist/DistDialect.h"
#include "dialects/dist/SdpAttributes.h"
#include "dialects/exec/ExecDialect.h"
#include "otc/compress.h"
#include "target/cpp/EmitCpp.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace otc;

namespace {

LogicalResult writeFile(StringRef path,
                        llvm::function_ref<void(raw_ostream &)> fn) {
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

/// The bytes one rank sends in a mean all-reduce of `bytes` over `ranks`,
/// as the runtime counts them (comm.h, allReduceBytes): 2 (W - 1) / W of
/// them, a bandwidth-optimal all-reduce's.
int64_t allReduceBytes(int64_t bytes, int64_t ranks) {
  return ranks <= 1 ? 0 : 2 * (ranks - 1) * bytes / ranks;
}

/// The ranks of a collective: SDP owner group `group`'s, or the world's;
/// with `rank`, that rank's index among them.
int64_t ranksOf(ModuleOp module, std::optional<int64_t> group, int64_t world,
                int64_t *rank = nullptr) {
  if (group)
    if (auto sdp = module->getAttrOfType<DictionaryAttr>(attr::kSdp)) {
      auto members = llvm::cast<DenseI64ArrayAttr>(
                         sdp.getAs<ArrayAttr>("groups")[*group])
                         .asArrayRef();
      if (rank)
        *rank = llvm::find(members, *rank) - members.begin();
      return members.size();
    }
  return world;
}

/// Each compressed bucket: the bytes its exchange sends and receives per
/// step on rank `rank` as the runtime counts them
/// (src/comm/compressed.cpp), and the scratch the runtime keeps for it.
struct BucketComm {
  int64_t sent, received, scratch;
};

SmallVector<BucketComm> compressedBuckets(ModuleOp module, int64_t world,
                                          int64_t rank) {
  SmallVector<BucketComm> buckets;
  module.walk([&](exec::CompressedAllReduceOp op) {
    otck_compress_config config{};
    config.method = static_cast<otck_compress_method>(
        llvm::StringSwitch<int>(op.getMethod())
            .Case("none", OTCK_COMPRESS_NONE)
            .Case("fp16", OTCK_COMPRESS_FP16)
            .Case("bf16", OTCK_COMPRESS_BF16)
            .Case("int8", OTCK_COMPRESS_INT8)
            .Case("topk", OTCK_COMPRESS_TOPK)
            .Case("topk-int8", OTCK_COMPRESS_TOPK_INT8)
            .Default(OTCK_COMPRESS_RANDOMK));
    config.block_size = op.getBlockSize();
    config.ratio = op.getRatio().convertToFloat();
    int64_t n = op.getBuffer().getType().getNumElements();
    int64_t me = rank;
    const int64_t w = ranksOf(module, op.getGroup(), world, &me);
    if (op.getMethod() == "powersgd") {
      // Three mean all-reduces: the uncompressed rest, the P and the Q of
      // every matrix.
      int64_t rest = n, p = 0, q = 0;
      if (std::optional<ArrayRef<int64_t>> m = op.getMatrices())
        for (size_t i = 0; i + 2 < m->size(); i += 3) {
          int64_t rows = (*m)[i + 1], cols = (*m)[i + 2];
          int64_t r = std::min<int64_t>({op.getPowersgdRank(), rows, cols});
          rest -= rows * cols;
          p += rows * r;
          q += cols * r;
        }
      int64_t bytes = allReduceBytes(rest * 4, w) + allReduceBytes(p * 4, w) +
                      allReduceBytes(q * 4, w);
      buckets.push_back({bytes, bytes, p * 4});
      return;
    }
    if (op.getExchange() == "all-reduce") {
      int64_t bytes = allReduceBytes(n * 4, w);
      buckets.push_back({bytes, bytes, 0});
      return;
    }
    const int64_t flags = w > 1 ? 4 + (op.getAdaptive() ? 8 : 0) : 0;
    const int64_t payload = otck_compress_payload_bytes(&config, n);
    if (op.getExchange() == "reduce-scatter" && w > 1) {
      // Rank me sends the others' shards of its payload and its owner's
      // block (flag and payload) to each of them, and receives the reverse.
      int64_t begin = 0, others = 0, blocks = 0;
      auto shardBytes = [&](int64_t s) {
        return otck_compress_payload_bytes(
            &config, otck_compress_shard(&config, n, w, s, &begin));
      };
      for (int64_t s = 0; s < w; ++s) {
        blocks += 4 + (shardBytes(s) + 3) / 4 * 4;
        if (s != me)
          others += 4 + shardBytes(s);
      }
      const int64_t mine = shardBytes(me);
      buckets.push_back({payload - mine + (4 + mine) * (w - 1) + flags,
                         mine * (w - 1) + others + flags,
                         payload * (w + 1) + blocks + n * 4});
      return;
    }
    const int64_t sent = payload * (w - 1) + flags;
    buckets.push_back({sent, sent, (w + 1) * payload});
  });
  return buckets;
}

/// What the report states per rank: the planner's arena breakdown plus the
/// runtime's exchange buffers (an all-gather's W + 1 payloads per
/// compressed bucket; the reduce-scatter's shard slots and a bucket of
/// floats), and the bytes one rank hands to the collectives per step,
/// counted as the runtime's metrics count them: allReduceBytes of the
/// gradients of a plain (or `none`) all-reduce; for a compressed bucket
/// its exchange's payloads, plus the 4-byte finiteness flag (and 8 for the
/// adaptive norm).
struct RankReport {
  llvm::json::Object memory;
  int64_t sent = 0, received = 0;
};

RankReport rankReport(ModuleOp module, int64_t world, int64_t rank) {
  RankReport r;
  auto memory = module->getAttrOfType<DictionaryAttr>(attr::kMemory);
  for (NamedAttribute a : memory)
    r.memory[a.getName().getValue()] =
        llvm::cast<IntegerAttr>(a.getValue()).getInt();
  SmallVector<BucketComm> buckets = compressedBuckets(module, world, rank);
  int64_t scratch = 0;
  for (const BucketComm &b : buckets) {
    scratch += b.scratch;
    r.sent += b.sent;
    r.received += b.received;
  }
  auto add = [&](StringRef key, int64_t v) {
    r.memory[key] = *r.memory.getInteger(key) + v;
  };
  add("comm_buffers", scratch);
  add("peak", scratch);
  if (world <= 1) {
    r.sent = r.received = 0;
    return r;
  }
  if (!module->hasAttr(attr::kSdp)) {
    if (buckets.empty()) // the plain all-reduce of the gradients
      r.sent = r.received = allReduceBytes(
          memory.getAs<IntegerAttr>("grads").getInt(), world);
    return r;
  }
  // SDP: only gradients with other owners travel (within their group), and
  // with backward masking the owners' new values.
  module.walk([&](Operation *op) {
    if (auto ar = llvm::dyn_cast<exec::AllReduceOp>(op)) {
      int64_t n = ar.getBuffer().getType().getNumElements();
      if (ar.getRange())
        n = (*ar.getRange())[1] - (*ar.getRange())[0];
      int64_t bytes =
          allReduceBytes(n * 4, ranksOf(module, ar.getGroup(), world));
      r.sent += bytes;
      r.received += bytes;
    } else if (auto bc = llvm::dyn_cast<exec::BroadcastOp>(op)) {
      int64_t bytes = bc.getBuffer().getType().getNumElements() * 4;
      (bc.getRoot() == uint64_t(rank) ? r.sent : r.received) += bytes;
    }
  });
  return r;
  return r;
}

/// The SDP components rank `rank` owns, by name (empty without SDP).
llvm::json::Array ownedComponents(ModuleOp module, int64_t rank) {
  llvm::json::Array owned;
  if (auto sdp = module->getAttrOfType<DictionaryAttr>(attr::kSdp))
    for (auto c :
         sdp.getAs<ArrayAttr>("components").getAsRange<DictionaryAttr>())
      if (llvm::is_contained(c.getAs<DenseI64ArrayAttr>("owners").asArrayRef(),
                             rank))
        owned.push_back(c.getAs<StringAttr>("name").getValue().str());
  return owned;
}

/// `perRank[r]` is the planned program rank r runs.
llvm::json::Value reportJson(ArrayRef<ModuleOp> perRank, int64_t world,
                             ModuleOp full) {
  llvm::json::Array ranks;
  for (int64_t rank = 0; rank < world; ++rank) {
    RankReport r = rankReport(perRank[rank], world, rank);
    llvm::json::Object o{
        {"rank", rank},
        {"memory", llvm::json::Object(r.memory)},
        {"comm", llvm::json::Object{{"bytes_sent_per_step", r.sent},
                                    {"bytes_received_per_step", r.received}}}};
    if (perRank[rank]->hasAttr(attr::kSdp))
      o["components"] = ownedComponents(perRank[rank], rank);
    ranks.push_back(std::move(o));
  }
  llvm::json::Object report{{"world_size", world}, {"ranks", std::move(ranks)}};
  // SDP evaluates and exports the whole model, in an arena of its own that
  // each rank allocates at the first evaluation.
  if (full)
    report["sdp"] = llvm::json::Object{
        {"whole_model_arena",
         full->getAttrOfType<IntegerAttr>(attr::kArenaBytes).getInt()}};
  return report;
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

void printReport(ArrayRef<ModuleOp> perRank, int64_t world) {
  auto row = [](StringRef k, int64_t v) {
    llvm::outs() << llvm::formatv("  {0,-12} {1,12}  ({2})\n", k, v,
                                  humanBytes(v));
  };
  // One table per distinct program, naming the ranks that run it.
  bool alike = llvm::all_equal(perRank);
  for (int64_t rank = 0; rank < world; ++rank) {
    ModuleOp m = perRank[rank];
    if (llvm::is_contained(perRank.take_front(rank), m))
      continue;
    RankReport r = rankReport(m, world, rank);
    // The ranks of one program can differ in their shards of a
    // reduce-scatter exchange: the most any of them moves.
    for (int64_t q = rank + 1; q < world; ++q)
      if (perRank[q] == m) {
        RankReport o = rankReport(m, world, q);
        r.sent = std::max(r.sent, o.sent);
        r.received = std::max(r.received, o.received);
      }
    std::string ranks;
    for (int64_t q = rank; q < world; ++q)
      if (perRank[q] == m)
        ranks += (ranks.empty() ? "" : ", ") + std::to_string(q);
    if (!alike)
      llvm::outs() << "rank"
                   << (ranks.find(',') != std::string::npos ? "s " : " ")
                   << ranks << ": ";
    llvm::outs() << "memory per rank (static plan, " << world << " rank"
                 << (world == 1 ? "" : "s")
                 << (alike ? ", all ranks alike" : "") << "):\n";
    if (m->hasAttr(attr::kSdp)) {
      llvm::outs() << "  components  ";
      for (const llvm::json::Value &c : ownedComponents(m, rank))
        llvm::outs() << " " << *c.getAsString();
      llvm::outs() << "\n";
    }
    for (StringRef k : {"params", "grads", "optimizer", "activations", "inputs",
                        "outputs", "comm_buffers", "peak"}) {
      row(k, *r.memory.getInteger(k));
      if (k == "params" && r.memory.getInteger("frozen").value_or(0))
        row("  frozen", *r.memory.getInteger("frozen"));
    }
    llvm::outs() << "communication per step per rank"
                 << (alike && world > 1 ? " (the most of any rank)" : "")
                 << ":\n";
    row("sent", r.sent);
    row("received", r.received);
  }
}

/// The headers and libraries compiled programs build against. They are
/// found from otc-compile's own place: bin/ beside include/ and the library
/// folder, the same in the build tree and in an installed tree, so the
/// tool names neither and an install can move.
struct ProgramDeps {
  std::string include, lib;
};

FailureOr<ProgramDeps> findProgramDeps() {
  static int anchor;
  SmallString<256> bin(llvm::sys::fs::getMainExecutable(nullptr, &anchor));
  llvm::sys::path::remove_filename(bin);
  auto under = [&](StringRef rel, StringRef file, std::string &out) {
    SmallString<256> dir(bin), real;
    llvm::sys::path::append(dir, rel);
    SmallString<256> probe(dir);
    llvm::sys::path::append(probe, file);
    if (!llvm::sys::fs::exists(probe) || llvm::sys::fs::real_path(dir, real))
      return false;
    out = real.str().str();
    return true;
  };
  ProgramDeps deps;
  if (under(OTC_INCLUDE_DIR_FROM_BIN, "otc/runtime.h", deps.include) &&
      (under(OTC_LIBDIR_FROM_BIN, "libotc_runtime.so", deps.lib) ||
       under("../lib", "libotc_runtime.so", deps.lib)))
    return deps;
  llvm::errs() << "otc-compile: cannot find OTC's headers ("
               << OTC_INCLUDE_DIR_FROM_BIN << "/otc/runtime.h) and libraries ("
               << OTC_LIBDIR_FROM_BIN << "/libotc_runtime.so) beside " << bin
               << ": is the installation complete?\n";
  return failure();
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
  FailureOr<ProgramDeps> deps = findProgramDeps();
  if (failed(deps))
    return failure();
  SmallVector<std::string> args{*program, "-O2", "-std=c++17", "-fPIC",
                                "-I" + deps->include};
  SmallVector<StringRef> buildFlags;
  StringRef(OTC_HOST_CXXFLAGS).split(buildFlags, ' ', -1, false);
  for (StringRef flag : buildFlags)
    args.push_back(flag.str());
  bool cuda = options.target() == EmitTarget::CUDA;
  if (cuda)
    args.push_back("-I" OTC_CUDA_INCLUDE_DIR);
  if (options.emit == Stage::Lib)
    args.push_back("-shared");
  args.append(
      {source.str(), "-o", options.output, "-L" + deps->lib, "-lotc_runtime"});
  // A CUDA program's kernels are host calls into otc_kernels_cuda.
  if (cuda)
    args.append({"-lotc_kernels_cuda", "-L" OTC_CUDA_LIBRARY_DIR, "-lcudart",
                 "-Wl,-rpath," OTC_CUDA_LIBRARY_DIR});
  args.append({"-lotc_kernels", "-Wl,-rpath," + deps->lib});
  SmallVector<StringRef> argRefs(args.begin(), args.end());
  SmallString<128> log;
  llvm::sys::fs::createTemporaryFile("otc-cxx", "log", log);
  std::optional<StringRef> redirects[] = {std::nullopt, log.str(), log.str()};
  std::string err;
  int rc = llvm::sys::ExecuteAndWait(*program, argRefs, std::nullopt, redirects,
                                     0, 0, &err);
  auto text = llvm::MemoryBuffer::getFile(log);
  llvm::sys::fs::remove(log);
  if (rc != 0) {
    llvm::errs() << "otc-compile: the host compiler failed (exit " << rc << ")"
                 << (err.empty() ? "" : ": " + err) << "\n";
    if (text)
      llvm::errs() << (*text)->getBuffer();
    return failure();
  }
  return success();
}

} // namespace

/// Says why `path` cannot be written, before any work is done for it (the
/// host compiler's own message would come after the whole compilation).
static LogicalResult checkWritable(StringRef path) {
  SmallString<128> folder = llvm::sys::path::parent_path(path);
  if (folder.empty())
    folder = ".";
  const char *why = nullptr;
  if (llvm::sys::fs::is_directory(path))
    why = "it is a folder";
  else if (!llvm::sys::fs::is_directory(folder))
    why = "its folder does not exist";
  else if (llvm::sys::fs::access(folder, llvm::sys::fs::AccessMode::Write))
    why = "its folder is not writable";
  if (!why)
    return success();
  llvm::errs() << "otc-compile: cannot write '" << path << "': " << why << "\n";
  return failure();
}

int otc::compile(const CompileOptions &options, MLIRContext &context,
                 void (*configurePassManager)(PassManager &)) {
  if (failed(checkWritable(options.output)) ||
      (!options.reportJson.empty() &&
       failed(checkWritable(options.reportJson))))
    return 1;
  OwningOpRef<ModuleOp> module =
      importOnnxFile(options.input, &context, options.import);
  if (!module)
    return 1;
  // A built program names its model copy relative to itself.
  std::string sourceModel;
  bool built = options.emit == Stage::Lib || options.emit == Stage::Exe;
  if (auto path = (*module)->getAttrOfType<StringAttr>(attr::kModelPath);
      path && built) {
    sourceModel = path.getValue().str();
    (*module)->setAttr(
        attr::kModelPath,
        StringAttr::get(&context, modelCopyName(options.output)));
  }
  auto run = [&]() {
    PassManager pm(&context);
    if (configurePassManager)
      configurePassManager(pm);
    buildTrainingPipeline(pm, options.pipeline);
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
  if (failed(run()))
    return 1;
  if (options.emit == Stage::Train)
    return emitMlir();
  auto lower = [&](ModuleOp m) {
    PassManager pm(&context);
    if (configurePassManager)
      configurePassManager(pm);
    buildExecPipeline(pm, options.exec);
    return pm.run(m);
  };
  int64_t world = options.pipeline.worldSize;
  if (failed(lower(*module)))
    return 1;
  // SDP: one program per distinct rank mask plus the whole model.
  std::optional<dist::SdpPrograms> sdp = dist::sdpPrograms(*module);
  ModuleOp full = sdp ? sdp->whole : ModuleOp();
  SmallVector<ModuleOp> perRank(world, *module);
  if (sdp)
    for (int64_t r = 0; r < world; ++r)
      perRank[r] = sdp->variants[sdp->rankVariant[r]];
  if (options.report) {
    printReport(perRank, world);
    if (full)
      llvm::outs()
          << "whole model (evaluation and export, allocated at the "
             "first evaluation): "
          << humanBytes(
                 full->getAttrOfType<IntegerAttr>(attr::kArenaBytes).getInt())
          << "\n";
  }
  if (!options.reportJson.empty() &&
      failed(writeFile(options.reportJson, [&](raw_ostream &os) {
        os << llvm::formatv("{0:2}", reportJson(perRank, world, full)) << "\n";
      })))
    return 1;
  if (options.emit == Stage::Exec)
    return emitMlir();

  EmitCppOptions emitOptions;
  emitOptions.withMain = options.emit == Stage::Exe;
  emitOptions.target = options.target();
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
  LogicalResult compiled = hostCompile(cpp, options);
  llvm::sys::fs::remove(cpp);
  if (failed(compiled))
    return 1;
  if (!sourceModel.empty()) {
    SmallString<256> copy(options.output);
    llvm::sys::path::remove_filename(copy);
    llvm::sys::path::append(copy, modelCopyName(options.output));
    if (failed(writeModelCopy(sourceModel, copy)))
      return 1;
  }
  return 0;
}
