//===- EmitKernels.cpp - exec.kernel calls as C++ -------------------------===//
//
// Dispatches each `exec.kernel` to the family function the kernel table
// names (ExecKernels.def; the families are in kernels/). Kernels that can
// meet bad data return a step status.
//
// For --target cuda the calls go to the otckd_ twins of otc/kernels_cuda.h:
// kernels the table marks as having a twin write their calls through
// KernelTarget::fn; the others are diagnosed.
//
//===----------------------------------------------------------------------===//

#include "target/cpp/KernelEmitter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace otc;
using namespace otc::emit;

std::string otc::floatLiteral(double v) {
  if (std::isnan(v))
    return "__builtin_nanf(\"\")";
  if (std::isinf(v))
    return v > 0 ? "__builtin_inff()" : "(-__builtin_inff())";
  return llvm::formatv("{0:e9}f", v).str();
}

namespace {
/// The kernels with a CUDA twin, sorted.
SmallVector<StringRef> cudaKernels() {
  SmallVector<StringRef> names;
  for (const exec::KernelInfo &k : exec::kernelTable())
    if (k.cuda)
      names.push_back(k.name);
  llvm::sort(names);
  return names;
}
} // namespace

const llvm::StringMap<KernelEmitter::Family> &KernelEmitter::families() {
  static const llvm::StringMap<Family> table = {
#define OTC_KERNEL(NAME, FAMILY, MIN_INS, MAX_INS, OUTS, CUDA, ATTRS)          \
  {NAME, &KernelEmitter::FAMILY},
#include "dialects/exec/ExecKernels.def"
  };
  return table;
}

LogicalResult KernelEmitter::emit() {
  Family family = families().lookup(k.getKernel());
  if (target.cuda() && !info->cuda)
    return k.emitError("'")
           << k.getKernel() << "' has no CUDA kernel yet (--target cuda "
           << "supports: " << llvm::join(cudaKernels(), ", ") << ")";
  os << "  { // " << k.getKernel() << "\n";
  if (failed((this->*family)()))
    return failure();
  os << "  }\n";
  return success();
}

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
  // (Unknown only in IR the verifier did not see.)
  const exec::KernelInfo *info = exec::lookupKernel(k.getKernel());
  if (!info)
    return k.emitOpError("unknown kernel '") << k.getKernel() << "'";
  if (failed(KernelEmitter(k, *info, cs, name, target).emit()))
    return failure();
  // A CUDA program calls nothing of the CPU library: a kernel the table
  // marks as having a twin whose family emits a CPU call is a bug here,
  // reported rather than left to the host compiler.
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
