//===- NN.cpp - kernel calls: NN ------------------------------------------===//
//
// Convolution, pooling and normalization.
//
//===----------------------------------------------------------------------===//

#include "target/cpp/KernelEmitter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

using namespace otc;
using namespace otc::emit;

//===----------------------------------------------------------------------===//
// Convolution, pooling, normalization
//===----------------------------------------------------------------------===//

std::string KernelEmitter::convDescInit(const otck_conv_desc &d) {
  auto arr = [](const int64_t *v) {
    return "{" + intList(ArrayRef<int64_t>(v, 3)) + "}";
  };
  os << "    static const otck_conv_desc d = {" << d.spatial << ", "
     << (d.compute == OTCK_COMPUTE_BF16 ? "OTCK_COMPUTE_BF16"
                                        : "OTCK_COMPUTE_F32")
     << ", " << d.batch << ", " << d.in_channels << ", " << d.out_channels
     << ", " << d.groups << ", " << arr(d.in) << ", " << arr(d.out) << ", "
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
  if (failed(requireF32()) || failed(computeBf16()))
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
    os << "    " << fn("conv_transpose_f32") << "(" << desc << ", " << in(0)
       << ", " << in(1) << ", " << bias << ", " << out(0) << ", " << ws
       << ");\n";
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
static std::string ncs(ArrayRef<int64_t> s) {
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
     << floatLiteral(f32("epsilon")) << ", " << floatLiteral(f32("momentum"))
     << ", " << flag("unbiased_running_var") << ", " << out(0) << ", " << out(3)
     << ", " << out(4) << ", " << out(1) << ", " << out(2) << ");\n";
  return success();
}

LogicalResult KernelEmitter::batchNormInference() {
  if (failed(requireF32()))
    return failure();
  os << "    " << fn("batch_norm_infer_f32") << "(" << ncs(shapeOf(ins[0]))
     << ", " << in(0) << ", " << in(1) << ", " << in(2) << ", " << in(3) << ", "
     << in(4) << ", " << floatLiteral(f32("epsilon")) << ", " << out(0)
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
    int64_t axis = i64("axis"), m = 1, d = 1;
    for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i)
      (i < axis ? m : d) *= x[i];
    os << "    " << fn("layer_norm_grad_f32") << "(" << m << ", " << d << ", "
       << args << ");\n";
  } else {
    os << "    "
       << (kn == "batch_norm_grad" ? fn("batch_norm_grad_f32")
                                   : fn("instance_norm_grad_f32"))
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
     << floatLiteral(f32("epsilon")) << ", " << out(0) << ", " << out(1) << ", "
     << out(2) << ");\n";
  return success();
}

LogicalResult KernelEmitter::instanceNorm() {
  if (failed(requireF32()))
    return failure();
  os << "    " << fn("instance_norm_f32") << "(" << ncs(shapeOf(ins[0])) << ", "
     << in(0) << ", " << in(1) << ", " << in(2) << ", "
     << floatLiteral(f32("epsilon")) << ", " << out(0) << ", " << out(1) << ", "
     << out(2) << ");\n";
  return success();
}
