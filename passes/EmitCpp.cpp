//===- EmitCpp.cpp - exec dialect to C++ source ---------------------------===//
//
// Walks the memory-planned exec dialect and writes one C++ translation unit:
// a function per step that addresses the arena through typed pointers and
// calls the kernel library's C ABI, the manifest, and the entry table.
//
//===----------------------------------------------------------------------===//

#include "passes/EmitCpp.h"

#include "dialects/dist/DistDialect.h"
#include "dialects/exec/ExecDialect.h"
#include "passes/Attributes.h"
#include "passes/Passes.h"

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

std::string floatLiteral(double v) {
  if (std::isnan(v))
    return "__builtin_nanf(\"\")";
  if (std::isinf(v))
    return v > 0 ? "__builtin_inff()" : "(-__builtin_inff())";
  return llvm::formatv("{0:e9}f", v).str();
}

std::string cType(Type t) {
  if (t.isF32())
    return "float";
  if (t.isF64())
    return "double";
  if (t.isInteger(64))
    return "int64_t";
  if (t.isInteger(32))
    return "int32_t";
  if (t.isInteger(8))
    return "uint8_t";
  if (t.isInteger(1))
    return "bool";
  return "";
}

std::string dtypeName(Type t) {
  if (t.isF32())
    return "f32";
  if (t.isF64())
    return "f64";
  if (t.isInteger(64))
    return "i64";
  if (t.isInteger(32))
    return "i32";
  if (t.isInteger(8))
    return "u8";
  if (t.isInteger(1))
    return "bool";
  return "unknown";
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

std::string intList(ArrayRef<int64_t> v) {
  std::string s;
  for (auto [i, x] : llvm::enumerate(v))
    s += (i ? ", " : "") + std::to_string(x);
  return s;
}

/// Contiguous strides of `shape` laid over the trailing dims of a rank-`rank`
/// iteration space; 0 on broadcast (size-1 or missing) dimensions.
SmallVector<int64_t> broadcastStrides(ArrayRef<int64_t> shape,
                                      ArrayRef<int64_t> space) {
  SmallVector<int64_t> strides(space.size(), 0);
  int64_t stride = 1;
  for (int64_t i = shape.size() - 1; i >= 0; --i) {
    int64_t dim = space.size() - shape.size() + i;
    strides[dim] = shape[i] == 1 ? 0 : stride;
    stride *= shape[i];
  }
  return strides;
}

class Emitter {
public:
  Emitter(raw_ostream &os) : os(os) {}

  LogicalResult emitFunction(func::FuncOp fn, StringRef cName);
  std::string constants;

private:
  LogicalResult emitKernel(exec::KernelOp k);
  LogicalResult emitCompressedAllReduce(exec::CompressedAllReduceOp op);
  std::string name(Value v) { return names.lookup(v); }
  std::string bind(Value v) {
    std::string n = "v" + std::to_string(counter++);
    names[v] = n;
    return n;
  }
  /// `static const int64_t NAME[] = {...};` inside the current block, or
  /// nullptr for empty lists.
  std::string array(StringRef name, ArrayRef<int64_t> v) {
    if (v.empty())
      return "nullptr";
    os << "    static const int64_t " << name << "[] = {" << intList(v)
       << "};\n";
    return name.str();
  }
  float f32Attr(Operation *op, StringRef n, float dflt) {
    if (auto a = op->getAttrOfType<FloatAttr>(n))
      return a.getValueAsDouble();
    return dflt;
  }
  bool boolAttr(Operation *op, StringRef n) {
    auto a = op->getAttrOfType<BoolAttr>(n);
    return a && a.getValue();
  }

  raw_ostream &os;
  DenseMap<Value, std::string> names;
  unsigned counter = 0;
  unsigned constCounter = 0;
};

LogicalResult Emitter::emitFunction(func::FuncOp fn, StringRef cName) {
  os << "static int " << cName
     << "(uint8_t *arena, const otc_step_context_t *ctx) {\n"
     << "  (void)ctx;\n";
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
      if (llvm::isa<FloatType>(dense.getElementType())) {
        for (APFloat v : dense.getValues<APFloat>())
          is << (i++ ? ", " : "") << floatLiteral(v.convertToDouble());
      } else {
        for (APInt v : dense.getValues<APInt>())
          is << (i++ ? ", " : "") << v.getSExtValue();
      }
      constants += "alignas(64) static const " + t + " " + g + "[] = {" +
                   is.str() + "};\n";
      os << "  " << t << " *" << bind(c) << " = const_cast<" << t << " *>(" << g
         << ");\n";
    } else if (auto k = llvm::dyn_cast<exec::KernelOp>(op)) {
      if (failed(emitKernel(k)))
        return failure();
    } else if (auto ar = llvm::dyn_cast<exec::AllReduceOp>(op)) {
      if (ar.getKind() != "mean")
        return ar.emitError("only mean all-reduce can be emitted");
      os << "  if (ctx->all_reduce_mean_f32(ctx->comm, " << name(ar.getBuffer())
         << ", " << ar.getBuffer().getType().getNumElements()
         << ") != 0)\n    return OTC_STEP_ERR_COMM;\n";
    } else if (auto car = llvm::dyn_cast<exec::CompressedAllReduceOp>(op)) {
      if (failed(emitCompressedAllReduce(car)))
        return failure();
    } else if (llvm::isa<func::ReturnOp>(op)) {
      os << "  return OTC_STEP_OK;\n";
    } else {
      return op.emitError("cannot emit '") << op.getName() << "' as C++";
    }
  }
  os << "}\n\n";
  return success();
}

LogicalResult Emitter::emitKernel(exec::KernelOp k) {
  StringRef kn = k.getKernel();
  auto ins = k.getIns();
  auto outs = k.getOuts();
  auto shape = [](Value v) {
    return llvm::cast<MemRefType>(v.getType()).getShape();
  };
  auto numel = [](Value v) {
    return llvm::cast<MemRefType>(v.getType()).getNumElements();
  };
  auto in = [&](unsigned i) { return name(ins[i]); };
  auto out = [&](unsigned i) { return name(outs[i]); };
  bool anyTyped = kn == "softmax_cross_entropy" ||
                  kn == "softmax_cross_entropy_grad" || kn == "copy" ||
                  kn == "transpose";
  for (Value v : k->getOperands())
    if (!anyTyped &&
        !llvm::cast<MemRefType>(v.getType()).getElementType().isF32())
      return k.emitOpError("the CPU kernels take f32 buffers only");

  os << "  { // " << kn << "\n";
  std::string unary = llvm::StringSwitch<std::string>(kn)
                          .Cases("relu", "relu_grad", "OTCK_RELU")
                          .Cases("sigmoid", "sigmoid_grad", "OTCK_SIGMOID")
                          .Cases("tanh", "tanh_grad", "OTCK_TANH")
                          .Case("neg", "OTCK_NEG")
                          .Cases("exp", "exp_grad", "OTCK_EXP")
                          .Case("log", "OTCK_LOG")
                          .Cases("sqrt", "sqrt_grad", "OTCK_SQRT")
                          .Default("");
  std::string binary = llvm::StringSwitch<std::string>(kn)
                           .Case("add", "OTCK_ADD")
                           .Case("sub", "OTCK_SUB")
                           .Case("mul", "OTCK_MUL")
                           .Case("div", "OTCK_DIV")
                           .Default("");
  if (kn == "gemm") {
    bool ta = boolAttr(k, "transA"), tb = boolAttr(k, "transB");
    ArrayRef<int64_t> a = shape(ins[0]), y = shape(outs[0]);
    int64_t m = y[0], n = y[1], kk = ta ? a[0] : a[1];
    float alpha = f32Attr(k, "alpha", 1.0f), beta = f32Attr(k, "beta", 1.0f);
    float gemmBeta = 0.0f;
    if (ins.size() == 3) {
      // out = beta * broadcast(C), then accumulate the product into it.
      std::string sh = array("shape", y);
      std::string cs = array("cs", broadcastStrides(shape(ins[2]), y));
      std::string zs = array("zs", {0, 0});
      os << "    static const float beta = " << floatLiteral(beta) << ";\n"
         << "    otck_binary_f32(OTCK_MUL, 2, " << sh << ", " << in(2) << ", "
         << cs << ", &beta, " << zs << ", " << out(0) << ");\n";
      gemmBeta = 1.0f;
    }
    os << "    otck_gemm_f32(" << ta << ", " << tb << ", " << m << ", " << n
       << ", " << kk << ", " << floatLiteral(alpha) << ", " << in(0) << ", "
       << in(1) << ", " << floatLiteral(gemmBeta) << ", " << out(0) << ");\n";
  } else if (!binary.empty()) {
    ArrayRef<int64_t> y = shape(outs[0]);
    std::string sh = array("shape", y);
    std::string as = array("as", broadcastStrides(shape(ins[0]), y));
    std::string bs = array("bs", broadcastStrides(shape(ins[1]), y));
    os << "    otck_binary_f32(" << binary << ", " << y.size() << ", " << sh
       << ", " << in(0) << ", " << as << ", " << in(1) << ", " << bs << ", "
       << out(0) << ");\n";
  } else if (!unary.empty() && !kn.ends_with("_grad")) {
    os << "    otck_unary_f32(" << unary << ", " << numel(outs[0]) << ", "
       << in(0) << ", " << out(0) << ", 0.0f);\n";
  } else if (!unary.empty()) {
    os << "    otck_unary_grad_f32(" << unary << ", " << numel(outs[0]) << ", "
       << in(0) << ", " << in(1) << ", " << out(0) << ");\n";
  } else if (kn == "softmax" || kn == "log_softmax" || kn == "softmax_grad" ||
             kn == "log_softmax_grad") {
    ArrayRef<int64_t> s = shape(outs[0]);
    int64_t rank = s.size();
    int64_t axis = k->getAttrOfType<IntegerAttr>("axis")
                       ? k->getAttrOfType<IntegerAttr>("axis").getInt()
                       : -1;
    if (axis < 0)
      axis += rank;
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i)
      outer *= s[i];
    for (int64_t i = axis + 1; i < rank; ++i)
      inner *= s[i];
    bool log = kn.starts_with("log_");
    if (kn.ends_with("_grad"))
      os << "    otck_softmax_grad_f32(" << outer << ", " << s[axis] << ", "
         << inner << ", " << in(1) << ", " << in(0) << ", " << out(0) << ", "
         << log << ");\n";
    else
      os << "    otck_softmax_f32(" << outer << ", " << s[axis] << ", " << inner
         << ", " << in(0) << ", " << out(0) << ", " << log << ");\n";
  } else if (kn == "transpose") {
    auto perm = k->getAttrOfType<DenseI64ArrayAttr>("perm");
    if (!perm)
      return k.emitOpError("transpose needs a perm attribute");
    ArrayRef<int64_t> s = shape(ins[0]);
    std::string sh = array("shape", s);
    std::string pm = array("perm", perm.asArrayRef());
    auto t = llvm::cast<MemRefType>(ins[0].getType());
    os << "    otck_transpose(" << s.size() << ", " << sh << ", " << pm << ", "
       << in(0) << ", " << out(0) << ", "
       << std::max<unsigned>(t.getElementTypeBitWidth() / 8, 1) << ");\n";
  } else if (kn == "copy") {
    auto t = llvm::cast<MemRefType>(ins[0].getType());
    os << "    otck_copy("
       << t.getNumElements() *
              std::max<unsigned>(t.getElementTypeBitWidth() / 8, 1)
       << ", " << in(0) << ", " << out(0) << ");\n";
  } else if (kn == "reduce_sum_to") {
    ArrayRef<int64_t> x = shape(ins[0]);
    std::string sh = array("shape", x);
    std::string ys = array("ys", broadcastStrides(shape(outs[0]), x));
    os << "    otck_reduce_sum_to_f32(" << x.size() << ", " << sh << ", "
       << in(0) << ", " << ys << ", " << numel(outs[0]) << ", " << out(0)
       << ");\n";
  } else if (kn == "softmax_cross_entropy" ||
             kn == "softmax_cross_entropy_grad") {
    if (!llvm::cast<MemRefType>(ins[1].getType())
             .getElementType()
             .isInteger(64))
      return k.emitOpError("labels must be int64");
    ArrayRef<int64_t> s = shape(ins[0]);
    if (kn == "softmax_cross_entropy")
      os << "    if (otck_softmax_ce_f32(" << s[0] << ", " << s[1] << ", "
         << in(0) << ", " << in(1) << ", " << out(1) << ", " << out(0)
         << ") != OTCK_OK)\n      return OTC_STEP_ERR_LABEL_RANGE;\n";
    else
      os << "    otck_softmax_ce_grad_f32(" << s[0] << ", " << s[1] << ", "
         << in(0) << ", " << in(1) << ", " << in(2) << ", " << out(0) << ");\n";
  } else if (kn == "mse") {
    os << "    otck_mse_f32(" << numel(ins[0]) << ", " << in(0) << ", " << in(1)
       << ", " << out(0) << ");\n";
  } else if (kn == "mse_grad") {
    os << "    otck_mse_grad_f32(" << numel(ins[0]) << ", " << in(0) << ", "
       << in(1) << ", " << in(2) << ", " << out(0) << ");\n";
  } else if (kn == "pack" || kn == "unpack") {
    // Members the planner did not place inside the bucket are copied.
    bool pack = kn == "pack";
    std::string bucket = pack ? out(0) : in(0);
    int64_t offset = 0;
    for (Value m : pack ? ins : outs) {
      int64_t n = numel(m);
      std::string slice = bucket + " + " + std::to_string(offset);
      std::string src = pack ? name(m) : slice, dst = pack ? slice : name(m);
      os << "    if (" << src << " != " << dst << ")\n      otck_copy(" << n * 4
         << ", " << src << ", " << dst << ");\n";
      offset += n;
    }
  } else if (kn == "dropout") {
    auto stream = k->getAttrOfType<IntegerAttr>("stream");
    os << "    otck_dropout_f32(" << numel(ins[0]) << ", " << in(0) << ", "
       << out(0) << ", " << out(1) << ", "
       << floatLiteral(f32Attr(k, "ratio", 0)) << ", ctx->seed, "
       << (stream ? stream.getInt() : 0) << "u);\n";
  } else if (kn == "sgd_update") {
    os << "    otck_sgd_f32(" << numel(outs[0]) << ", " << out(0) << ", "
       << in(0) << ", " << floatLiteral(f32Attr(k, "lr", 0)) << ", "
       << floatLiteral(f32Attr(k, "weight_decay", 0)) << ");\n";
  } else if (kn == "momentum_update") {
    os << "    otck_momentum_f32(" << numel(outs[0]) << ", " << out(0) << ", "
       << in(0) << ", " << out(1) << ", " << floatLiteral(f32Attr(k, "lr", 0))
       << ", " << floatLiteral(f32Attr(k, "momentum", 0)) << ", "
       << floatLiteral(f32Attr(k, "weight_decay", 0)) << ", "
       << boolAttr(k, "nesterov") << ");\n";
  } else if (kn == "adam_update" || kn == "adamw_update") {
    os << "    otck_adam_f32(" << numel(outs[0]) << ", " << out(0) << ", "
       << in(0) << ", " << out(1) << ", " << out(2) << ", "
       << floatLiteral(f32Attr(k, "lr", 0)) << ", "
       << floatLiteral(f32Attr(k, "beta1", 0)) << ", "
       << floatLiteral(f32Attr(k, "beta2", 0)) << ", "
       << floatLiteral(f32Attr(k, "epsilon", 0)) << ", "
       << floatLiteral(f32Attr(k, "weight_decay", 0)) << ", ctx->step, "
       << (kn == "adamw_update") << ");\n";
  } else {
    return k.emitOpError("the CPU emitter has no kernel for '") << kn << "'";
  }
  os << "  }\n";
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
                           .Default("");
  if (method.empty())
    return op.emitOpError("unknown method '") << op.getMethod() << "'";
  float ratio = op.getRatio().convertToFloat();
  os << "  { // compressed all-reduce, bucket " << op.getBucket() << "\n"
     << "    static const otc_compress_desc_t desc = {" << method << ", "
     << static_cast<bool>(op.getResidual()) << ", " << op.getAdaptive()
     << ", 0, " << op.getBlockSize() << ", " << floatLiteral(ratio) << ", "
     << floatLiteral(op.getRatioMin().convertToFloat()) << ", "
     << floatLiteral(ratio) << ", " << op.getWarmupSteps() << "};\n"
     << "    int rc = ctx->compressed_all_reduce_mean_f32(ctx->comm, &desc, "
     << name(op.getBuffer()) << ", "
     << op.getBuffer().getType().getNumElements() << ", "
     << (op.getResidual() ? name(op.getResidual()) : "nullptr") << ", "
     << op.getBucket() << ");\n"
     << "    if (rc == OTC_STEP_SKIPPED_NONFINITE)\n      return rc;\n"
     << "    if (rc != 0)\n      return OTC_STEP_ERR_COMM;\n  }\n";
  return success();
}

} // namespace

FailureOr<std::string> otc::buildManifest(ModuleOp module) {
  auto buffers = module->getAttrOfType<ArrayAttr>(attr::kBuffers);
  auto arena = module->getAttrOfType<IntegerAttr>(attr::kArenaBytes);
  auto memory = module->getAttrOfType<DictionaryAttr>(attr::kMemory);
  if (!buffers || !arena || !memory)
    return mlir::emitError(module.getLoc(), "module is not memory-planned (run "
                                            "--otc-plan-memory first)");
  llvm::json::Object m;
  m["otc_manifest_version"] = 1;
  if (auto p = module->getAttrOfType<StringAttr>(attr::kModelPath))
    m["model_path"] = p.getValue().str();
  auto ws = module->getAttrOfType<IntegerAttr>(dist::kWorldSizeAttr);
  m["world_size"] = ws ? ws.getInt() : 1;
  auto seed = module->getAttrOfType<IntegerAttr>(attr::kSeed);
  m["seed"] = seed ? seed.getInt() : 0;
  m["arena_bytes"] = arena.getInt();

  llvm::json::Object optimizer;
  std::string loss = "none";
  if (auto t = module->getAttrOfType<DictionaryAttr>(attr::kTraining)) {
    for (NamedAttribute a : t) {
      if (auto s = llvm::dyn_cast<StringAttr>(a.getValue()))
        optimizer[a.getName().getValue()] = s.getValue().str();
      else if (auto f = llvm::dyn_cast<FloatAttr>(a.getValue()))
        optimizer[a.getName().getValue()] = f.getValueAsDouble();
      else if (auto b = llvm::dyn_cast<BoolAttr>(a.getValue()))
        optimizer[a.getName().getValue()] = b.getValue();
    }
    loss = t.getAs<StringAttr>("loss").getValue().str();
    optimizer["name"] = t.getAs<StringAttr>("optimizer").getValue().str();
    optimizer.erase("optimizer");
    optimizer.erase("loss");
    optimizer.erase("label");
  }
  m["mode"] = module->hasAttr(attr::kTraining) ? "training" : "inference";
  m["loss"] = loss;
  m["optimizer"] = std::move(optimizer);

  llvm::json::Array params, state, inputs, outputs;
  int64_t batch = 0, lossOffset = -1, evalLossOffset = -1;
  llvm::json::Value evalOutput = nullptr;
  for (auto d : buffers.getAsRange<DictionaryAttr>()) {
    StringRef role = d.getAs<StringAttr>("role").getValue();
    StringRef bname = d.getAs<StringAttr>("name").getValue();
    auto type = llvm::cast<MemRefType>(d.getAs<TypeAttr>("type").getValue());
    int64_t offset = d.getAs<IntegerAttr>("offset").getInt();
    llvm::json::Object e{{"name", bname.str()},
                         {"dtype", dtypeName(type.getElementType())},
                         {"shape", llvm::json::Array(type.getShape())},
                         {"offset", offset}};
    if (role == "param") {
      params.push_back(std::move(e));
    } else if (role == "state") {
      // "<param>.<slot>": the parameter is everything before the last dot.
      e["param"] = bname.rsplit('.').first.str();
      // Error-feedback residuals differ between ranks (checkpointed per rank).
      if (auto kind = d.getAs<StringAttr>("kind"))
        if (kind.getValue() == "residual" || kind.getValue() == "per-rank")
          e["role"] = kind.getValue().str();
      state.push_back(std::move(e));
    } else if (role == "input") {
      StringRef ir = d.getAs<StringAttr>("kind").getValue();
      e["role"] = ir.str();
      if (ir == "data" && batch == 0 && type.getRank() > 0)
        batch = type.getDimSize(0);
      inputs.push_back(std::move(e));
    } else if (role == "output") {
      outputs.push_back(llvm::json::Object(e));
      if (bname == attr::kLossOutput)
        lossOffset = offset;
      else if (bname == attr::kEvalLossOutput)
        evalLossOffset = offset;
      else if (bname == attr::kEvalOutput)
        evalOutput = std::move(e);
    }
  }
  m["batch"] = batch;
  m["params"] = std::move(params);
  m["state"] = std::move(state);
  m["inputs"] = std::move(inputs);
  m["outputs"] = std::move(outputs);
  m["loss_offset"] = lossOffset;
  m["eval_output"] = std::move(evalOutput);
  m["eval_loss_offset"] = evalLossOffset;
  llvm::json::Object mem;
  for (NamedAttribute a : memory)
    mem[a.getName().getValue()] =
        llvm::cast<IntegerAttr>(a.getValue()).getInt();
  m["memory"] = std::move(mem);
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::json::Value(std::move(m));
  return s;
}

LogicalResult otc::emitCpp(ModuleOp module, raw_ostream &out,
                           const EmitCppOptions &options) {
  FailureOr<std::string> manifest = buildManifest(module);
  if (failed(manifest))
    return failure();
  std::string body;
  llvm::raw_string_ostream os(body);
  Emitter emitter(os);
  std::string train = "nullptr", eval = "nullptr";
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.getName() != attr::kTrainFn && fn.getName() != attr::kEvalFn)
      return mlir::emitError(fn.getLoc(), "unexpected function @")
             << fn.getName() << " (expected @train_step and @eval_step)";
    std::string cName = ("otc_" + fn.getName()).str();
    if (failed(emitter.emitFunction(fn, cName)))
      return failure();
    (fn.getName() == attr::kTrainFn ? train : eval) = "&" + cName;
  }
  if (module->hasAttr(attr::kTraining) && train == "nullptr")
    return mlir::emitError(module.getLoc(), "no @train_step to emit");
  if (train == "nullptr" && eval == "nullptr")
    return mlir::emitError(module.getLoc(), "no @train_step or @eval_step to emit");
  if (train == "nullptr" && options.withMain)
    return mlir::emitError(module.getLoc(),
                           "an inference-only program has no training "
                           "driver: emit a library (--emit=lib)");

  out << "// Generated by otc-compile. Do not edit.\n"
      << "#include <stdint.h>\n\n"
      << "#include \"otc/compress.h\"\n"
      << "#include \"otc/kernels.h\"\n"
      << "#include \"otc/program_abi.h\"\n"
      << (options.withMain ? "#include \"otc/runtime.h\"\n" : "") << "\n"
      << "namespace {\n"
      << emitter.constants << "\n"
      << "static const char kManifest[] = " << cString(*manifest) << ";\n\n"
      << body << "} // namespace\n\n"
      << "extern \"C\" const otc_program_entry_t *otc_program_entry(void) {\n"
      << "  static const otc_program_entry_t entry = {\n"
      << "      OTC_PROGRAM_ABI_VERSION, kManifest, "
      << module->getAttrOfType<IntegerAttr>(attr::kArenaBytes).getInt()
      << "ull, " << train << ", " << eval << "};\n"
      << "  return &entry;\n}\n";
  if (options.withMain)
    out << "\nint main(int argc, char **argv) {\n"
        << "  return otc_driver_main(argc, argv, otc_program_entry());\n}\n";
  return success();
}

void otc::registerEmitCppTranslation() {
  TranslateFromMLIRRegistration reg(
      "emit-cpp", "emit a memory-planned exec module as C++",
      [](Operation *op, raw_ostream &os) -> LogicalResult {
        auto module = llvm::dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitError("expected a module");
        return emitCpp(module, os, {});
      },
      [](DialectRegistry &registry) { registerAllDialects(registry); });
}
