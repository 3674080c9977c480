//===- Training.cpp - kernel calls: training ------------------------------===//
//
// Losses, gradient buckets, dropout, optimizer updates and the weight EMA.
//
//===----------------------------------------------------------------------===//

#include "target/cpp/KernelEmitter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstdio>

using namespace otc;
using namespace otc::emit;

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
  os << "    " << fn("dropout_f32") << "(" << numel(ins[0]) << ", " << in(0)
     << ", " << out(0) << ", " << out(1) << ", " << floatLiteral(f32("ratio"))
     << ", ctx->seed, " << i64("stream") << "u);\n";
  return success();
}

/// `ctx->hyper->field` times a parameter group's compile-time `scale`, as
/// the float a kernel takes (the product in double, as torch scales a
/// group's lr in Python).
static std::string hyper(StringRef field, float scale) {
  std::string v = "ctx->hyper->" + field.str();
  if (scale == 0.0f)
    return "0.0f";
  if (scale != 1.0f) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", double(scale));
    v += std::string(" * ") + buf;
  }
  return "(float)(" + v + ")";
}

LogicalResult KernelEmitter::optimizer() {
  StringRef kn = k.getKernel();
  std::string lr = hyper("lr", f32("lr_scale"));
  std::string wd = hyper("weight_decay", f32("wd_scale"));
  if (exec::updateOutsPerParameter(kn) != 0 && ins.size() > 1)
    return multiUpdate(lr, wd);
  if (kn == "sgd_update") {
    os << "    " << fn("sgd_f32") << "(" << numel(outs[0]) << ", " << out(0)
       << ", " << in(0) << ", " << lr << ", " << wd << ");\n";
  } else if (kn == "momentum_update") {
    os << "    " << fn("momentum_f32") << "(" << numel(outs[0]) << ", "
       << out(0) << ", " << in(0) << ", " << out(1) << ", " << lr << ", "
       << hyper("momentum", 1) << ", " << wd << ", " << flag("nesterov")
       << ");\n";
  } else if (kn == "adam_update" || kn == "adamw_update") {
    // Without a first moment (momentum correction keeps it in the
    // exchange) the update runs with beta1 = 0.
    std::string beta1 = flag("first_moment") ? hyper("beta1", 1) : "0.0f";
    os << "    " << fn("adam_f32") << "(" << numel(outs[0]) << ", " << out(0)
       << ", " << in(0) << ", " << out(1) << ", " << out(2) << ", " << lr
       << ", " << beta1 << ", " << hyper("beta2", 1) << ", " << hyper("eps", 1)
       << ", " << wd << ", ctx->step, " << (kn == "adamw_update") << ");\n";
  } else if (kn == "lamb_update") {
    // The trust ratio is not kept (out_trust_ratio NULL).
    os << "    " << fn("lamb_f32") << "(" << numel(outs[0]) << ", " << out(0)
       << ", " << in(0) << ", " << out(1) << ", " << out(2) << ", " << lr
       << ", " << hyper("beta1", 1) << ", " << hyper("beta2", 1) << ", "
       << hyper("eps", 1) << ", " << wd << ", ctx->step, nullptr);\n";
  } else if (kn == "lion_update") {
    os << "    " << fn("lion_f32") << "(" << numel(outs[0]) << ", " << out(0)
       << ", " << in(0) << ", " << out(1) << ", " << lr << ", "
       << hyper("beta1", 1) << ", " << hyper("beta2", 1) << ", " << wd
       << ");\n";
  } else if (kn == "adagrad_update") {
    os << "    " << fn("adagrad_f32") << "(" << numel(outs[0]) << ", " << out(0)
       << ", " << in(0) << ", " << out(1) << ", " << lr << ", "
       << hyper("lr_decay", 1) << ", " << wd << ", " << hyper("eps", 1)
       << ", ctx->step);\n";
  } else if (kn == "rmsprop_update") {
    // State: square_avg, then grad_avg (centered), then momentum_buffer.
    bool centered = flag("centered"), momentum = flag("with_momentum");
    if (outs.size() != 2 + size_t(centered) + size_t(momentum))
      return k.emitOpError("rmsprop_update writes ")
             << 2 + centered + momentum << " buffers (parameter, square_avg"
             << (centered ? ", grad_avg" : "")
             << (momentum ? ", momentum_buffer" : "") << "), got "
             << outs.size();
    std::string gradAvg = centered ? out(2) : "nullptr";
    std::string buf = momentum ? out(2 + centered) : "nullptr";
    os << "    " << fn("rmsprop_f32") << "(" << numel(outs[0]) << ", " << out(0)
       << ", " << in(0) << ", " << out(1) << ", " << gradAvg << ", " << buf
       << ", " << lr << ", " << hyper("alpha", 1) << ", " << hyper("eps", 1)
       << ", " << wd << ", " << (momentum ? hyper("momentum", 1) : "0.0f")
       << ");\n";
  } else {
    return k.emitOpError("no emitter for optimizer kernel '") << kn << "'";
  }
  return success();
}

LogicalResult KernelEmitter::ema() {
  // The first optimizer step (updates 0) copies the parameter.
  os << "    " << fn("ema_f32") << "(" << numel(outs[0]) << ", " << out(0)
     << ", " << in(0) << ", " << floatLiteral(f32("decay"))
     << ", ctx->step - 1);\n";
  return success();
}

LogicalResult KernelEmitter::multiUpdate(StringRef lr, StringRef wd) {
  // Several parameters in one call: host arrays of their pointers (device
  // pointers on CUDA) and sizes, per parameter as the single call takes
  // them.
  StringRef kn = k.getKernel();
  unsigned per = exec::updateOutsPerParameter(kn), n = ins.size();
  SmallVector<int64_t> sizes;
  for (Value g : ins)
    sizes.push_back(numel(g));
  std::string sz = array("sizes", sizes);
  auto pointers = [&](StringRef decl, auto name) {
    os << "    " << decl << "[] = {";
    for (unsigned i = 0; i < n; ++i)
      os << (i ? ", " : "") << name(i);
    os << "};\n";
  };
  pointers("float *const ws", [&](unsigned i) { return out(i * per); });
  pointers("const float *const gs", [&](unsigned i) { return in(i); });
  if (per > 1)
    pointers("float *const s1", [&](unsigned i) { return out(i * per + 1); });
  if (per > 2)
    pointers("float *const s2", [&](unsigned i) { return out(i * per + 2); });
  std::string head = fn(kn == "sgd_update"        ? "sgd_multi_f32"
                        : kn == "momentum_update" ? "momentum_multi_f32"
                                                  : "adam_multi_f32") +
                     "(" + std::to_string(n) + ", " + sz + ", ws, gs, ";
  if (kn == "sgd_update") {
    os << "    " << head << lr << ", " << wd << ");\n";
  } else if (kn == "momentum_update") {
    os << "    " << head << "s1, " << lr << ", " << hyper("momentum", 1) << ", "
       << wd << ", " << flag("nesterov") << ");\n";
  } else {
    std::string beta1 = flag("first_moment") ? hyper("beta1", 1) : "0.0f";
    os << "    " << head << "s1, s2, " << lr << ", " << beta1 << ", "
       << hyper("beta2", 1) << ", " << hyper("eps", 1) << ", " << wd
       << ", ctx->step, " << (kn == "adamw_update") << ");\n";
  }
  return success();
}

LogicalResult KernelEmitter::hyperparameter() {
  os << "    " << fn("fill_f32") << "(1, " << hyper(str("name"), 1) << ", "
     << out(0) << ");\n";
  return success();
}

LogicalResult KernelEmitter::clip() {
  // outs: the gradients (clipped in place), then their norm.
  size_t n = outs.size() - 1;
  SmallVector<int64_t> sizes;
  os << "    float *const grads[] = {";
  for (size_t i = 0; i < n; ++i) {
    os << (i ? ", " : "") << out(i);
    sizes.push_back(numel(outs[i]));
  }
  os << "};\n";
  std::string sz = array("sizes", sizes), norm = out(n);
  if (ins.empty())
    os << "    " << fn("global_norm_f32") << "(" << n << ", grads, " << sz
       << ", " << norm << ");\n";
  else // the whole model's norm (SDP), computed before
    os << "    " << fn("copy") << "(4, " << in(0) << ", " << norm << ");\n";
  // A NaN or infinity anywhere: the step is skipped, nothing updated (x - x
  // is 0 exactly for a finite x).
  if (target.cuda())
    os << "    float normHost;\n    if (otckd_read_f32(" << norm
       << ", &normHost) != 0)\n      " << target.ret("OTC_STEP_ERR_DEVICE")
       << "\n    if (!(normHost - normHost == 0.0f))\n      "
       << target.ret("OTC_STEP_SKIPPED_NONFINITE") << "\n";
  else
    os << "    if (!(" << norm << "[0] - " << norm << "[0] == 0.0f))\n"
       << "      return OTC_STEP_SKIPPED_NONFINITE;\n";
  if (float m = f32("max_norm"); m > 0)
    os << "    " << fn("clip_by_norm_f32") << "(" << n << ", grads, " << sz
       << ", " << norm << ", " << floatLiteral(m) << ");\n";
  else if (float v = f32("max_value"); v > 0)
    os << "    " << fn("clip_by_value_f32") << "(" << n << ", grads, " << sz
       << ", " << floatLiteral(v) << ");\n";
  return success();
}
