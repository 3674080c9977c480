//===- EmitKernels.cpp - exec.kernel calls as C++ -------------------------===//
//
// One function per kernel family writes the call of the kernel library's C
// ABI (otc/kernels.h) for an `exec.kernel`: static shapes and descriptors
// become `static const` locals, attributes become literals. Kernels that can
// meet bad data return a step status.
//
// For --target cuda the calls go to the otckd_ twins of otc/kernels_cuda.h:
// the families of kCudaKernels write their calls through KernelTarget::fn;
// the others call functions that have no twin yet and are diagnosed.
//
//===----------------------------------------------------------------------===//

#include "target/cpp/EmitKernels.h"

#include "dialects/exec/KernelDescs.h"
#include "dialects/graph/ElementTypes.h"
#include "dialects/graph/GraphDialect.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace otc;

std::string otc::floatLiteral(double v) {
  if (std::isnan(v))
    return "__builtin_nanf(\"\")";
  if (std::isinf(v))
    return v > 0 ? "__builtin_inff()" : "(-__builtin_inff())";
  return llvm::formatv("{0:e9}f", v).str();
}

namespace {

std::string intList(ArrayRef<int64_t> v) {
  std::string s;
  for (auto [i, x] : llvm::enumerate(v))
    s += (i ? ", " : "") + std::to_string(x);
  return s;
}

/// Contiguous strides of `shape` laid over the trailing dims of the
/// iteration space `space`; 0 on broadcast (size-1 or missing) dimensions.
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

SmallVector<int64_t> contiguousStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

MemRefType typeOf(Value v) { return llvm::cast<MemRefType>(v.getType()); }
int64_t numel(Value v) { return typeOf(v).getNumElements(); }
int64_t elemSize(Value v) {
  return std::max<unsigned>(typeOf(v).getElementTypeBitWidth() / 8, 1);
}
bool isF32(Value v) { return typeOf(v).getElementType().isF32(); }

/// ONNX TensorProto data type code of an element type (otck_dtype), 0 if
/// none.
int dtypeCode(Type t) {
  const ElementTypeInfo *e = elementTypeInfo(t);
  return e ? e->code : 0;
}

/// The kernels whose calls only use functions of otc/kernels_cuda.h, sorted:
/// f32 elementwise math, GEMMs, data movement by strided copies, softmax,
/// losses, optimizer updates; gather, LayerNorm, where and reductions (what
/// a GPT-style decoder needs).
const char kCudaKernels[] =
    "abs acos acosh adam_update adamw_update add arg_reduce asin asinh atan "
    "atanh binary_grad cast ceil celu clip concat copy cos cosh cumsum div elu "
    "erf exp expand floor fmod gather gather_grad gelu gemm hard_sigmoid "
    "hard_swish layer_norm layer_norm_grad leaky_relu log log_softmax "
    "log_softmax_grad logical matmul max min mish mod momentum_update mse "
    "mse_grad mul neg not pack pow "
    "prelu reciprocal reduce reduce_grad reduce_sum_to relu round selu "
    "sgd_update shrink sigmoid sign sin sinh slice slice_grad softmax "
    "softmax_cross_entropy softmax_cross_entropy_grad softmax_grad softplus "
    "softsign sqrt sub tan tanh thresholded_relu tile transpose unary_grad "
    "unpack where";

/// CNN kernels with CUDA twins (kernels/cuda/conv.cu, pool.cu, norm.cu),
/// sorted; cudaKernels() merges them into kCudaKernels's order.
const char kCudaCnnKernels[] =
    "avg_pool avg_pool_grad batch_norm batch_norm_grad batch_norm_inference "
    "conv conv_grad_input conv_grad_weight max_pool max_pool_grad";

/// Kernels whose integer (and typed comparison) calls have CUDA twins
/// (kernels/cuda/integer.cu), sorted; merged as kCudaCnnKernels is.
const char kCudaIntegerKernels[] = "compare shift_left shift_right";

SmallVector<StringRef> cudaKernels() {
  SmallVector<StringRef> names;
  StringRef(kCudaKernels).split(names, ' ');
  StringRef(kCudaCnnKernels).split(names, ' ');
  StringRef(kCudaIntegerKernels).split(names, ' ');
  llvm::sort(names);
  return names;
}

class KernelEmitter {
public:
  KernelEmitter(exec::KernelOp k, raw_ostream &os,
                function_ref<std::string(Value)> name,
                const KernelTarget &target)
      : k(k), os(os), name(name), target(target), ins(k.getIns()),
        outs(k.getOuts()) {}

  LogicalResult emit();

private:
  using Family = LogicalResult (KernelEmitter::*)();
  static const llvm::StringMap<Family> &families();

  // Families.
  LogicalResult gemm();
  LogicalResult matmul();
  LogicalResult binary();
  LogicalResult binaryGrad();
  LogicalResult unary();
  LogicalResult unaryGrad();
  LogicalResult compare();
  LogicalResult logical();
  LogicalResult logicalNot();
  LogicalResult where();
  LogicalResult cast();
  LogicalResult softmax();
  LogicalResult transpose();
  LogicalResult copy();
  LogicalResult reduceSumTo();
  LogicalResult reduce();
  LogicalResult reduceGrad();
  LogicalResult argReduce();
  LogicalResult cumsum();
  LogicalResult topk();
  LogicalResult slice();
  LogicalResult sliceGrad();
  LogicalResult concat();
  LogicalResult expand();
  LogicalResult tile();
  LogicalResult pad();
  LogicalResult padGrad();
  LogicalResult trilu();
  LogicalResult resize();
  LogicalResult gather();
  LogicalResult gatherGrad();
  LogicalResult gatherElements();
  LogicalResult gatherElementsGrad();
  LogicalResult scatterElements();
  LogicalResult oneHot();
  LogicalResult conv();
  LogicalResult pool();
  LogicalResult poolGrad();
  LogicalResult batchNorm();
  LogicalResult batchNormInference();
  LogicalResult normGrad();
  LogicalResult layerNorm();
  LogicalResult instanceNorm();
  LogicalResult loss();
  LogicalResult pack();
  LogicalResult dropout();
  LogicalResult optimizer();

  // Helpers.
  std::string in(unsigned i) { return name(ins[i]); }
  std::string out(unsigned i) { return name(outs[i]); }
  /// The kernel function `f` of the target (otck_f or otckd_f).
  std::string fn(StringRef f) { return target.fn(f); }
  /// A host `static const` local `var` of C type `t` passed where a kernel
  /// reads a tensor: its address on the CPU, its device copy on CUDA.
  std::string hostTensor(StringRef var, StringRef t) {
    if (!target.cuda())
      return "&" + var.str();
    std::string d = var.str() + "_d";
    os << "    const " << t << " *" << d << " = static_cast<const " << t
       << " *>(otckd_constant(&" << var << ", sizeof " << var << "));\n"
       << "    if (!" << d << ")\n      " << target.ret("OTC_STEP_ERR_DEVICE")
       << "\n";
    return d;
  }
  std::string array(StringRef n, ArrayRef<int64_t> v) {
    if (v.empty())
      return "nullptr";
    os << "    static const int64_t " << n << "[] = {" << intList(v) << "};\n";
    return n.str();
  }
  std::string flags(StringRef n, ArrayRef<bool> v) {
    os << "    static const uint8_t " << n << "[] = {";
    for (auto [i, b] : llvm::enumerate(v))
      os << (i ? ", " : "") << (b ? 1 : 0);
    os << "};\n";
    return n.str();
  }
  float f32(StringRef n, float dflt) {
    if (auto a = k->getAttrOfType<FloatAttr>(n))
      return a.getValueAsDouble();
    return dflt;
  }
  bool flag(StringRef n) {
    auto a = k->getAttrOfType<BoolAttr>(n);
    return a && a.getValue();
  }
  int64_t i64(StringRef n, int64_t dflt) {
    if (auto a = k->getAttrOfType<IntegerAttr>(n))
      return a.getInt();
    return dflt;
  }
  StringRef str(StringRef n) {
    auto a = k->getAttrOfType<StringAttr>(n);
    return a ? a.getValue() : StringRef();
  }
  /// x viewed as [outer, n, inner] around `axis`.
  std::tuple<int64_t, int64_t, int64_t> around(ArrayRef<int64_t> s,
                                               int64_t axis) {
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i)
      outer *= s[i];
    for (int64_t i = axis + 1; i < static_cast<int64_t>(s.size()); ++i)
      inner *= s[i];
    return {outer, s[axis], inner};
  }
  int64_t axisOf(int64_t rank) {
    int64_t a = i64("axis", -1);
    return a < 0 ? a + rank : a;
  }
  LogicalResult requireF32() {
    // i8 buffers are kernel workspaces (convolutions).
    for (Value v : k->getOperands())
      if (!isF32(v) && !typeOf(v).getElementType().isInteger(64) &&
          !typeOf(v).getElementType().isInteger(8))
        return k.emitOpError("kernel '")
               << k.getKernel() << "' takes f32 data (and i64 indices)";
    return success();
  }
  /// `rc` from a kernel that reports out-of-range indices. A CUDA twin
  /// returns 0 and records the error for otc_cuda_status: a plain call.
  void checkIndices(StringRef call) {
    if (target.cuda()) {
      os << "    " << call << ";\n";
      return;
    }
    os << "    if (" << call << " != OTCK_OK)\n"
       << "      return OTC_STEP_ERR_INDEX_RANGE;\n";
  }
  std::string convDescInit(const otck_conv_desc &d);
  std::string poolDescInit(const otck_pool_desc &d);

  exec::KernelOp k;
  raw_ostream &os;
  function_ref<std::string(Value)> name;
  const KernelTarget &target;
  OperandRange ins, outs;
};

const llvm::StringMap<KernelEmitter::Family> &KernelEmitter::families() {
  static const llvm::StringMap<Family> table = {
      {"gemm", &KernelEmitter::gemm},
      {"matmul", &KernelEmitter::matmul},
      {"add", &KernelEmitter::binary},
      {"sub", &KernelEmitter::binary},
      {"mul", &KernelEmitter::binary},
      {"div", &KernelEmitter::binary},
      {"pow", &KernelEmitter::binary},
      {"max", &KernelEmitter::binary},
      {"min", &KernelEmitter::binary},
      {"prelu", &KernelEmitter::binary},
      {"shift_left", &KernelEmitter::binary},
      {"shift_right", &KernelEmitter::binary},
      {"mod", &KernelEmitter::binary},
      {"fmod", &KernelEmitter::binary},
      {"binary_grad", &KernelEmitter::binaryGrad},
      {"relu", &KernelEmitter::unary},
      {"sigmoid", &KernelEmitter::unary},
      {"tanh", &KernelEmitter::unary},
      {"neg", &KernelEmitter::unary},
      {"exp", &KernelEmitter::unary},
      {"log", &KernelEmitter::unary},
      {"sqrt", &KernelEmitter::unary},
      {"abs", &KernelEmitter::unary},
      {"reciprocal", &KernelEmitter::unary},
      {"sin", &KernelEmitter::unary},
      {"cos", &KernelEmitter::unary},
      {"erf", &KernelEmitter::unary},
      {"tan", &KernelEmitter::unary},
      {"asin", &KernelEmitter::unary},
      {"acos", &KernelEmitter::unary},
      {"atan", &KernelEmitter::unary},
      {"sinh", &KernelEmitter::unary},
      {"cosh", &KernelEmitter::unary},
      {"asinh", &KernelEmitter::unary},
      {"acosh", &KernelEmitter::unary},
      {"atanh", &KernelEmitter::unary},
      {"sign", &KernelEmitter::unary},
      {"floor", &KernelEmitter::unary},
      {"ceil", &KernelEmitter::unary},
      {"round", &KernelEmitter::unary},
      {"softplus", &KernelEmitter::unary},
      {"softsign", &KernelEmitter::unary},
      {"mish", &KernelEmitter::unary},
      {"hard_swish", &KernelEmitter::unary},
      {"leaky_relu", &KernelEmitter::unary},
      {"elu", &KernelEmitter::unary},
      {"celu", &KernelEmitter::unary},
      {"selu", &KernelEmitter::unary},
      {"hard_sigmoid", &KernelEmitter::unary},
      {"clip", &KernelEmitter::unary},
      {"gelu", &KernelEmitter::unary},
      {"thresholded_relu", &KernelEmitter::unary},
      {"shrink", &KernelEmitter::unary},
      {"unary_grad", &KernelEmitter::unaryGrad},
      {"compare", &KernelEmitter::compare},
      {"logical", &KernelEmitter::logical},
      {"not", &KernelEmitter::logicalNot},
      {"where", &KernelEmitter::where},
      {"cast", &KernelEmitter::cast},
      {"softmax", &KernelEmitter::softmax},
      {"log_softmax", &KernelEmitter::softmax},
      {"softmax_grad", &KernelEmitter::softmax},
      {"log_softmax_grad", &KernelEmitter::softmax},
      {"transpose", &KernelEmitter::transpose},
      {"copy", &KernelEmitter::copy},
      {"reduce_sum_to", &KernelEmitter::reduceSumTo},
      {"reduce", &KernelEmitter::reduce},
      {"reduce_grad", &KernelEmitter::reduceGrad},
      {"arg_reduce", &KernelEmitter::argReduce},
      {"cumsum", &KernelEmitter::cumsum},
      {"topk", &KernelEmitter::topk},
      {"slice", &KernelEmitter::slice},
      {"slice_grad", &KernelEmitter::sliceGrad},
      {"concat", &KernelEmitter::concat},
      {"expand", &KernelEmitter::expand},
      {"tile", &KernelEmitter::tile},
      {"pad", &KernelEmitter::pad},
      {"pad_grad", &KernelEmitter::padGrad},
      {"trilu", &KernelEmitter::trilu},
      {"resize", &KernelEmitter::resize},
      {"resize_grad", &KernelEmitter::resize},
      {"gather", &KernelEmitter::gather},
      {"gather_grad", &KernelEmitter::gatherGrad},
      {"gather_elements", &KernelEmitter::gatherElements},
      {"gather_elements_grad", &KernelEmitter::gatherElementsGrad},
      {"scatter_elements", &KernelEmitter::scatterElements},
      {"one_hot", &KernelEmitter::oneHot},
      {"conv", &KernelEmitter::conv},
      {"conv_transpose", &KernelEmitter::conv},
      {"conv_grad_input", &KernelEmitter::conv},
      {"conv_grad_weight", &KernelEmitter::conv},
      {"max_pool", &KernelEmitter::pool},
      {"avg_pool", &KernelEmitter::pool},
      {"max_pool_grad", &KernelEmitter::poolGrad},
      {"avg_pool_grad", &KernelEmitter::poolGrad},
      {"batch_norm", &KernelEmitter::batchNorm},
      {"batch_norm_inference", &KernelEmitter::batchNormInference},
      {"batch_norm_grad", &KernelEmitter::normGrad},
      {"layer_norm_grad", &KernelEmitter::normGrad},
      {"instance_norm_grad", &KernelEmitter::normGrad},
      {"layer_norm", &KernelEmitter::layerNorm},
      {"instance_norm", &KernelEmitter::instanceNorm},
      {"softmax_cross_entropy", &KernelEmitter::loss},
      {"softmax_cross_entropy_grad", &KernelEmitter::loss},
      {"mse", &KernelEmitter::loss},
      {"mse_grad", &KernelEmitter::loss},
      {"pack", &KernelEmitter::pack},
      {"unpack", &KernelEmitter::pack},
      {"dropout", &KernelEmitter::dropout},
      {"sgd_update", &KernelEmitter::optimizer},
      {"momentum_update", &KernelEmitter::optimizer},
      {"adam_update", &KernelEmitter::optimizer},
      {"adamw_update", &KernelEmitter::optimizer},
  };
  return table;
}

LogicalResult KernelEmitter::emit() {
  auto it = families().find(k.getKernel());
  if (it == families().end())
    return k.emitOpError("the CPU emitter has no kernel for '")
           << k.getKernel() << "'";
  if (target.cuda() && !llvm::is_contained(cudaKernels(), k.getKernel()))
    return k.emitError("'")
           << k.getKernel() << "' has no CUDA kernel yet (--target cuda "
           << "supports: " << llvm::join(cudaKernels(), ", ") << ")";
  os << "  { // " << k.getKernel() << "\n";
  if (failed((this->*(it->second))()))
    return failure();
  os << "  }\n";
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult KernelEmitter::gemm() {
  if (failed(requireF32()))
    return failure();
  bool ta = flag("transA"), tb = flag("transB");
  ArrayRef<int64_t> a = shapeOf(ins[0]), y = shapeOf(outs[0]);
  int64_t m = y[0], n = y[1], kk = ta ? a[0] : a[1];
  float alpha = f32("alpha", 1.0f), beta = f32("beta", 1.0f);
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
  os << "    " << fn("gemm_f32") << "(" << ta << ", " << tb << ", " << m << ", "
     << n << ", " << kk << ", " << floatLiteral(alpha) << ", " << in(0) << ", "
     << in(1) << ", " << floatLiteral(gemmBeta) << ", " << out(0) << ");\n";
  return success();
}

LogicalResult KernelEmitter::matmul() {
  if (failed(requireF32()))
    return failure();
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
  os << "    " << fn("batched_gemm_f32") << "(" << batch.size() << ", " << bs
     << ", " << as << ", " << bbs << ", " << ta << ", " << tb << ", " << m
     << ", " << n << ", " << kk << ", " << in(0) << ", " << in(1) << ", "
     << out(0) << ");\n";
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

std::string binaryEnum(StringRef kind) {
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
  bool lhs = i64("operand", 0) == 0;
  os << "    " << fn("binary_grad_f32") << "(" << binaryEnum(str("kind"))
     << ", " << y.size() << ", " << sh << ", " << in(1) << ", " << as << ", "
     << in(2) << ", " << bs << ", " << in(0) << ", "
     << (lhs ? out(0) : "nullptr") << ", " << (lhs ? "nullptr" : out(0))
     << ");\n";
  return success();
}

/// The otck_unary_op of a unary kind and its (alpha, beta).
std::string unaryEnum(StringRef kind) {
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
  float alpha = f32("alpha", 0.0f), beta = f32("beta", 0.0f);
  if (kind == "selu")
    beta = f32("gamma", 0.0f);
  if (kind == "clip")
    alpha = f32("min", 0.0f), beta = f32("max", 0.0f);
  if (kind == "shrink")
    alpha = f32("lambd", 0.5f), beta = f32("bias", 0.0f);
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
  float beta = f32("beta", 0.0f);
  if (kind == "gelu" && beta != 0.0f)
    e = "OTCK_GELU_TANH";
  // Operands: grad, then the saved input or output (see graph.unary_grad).
  bool useY = graph::unaryGradUsesOutput(kind);
  std::string saved = ins.size() > 1 ? in(1) : "nullptr";
  os << "    " << fn("unary_grad_f32") << "(" << e << ", " << numel(outs[0])
     << ", " << in(0) << ", " << (useY ? "nullptr" : saved) << ", "
     << (useY ? saved : "nullptr") << ", " << out(0) << ", "
     << floatLiteral(f32("alpha", 0.0f)) << ", " << floatLiteral(beta)
     << ");\n";
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
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult KernelEmitter::transpose() {
  ArrayRef<int64_t> perm = i64ArrayAttr(k, "perm");
  ArrayRef<int64_t> s = shapeOf(ins[0]);
  if (perm.size() != s.size())
    return k.emitOpError("transpose needs a perm of the input's rank");
  std::string sh = array("shape", s);
  std::string pm = array("perm", perm);
  os << "    " << fn("transpose") << "(" << s.size() << ", " << sh << ", " << pm
     << ", " << in(0) << ", " << out(0) << ", " << elemSize(ins[0]) << ");\n";
  return success();
}

LogicalResult KernelEmitter::copy() {
  os << "    " << fn("copy") << "(" << numel(ins[0]) * elemSize(ins[0]) << ", "
     << in(0) << ", " << out(0) << ");\n";
  return success();
}

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

std::string reduceEnum(StringRef kind) { return "OTCK_REDUCE_" + kind.upper(); }

LogicalResult KernelEmitter::reduce() {
  if (failed(requireF32()))
    return failure();
  ArrayRef<int64_t> x = shapeOf(ins[0]);
  SmallVector<bool> reduced(x.size(), false);
  for (int64_t a : i64ArrayAttr(k, "axes"))
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
  for (int64_t a : i64ArrayAttr(k, "axes"))
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
  os << "    otck_topk_f32(" << outer << ", " << n << ", " << inner << ", "
     << i64("k", 0) << ", " << flag("largest") << ", 1, " << in(0) << ", "
     << out(0) << ", " << out(1) << ");\n";
  return success();
}

/// Source offset and strides of a strided slice of `in`.
static std::pair<int64_t, SmallVector<int64_t>>
sliceView(ArrayRef<int64_t> in, ArrayRef<int64_t> starts,
          ArrayRef<int64_t> steps) {
  SmallVector<int64_t> base = contiguousStrides(in), strides;
  int64_t offset = 0;
  for (size_t d = 0; d < in.size(); ++d) {
    offset += starts[d] * base[d];
    strides.push_back(steps[d] * base[d]);
  }
  return {offset, strides};
}

LogicalResult KernelEmitter::slice() {
  ArrayRef<int64_t> y = shapeOf(outs[0]);
  auto [offset, strides] = sliceView(shapeOf(ins[0]), i64ArrayAttr(k, "starts"),
                                     i64ArrayAttr(k, "steps"));
  std::string sh = array("shape", y);
  std::string ss = array("ss", strides);
  std::string ds = array("ds", contiguousStrides(y));
  os << "    " << fn("strided_copy") << "(" << y.size() << ", " << sh << ", "
     << in(0) << " + " << offset << ", " << ss << ", " << out(0) << ", " << ds
     << ", " << elemSize(outs[0]) << ");\n";
  return success();
}

LogicalResult KernelEmitter::sliceGrad() {
  ArrayRef<int64_t> dy = shapeOf(ins[0]);
  auto [offset, strides] = sliceView(
      shapeOf(outs[0]), i64ArrayAttr(k, "starts"), i64ArrayAttr(k, "steps"));
  std::string sh = array("shape", dy);
  std::string ss = array("ss", contiguousStrides(dy));
  std::string ds = array("ds", strides);
  // Negative steps: the destination strides must be non-negative, so walk
  // the source backwards instead.
  SmallVector<int64_t> srcStrides = contiguousStrides(dy);
  int64_t srcOffset = 0, dstOffset = offset;
  SmallVector<int64_t> dstStrides(strides);
  for (size_t d = 0; d < dy.size(); ++d)
    if (dstStrides[d] < 0 && dy[d] > 0) {
      dstOffset += dstStrides[d] * (dy[d] - 1);
      dstStrides[d] = -dstStrides[d];
      srcOffset += srcStrides[d] * (dy[d] - 1);
      srcStrides[d] = -srcStrides[d];
    }
  ss = array("ss2", srcStrides);
  ds = array("ds2", dstStrides);
  // (The fill value is host memory on every target.)
  os << "    static const float zero = 0.0f;\n"
     << "    " << fn("fill") << "(" << numel(outs[0]) << ", &zero, " << out(0)
     << ", 4);\n"
     << "    " << fn("strided_copy") << "(" << dy.size() << ", " << sh << ", "
     << in(0) << " + " << srcOffset << ", " << ss << ", " << out(0) << " + "
     << dstOffset << ", " << ds << ", 4);\n";
  return success();
}

LogicalResult KernelEmitter::concat() {
  ArrayRef<int64_t> y = shapeOf(outs[0]);
  int64_t axis = axisOf(y.size());
  SmallVector<int64_t> ds = contiguousStrides(y);
  std::string dst = array("ds", ds);
  int64_t offset = 0;
  for (auto [i, v] : llvm::enumerate(ins)) {
    ArrayRef<int64_t> s = shapeOf(v);
    std::string sh = array("shape" + std::to_string(i), s);
    std::string ss = array("ss" + std::to_string(i), contiguousStrides(s));
    os << "    " << fn("strided_copy") << "(" << s.size() << ", " << sh << ", "
       << in(i) << ", " << ss << ", " << out(0) << " + " << offset * ds[axis]
       << ", " << dst << ", " << elemSize(outs[0]) << ");\n";
    offset += s[axis];
  }
  return success();
}

LogicalResult KernelEmitter::expand() {
  ArrayRef<int64_t> y = shapeOf(outs[0]);
  std::string sh = array("shape", y);
  std::string ss = array("ss", broadcastStrides(shapeOf(ins[0]), y));
  std::string ds = array("ds", contiguousStrides(y));
  os << "    " << fn("strided_copy") << "(" << y.size() << ", " << sh << ", "
     << in(0) << ", " << ss << ", " << out(0) << ", " << ds << ", "
     << elemSize(outs[0]) << ");\n";
  return success();
}

LogicalResult KernelEmitter::tile() {
  // y viewed as [r0, d0, r1, d1, ...] reads x with stride 0 on the repeats.
  ArrayRef<int64_t> x = shapeOf(ins[0]);
  ArrayRef<int64_t> reps = i64ArrayAttr(k, "repeats");
  SmallVector<int64_t> shape, src, dst;
  SmallVector<int64_t> xs = contiguousStrides(x),
                       ys = contiguousStrides(shapeOf(outs[0]));
  for (size_t d = 0; d < x.size(); ++d) {
    shape.append({reps[d], x[d]});
    src.append({0, xs[d]});
    dst.append({x[d] * ys[d], ys[d]});
  }
  if (shape.size() > OTCK_MAX_RANK)
    return k.emitOpError("tile of rank above ")
           << OTCK_MAX_RANK / 2 << " is not supported";
  std::string sh = array("shape", shape);
  std::string ss = array("ss", src);
  std::string ds = array("ds", dst);
  os << "    " << fn("strided_copy") << "(" << shape.size() << ", " << sh
     << ", " << in(0) << ", " << ss << ", " << out(0) << ", " << ds << ", "
     << elemSize(outs[0]) << ");\n";
  return success();
}

std::string padMode(StringRef m) {
  return m == "reflect" ? "OTCK_PAD_REFLECT"
         : m == "edge"  ? "OTCK_PAD_EDGE"
                        : "OTCK_PAD_CONSTANT";
}

LogicalResult KernelEmitter::pad() {
  ArrayRef<int64_t> x = shapeOf(ins[0]);
  std::string sh = array("shape", x);
  std::string pb = array("pb", i64ArrayAttr(k, "pads_begin"));
  std::string pe = array("pe", i64ArrayAttr(k, "pads_end"));
  std::string value = "nullptr";
  Type t = typeOf(ins[0]).getElementType();
  if (str("mode") == "constant") {
    double v = f32("value", 0.0f);
    if (t.isF32())
      os << "    static const float value = " << floatLiteral(v) << ";\n";
    else if (t.isInteger(64))
      os << "    static const int64_t value = " << static_cast<int64_t>(v)
         << ";\n";
    else if (t.isInteger(32))
      os << "    static const int32_t value = " << static_cast<int32_t>(v)
         << ";\n";
    else
      os << "    static const uint8_t value = " << (v != 0) << ";\n";
    value = "&value";
  }
  os << "    otck_pad(" << x.size() << ", " << sh << ", " << pb << ", " << pe
     << ", " << padMode(str("mode")) << ", " << value << ", " << in(0) << ", "
     << out(0) << ", " << elemSize(ins[0]) << ");\n";
  return success();
}

LogicalResult KernelEmitter::padGrad() {
  ArrayRef<int64_t> x = shapeOf(outs[0]);
  std::string sh = array("shape", x);
  std::string pb = array("pb", i64ArrayAttr(k, "pads_begin"));
  std::string pe = array("pe", i64ArrayAttr(k, "pads_end"));
  os << "    otck_pad_grad_f32(" << x.size() << ", " << sh << ", " << pb << ", "
     << pe << ", " << padMode(str("mode")) << ", " << in(0) << ", " << out(0)
     << ");\n";
  return success();
}

LogicalResult KernelEmitter::trilu() {
  ArrayRef<int64_t> s = shapeOf(ins[0]);
  int64_t r = s.size(), rows = s[r - 2], cols = s[r - 1];
  os << "    otck_trilu(" << numel(ins[0]) / std::max<int64_t>(rows * cols, 1)
     << ", " << rows << ", " << cols << ", " << i64("k", 0) << ", "
     << flag("upper") << ", " << in(0) << ", " << out(0) << ", "
     << elemSize(ins[0]) << ");\n";
  return success();
}

LogicalResult KernelEmitter::resize() {
  bool grad = k.getKernel() == "resize_grad";
  Value x = grad ? outs[0] : ins[0], y = grad ? ins[0] : outs[0];
  std::string is = array("in_shape", shapeOf(x));
  std::string ys = array("out_shape", shapeOf(y));
  auto scales = k->getAttrOfType<DenseF32ArrayAttr>("scales");
  os << "    static const float scales[] = {";
  for (auto [i, s] : llvm::enumerate(scales.asArrayRef()))
    os << (i ? ", " : "") << floatLiteral(s);
  os << "};\n";
  std::string mode =
      str("mode") == "linear" ? "OTCK_RESIZE_LINEAR" : "OTCK_RESIZE_NEAREST";
  std::string coord =
      "OTCK_RESIZE_" + str("coordinate_transformation_mode").upper();
  std::string nearest = "OTCK_RESIZE_" + str("nearest_mode").upper();
  os << "    otck_resize" << (grad ? "_grad" : "") << "_f32("
     << shapeOf(x).size() << ", " << is << ", " << ys << ", scales, " << mode
     << ", " << coord << ", " << nearest << ", " << in(0) << ", " << out(0)
     << ");\n";
  return success();
}

//===----------------------------------------------------------------------===//
// Indexing
//===----------------------------------------------------------------------===//

LogicalResult KernelEmitter::gather() {
  if (!typeOf(ins[1]).getElementType().isInteger(64))
    return k.emitOpError("gather indices must be int64");
  ArrayRef<int64_t> x = shapeOf(ins[0]);
  auto [outer, n, inner] = around(x, axisOf(x.size()));
  checkIndices(llvm::formatv("{8}({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7})",
                             outer, n, inner, in(0), numel(ins[1]), in(1),
                             out(0), elemSize(ins[0]), fn("gather"))
                   .str());
  return success();
}

LogicalResult KernelEmitter::gatherGrad() {
  if (!typeOf(ins[1]).getElementType().isInteger(64))
    return k.emitOpError("gather indices must be int64");
  ArrayRef<int64_t> x = shapeOf(outs[0]);
  auto [outer, n, inner] = around(x, axisOf(x.size()));
  checkIndices(llvm::formatv("{7}({0}, {1}, {2}, {3}, {4}, {5}, {6})", outer, n,
                             inner, numel(ins[1]), in(1), in(0), out(0),
                             fn("gather_grad_f32"))
                   .str());
  return success();
}

LogicalResult KernelEmitter::gatherElements() {
  if (!typeOf(ins[1]).getElementType().isInteger(64))
    return k.emitOpError("gather indices must be int64");
  ArrayRef<int64_t> x = shapeOf(ins[0]);
  std::string xs = array("xs", x);
  std::string is = array("is", shapeOf(ins[1]));
  checkIndices(llvm::formatv("otck_gather_elements({0}, {1}, {2}, {3}, {4}, "
                             "{5}, {6}, {7})",
                             x.size(), xs, is, axisOf(x.size()), in(0), in(1),
                             out(0), elemSize(ins[0]))
                   .str());
  return success();
}

LogicalResult KernelEmitter::gatherElementsGrad() {
  ArrayRef<int64_t> x = shapeOf(outs[0]);
  std::string xs = array("xs", x);
  std::string is = array("is", shapeOf(ins[1]));
  checkIndices(llvm::formatv("otck_gather_elements_grad_f32({0}, {1}, {2}, "
                             "{3}, {4}, {5}, {6})",
                             x.size(), xs, is, axisOf(x.size()), in(1), in(0),
                             out(0))
                   .str());
  return success();
}

LogicalResult KernelEmitter::scatterElements() {
  if (!typeOf(ins[1]).getElementType().isInteger(64))
    return k.emitOpError("scatter indices must be int64");
  ArrayRef<int64_t> x = shapeOf(ins[0]);
  std::string xs = array("xs", x);
  std::string is = array("is", shapeOf(ins[1]));
  std::string red = "OTCK_SCATTER_" + str("reduction").upper();
  checkIndices(llvm::formatv("otck_scatter_elements_f32({0}, {1}, {2}, {3}, "
                             "{4}, {5}, {6}, {7}, {8})",
                             x.size(), xs, is, axisOf(x.size()), red, in(0),
                             in(1), in(2), out(0))
                   .str());
  return success();
}

LogicalResult KernelEmitter::oneHot() {
  if (!typeOf(ins[0]).getElementType().isInteger(64))
    return k.emitOpError("one_hot indices must be int64");
  ArrayRef<int64_t> y = shapeOf(outs[0]);
  int64_t axis = axisOf(y.size());
  auto [outer, depth, inner] = around(y, axis);
  os << "    otck_one_hot_f32(" << outer << ", " << depth << ", " << inner
     << ", " << in(0) << ", " << floatLiteral(f32("off_value", 0.0f)) << ", "
     << floatLiteral(f32("on_value", 1.0f)) << ", " << out(0) << ");\n";
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution, pooling, normalization
//===----------------------------------------------------------------------===//

std::string KernelEmitter::convDescInit(const otck_conv_desc &d) {
  auto arr = [](const int64_t *v) {
    return "{" + intList(ArrayRef<int64_t>(v, 3)) + "}";
  };
  os << "    static const otck_conv_desc d = {" << d.spatial << ", 0, "
     << d.batch << ", " << d.in_channels << ", " << d.out_channels << ", "
     << d.groups << ", " << arr(d.in) << ", " << arr(d.out) << ", "
     << arr(d.kernel) << ", " << arr(d.stride) << ", " << arr(d.dilation)
     << ", " << arr(d.pad_begin) << "};\n";
  return "&d";
}

std::string KernelEmitter::poolDescInit(const otck_pool_desc &d) {
  auto arr = [](const int64_t *v) {
    return "{" + intList(ArrayRef<int64_t>(v, 3)) + "}";
  };
  os << "    static const otck_pool_desc d = {" << d.spatial << ", "
     << d.count_include_pad << ", " << d.batch << ", " << d.channels << ", "
     << arr(d.in) << ", " << arr(d.out) << ", " << arr(d.kernel) << ", "
     << arr(d.stride) << ", " << arr(d.dilation) << ", " << arr(d.pad_begin)
     << ", " << arr(d.pad_end) << "};\n";
  return "&d";
}

LogicalResult KernelEmitter::conv() {
  if (failed(requireF32()))
    return failure();
  StringRef kn = k.getKernel();
  // outs: result, workspace (see otc-lower-to-exec).
  otck_conv_desc d;
  convDescOf(k, kn, ins, outs[0], d);
  std::string desc = convDescInit(d);
  std::string ws = outs.size() > 1 ? out(1) : "nullptr";
  std::string bias = ins.size() > 2 ? in(2) : "nullptr";
  if (kn == "conv")
    os << "    " << fn("conv_f32") << "(" << desc << ", " << in(0) << ", "
       << in(1) << ", " << bias << ", " << out(0) << ", " << ws << ");\n";
  else if (kn == "conv_transpose")
    os << "    otck_conv_transpose_f32(" << desc << ", " << in(0) << ", "
       << in(1) << ", " << bias << ", " << out(0) << ", " << ws << ");\n";
  else if (kn == "conv_grad_input")
    os << "    " << fn("conv_grad_input_f32") << "(" << desc << ", " << in(0)
       << ", " << in(1) << ", " << out(0) << ", " << ws << ");\n";
  else
    os << "    " << fn("conv_grad_weight_f32") << "(" << desc << ", " << in(0)
       << ", " << in(1) << ", " << out(0) << ", " << ws << ");\n";
  return success();
}

LogicalResult KernelEmitter::pool() {
  if (failed(requireF32()))
    return failure();
  std::string desc = poolDescInit(poolDesc(k, ins[0], outs[0]));
  if (k.getKernel() == "max_pool")
    os << "    " << fn("max_pool_f32") << "(" << desc << ", " << in(0) << ", "
       << out(0) << ", " << (outs.size() > 1 ? out(1) : "nullptr") << ");\n";
  else
    os << "    " << fn("avg_pool_f32") << "(" << desc << ", " << in(0) << ", "
       << out(0) << ");\n";
  return success();
}

LogicalResult KernelEmitter::poolGrad() {
  if (failed(requireF32()))
    return failure();
  std::string desc = poolDescInit(poolDesc(k, outs[0], ins[0]));
  if (k.getKernel() == "max_pool_grad")
    os << "    " << fn("max_pool_grad_f32") << "(" << desc << ", " << in(0)
       << ", " << in(1) << ", " << out(0) << ");\n";
  else
    os << "    " << fn("avg_pool_grad_f32") << "(" << desc << ", " << in(0)
       << ", " << out(0) << ");\n";
  return success();
}

/// [N, C, S] of an NC... tensor.
std::string ncs(ArrayRef<int64_t> s) {
  int64_t spatial = 1;
  for (int64_t d : s.drop_front(2))
    spatial *= d;
  return std::to_string(s[0]) + ", " + std::to_string(s[1]) + ", " +
         std::to_string(spatial);
}

LogicalResult KernelEmitter::batchNorm() {
  if (failed(requireF32()))
    return failure();
  // ins: x, scale, bias, running_mean, running_var;
  // outs: y, new_mean, new_var, saved_mean, saved_invstd. The running
  // statistics are copied, then updated in place.
  for (int i = 0; i < 2; ++i)
    os << "    if (" << out(1 + i) << " != " << in(3 + i) << ")\n      "
       << fn("copy") << "(" << numel(ins[3 + i]) * 4 << ", " << in(3 + i)
       << ", " << out(1 + i) << ");\n";
  os << "    " << fn("batch_norm_train_f32") << "(" << ncs(shapeOf(ins[0]))
     << ", " << in(0) << ", " << in(1) << ", " << in(2) << ", "
     << floatLiteral(f32("epsilon", 1e-5f)) << ", "
     << floatLiteral(f32("momentum", 0.9f)) << ", "
     << flag("unbiased_running_var") << ", " << out(0) << ", " << out(3) << ", "
     << out(4) << ", " << out(1) << ", " << out(2) << ");\n";
  return success();
}

LogicalResult KernelEmitter::batchNormInference() {
  if (failed(requireF32()))
    return failure();
  os << "    " << fn("batch_norm_infer_f32") << "(" << ncs(shapeOf(ins[0]))
     << ", " << in(0) << ", " << in(1) << ", " << in(2) << ", " << in(3) << ", "
     << in(4) << ", " << floatLiteral(f32("epsilon", 1e-5f)) << ", " << out(0)
     << ");\n";
  return success();
}

LogicalResult KernelEmitter::normGrad() {
  if (failed(requireF32()))
    return failure();
  // ins: dy, x, scale, mean, invstd; outs: dx, dscale, dbias.
  StringRef kn = k.getKernel();
  ArrayRef<int64_t> x = shapeOf(ins[1]);
  std::string args = in(0) + ", " + in(1) + ", " + in(2) + ", " + in(3) + ", " +
                     in(4) + ", " + out(0) + ", " + out(1) + ", " + out(2);
  if (kn == "layer_norm_grad") {
    int64_t axis = i64("axis", 1), m = 1, d = 1;
    for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i)
      (i < axis ? m : d) *= x[i];
    os << "    " << fn("layer_norm_grad_f32") << "(" << m << ", " << d << ", "
       << args << ");\n";
  } else {
    os << "    "
       << (kn == "batch_norm_grad" ? fn("batch_norm_grad_f32")
                                   : "otck_instance_norm_grad_f32")
       << "(" << ncs(x) << ", " << args << ");\n";
  }
  return success();
}

LogicalResult KernelEmitter::layerNorm() {
  if (failed(requireF32()))
    return failure();
  ArrayRef<int64_t> x = shapeOf(ins[0]);
  int64_t axis = axisOf(x.size()), m = 1, d = 1;
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i)
    (i < axis ? m : d) *= x[i];
  os << "    " << fn("layer_norm_f32") << "(" << m << ", " << d << ", " << in(0)
     << ", " << in(1) << ", " << (ins.size() > 2 ? in(2) : "nullptr") << ", "
     << floatLiteral(f32("epsilon", 1e-5f)) << ", " << out(0) << ", " << out(1)
     << ", " << out(2) << ");\n";
  return success();
}

LogicalResult KernelEmitter::instanceNorm() {
  if (failed(requireF32()))
    return failure();
  os << "    otck_instance_norm_f32(" << ncs(shapeOf(ins[0])) << ", " << in(0)
     << ", " << in(1) << ", " << in(2) << ", "
     << floatLiteral(f32("epsilon", 1e-5f)) << ", " << out(0) << ", " << out(1)
     << ", " << out(2) << ");\n";
  return success();
}

//===----------------------------------------------------------------------===//
// Losses, buckets, dropout, optimizers
//===----------------------------------------------------------------------===//

LogicalResult KernelEmitter::loss() {
  StringRef kn = k.getKernel();
  if (kn == "mse") {
    os << "    " << fn("mse_f32") << "(" << numel(ins[0]) << ", " << in(0)
       << ", " << in(1) << ", " << out(0) << ");\n";
    return success();
  }
  if (kn == "mse_grad") {
    os << "    " << fn("mse_grad_f32") << "(" << numel(ins[0]) << ", " << in(0)
       << ", " << in(1) << ", " << in(2) << ", " << out(0) << ");\n";
    return success();
  }
  if (!typeOf(ins[1]).getElementType().isInteger(64))
    return k.emitOpError("labels must be int64");
  ArrayRef<int64_t> s = shapeOf(ins[0]);
  // The CUDA twin records a label out of range for otc_cuda_status.
  if (kn == "softmax_cross_entropy" && target.cuda())
    os << "    otckd_softmax_ce_f32(" << s[0] << ", " << s[1] << ", " << in(0)
       << ", " << in(1) << ", " << out(1) << ", " << out(0) << ");\n";
  else if (kn == "softmax_cross_entropy")
    os << "    if (otck_softmax_ce_f32(" << s[0] << ", " << s[1] << ", "
       << in(0) << ", " << in(1) << ", " << out(1) << ", " << out(0)
       << ") != OTCK_OK)\n      return OTC_STEP_ERR_LABEL_RANGE;\n";
  else
    os << "    " << fn("softmax_ce_grad_f32") << "(" << s[0] << ", " << s[1]
       << ", " << in(0) << ", " << in(1) << ", " << in(2) << ", " << out(0)
       << ");\n";
  return success();
}

LogicalResult KernelEmitter::pack() {
  // Members the planner did not place inside the bucket are copied.
  bool isPack = k.getKernel() == "pack";
  std::string bucket = isPack ? out(0) : in(0);
  int64_t offset = 0;
  for (Value m : isPack ? ins : outs) {
    int64_t n = numel(m);
    std::string slice = bucket + " + " + std::to_string(offset);
    std::string src = isPack ? name(m) : slice, dst = isPack ? slice : name(m);
    os << "    if (" << src << " != " << dst << ")\n      " << fn("copy") << "("
       << n * 4 << ", " << src << ", " << dst << ");\n";
    offset += n;
  }
  return success();
}

LogicalResult KernelEmitter::dropout() {
  os << "    otck_dropout_f32(" << numel(ins[0]) << ", " << in(0) << ", "
     << out(0) << ", " << out(1) << ", " << floatLiteral(f32("ratio", 0))
     << ", ctx->seed, " << i64("stream", 0) << "u);\n";
  return success();
}

LogicalResult KernelEmitter::optimizer() {
  StringRef kn = k.getKernel();
  auto lit = [&](StringRef n) { return floatLiteral(f32(n, 0)); };
  if (kn == "sgd_update") {
    os << "    " << fn("sgd_f32") << "(" << numel(outs[0]) << ", " << out(0)
       << ", " << in(0) << ", " << lit("lr") << ", " << lit("weight_decay")
       << ");\n";
  } else if (kn == "momentum_update") {
    os << "    " << fn("momentum_f32") << "(" << numel(outs[0]) << ", "
       << out(0) << ", " << in(0) << ", " << out(1) << ", " << lit("lr") << ", "
       << lit("momentum") << ", " << lit("weight_decay") << ", "
       << flag("nesterov") << ");\n";
  } else {
    os << "    " << fn("adam_f32") << "(" << numel(outs[0]) << ", " << out(0)
       << ", " << in(0) << ", " << out(1) << ", " << out(2) << ", " << lit("lr")
       << ", " << lit("beta1") << ", " << lit("beta2") << ", " << lit("epsilon")
       << ", " << lit("weight_decay") << ", ctx->step, "
       << (kn == "adamw_update") << ");\n";
  }
  return success();
}

} // namespace

const char *const otc::kCudaStatusHelper =
    "// The status a CUDA step returns instead of `rc`: waits for the stream\n"
    "// and maps the first error its kernels recorded (otc/kernels_cuda.h),\n"
    "// which happened before whatever made the step return `rc`.\n"
    "static int otc_cuda_status(int rc) {\n"
    "  switch (otckd_take_status()) {\n"
    "  case OTCK_OK:\n"
    "    return rc;\n"
    "  case OTCK_ERR_LABEL_OUT_OF_RANGE:\n"
    "    return OTC_STEP_ERR_LABEL_RANGE;\n"
    "  case OTCK_ERR_INDEX_OUT_OF_RANGE:\n"
    "    return OTC_STEP_ERR_INDEX_RANGE;\n"
    "  case OTCK_ERR_DIVISION_BY_ZERO:\n"
    "    return OTC_STEP_ERR_DIVISION_BY_ZERO;\n"
    "  default:\n"
    "    return OTC_STEP_ERR_DEVICE;\n"
    "  }\n"
    "}\n\n";

LogicalResult otc::emitKernelCall(exec::KernelOp k, raw_ostream &os,
                                  function_ref<std::string(Value)> name,
                                  const KernelTarget &target) {
  std::string call;
  llvm::raw_string_ostream cs(call);
  if (failed(KernelEmitter(k, cs, name, target).emit()))
    return failure();
  // A CUDA program calls nothing of the CPU library: a family listed in
  // kCudaKernels that emits a call without a twin is a bug here, reported
  // rather than left to the host compiler.
  if (target.cuda()) {
    // Calls only: descriptor types (otck_conv_desc) are host structs that
    // the twins take as they are.
    for (size_t at = call.find("otck_"); at != std::string::npos;
         at = call.find("otck_", at + 1)) {
      StringRef callee = StringRef(call).substr(at).take_while(
          [](char c) { return llvm::isAlnum(c) || c == '_'; });
      if (StringRef(call).substr(at + callee.size()).starts_with("("))
        return k.emitError("'")
               << k.getKernel() << "' has no CUDA kernel yet (emits " << callee
               << ")";
    }
  }
  os << call;
  return success();
}
