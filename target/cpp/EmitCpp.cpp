//===- EmitCpp.cpp - exec dialect to C++ source ---------------------------===//
//
// Walks the memory-planned exec dialect and writes one C++ translation unit:
// a function per step that addresses the arena through typed pointers and
// calls the kernel library's C ABI, the manifest (Manifest.cpp) embedded as a
// string, and the entry table.
//
// For CUDA (EmitTarget::CUDA) the arena is device memory and the steps call
// the otckd_ twins of otc/kernels_cuda.h on ctx->stream; constants are
// uploaded with otckd_constant, and every return goes through
// otc_cuda_status, which waits for the stream and reports the errors the
// kernels recorded. The collectives are called alike on both targets, and
// so are the waits and checks, printed where otc-place-waits put them.
//
// Every kernel and collective call is a profiling site: the step calls
// ctx->profile around it when the run profiles, and the entry's `sites`
// table names it (kernel, ONNX node, FLOPs and bytes of one call).
//
//===----------------------------------------------------------------------===//

#include "target/cpp/EmitCpp.h"
#include "target/cpp/EmitKernels.h"

#include "dialects/Attributes.h"
#include "dialects/InitAll.h"
#include "dialects/dist/DistDialect.h"
#include "dialects/dist/SdpAttributes.h"
#include "dialects/exec/ExecDialect.h"
#include "dialects/exec/KernelDescs.h"
#include "dialects/graph/ElementTypes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>

using namespace mlir;
using namespace otc;

namespace {

/// The C type of a buffer's pointer (kernel workspaces are i8: bytes the
/// kernels take as void *).
std::string cType(Type t) {
  const ElementTypeInfo *e = elementTypeInfo(t);
  return e ? e->cType : "";
}

std::string cString(StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (c == '\n')
      out += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20)
      out += llvm::formatv("\\{0:o3}", static_cast<unsigned char>(c)).str();
    else
      out += c;
  }
  return out + "\"";
}

/// The ONNX node a location names (the first name of a fused location), or
/// "".
std::string sourceName(Location loc) {
  if (auto n = llvm::dyn_cast<NameLoc>(loc))
    return n.getName().str();
  if (auto f = llvm::dyn_cast<FusedLoc>(loc))
    for (Location l : f.getLocations())
      if (std::string n = sourceName(l); !n.empty())
        return n;
  if (auto c = llvm::dyn_cast<CallSiteLoc>(loc))
    return sourceName(c.getCallee());
  return "";
}

int64_t bytesOf(Value v) {
  auto t = llvm::cast<MemRefType>(v.getType());
  return t.getNumElements() *
         std::max<int64_t>(t.getElementTypeBitWidth() / 8, 1);
}

/// Floating-point operations of one call of `k`: the products of the GEMM
/// and convolution kernels (a multiply-add counts 2); 0 for the others,
/// which the profiler rates by bytes.
double kernelFlops(exec::KernelOp k) {
  StringRef kn = k.getKernel();
  auto shape = [](Value v) {
    return llvm::cast<MemRefType>(v.getType()).getShape();
  };
  ValueRange ins = k.getIns(), outs = k.getOuts();
  if ((kn == "gemm" || kn == "matmul") && ins.size() >= 2 && !outs.empty()) {
    ArrayRef<int64_t> a = shape(ins[0]);
    if (a.size() < 2)
      return 0;
    auto ta = k->getAttrOfType<BoolAttr>("transA");
    int64_t inner = ta && ta.getValue() ? a[a.size() - 2] : a.back();
    StridedMatmul s;
    if (kn == "matmul" &&
        stridedMatmulOf(k, ins[0], ins[1], outs[0], s, nullptr))
      inner = s.K;
    return 2.0 * double(bytesOf(outs[0]) / 4) * double(inner);
  }
  if (kn.starts_with("conv") && !outs.empty()) {
    otck_conv_desc d{};
    convDescOf(k, kn, ins, outs[0], d);
    double f = 2.0 * double(d.batch) * double(d.out_channels) *
               double(d.groups ? d.in_channels / d.groups : 0);
    for (int i = 0; i < d.spatial; ++i)
      f *= double(d.out[i]) * double(d.kernel[i]);
    return f;
  }
  return 0;
}

class Emitter {
public:
  Emitter(raw_ostream &os, KernelTarget target) : os(os), target(target) {}

  LogicalResult emitFunction(func::FuncOp fn, StringRef cName);
  std::string constants;
  /// The profiling sites of every function emitted so far, as the
  /// initializers of an otc_profile_site_t table.
  std::vector<std::string> sites;

private:
  /// Opens a profiling site for the call printed next; closeSite() ends it.
  void openSite(Operation *op, StringRef siteName, double flops, double bytes) {
    site = sites.size();
    sites.push_back(
        llvm::formatv("{{{0}, {1}, {2:e16}, {3:e16}}", cString(siteName),
                      cString(sourceName(op->getLoc())), flops, bytes)
            .str());
    os << "  if (ctx->profile)\n    ctx->profile(ctx->profiler, " << site
       << ", 1);\n";
  }
  void closeSite() {
    os << "  if (ctx->profile)\n    ctx->profile(ctx->profiler, " << site
       << ", 0);\n";
  }
  size_t site = 0;

  LogicalResult emitCompressedAllReduce(exec::CompressedAllReduceOp op);
  std::string name(Value v) { return names.lookup(v); }
  std::string bind(Value v) {
    std::string n = "v" + std::to_string(counter++);
    names[v] = n;
    return n;
  }

  raw_ostream &os;
  KernelTarget target;
  DenseMap<Value, std::string> names;
  unsigned counter = 0;
  unsigned constCounter = 0;
};

/// The elements [begin, end) an all-reduce reduces.
std::pair<int64_t, int64_t> reducedRange(exec::AllReduceOp op) {
  if (std::optional<ArrayRef<int64_t>> r = op.getRange())
    return {(*r)[0], (*r)[1]};
  return {0, op.getBuffer().getType().getNumElements()};
}

LogicalResult Emitter::emitFunction(func::FuncOp fn, StringRef cName) {
  os << "static int " << cName
     << "(uint8_t *arena, const otc_step_context_t *ctx) {\n"
     << "  (void)ctx;\n";
  if (target.cuda())
    os << "  otckd_set_stream(ctx->stream);\n";
  // Started and not waited for: otc-place-waits must have run.
  bool started = false;
  const char *commError =
      "rc == OTC_STEP_SKIPPED_NONFINITE ? rc : OTC_STEP_ERR_COMM";
  for (Operation &op : fn.front()) {
    if (auto view = llvm::dyn_cast<exec::ViewOp>(op)) {
      std::string t = cType(view.getType().getElementType());
      if (t.empty())
        return view.emitError("cannot emit element type ")
               << view.getType().getElementType();
      os << "  " << t << " *" << bind(view) << " = reinterpret_cast<" << t
         << " *>(arena + " << view.getOffset() << ");\n";
    } else if (auto c = llvm::dyn_cast<exec::ConstantOp>(op)) {
      std::string t = cType(c.getType().getElementType());
      auto dense = llvm::dyn_cast<DenseElementsAttr>(c.getValue());
      if (t.empty() || !dense)
        return c.emitError("cannot emit this constant");
      std::string g = "kConst" + std::to_string(constCounter++);
      std::string init;
      llvm::raw_string_ostream is(init);
      int64_t i = 0;
      Type elt = dense.getElementType();
      if (elt.isF16() || elt.isBF16()) {
        // Storage types: the bits.
        for (APFloat v : dense.getValues<APFloat>())
          is << (i++ ? ", " : "") << v.bitcastToAPInt().getZExtValue();
      } else if (llvm::isa<FloatType>(elt)) {
        for (APFloat v : dense.getValues<APFloat>())
          is << (i++ ? ", " : "") << floatLiteral(v.convertToDouble());
      } else {
        bool zext = elt.isInteger(1) || elt.isUnsignedInteger();
        for (APInt v : dense.getValues<APInt>()) {
          is << (i++ ? ", " : "");
          if (zext)
            is << v.getZExtValue() << (elt.isInteger(64) ? "ull" : "");
          else if (v.isMinSignedValue() && v.getBitWidth() == 64)
            is << "INT64_MIN";
          else
            is << v.getSExtValue();
        }
      }
      constants += "alignas(64) static const " + t + " " + g + "[] = {" +
                   is.str() + "};\n";
      if (target.cuda()) {
        std::string v = bind(c);
        os << "  " << t << " *" << v << " = const_cast<" << t
           << " *>(static_cast<const " << t << " *>(otckd_constant(" << g
           << ", sizeof " << g << ")));\n"
           << "  if (!" << v << ")\n    " << target.ret("OTC_STEP_ERR_DEVICE")
           << "\n";
      } else {
        os << "  " << t << " *" << bind(c) << " = const_cast<" << t << " *>("
           << g << ");\n";
      }
    } else if (auto k = llvm::dyn_cast<exec::KernelOp>(op)) {
      double bytes = 0;
      for (Value v : k.getIns())
        bytes += bytesOf(v);
      for (Value v : k.getOuts()) // not the i8 workspaces
        if (!llvm::cast<MemRefType>(v.getType()).getElementType().isInteger(8))
          bytes += bytesOf(v);
      openSite(k, k.getKernel(), kernelFlops(k), bytes);
      if (failed(emitKernelCall(
              k, os, [&](Value v) { return name(v); }, target)))
        return failure();
      closeSite();
    } else if (auto ar = llvm::dyn_cast<exec::AllReduceOp>(op)) {
      if (ar.getKind() != exec::ReduceKind::mean)
        return ar.emitError("only mean all-reduce can be emitted");
      auto [begin, end] = reducedRange(ar);
      openSite(ar, "all_reduce", 0, 4.0 * double(end - begin));
      if (std::optional<int64_t> group = ar.getGroup())
        os << "  if (ctx->group_all_reduce_mean_f32(ctx->comm, " << *group
           << ", ";
      else
        os << "  if (ctx->all_reduce_mean_f32(ctx->comm, ";
      os << name(ar.getBuffer());
      if (begin != 0)
        os << " + " << begin;
      os << ", " << end - begin << ") != 0)\n    "
         << target.ret("OTC_STEP_ERR_COMM") << "\n";
      closeSite();
      started = true;
    } else if (auto bc = llvm::dyn_cast<exec::BroadcastOp>(op)) {
      openSite(bc, "broadcast", 0, double(bytesOf(bc.getBuffer())));
      os << "  if (ctx->broadcast_f32(ctx->comm, " << bc.getRootAttr().getInt()
         << ", " << name(bc.getBuffer()) << ", "
         << bc.getBuffer().getType().getNumElements() << ") != 0)\n    "
         << target.ret("OTC_STEP_ERR_COMM") << "\n";
      closeSite();
    } else if (auto car = llvm::dyn_cast<exec::CompressedAllReduceOp>(op)) {
      openSite(car, "compressed_all_reduce", 0,
               double(bytesOf(car.getBuffer())));
      if (failed(emitCompressedAllReduce(car)))
        return failure();
      closeSite();
      started = true;
    } else if (llvm::isa<exec::WaitCollectivesOp>(op)) {
      openSite(&op, "wait_collectives", 0, 0);
      os << "  if (int rc = ctx->wait_collectives(ctx->comm))\n    "
         << target.ret(commError) << "\n";
      closeSite();
      started = false;
    } else if (llvm::isa<exec::AgreeFiniteOp>(op)) {
      openSite(&op, "agree_finite", 0, 0);
      os << "  if (int rc = ctx->agree_finite(ctx->comm))\n    "
         << target.ret(commError) << "\n";
      closeSite();
    } else if (llvm::isa<exec::CheckErrorsOp>(op)) {
      // CPU kernels return as they fail: nothing is left to check.
      if (target.cuda())
        os << "  if (int rc = otc_cuda_status(OTC_STEP_OK))\n    "
           << target.ret("rc") << "\n";
    } else if (llvm::isa<func::ReturnOp>(op)) {
      if (started)
        return op.emitError("returns before waiting for its collectives "
                            "(run otc-place-waits after otc-plan-memory)");
      os << "  " << target.ret("OTC_STEP_OK") << "\n";
    } else {
      return op.emitError("cannot emit '") << op.getName() << "' as C++";
    }
  }
  os << "}\n\n";
  return success();
}

LogicalResult Emitter::emitCompressedAllReduce(exec::CompressedAllReduceOp op) {
  std::string method = llvm::StringSwitch<std::string>(op.getMethod())
                           .Case("none", "OTCK_COMPRESS_NONE")
                           .Case("fp16", "OTCK_COMPRESS_FP16")
                           .Case("bf16", "OTCK_COMPRESS_BF16")
                           .Case("int8", "OTCK_COMPRESS_INT8")
                           .Case("topk", "OTCK_COMPRESS_TOPK")
                           .Case("topk-int8", "OTCK_COMPRESS_TOPK_INT8")
                           .Case("randomk", "OTCK_COMPRESS_RANDOMK")
                           .Case("powersgd", "OTCK_COMPRESS_POWERSGD")
                           .Default("");
  if (method.empty())
    return op.emitOpError("unknown method '") << op.getMethod() << "'";
  std::string exchange =
      llvm::StringSwitch<std::string>(op.getExchange())
          .Case("all-gather", "OTC_EXCHANGE_ALL_GATHER")
          .Case("reduce-scatter", "OTC_EXCHANGE_REDUCE_SCATTER")
          .Case("all-reduce", "OTC_EXCHANGE_ALL_REDUCE")
          .Default("");
  if (exchange.empty())
    return op.emitOpError("unknown exchange '") << op.getExchange() << "'";
  float ratio = op.getRatio().convertToFloat();
  os << "  { // compressed all-reduce, bucket " << op.getBucket() << "\n";
  // PowerSGD's matrices: (offset, rows, cols) triples.
  ArrayRef<int64_t> matrices;
  if (std::optional<ArrayRef<int64_t>> m = op.getMatrices())
    matrices = *m;
  if (!matrices.empty()) {
    os << "    static const int64_t matrices[] = {";
    llvm::interleaveComma(matrices, os);
    os << "};\n";
  }
  os << "    static const otc_compress_desc_t desc = {" << method << ", "
     << static_cast<bool>(op.getResidual()) << ", " << op.getAdaptive() << ", "
     << exchange << ", " << op.getBlockSize() << ", " << floatLiteral(ratio)
     << ", " << floatLiteral(op.getRatioMin().convertToFloat()) << ", "
     << floatLiteral(ratio) << ", " << op.getWarmupSteps() << ", "
     << op.getNesterov() << ", " << op.getPowersgdRank() << ", "
     << matrices.size() / 3 << ", "
     << (matrices.empty() ? "nullptr" : "matrices") << "};\n"
     << "    int rc = ";
  if (std::optional<int64_t> group = op.getGroup())
    os << "ctx->group_compressed_all_reduce_mean_f32(ctx->comm, " << *group
       << ", &desc, ";
  else
    os << "ctx->compressed_all_reduce_mean_f32(ctx->comm, &desc, ";
  os << name(op.getBuffer()) << ", "
     << op.getBuffer().getType().getNumElements() << ", "
     << (op.getResidual() ? name(op.getResidual()) : "nullptr") << ", ";
  // The velocity's decay is the step's hyperparameter that the op names
  // (momentum, or Adam's beta1).
  if (op.getVelocity())
    os << name(op.getVelocity()) << ", (float)(ctx->hyper->"
       << op.getVelocityDecay() << "), ";
  else
    os << "nullptr, 0.0f, ";
  os << (op.getState() ? name(op.getState()) : "nullptr") << ", "
     << op.getBucket() << ");\n"
     << "    if (rc == OTC_STEP_SKIPPED_NONFINITE)\n      " << target.ret("rc")
     << "\n    if (rc != 0)\n      " << target.ret("OTC_STEP_ERR_COMM")
     << "\n  }\n";
  return success();
}

} // namespace

/// Micro-batches per optimizer step (--accumulate; 1 without).
static int64_t accumulateCount(ModuleOp module) {
  if (auto t = module->getAttrOfType<DictionaryAttr>(attr::kTraining))
    if (auto n = t.getAs<IntegerAttr>("accumulate"))
      return n.getInt();
  return 1;
}

/// Writes `module`'s program into `namespace ns`, ending with its entry
/// table `entry` (whose SDP fields `variants` initialises).
static LogicalResult emitProgram(ModuleOp module, raw_ostream &out,
                                 StringRef ns, const EmitCppOptions &options,
                                 StringRef variants) {
  bool withMain = options.withMain;
  FailureOr<std::string> manifest = buildManifest(module, options.target);
  if (failed(manifest))
    return failure();
  std::string body;
  llvm::raw_string_ostream os(body);
  Emitter emitter(os, {options.target});
  std::string train = "nullptr", eval = "nullptr", calibrate = "nullptr",
              accumulate = "nullptr";
  for (auto fn : module.getOps<func::FuncOp>()) {
    std::string *slot = fn.getName() == attr::kTrainFn        ? &train
                        : fn.getName() == attr::kEvalFn       ? &eval
                        : fn.getName() == attr::kCalibrateFn  ? &calibrate
                        : fn.getName() == attr::kAccumulateFn ? &accumulate
                                                              : nullptr;
    if (!slot)
      return mlir::emitError(fn.getLoc(), "unexpected function @")
             << fn.getName()
             << " (expected @train_step, @eval_step, @calibrate_step or "
                "@accumulate_step)";
    std::string cName = ("otc_" + fn.getName()).str();
    if (failed(emitter.emitFunction(fn, cName)))
      return failure();
    *slot = "&" + cName;
  }
  // An SDP program's full model only evaluates; its variants train.
  bool sdpFull = module->hasAttr(attr::kSdp) && !variants.starts_with("0,");
  if (module->hasAttr(attr::kTraining) && train == "nullptr" && !sdpFull)
    return mlir::emitError(module.getLoc(), "no @train_step to emit");
  if (train == "nullptr" && eval == "nullptr")
    return mlir::emitError(module.getLoc(),
                           "no @train_step or @eval_step to emit");
  if (train == "nullptr" && withMain && !sdpFull)
    return mlir::emitError(module.getLoc(),
                           "an inference-only program has no training "
                           "driver: emit a library (--emit=lib)");
  out << "namespace " << ns << " {\n"
      << emitter.constants << "\n"
      << "static const char kManifest[] = " << cString(*manifest) << ";\n\n"
      << body;
  if (!emitter.sites.empty()) {
    out << "static const otc_profile_site_t kSites[] = {\n";
    for (const std::string &site : emitter.sites)
      out << "    " << site << ",\n";
    out << "};\n\n";
  }
  out << "static const otc_program_entry_t entry = {\n"
      << "    OTC_PROGRAM_ABI_VERSION, kManifest, "
      << module->getAttrOfType<IntegerAttr>(attr::kArenaBytes).getInt()
      << "ull, " << train << ", " << eval << ", " << variants << ", "
      << calibrate << ", "
      << (options.target == EmitTarget::CUDA ? "OTC_DEVICE_CUDA"
                                             : "OTC_DEVICE_CPU")
      << ", " << accumulate << ", " << accumulateCount(module) << ", "
      << emitter.sites.size() << ", "
      << (emitter.sites.empty() ? "nullptr" : "kSites") << "};\n"
      << "} // namespace " << ns << "\n\n";
  return success();
}

static void emitPrologue(raw_ostream &out, const EmitCppOptions &options) {
  bool cuda = options.target == EmitTarget::CUDA;
  out << "// Generated by otc-compile. Do not edit.\n"
      << "#include <stdint.h>\n\n"
      << "#include \"otc/compress.h\"\n"
      << (cuda ? "#include \"otc/kernels_cuda.h\"\n"
               : "#include \"otc/kernels.h\"\n")
      << "#include \"otc/program_abi.h\"\n"
      << (options.withMain ? "#include \"otc/runtime.h\"\n" : "") << "\n";
  if (cuda)
    out << kCudaStatusHelper;
}

static void emitEpilogue(raw_ostream &out, StringRef entry, bool withMain) {
  out << "extern \"C\" const otc_program_entry_t *otc_program_entry(void) {\n"
      << "  return &" << entry << ";\n}\n";
  if (withMain)
    out << "\nint main(int argc, char **argv) {\n"
        << "  return otc_driver_main(argc, argv, otc_program_entry());\n}\n";
}

/// An SDP module's programs: each variant's, then the whole model's, whose
/// entry table lists the variants and which rank runs which.
static LogicalResult emitSdpCpp(ModuleOp full, ArrayRef<ModuleOp> variants,
                                ArrayRef<int64_t> rankVariant, raw_ostream &out,
                                const EmitCppOptions &options) {
  emitPrologue(out, options);
  for (auto [i, v] : llvm::enumerate(variants))
    if (failed(emitProgram(v, out, "variant" + std::to_string(i), options,
                           "0, nullptr, nullptr")))
      return failure();
  out << "namespace {\n"
      << "const otc_program_entry_t *const kVariants[] = {";
  for (size_t i = 0; i < variants.size(); ++i)
    out << (i ? ", " : "") << "&variant" << i << "::entry";
  out << "};\nconst int32_t kRankVariant[] = {";
  for (auto [r, v] : llvm::enumerate(rankVariant))
    out << (r ? ", " : "") << v;
  out << "};\n} // namespace\n\n";
  if (failed(emitProgram(
          full, out, "full", options,
          (std::to_string(variants.size()) + ", kVariants, kRankVariant")
              .c_str())))
    return failure();
  emitEpilogue(out, "full::entry", options.withMain);
  return success();
}

LogicalResult otc::emitCpp(ModuleOp module, raw_ostream &out,
                           const EmitCppOptions &options) {
  if (std::optional<dist::SdpPrograms> sdp = dist::sdpPrograms(module))
    return emitSdpCpp(sdp->whole, sdp->variants, sdp->rankVariant, out,
                      options);
  emitPrologue(out, options);
  if (failed(
          emitProgram(module, out, "program", options, "0, nullptr, nullptr")))
    return failure();
  emitEpilogue(out, "program::entry", options.withMain);
  return success();
}

void otc::registerEmitCppTranslation() {
  auto emit = [](EmitTarget target) {
    return [target](Operation *op, raw_ostream &os) -> LogicalResult {
      auto module = llvm::dyn_cast<ModuleOp>(op);
      if (!module)
        return op->emitError("expected a module");
      EmitCppOptions options;
      options.target = target;
      return emitCpp(module, os, options);
    };
  };
  auto dialects = [](DialectRegistry &registry) {
    registerAllDialects(registry);
  };
  TranslateFromMLIRRegistration cpu("emit-cpp",
                                    "emit a memory-planned exec module as C++",
                                    emit(EmitTarget::CPU), dialects);
  TranslateFromMLIRRegistration cuda(
      "emit-cuda-cpp",
      "emit a memory-planned exec module as C++ calling the CUDA kernel "
      "library (otc/kernels_cuda.h)",
      emit(EmitTarget::CUDA), dialects);
}
