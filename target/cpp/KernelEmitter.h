//===- KernelEmitter.h - the C++ emitter's kernel families ------*- C++ -*-===//
//
// Internal to the C++ emitter. One member function per kernel family
// writes the call of the kernel library's C ABI (otc/kernels.h) for an
// `exec.kernel`: static shapes and descriptors become `static const`
// locals, attributes become literals. The kernel table (ExecKernels.def)
// names each kernel's family; the families live in kernels/{Math, Tensor,
// NN, Training}.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_TARGET_CPP_KERNELEMITTER_H
#define OTC_TARGET_CPP_KERNELEMITTER_H

#include "dialects/exec/KernelDescs.h"
#include "dialects/exec/KernelTable.h"
#include "dialects/graph/ElementTypes.h"
#include "target/cpp/EmitKernels.h"

#include "llvm/ADT/SmallVector.h"

#include <string>
#include <tuple>

namespace otc::emit {

using namespace mlir;

inline std::string intList(ArrayRef<int64_t> v) {
  std::string s;
  for (auto [i, x] : llvm::enumerate(v))
    s += (i ? ", " : "") + std::to_string(x);
  return s;
}

/// Contiguous strides of `shape` laid over the trailing dims of the
/// iteration space `space`; 0 on broadcast (size-1 or missing) dimensions.
inline SmallVector<int64_t> broadcastStrides(ArrayRef<int64_t> shape,
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

inline SmallVector<int64_t> contiguousStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

inline MemRefType typeOf(Value v) {
  return llvm::cast<MemRefType>(v.getType());
}
inline int64_t numel(Value v) { return typeOf(v).getNumElements(); }
inline int64_t elemSize(Value v) {
  return std::max<unsigned>(typeOf(v).getElementTypeBitWidth() / 8, 1);
}
inline bool isF32(Value v) { return typeOf(v).getElementType().isF32(); }

/// ONNX TensorProto data type code of an element type (otck_dtype), 0 if
/// none.
inline int dtypeCode(Type t) {
  const ElementTypeInfo *e = elementTypeInfo(t);
  return e ? e->code : 0;
}

class KernelEmitter {
public:
  KernelEmitter(exec::KernelOp k, const exec::KernelInfo &info, raw_ostream &os,
                function_ref<std::string(Value)> name,
                const KernelTarget &target)
      : k(k), info(&info), os(os), name(name), target(target), ins(k.getIns()),
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
  LogicalResult multiUpdate(StringRef lr, StringRef wd);
  LogicalResult hyperparameter();
  LogicalResult clip();
  LogicalResult ema();

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
  // The kernel's attributes, read as the kernel table declares them
  // (dialects/exec/KernelTable.h): absent ones take the table's default,
  // and a name the table does not list for this kernel is a fatal error.
  bool listed(StringRef n) { return info->attr(n) != nullptr; }
  float f32(StringRef n) { return exec::f32Param(k, n); }
  bool flag(StringRef n) { return exec::boolParam(k, n); }
  int64_t i64(StringRef n) { return exec::i64Param(k, n); }
  StringRef str(StringRef n) { return exec::strParam(k, n); }
  ArrayRef<int64_t> i64s(StringRef n) { return exec::i64sParam(k, n); }
  ArrayRef<float> f32s(StringRef n) { return exec::f32sParam(k, n); }
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
    int64_t a = i64("axis");
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
  /// Whether the kernel computes in bfloat16 (`compute`, "f32" or "bf16");
  /// failure for another value.
  FailureOr<bool> computeBf16() {
    StringRef c = str("compute");
    if (c != "f32" && c != "bf16")
      return k.emitOpError("compute '") << c << "' is not f32 or bf16";
    return c == "bf16";
  }
  /// ", <workspace>" of a bfloat16 product (its last output), or "".
  std::string workspace(bool bf16) {
    if (!bf16)
      return "";
    return ", " + (outs.size() > 1 ? out(outs.size() - 1) : "nullptr");
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
  const exec::KernelInfo *info;
  raw_ostream &os;
  function_ref<std::string(Value)> name;
  const KernelTarget &target;
  OperandRange ins, outs;
};

} // namespace otc::emit

#endif // OTC_TARGET_CPP_KERNELEMITTER_H
