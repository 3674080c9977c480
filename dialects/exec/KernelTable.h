//===- KernelTable.h - the kernel table, read -------------------*- C++ -*-===//
//
// ExecKernels.def parsed once: per kernel, its operand counts, its typed
// attributes with their defaults, its emission family and whether the CUDA
// kernel library has its twin. exec.kernel's verifier, otc-lower-to-exec,
// the C++ emitter's dispatch and its CUDA check all read it, so the table
// is the one place a kernel is declared.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_DIALECTS_EXEC_KERNELTABLE_H
#define OTC_DIALECTS_EXEC_KERNELTABLE_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/Operation.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

namespace otc::exec {

/// The type of a kernel attribute: BoolAttr, i64 IntegerAttr, f32
/// FloatAttr, StringAttr, DenseI64ArrayAttr, DenseF32ArrayAttr.
enum class KernelAttrType { Bool, I64, F32, Str, I64s, F32s };

/// The table's spelling of `t` ("bool", "i64", ...).
llvm::StringRef typeName(KernelAttrType t);

/// True when `a` has the attribute type `t`.
bool hasType(mlir::Attribute a, KernelAttrType t);

struct KernelAttr {
  llvm::StringRef name;
  KernelAttrType type;
  /// No default: the verifier requires the attribute.
  bool required;
  /// The default of a scalar attribute (bool and i64 as numbers) ...
  double number = 0;
  /// ... and of a string one.
  llvm::StringRef text;
};

struct KernelInfo {
  llvm::StringRef name;
  /// The C++ emitter's function that writes the call.
  llvm::StringRef family;
  /// maxIns 0: any number; outs 0: one or more.
  unsigned minIns, maxIns, outs;
  /// The CUDA kernel library has this kernel's twin.
  bool cuda;
  llvm::SmallVector<KernelAttr, 4> attrs;

  /// The attribute `name`, null if the kernel has none of that name.
  const KernelAttr *attr(llvm::StringRef name) const;
};

/// Every kernel, in the table's order.
llvm::ArrayRef<KernelInfo> kernelTable();

/// The kernel `name`, null if the table has none.
const KernelInfo *lookupKernel(llvm::StringRef name);

/// Outputs per parameter of the optimizer updates that take several
/// parameters in one call (sgd_update 1, momentum_update 2, adam_update and
/// adamw_update 3: ins are the gradients, outs each parameter then its
/// state); 0 for every other kernel.
unsigned updateOutsPerParameter(llvm::StringRef kernel);

/// Parameter names carry no dot; dotted names (otc.*, dist.*) are the
/// compiler's own annotations, which any kernel may carry.
inline bool isKernelParameter(llvm::StringRef attrName) {
  return !attrName.contains('.');
}

/// Checks the attributes of a call of `kernel` on `op`: every required
/// one present, every present parameter listed and of its type. Reports
/// through `op`'s diagnostics.
mlir::LogicalResult verifyKernelAttrs(mlir::Operation *op,
                                      const KernelInfo &kernel);

class KernelOp;

/// The attribute `name` of the kernel call `k` (which the verifier
/// accepted), or the table's default. `name` must be one the table lists
/// for the kernel: asking for another is a bug in the caller, reported as
/// a fatal error rather than answered with a made-up default.
bool boolParam(KernelOp k, llvm::StringRef name);
int64_t i64Param(KernelOp k, llvm::StringRef name);
float f32Param(KernelOp k, llvm::StringRef name);
llvm::StringRef strParam(KernelOp k, llvm::StringRef name);
llvm::ArrayRef<int64_t> i64sParam(KernelOp k, llvm::StringRef name);
llvm::ArrayRef<float> f32sParam(KernelOp k, llvm::StringRef name);

} // namespace otc::exec

#endif // OTC_DIALECTS_EXEC_KERNELTABLE_H
