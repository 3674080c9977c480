//===- Math.cpp - kernel calls: math --------------------------------------===//
//
// Linear algebra, elementwise math, comparisons and logic, casts, softmax and
// reductions.
//
//===----------------------------------------------------------------------===//

#include "target/cpp/KernelEmitter.h"

#include "dialects/graph/GraphDialect.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

using namespace otc;
using namespace otc::emit;

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult KernelEmitter::gemm() {
  FailureOr<bool> bf16 = computeBf16();
  if (failed(requireF32()) || failed(bf16))
    return failure();
  bool ta = flag("transA"), tb = flag("transB");
  ArrayRef<int64_t> a = shapeOf(ins[0]), y = shapeOf(outs[0]);
  int64_t m = y[0], n = y[1], kk = ta ? a[0] : a[1];
  float alpha = f32("alpha"), beta = f32("beta");
  float gemmBeta = 0.0f;
  if (ins.size() == 3) {
    // out = beta * broadcast(C), then accumulate the product into it.
    std::string sh = array("shape", y);
    std::string cs = array("cs", broadcastStrides(shapeOf(ins[2]), y));
    std::string zs = array("zs", {0, 0});
    os << "    static const float beta = " << floatLiteral(beta) << ";\n";
    std::string b = hostTensor("beta", "float");
    os << "    " << fn("binary_f32") << "(OTCK_MUL, 2, " << sh << ", " << in(2)
       << ", " << cs << ", " << b << ", " << zs << ", " << out(0) << ");\n";
    gemmBeta = 1.0f;
  }
  os << "    " << fn(*bf16 ? "gemm_bf16" : "gemm_f32") << "(" << ta << ", "
     << tb << ", " << m << ", " << n << ", " << kk << ", "
     << floatLiteral(alpha) << ", " << in(0) << ", " << in(1) << ", "
     << floatLiteral(gemmBeta) << ", " << out(0) << workspace(*bf16) << ");\n";
  return success();
}

LogicalResult KernelEmitter::matmul() {
  FailureOr<bool> bf16 = computeBf16();
  if (failed(requireF32()) || failed(bf16))
    return failure();
  if (k->hasAttr("permA") || k->hasAttr("permB") || k->hasAttr("permY")) {
    // Operands read, or the result written, through a transpose.
    StridedMatmul s;
    std::string why;
    if (*bf16 || !stridedMatmulOf(k, ins[0], ins[1], outs[0], s, &why))
      return k.emitOpError("cannot emit this strided matmul: ") << why;
    std::string bs = array("batch", s.batch);
    std::string as = array("as", s.aStrides);
    std::string bbs = array("bs", s.bStrides);
    std::string cs = array("cs", s.cStrides);
    os << "    " << fn("strided_gemm_f32") << "(" << s.batch.size() << ", "
       << bs << ", " << as << ", " << bbs << ", " << cs << ", " << s.transA
       << ", " << s.transB << ", " << s.M << ", " << s.N << ", " << s.K << ", "
       << in(s.swapped ? 1 : 0) << ", " << s.lda << ", "
       << in(s.swapped ? 0 : 1) << ", " << s.ldb << ", " << out(0) << ", "
       << s.ldc << ");\n";
    return success();
  }
  bool ta = flag("transA"), tb = flag("transB");
  ArrayRef<int64_t> a = shapeOf(ins[0]), b = shapeOf(ins[1]),
                    y = shapeOf(outs[0]);
  int64_t ra = a.size(), ry = y.size();
  int64_t m = y[ry - 2], n = y[ry - 1], kk = ta ? a[ra - 2] : a[ra - 1];
  ArrayRef<int64_t> batch = y.drop_back(2);
  // Batch strides in matrices of each operand (0 where broadcast).
  std::string bs = array("batch", batch);
  std::string as = array("as", broadcastStrides(a.drop_back(2), batch));
  std::string bbs = array("bs", broadcastStrides(b.drop_back(2), batch));
  os << "    " << fn(*bf16 ? "batched_gemm_bf16" : "batched_gemm_f32") << "("
     << batch.size() << ", " << bs << ", " << as << ", " << bbs << ", " << ta
     << ", " << tb << ", " << m << ", " << n << ", " << kk << ", " << in(0)
     << ", " << in(1) << ", " << out(0) << workspace(*bf16) << ");\n";
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

static std::string binaryEnum(StringRef kind) {
  return llvm::StringSwitch<std::string>(kind)
      .Case("add", "OTCK_ADD")
      .Case("sub", "OTCK_SUB")
      .Case("mul", "OTCK_MUL")
      .Case("div", "OTCK_DIV")
      .Case("pow", "OTCK_POW")
      .Case("max", "OTCK_MAX")
      .Case("min", "OTCK_MIN")
      .Case("prelu", "OTCK_PRELU")
      .Case("shift_left", "OTCK_SHIFT_LEFT")
      .Case("shift_right", "OTCK_SHIFT_RIGHT")
      .Case("mod", "OTCK_MOD")
      .Case("fmod", "OTCK_FMOD")
      .Default("");
}

LogicalResult KernelEmitter::binary() {
  ArrayRef<int64_t> y = shapeOf(outs[0]);
  std::string sh = array("shape", y);
  std::string as = array("as", broadcastStrides(shapeOf(ins[0]), y));
  std::string bs = array("bs", broadcastStrides(shapeOf(ins[1]), y));
  Type t = typeOf(outs[0]).getElementType();
  std::string call = "(" + binaryEnum(k.getKernel()) + ", " +
                     std::to_string(y.size()) + ", " + sh + ", " + in(0) +
                     ", " + as + ", " + in(1) + ", " + bs + ", " + out(0) + ")";
  if (t.isF32() && !k.getKernel().starts_with("shift_")) {
    os << "    " << fn("binary_f32") << call << ";\n";
  } else if (isIntegerElement(t)) {
    // One entry for every integer type, dispatched on its otck_dtype code.
    std::string intCall = "(" + binaryEnum(k.getKernel()) + ", " +
                          std::to_string(dtypeCode(t)) + ", " +
                          call.substr(call.find(", ") + 2);
    if (target.cuda())
      os << "    " << fn("binary_int") << intCall << ";\n";
    else
      os << "    if (otck_binary_int" << intCall
         << " != OTCK_OK)\n      return OTC_STEP_ERR_DIVISION_BY_ZERO;\n";
  } else {
    return k.emitOpError("no ") << k.getKernel() << " kernel for " << t;
  }
  return success();
}

LogicalResult KernelEmitter::binaryGrad() {
  ArrayRef<int64_t> y = shapeOf(outs[0]);
  std::string sh = array("shape", y);
  std::string as = array("as", broadcastStrides(shapeOf(ins[1]), y));
  std::string bs = array("bs", broadcastStrides(shapeOf(ins[2]), y));
  bool lhs = i64("operand") == 0;
  os << "    " << fn("binary_grad_f32") << "(" << binaryEnum(str("kind"))
     << ", " << y.size() << ", " << sh << ", " << in(1) << ", " << as << ", "
     << in(2) << ", " << bs << ", " << in(0) << ", "
     << (lhs ? out(0) : "nullptr") << ", " << (lhs ? "nullptr" : out(0))
     << ");\n";
  return success();
}

/// The otck_unary_op of a unary kind and its (alpha, beta).
static std::string unaryEnum(StringRef kind) {
  if (kind == "gelu")
    return "OTCK_GELU";
  std::string e = "OTCK_";
  for (char c : kind)
    e += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return e;
}

LogicalResult KernelEmitter::unary() {
  if (failed(requireF32()))
    return failure();
  StringRef kind = k.getKernel();
  std::string e = unaryEnum(kind);
  // (alpha, beta) of otck_unary_op: the kernel's parameters, 0 where it
  // has none.
  float alpha = listed("alpha") ? f32("alpha") : 0.0f;
  float beta = listed("beta") ? f32("beta") : 0.0f;
  if (kind == "selu")
    beta = f32("gamma");
  if (kind == "clip")
    alpha = f32("min"), beta = f32("max");
  if (kind == "shrink")
    alpha = f32("lambd"), beta = f32("bias");
  if (kind == "gelu" && str("approximate") == "tanh")
    e = "OTCK_GELU_TANH";
  os << "    " << fn("unary_f32") << "(" << e << ", " << numel(outs[0]) << ", "
     << in(0) << ", " << out(0) << ", " << floatLiteral(alpha) << ", "
     << floatLiteral(beta) << ");\n";
  return success();
}

LogicalResult KernelEmitter::unaryGrad() {
  if (failed(requireF32()))
    return failure();
  StringRef kind = str("kind");
  std::string e = unaryEnum(kind);
  float beta = f32("beta");
  if (kind == "gelu" && beta != 0.0f)
    e = "OTCK_GELU_TANH";
  // Operands: grad, then the saved input or output, or both (gelu: input
  // and output; see graph.unary_grad).
  bool useY = graph::unaryGradUsesOutput(kind);
  std::string saved = ins.size() > 1 ? in(1) : "nullptr";
  std::string x = useY ? "nullptr" : saved;
  std::string y = ins.size() > 2 ? in(2) : useY ? saved : "nullptr";
  os << "    " << fn("unary_grad_f32") << "(" << e << ", " << numel(outs[0])
     << ", " << in(0) << ", " << x << ", " << y << ", " << out(0) << ", "
     << floatLiteral(f32("alpha")) << ", " << floatLiteral(beta) << ");\n";
  return success();
}

LogicalResult KernelEmitter::compare() {
  ArrayRef<int64_t> y = shapeOf(outs[0]);
  Type t = typeOf(ins[0]).getElementType();
  if (!t.isF32() && !t.isF64() && !t.isInteger(1) && !isIntegerElement(t))
    return k.emitOpError("no comparison kernel for ") << t;
  std::string sh = array("shape", y);
  std::string as = array("as", broadcastStrides(shapeOf(ins[0]), y));
  std::string bs = array("bs", broadcastStrides(shapeOf(ins[1]), y));
  std::string pred = llvm::StringSwitch<std::string>(str("predicate"))
                         .Case("eq", "OTCK_CMP_EQUAL")
                         .Case("lt", "OTCK_CMP_LESS")
                         .Case("le", "OTCK_CMP_LESS_OR_EQUAL")
                         .Case("gt", "OTCK_CMP_GREATER")
                         .Default("OTCK_CMP_GREATER_OR_EQUAL");
  os << "    " << fn("compare") << "(" << pred << ", " << dtypeCode(t) << ", "
     << y.size() << ", " << sh << ", " << in(0) << ", " << as << ", " << in(1)
     << ", " << bs << ", " << out(0) << ");\n";
  return success();
}

LogicalResult KernelEmitter::logical() {
  ArrayRef<int64_t> y = shapeOf(outs[0]);
  std::string sh = array("shape", y);
  std::string as = array("as", broadcastStrides(shapeOf(ins[0]), y));
  std::string bs = array("bs", broadcastStrides(shapeOf(ins[1]), y));
  std::string kind = "OTCK_LOGIC_" + str("kind").upper();
  os << "    " << fn("logic") << "(" << kind << ", " << y.size() << ", " << sh
     << ", " << in(0) << ", " << as << ", " << in(1) << ", " << bs << ", "
     << out(0) << ");\n";
  return success();
}

LogicalResult KernelEmitter::logicalNot() {
  os << "    " << fn("not") << "(" << numel(outs[0]) << ", " << in(0) << ", "
     << out(0) << ");\n";
  return success();
}

LogicalResult KernelEmitter::where() {
  ArrayRef<int64_t> y = shapeOf(outs[0]);
  std::string sh = array("shape", y);
  std::string cs = array("cs", broadcastStrides(shapeOf(ins[0]), y));
  std::string as = array("as", broadcastStrides(shapeOf(ins[1]), y));
  std::string bs = array("bs", broadcastStrides(shapeOf(ins[2]), y));
  os << "    " << fn("where") << "(" << y.size() << ", " << sh << ", " << in(0)
     << ", " << cs << ", " << in(1) << ", " << as << ", " << in(2) << ", " << bs
     << ", " << out(0) << ", " << elemSize(outs[0]) << ");\n";
  return success();
}

LogicalResult KernelEmitter::cast() {
  int from = dtypeCode(typeOf(ins[0]).getElementType());
  int to = dtypeCode(typeOf(outs[0]).getElementType());
  if (!from || !to)
    return k.emitOpError("no cast kernel for these element types");
  os << "    " << fn("cast") << "(" << numel(outs[0]) << ", " << from << ", "
     << in(0) << ", " << to << ", " << out(0) << ");\n";
  return success();
}

LogicalResult KernelEmitter::softmax() {
  if (failed(requireF32()))
    return failure();
  StringRef kn = k.getKernel();
  ArrayRef<int64_t> s = shapeOf(outs[0]);
  auto [outer, n, inner] = around(s, axisOf(s.size()));
  bool log = kn.starts_with("log_");
  if (kn.ends_with("_grad"))
    os << "    " << fn("softmax_grad_f32") << "(" << outer << ", " << n << ", "
       << inner << ", " << in(1) << ", " << in(0) << ", " << out(0) << ", "
       << log << ");\n";
  else
    os << "    " << fn("softmax_f32") << "(" << outer << ", " << n << ", "
       << inner << ", " << in(0) << ", " << out(0) << ", " << log << ");\n";
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

LogicalResult KernelEmitter::reduceSumTo() {
  if (failed(requireF32()))
    return failure();
  ArrayRef<int64_t> x = shapeOf(ins[0]);
  std::string sh = array("shape", x);
  std::string ys = array("ys", broadcastStrides(shapeOf(outs[0]), x));
  os << "    " << fn("reduce_sum_to_f32") << "(" << x.size() << ", " << sh
     << ", " << in(0) << ", " << ys << ", " << numel(outs[0]) << ", " << out(0)
     << ");\n";
  return success();
}

static std::string reduceEnum(StringRef kind) {
  return "OTCK_REDUCE_" + kind.upper();
}

LogicalResult KernelEmitter::reduce() {
  if (failed(requireF32()))
    return failure();
  ArrayRef<int64_t> x = shapeOf(ins[0]);
  SmallVector<bool> reduced(x.size(), false);
  for (int64_t a : i64s("axes"))
    reduced[a] = true;
  std::string sh = array("shape", x);
  std::string rd = flags("reduced", reduced);
  os << "    " << fn("reduce_f32") << "(" << reduceEnum(str("kind")) << ", "
     << x.size() << ", " << sh << ", " << rd << ", " << in(0) << ", " << out(0)
     << ");\n";
  return success();
}

LogicalResult KernelEmitter::reduceGrad() {
  if (failed(requireF32()))
    return failure();
  // ins: dy, x, y.
  ArrayRef<int64_t> x = shapeOf(ins[1]);
  SmallVector<bool> reduced(x.size(), false);
  for (int64_t a : i64s("axes"))
    reduced[a] = true;
  std::string sh = array("shape", x);
  std::string rd = flags("reduced", reduced);
  os << "    " << fn("reduce_grad_f32") << "(" << reduceEnum(str("kind"))
     << ", " << x.size() << ", " << sh << ", " << rd << ", " << in(1) << ", "
     << in(2) << ", " << in(0) << ", " << out(0) << ");\n";
  return success();
}

LogicalResult KernelEmitter::argReduce() {
  ArrayRef<int64_t> x = shapeOf(ins[0]);
  auto [outer, n, inner] = around(x, axisOf(x.size()));
  bool isInt = typeOf(ins[0]).getElementType().isInteger(64);
  os << "    " << fn(isInt ? "arg_reduce_i64" : "arg_reduce_f32") << "("
     << (str("kind") == "max") << ", " << outer << ", " << n << ", " << inner
     << ", " << flag("select_last_index") << ", " << in(0) << ", " << out(0)
     << ");\n";
  return success();
}

LogicalResult KernelEmitter::cumsum() {
  ArrayRef<int64_t> x = shapeOf(ins[0]);
  auto [outer, n, inner] = around(x, axisOf(x.size()));
  Type t = typeOf(outs[0]).getElementType();
  if (!t.isF32() && !t.isInteger(64))
    return k.emitOpError("no cumsum kernel for ") << t;
  os << "    " << fn(t.isF32() ? "cumsum_f32" : "cumsum_i64") << "(" << outer
     << ", " << n << ", " << inner << ", " << flag("exclusive") << ", "
     << flag("reverse") << ", " << in(0) << ", " << out(0) << ");\n";
  return success();
}

LogicalResult KernelEmitter::topk() {
  ArrayRef<int64_t> x = shapeOf(ins[0]);
  auto [outer, n, inner] = around(x, axisOf(x.size()));
  os << "    " << fn("topk_f32") << "(" << outer << ", " << n << ", " << inner
     << ", " << i64("k") << ", " << flag("largest") << ", 1, " << in(0) << ", "
     << out(0) << ", " << out(1) << ");\n";
  return success();
}
