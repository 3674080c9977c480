//===- KernelDescs.h - kernel descriptors from ops --------------*- C++ -*-===//
//
// The descriptor structs of otc/kernels.h built from an op's operand shapes
// and window attributes. Shared by otc-lower-to-exec (workspace sizes, asked
// of the kernel library at compile time) and the C++ emitter (the same
// descriptor as a static initializer), so both agree by construction.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_DIALECTS_EXEC_KERNELDESCS_H
#define OTC_DIALECTS_EXEC_KERNELDESCS_H

#include "otc/kernels.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

namespace otc {

inline llvm::ArrayRef<int64_t> shapeOf(mlir::Value v) {
  return llvm::cast<mlir::ShapedType>(v.getType()).getShape();
}

inline llvm::ArrayRef<int64_t> i64ArrayAttr(mlir::Operation *op,
                                            llvm::StringRef name) {
  if (auto a = op->getAttrOfType<mlir::DenseI64ArrayAttr>(name))
    return a.asArrayRef();
  return {};
}

/// True when `op` computes in bfloat16 (`compute = "bf16"`,
/// otc-mixed-precision).
inline bool computesBf16(mlir::Operation *op) {
  auto a = op->getAttrOfType<mlir::StringAttr>("compute");
  return a && a.getValue() == "bf16";
}

/// The descriptor of a convolution-family op. `input` is the tensor in the
/// role of the convolution's input ([N, C, s...]), `output` its output
/// ([N, M, o...]); `weight` is [M, C / group, k...].
inline otck_conv_desc convDesc(mlir::Operation *op, mlir::Value input,
                               mlir::Value weight, mlir::Value output) {
  otck_conv_desc d{};
  auto in = shapeOf(input), w = shapeOf(weight), out = shapeOf(output);
  d.spatial = static_cast<int32_t>(in.size()) - 2;
  d.compute = computesBf16(op) ? OTCK_COMPUTE_BF16 : OTCK_COMPUTE_F32;
  d.batch = in[0];
  d.in_channels = in[1];
  d.out_channels = out[1];
  auto group = op->getAttrOfType<mlir::IntegerAttr>("group");
  d.groups = group ? group.getInt() : 1;
  auto strides = i64ArrayAttr(op, "strides");
  auto dilations = i64ArrayAttr(op, "dilations");
  auto pads = i64ArrayAttr(op, "pads_begin");
  for (int i = 0; i < 3; ++i) {
    bool used = i < d.spatial;
    d.in[i] = used ? in[2 + i] : 1;
    d.out[i] = used ? out[2 + i] : 1;
    d.kernel[i] = used ? w[2 + i] : 1;
    d.stride[i] = used ? strides[i] : 1;
    d.dilation[i] = used ? dilations[i] : 1;
    d.pad_begin[i] = used ? pads[i] : 0;
  }
  return d;
}

/// The descriptor of a pooling op from its input and output shapes.
inline otck_pool_desc poolDesc(mlir::Operation *op, mlir::Value input,
                               mlir::Value output) {
  otck_pool_desc d{};
  auto in = shapeOf(input), out = shapeOf(output);
  d.spatial = static_cast<int32_t>(in.size()) - 2;
  auto cip = op->getAttrOfType<mlir::BoolAttr>("count_include_pad");
  d.count_include_pad = cip && cip.getValue();
  d.batch = in[0];
  d.channels = in[1];
  auto kernel = i64ArrayAttr(op, "kernel_shape");
  auto strides = i64ArrayAttr(op, "strides");
  auto dilations = i64ArrayAttr(op, "dilations");
  auto begin = i64ArrayAttr(op, "pads_begin");
  auto end = i64ArrayAttr(op, "pads_end");
  for (int i = 0; i < 3; ++i) {
    bool used = i < d.spatial;
    d.in[i] = used ? in[2 + i] : 1;
    d.out[i] = used ? out[2 + i] : 1;
    d.kernel[i] = used ? kernel[i] : 1;
    d.stride[i] = used ? strides[i] : 1;
    d.dilation[i] = used ? dilations[i] : 1;
    d.pad_begin[i] = used ? begin[i] : 0;
    d.pad_end[i] = used ? end[i] : 0;
  }
  return d;
}

/// The conv descriptor of an exec or graph conv-family op, whose operands
/// follow the graph op's order (see LowerToExec); null kernel name → none.
/// Returns false for ops that need no workspace.
bool convDescOf(mlir::Operation *op, llvm::StringRef kernel,
                mlir::ValueRange ins, mlir::Value out, otck_conv_desc &d);

/// A matmul kernel that reads an operand through a permutation of its
/// dimensions, or writes its result through one (attributes permA, permB,
/// permY: attention's head transposes folded into the products), as
/// otck_strided_gemm_f32 takes it: strides in elements. `swapped`: the
/// product computes C^T = op(B)^T op(A)^T (C's columns are contiguous), so
/// its A is the kernel's B and its B the kernel's A.
struct StridedMatmul {
  llvm::SmallVector<int64_t> batch, aStrides, bStrides, cStrides;
  bool transA = false, transB = false, swapped = false;
  int64_t M = 0, N = 0, K = 0, lda = 0, ldb = 0, ldc = 0;
};

/// The strided form of matmul `op` (operands a, b, result y); false with
/// `why` when a permutation does not permute its tensor's dimensions, the
/// shapes do not multiply into y, or a matrix has neither dimension
/// contiguous (no BLAS form).
bool stridedMatmulOf(mlir::Operation *op, mlir::Value a, mlir::Value b,
                     mlir::Value y, StridedMatmul &s, std::string *why);

} // namespace otc

#endif // OTC_DIALECTS_EXEC_KERNELDESCS_H
