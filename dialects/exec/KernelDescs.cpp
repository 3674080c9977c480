//===- KernelDescs.cpp - kernel descriptors from ops ----------------------===//

#include "dialects/exec/KernelDescs.h"

using namespace mlir;

bool otc::convDescOf(Operation *op, llvm::StringRef kernel, ValueRange ins,
                     Value out, otck_conv_desc &d) {
  if (kernel == "conv")
    d = convDesc(op, ins[0], ins[1], out);
  else if (kernel == "conv_transpose")
    d = convDesc(op, out, ins[1], ins[0]);
  else if (kernel == "conv_grad_input")
    d = convDesc(op, out, ins[1], ins[0]);
  else if (kernel == "conv_grad_weight")
    d = convDesc(op, ins[1], out, ins[0]);
  else
    return false;
  return true;
}
