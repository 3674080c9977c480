//===- BuildTraining.cpp - loss, reverse-mode AD and optimizer ------------===//
//
// Turns @forward into @train_step (forward, loss, backward, optimizer
// updates) and @eval_step (forward with dropout off, plus the loss).
//
//===----------------------------------------------------------------------===//

#include "dialects/Attributes.h"
#include "dialects/dist/SdpAttributes.h"
#include "dialects/graph/ElementTypes.h"
#include "dialects/graph/GraphDialect.h"
#include "passes/Passes.h"
#include "passes/training/Optimizers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/GlobPattern.h"

#include <cmath>
#include <optional>

namespace otc {
#define GEN_PASS_DEF_BUILDTRAINING
#include "passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;
using namespace otc::graph;

namespace {

/// Optimizer state slots per parameter, named as torch.optim (or the
/// paper) names them; RMSprop's depend on `centered` and on whether it keeps
/// a momentum buffer. With an EMA of the weights, its slot comes last.
SmallVector<StringRef> stateSlots(StringRef optimizer, bool centered,
                                  bool momentumBuffer, bool ema) {
  SmallVector<StringRef> slots;
  if (optimizer == "momentum")
    slots = {"momentum_buffer"};
  else if (optimizer == "adam" || optimizer == "adamw" || optimizer == "lamb")
    slots = {"exp_avg", "exp_avg_sq"};
  else if (optimizer == "lion")
    slots = {"exp_avg"};
  else if (optimizer == "adagrad")
    slots = {"sum"};
  else if (optimizer == "rmsprop") {
    slots = {"square_avg"};
    if (centered)
      slots.push_back("grad_avg");
    if (momentumBuffer)
      slots.push_back("momentum_buffer");
  }
  if (ema)
    slots.push_back("ema");
  return slots;
}

/// The argument attributes of `fn`, an empty dictionary where it has none.
SmallVector<DictionaryAttr> argAttrDicts(func::FuncOp fn) {
  SmallVector<DictionaryAttr> attrs;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    attrs.push_back(fn.getArgAttrDict(i)
                        ? fn.getArgAttrDict(i)
                        : DictionaryAttr::get(fn.getContext()));
  return attrs;
}

/// The attributes of the label input the loss adds.
DictionaryAttr labelAttrs(Builder &b, StringRef label) {
  return b.getDictionaryAttr(
      {b.getNamedAttr(attr::kInput, b.getStringAttr(label)),
       b.getNamedAttr(attr::kRole, b.getStringAttr("label"))});
}

/// A step function `name` whose leading arguments mirror @forward's (mapped
/// in `map`), with the builder at the start of its body.
func::FuncOp createStep(OpBuilder &b, func::FuncOp forward, StringRef name,
                        ArrayRef<Type> argTypes,
                        ArrayRef<DictionaryAttr> argAttrs, IRMapping &map) {
  auto fn = b.create<func::FuncOp>(forward.getLoc(), name,
                                   b.getFunctionType(argTypes, {}));
  fn.setAllArgAttrs(argAttrs);
  b.setInsertionPointToStart(fn.addEntryBlock());
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    map.map(forward.getArgument(i), fn.getArgument(i));
  return fn;
}

/// The parameters a comma-separated list of patterns names (--freeze,
/// --no-weight-decay, --lr-scale): globs on initializer names, or the
/// shorthands `bias` (names ending in "bias", biases of gemm and conv),
/// `norm` (scales and biases of normalization layers, names with a part
/// containing "norm") and `1d` (rank 0 or 1, as nanoGPT decays only
/// matrices). With factors, each pattern is PATTERN=F.
class ParamPatterns {
public:
  static FailureOr<ParamPatterns> parse(func::FuncOp forward, StringRef flag,
                                        StringRef list, bool withFactors);
  bool empty() const { return patterns.empty(); }
  /// The factor of the first pattern naming `name` (1 without factors);
  /// none when no pattern does.
  std::optional<double> lookup(StringRef name) const {
    for (const Pattern &p : patterns)
      if (p.names.contains(name))
        return p.factor;
    return std::nullopt;
  }

private:
  struct Pattern {
    std::string text;
    double factor = 1;
    llvm::StringSet<> names;
  };
  SmallVector<Pattern> patterns;
};

FailureOr<ParamPatterns> ParamPatterns::parse(func::FuncOp forward,
                                              StringRef flag, StringRef list,
                                              bool withFactors) {
  ParamPatterns out;
  if (list.trim().empty())
    return out;
  // What each trainable parameter is: its name, rank, and whether it is a
  // bias or a normalization scale by its use.
  llvm::StringSet<> biases, norms;
  auto note = [&](Value v, llvm::StringSet<> &set) {
    if (auto arg = llvm::dyn_cast_or_null<BlockArgument>(v))
      if (auto n = forward.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        attr::kParam))
        set.insert(n.getValue());
  };
  forward.walk([&](Operation *op) {
    if (auto g = llvm::dyn_cast<GemmOp>(op))
      note(g.getC(), biases);
    else if (auto c = llvm::dyn_cast<ConvOp>(op))
      note(c.getBias(), biases);
    else if (auto c = llvm::dyn_cast<ConvTransposeOp>(op))
      note(c.getBias(), biases);
    else if (auto n = llvm::dyn_cast<BatchNormOp>(op)) {
      note(n.getScale(), norms);
      note(n.getBias(), norms);
    } else if (auto n = llvm::dyn_cast<LayerNormOp>(op)) {
      note(n.getScale(), norms);
      note(n.getBias(), norms);
    } else if (auto n = llvm::dyn_cast<InstanceNormOp>(op)) {
      note(n.getScale(), norms);
      note(n.getBias(), norms);
    }
  });
  SmallVector<std::pair<std::string, int64_t>> params;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    if (auto n = forward.getArgAttrOfType<StringAttr>(i, attr::kParam))
      if (!forward.getArgAttr(i, attr::kBuffer))
        params.push_back({n.getValue().str(), llvm::cast<RankedTensorType>(
                                                  forward.getArgumentTypes()[i])
                                                  .getRank()});
  SmallVector<StringRef> items;
  list.split(items, ',', -1, /*KeepEmpty=*/false);
  for (StringRef item : items) {
    item = item.trim();
    Pattern p;
    p.text = item.str();
    StringRef glob = item;
    if (withFactors) {
      auto [lhs, rhs] = item.rsplit('=');
      double f;
      if (rhs.empty() || lhs == item || rhs.trim().getAsDouble(f) ||
          !std::isfinite(f) || f < 0)
        return mlir::emitError(forward.getLoc(), "--")
               << flag << " '" << item
               << "': expected PATTERN=FACTOR with a factor >= 0";
      p.factor = f;
      glob = lhs.trim();
    }
    auto matcher = llvm::GlobPattern::create(glob);
    if (!matcher) {
      std::string why = llvm::toString(matcher.takeError());
      return mlir::emitError(forward.getLoc(), "--")
             << flag << " '" << glob << "': " << why;
    }
    for (auto &[name, rank] : params) {
      StringRef n = name;
      bool hit = matcher->match(n);
      if (glob == "bias")
        hit |= biases.contains(n) || n.ends_with_insensitive("bias");
      if (glob == "norm") {
        SmallVector<StringRef> parts;
        n.split(parts, '.');
        hit |= norms.contains(n) ||
               (rank <= 1 && llvm::any_of(parts, [](StringRef s) {
                  return s.contains_insensitive("norm");
                }));
      }
      if (glob == "1d")
        hit |= rank <= 1;
      if (hit)
        p.names.insert(n);
    }
    if (p.names.empty()) {
      std::string known;
      for (auto [k, param] : llvm::enumerate(params)) {
        if (k == 8) {
          known += ", ...";
          break;
        }
        known += (k ? ", " : "") + param.first;
      }
      return mlir::emitError(forward.getLoc(), "--")
             << flag << " pattern '" << glob
             << "' matches no parameter (parameters: " << known << ")";
    }
    out.patterns.push_back(std::move(p));
  }
  return out;
}

struct BuildTraining : otc::impl::BuildTrainingBase<BuildTraining> {
  using Base::Base;

  void runOnOperation() override;

private:
  LogicalResult validateOptions(ModuleOp module, func::FuncOp forward);
  FailureOr<Value> buildLoss(OpBuilder &b, Location loc, Value output,
                             Value label);
  /// `accumulateOnly`: @accumulate_step (--accumulate N > 1), which adds
  /// the micro-batch's gradients to the accumulators and updates nothing.
  LogicalResult buildTrainStep(ModuleOp module, func::FuncOp forward,
                               StringRef name, bool accumulateOnly = false);
  LogicalResult buildEvalStep(ModuleOp module, func::FuncOp forward);
  void buildCalibrateStep(ModuleOp module, func::FuncOp forward);
  Type labelType(func::FuncOp forward);
  LogicalResult parseGroups(func::FuncOp forward);

  /// --freeze, --no-weight-decay, --lr-scale.
  ParamPatterns frozen, noDecay, lrScales;
};

} // namespace

LogicalResult BuildTraining::validateOptions(ModuleOp module,
                                             func::FuncOp forward) {
  // Options left unset take the optimizer's defaults. (A pass built from an
  // options struct has every option set: the pipelines resolve them first,
  // TrainingPipelineOptions::applyDefaults.)
  for (Option<double> *o : {&beta1, &beta2, &eps, &momentum})
    if (!o->hasValue())
      if (std::optional<double> v = optimizerDefault(optimizer, o->ArgStr))
        *o = *v;
  if (!llvm::is_contained(
          {"cross-entropy", "mse", "l1", "bce-with-logits", "nll", "none"},
          loss))
    return mlir::emitError(module.getLoc(), "unknown loss '")
           << loss
           << "' (expected cross-entropy, mse, l1, bce-with-logits, nll or "
              "none)";
  if (!llvm::is_contained(kOptimizers, optimizer)) {
    auto diag = mlir::emitError(module.getLoc(), "unknown optimizer '")
                << optimizer << "' (expected ";
    for (auto [i, name] : llvm::enumerate(kOptimizers))
      diag << (i == 0                            ? ""
               : i + 1 == std::size(kOptimizers) ? " or "
                                                 : ", ")
           << name;
    return diag << ")";
  }
  if (accumulate < 1)
    return mlir::emitError(module.getLoc(),
                           "--accumulate must be at least 1, got ")
           << static_cast<int64_t>(accumulate);
  if (!(lr > 0.0))
    return mlir::emitError(module.getLoc(),
                           "learning rate must be positive, got ")
           << lr;
  if (weightDecay < 0.0)
    return mlir::emitError(module.getLoc(),
                           "weight decay must be non-negative, got ")
           << weightDecay;
  if (!(eps > 0.0))
    return mlir::emitError(module.getLoc(), "epsilon must be positive, got ")
           << eps;
  if (!(momentum >= 0.0 && momentum < 1.0))
    return mlir::emitError(module.getLoc(), "momentum must be in [0, 1), got ")
           << momentum;
  if (!(beta1 >= 0.0 && beta1 < 1.0) || !(beta2 >= 0.0 && beta2 < 1.0))
    return mlir::emitError(module.getLoc(), "betas must be in [0, 1), got ")
           << beta1 << ", " << beta2;
  if (!(alpha >= 0.0 && alpha < 1.0))
    return mlir::emitError(module.getLoc(),
                           "RMSprop alpha must be in [0, 1), got ")
           << alpha;
  if (!(lrDecay >= 0.0))
    return mlir::emitError(module.getLoc(),
                           "Adagrad lr decay must be non-negative, got ")
           << lrDecay;
  if (centered && optimizer != "rmsprop")
    return mlir::emitError(module.getLoc(), "centered is an RMSprop option; "
                                            "the optimizer is ")
           << optimizer;
  if (ema != 0.0 && !(ema > 0.0 && ema < 1.0))
    return mlir::emitError(module.getLoc(),
                           "the EMA decay must be in (0, 1), got ")
           << ema;
  bool sdp = module->hasAttr(attr::kSdp) ||
             forward.getSymName().starts_with(attr::kForwardRankPrefix);
  if (ema > 0.0 && sdp)
    return mlir::emitError(module.getLoc(),
                           "an EMA of the weights is not supported with SDP "
                           "(each rank holds only its subnetwork's)");
  // LAMB's trust ratio is one norm ratio per whole tensor: on the part of a
  // parameter that an SDP rank holds or trains it differs from the whole
  // model's (and between the part's owners).
  if (optimizer == "lamb")
    for (unsigned i = 0; i < forward.getNumArguments(); ++i)
      if (auto name = forward.getArgAttrOfType<StringAttr>(i, attr::kParam))
        if (forward.getArgAttr(i, attr::kSdpTrains) ||
            forward.getArgAttr(i, attr::kSdpSlices))
          return mlir::emitError(forward.getLoc(), "LAMB with SDP: this rank ")
                 << (forward.getArgAttr(i, attr::kSdpTrains) ? "trains"
                                                             : "holds")
                 << " only part of parameter '" << name.getValue()
                 << "', but LAMB's trust ratio is per whole tensor; use "
                    "block SDP (--sdp block) or another optimizer";
  if (forward.getNumResults() == 0)
    return mlir::emitError(forward.getLoc(), "@forward has no output to train");
  bool anyParam = false;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    anyParam |= static_cast<bool>(forward.getArgAttr(i, attr::kParam));
  if (!anyParam)
    return mlir::emitError(forward.getLoc(),
                           "the model has no trainable parameters "
                           "(float initializers)");
  auto out = llvm::cast<RankedTensorType>(forward.getResultTypes()[0]);
  if ((loss == "cross-entropy" || loss == "nll") &&
      (out.getRank() < 2 || !out.getElementType().isF32()))
    return mlir::emitError(forward.getLoc(), "")
           << loss << " needs a [batch, ..., classes] float output, the "
           << "model's first output is " << out;
  if (loss != "none" && !out.getElementType().isF32())
    return mlir::emitError(forward.getLoc(), "")
           << loss << " needs a float output, the model's first output is "
           << out;
  if (loss == "none" && out.getNumElements() != 1)
    return mlir::emitError(forward.getLoc(),
                           "--loss none needs a scalar first output (the "
                           "model's own loss), got ")
           << out;
  if (loss != "none")
    for (unsigned i = 0; i < forward.getNumArguments(); ++i)
      for (StringRef kind : {attr::kInput, attr::kParam})
        if (auto name = forward.getArgAttrOfType<StringAttr>(i, kind))
          if (name.getValue() == label)
            return mlir::emitError(forward.getLoc(),
                                   "the model already has an input or "
                                   "parameter named '")
                   << label << "'; choose another --label";
  return success();
}

LogicalResult BuildTraining::parseGroups(func::FuncOp forward) {
  FailureOr<ParamPatterns> f =
      ParamPatterns::parse(forward, "freeze", freeze, false);
  FailureOr<ParamPatterns> d =
      ParamPatterns::parse(forward, "no-weight-decay", noWeightDecay, false);
  FailureOr<ParamPatterns> l =
      ParamPatterns::parse(forward, "lr-scale", lrScale, true);
  if (failed(f) || failed(d) || failed(l))
    return failure();
  frozen = std::move(*f);
  noDecay = std::move(*d);
  lrScales = std::move(*l);
  // Every step made from the forward (and each SDP rank's) marks them.
  bool anyTrained = false;
  auto mark = [&](func::FuncOp fn) {
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (auto n = fn.getArgAttrOfType<StringAttr>(i, attr::kParam);
          n && !fn.getArgAttr(i, attr::kBuffer)) {
        bool isFrozen = frozen.lookup(n.getValue()).has_value();
        anyTrained |= !isFrozen;
        if (isFrozen)
          fn.setArgAttr(i, attr::kFrozen, UnitAttr::get(fn.getContext()));
      }
  };
  mark(forward);
  for (auto fn : forward->getParentOfType<ModuleOp>().getOps<func::FuncOp>())
    if (fn.getSymName().starts_with(attr::kForwardRankPrefix))
      mark(fn);
  if (!anyTrained)
    return mlir::emitError(forward.getLoc(),
                           "--freeze freezes every parameter: nothing would "
                           "train");
  return success();
}

Type BuildTraining::labelType(func::FuncOp forward) {
  auto out = llvm::cast<RankedTensorType>(forward.getResultTypes()[0]);
  if (loss == "cross-entropy" || loss == "nll") // a class per position
    return RankedTensorType::get(out.getShape().drop_back(),
                                 IntegerType::get(&getContext(), 64));
  if (loss == "mse" || loss == "l1" || loss == "bce-with-logits")
    return out; // targets of the output's shape
  return {};
}

FailureOr<Value> BuildTraining::buildLoss(OpBuilder &b, Location loc,
                                          Value output, Value label) {
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  if (loss == "cross-entropy") {
    // [batch, ..., classes]: every position is a sample (sequence models).
    auto out = llvm::cast<RankedTensorType>(output.getType());
    if (out.getRank() > 2) {
      int64_t classes = out.getShape().back();
      int64_t rows = out.getNumElements() / std::max<int64_t>(classes, 1);
      output = b.create<ReshapeOp>(loc, out.clone({rows, classes}), output);
      label = b.create<ReshapeOp>(
          loc, llvm::cast<RankedTensorType>(label.getType()).clone({rows}),
          label);
    }
    return b
        .create<SoftmaxCrossEntropyOp>(loc, scalar, output.getType(), output,
                                       label)
        .getLoss();
  }
  if (loss == "mse")
    return b.create<MseOp>(loc, scalar, output, label).getLoss();
  auto out = llvm::cast<RankedTensorType>(output.getType());
  SmallVector<int64_t> all;
  for (int64_t d = 0; d < out.getRank(); ++d)
    all.push_back(d);
  auto mean = [&](Value v) -> Value {
    return b.create<ReduceOp>(loc, scalar, b.getStringAttr("mean"), v,
                              b.getDenseI64ArrayAttr(all),
                              b.getBoolAttr(false));
  };
  if (loss == "l1") // torch.nn.L1Loss: mean |pred - target|
    return mean(b.create<AbsOp>(loc, b.create<SubOp>(loc, output, label)));
  if (loss == "bce-with-logits") {
    // torch.nn.BCEWithLogitsLoss, the stable form:
    // mean(max(x, 0) - x * t + log(1 + exp(-|x|))).
    Value softplus = b.create<SoftplusOp>(
        loc, b.create<NegOp>(loc, b.create<AbsOp>(loc, output)));
    Value v =
        b.create<AddOp>(loc,
                        b.create<SubOp>(loc, b.create<ReluOp>(loc, output),
                                        b.create<MulOp>(loc, output, label)),
                        softplus);
    return mean(v);
  }
  if (loss == "nll") {
    // torch.nn.NLLLoss on log-probabilities: -mean(logp[i, label_i]).
    auto lt = llvm::cast<RankedTensorType>(label.getType());
    SmallVector<int64_t> shape(lt.getShape());
    shape.push_back(1);
    Value idx = b.create<ReshapeOp>(loc, lt.clone(shape), label);
    Value picked =
        b.create<GatherElementsOp>(loc, out.clone(shape), output, idx,
                                   b.getI64IntegerAttr(out.getRank() - 1));
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d < out.getRank(); ++d)
      dims.push_back(d);
    Value m =
        b.create<ReduceOp>(loc, scalar, b.getStringAttr("mean"), picked,
                           b.getDenseI64ArrayAttr(dims), b.getBoolAttr(false));
    return b.create<NegOp>(loc, m).getResult();
  }
  if (output.getType() == scalar)
    return output;
  return b.create<ReshapeOp>(loc, scalar, output).getResult();
}

/// SDP backward masking of neuron groups: the part of a parameter a rank
/// trains, as `dist.sdp_slices`-style records (axis, kept ranges), or null.
/// Dropout outside training is its input; the scale it applied (its mask
/// result, which an exported model may read) is 1 everywhere.
static void mapDropoutToIdentity(OpBuilder &b, DropoutOp d, IRMapping &map) {
  map.map(d.getResult(), map.lookup(d.getInput()));
  if (d.getMask().use_empty())
    return;
  auto type = llvm::cast<RankedTensorType>(d.getMask().getType());
  map.map(d.getMask(),
          b.create<ConstantOp>(d.getLoc(), DenseElementsAttr::get(
                                               type, b.getF32FloatAttr(1.0f))));
}

static ArrayAttr trainedPart(func::FuncOp forward, unsigned arg) {
  auto trains = forward.getArgAttrOfType<DictionaryAttr>(arg, attr::kSdpTrains);
  return trains ? trains.getAs<ArrayAttr>("slices") : ArrayAttr();
}

static std::pair<int64_t, ArrayRef<int64_t>> sliceRecord(Attribute record) {
  auto d = llvm::cast<DictionaryAttr>(record);
  return {d.getAs<IntegerAttr>("axis").getInt(),
          d.getAs<DenseI64ArrayAttr>("ranges").asArrayRef()};
}

/// `len` elements of v along `axis` from `start`.
static Value sliceAxis(OpBuilder &b, Location loc, Value v, int64_t axis,
                       int64_t start, int64_t len) {
  auto t = llvm::cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> starts(t.getRank(), 0), shape(t.getShape());
  starts[axis] = start;
  shape[axis] = len;
  return b.create<SliceOp>(
      loc, t.clone(shape), v, b.getDenseI64ArrayAttr(starts),
      b.getDenseI64ArrayAttr(SmallVector<int64_t>(t.getRank(), 1)));
}

static Value concatAxis(OpBuilder &b, Location loc, ArrayRef<Value> pieces,
                        int64_t axis) {
  if (pieces.size() == 1)
    return pieces.front();
  auto t = llvm::cast<RankedTensorType>(pieces.front().getType());
  SmallVector<int64_t> shape(t.getShape());
  shape[axis] = 0;
  for (Value p : pieces)
    shape[axis] += llvm::cast<RankedTensorType>(p.getType()).getDimSize(axis);
  return b.create<ConcatOp>(loc, t.clone(shape), pieces,
                            b.getI64IntegerAttr(axis));
}

/// Whether v is a slice_grad of unit steps that differs from its result
/// along one axis alone (a piece of a Split's input), not yet used; its
/// axis and start then.
static bool axisPiece(Value v, int64_t &axis, int64_t &start) {
  auto sg = v.getDefiningOp<SliceGradOp>();
  if (!sg || !v.use_empty())
    return false;
  auto full = llvm::cast<RankedTensorType>(sg.getType());
  auto part = llvm::cast<RankedTensorType>(sg.getGrad().getType());
  axis = -1;
  for (int64_t d = 0; d < full.getRank(); ++d) {
    if (sg.getSteps()[d] != 1)
      return false;
    if (full.getDimSize(d) == part.getDimSize(d)) {
      if (sg.getStarts()[d] != 0)
        return false;
      continue;
    }
    if (axis >= 0)
      return false;
    axis = d;
  }
  start = axis >= 0 ? sg.getStarts()[axis] : 0;
  return axis >= 0;
}

/// acc + grad. The gradients of slices of one tensor that lie side by side
/// along one axis (a Split's outputs) are one concatenation of the slices'
/// gradients, put in zeros only where they do not cover the axis: no sum
/// of zero-filled tensors. The ops this replaces go to `replaced`; another
/// operand's gradient may still be one of them, so they are erased only
/// once the step is built, where nothing uses them.
static Value addGradient(OpBuilder &b, Location loc, Value acc, Value grad,
                         SmallVectorImpl<Operation *> &replaced) {
  int64_t axis, start, gAxis, gStart;
  if (!axisPiece(acc, axis, start) || !axisPiece(grad, gAxis, gStart) ||
      gAxis != axis || acc.getType() != grad.getType())
    return b.create<AddOp>(loc, acc, grad);
  auto lengthOf = [&](Value piece) {
    return llvm::cast<RankedTensorType>(piece.getType()).getDimSize(axis);
  };
  auto first = acc.getDefiningOp<SliceGradOp>();
  auto second = grad.getDefiningOp<SliceGradOp>();
  if (gStart + lengthOf(second.getGrad()) == start) {
    std::swap(first, second);
    std::swap(start, gStart);
  } else if (start + lengthOf(first.getGrad()) != gStart) {
    return b.create<AddOp>(loc, acc, grad);
  }
  // A piece that is itself a concatenation along the axis, used only here,
  // gives its own pieces.
  SmallVector<Value> pieces;
  replaced.append({first, second});
  for (Value p : {first.getGrad(), second.getGrad()}) {
    auto cat = p.getDefiningOp<ConcatOp>();
    if (cat && int64_t(cat.getAxis()) == axis && p.hasOneUse()) {
      llvm::append_range(pieces, cat.getInputs());
      replaced.push_back(cat);
    } else {
      pieces.push_back(p);
    }
  }
  Value joined = concatAxis(b, loc, pieces, axis);
  auto full = llvm::cast<RankedTensorType>(acc.getType());
  Value sum = joined;
  if (start != 0 || lengthOf(joined) != full.getDimSize(axis)) {
    SmallVector<int64_t> starts(full.getRank(), 0);
    starts[axis] = start;
    sum = b.create<SliceGradOp>(
        loc, full, joined, b.getDenseI64ArrayAttr(starts),
        b.getDenseI64ArrayAttr(SmallVector<int64_t>(full.getRank(), 1)));
  }
  return sum;
}

/// `len` elements of v along `axis` from `start`, computed from the
/// matching part of v's operands when v is a product whose other users are
/// none (`owned`): a part of a weight gradient costs only its share of the
/// product. Through transposes, sums over broadcast dims and concatenations
/// along other axes to gemm, matmul and conv weight-gradient products.
static Value slicePart(OpBuilder &b, Location loc, Value v, int64_t axis,
                       int64_t start, int64_t len, bool owned) {
  Operation *op = v.getDefiningOp();
  auto sliced = [&](Type t) {
    auto rt = llvm::cast<RankedTensorType>(t);
    SmallVector<int64_t> shape(rt.getShape());
    shape[axis] = len;
    return rt.clone(shape);
  };
  // An operand's part: pushed further only through values nothing else
  // uses.
  auto part = [&](Value x, int64_t at) {
    return slicePart(b, loc, x, at, start, len, x.hasOneUse());
  };
  if (!owned || !op)
    return sliceAxis(b, loc, v, axis, start, len);
  if (auto t = llvm::dyn_cast<TransposeOp>(op))
    return b.create<TransposeOp>(loc, sliced(v.getType()),
                                 part(t.getInput(), t.getPerm()[axis]),
                                 t.getPermAttr());
  if (auto r = llvm::dyn_cast<ReduceSumToOp>(op)) {
    auto in = llvm::cast<RankedTensorType>(r.getInput().getType());
    int64_t at = axis + in.getRank() -
                 llvm::cast<RankedTensorType>(v.getType()).getRank();
    if (in.getDimSize(at) ==
        llvm::cast<RankedTensorType>(v.getType()).getDimSize(axis))
      return b.create<ReduceSumToOp>(loc, sliced(v.getType()),
                                     part(r.getInput(), at));
  }
  if (auto c = llvm::dyn_cast<ConcatOp>(op);
      c && (c.getAxis() + llvm::cast<RankedTensorType>(v.getType()).getRank()) %
                   llvm::cast<RankedTensorType>(v.getType()).getRank() !=
               axis) {
    SmallVector<Value> pieces;
    for (Value x : c.getInputs())
      pieces.push_back(part(x, axis));
    return b.create<ConcatOp>(loc, sliced(v.getType()), pieces,
                              c.getAxisAttr());
  }
  if (auto g = llvm::dyn_cast<GemmOp>(op); g && !g.getC()) {
    Value a = g.getA(), bb = g.getB();
    if (axis == 0)
      a = part(a, g.getTransA() ? 1 : 0);
    else
      bb = part(bb, g.getTransB() ? 0 : 1);
    return b.create<GemmOp>(loc, a, bb, Value(), g.getAlphaAttr(),
                            g.getBetaAttr(), g.getTransAAttr(),
                            g.getTransBAttr());
  }
  if (auto m = llvm::dyn_cast<MatMulOp>(op)) {
    int64_t rank = llvm::cast<RankedTensorType>(v.getType()).getRank();
    int64_t ra = llvm::cast<RankedTensorType>(m.getA().getType()).getRank();
    int64_t rb = llvm::cast<RankedTensorType>(m.getB().getType()).getRank();
    if (ra < 2 || rb < 2)
      return sliceAxis(b, loc, v, axis, start, len);
    if (axis == rank - 2)
      return b.create<MatMulOp>(loc,
                                part(m.getA(), m.getTransA() ? ra - 1 : ra - 2),
                                m.getB(), m.getTransAAttr(), m.getTransBAttr());
    if (axis == rank - 1)
      return b.create<MatMulOp>(loc, m.getA(),
                                part(m.getB(), m.getTransB() ? rb - 2 : rb - 1),
                                m.getTransAAttr(), m.getTransBAttr());
  }
  // result[o, i, ...] sums grad[n, o, ...] * input[n, i, ...].
  if (auto w = llvm::dyn_cast<ConvGradWeightOp>(op);
      w && w.getGroup() == 1 && axis <= 1) {
    Value grad = w.getGrad(), input = w.getInput();
    if (axis == 0)
      grad = part(grad, 1);
    else
      input = part(input, 1);
    return b.create<ConvGradWeightOp>(loc, sliced(v.getType()), grad, input,
                                      w.getStridesAttr(), w.getDilationsAttr(),
                                      w.getPadsBeginAttr(), w.getPadsEndAttr(),
                                      w.getGroupAttr());
  }
  return sliceAxis(b, loc, v, axis, start, len);
}

/// The kept ranges of `whole` along each record's axis; with `owned` (a
/// gradient nothing else reads) computed as parts of its product.
static Value takePart(OpBuilder &b, Location loc, Value whole,
                      ArrayAttr records, bool owned = false) {
  for (Attribute r : records) {
    auto [axis, ranges] = sliceRecord(r);
    SmallVector<Value> pieces;
    for (size_t k = 0; k + 1 < ranges.size(); k += 2)
      pieces.push_back(slicePart(b, loc, whole, axis, ranges[k],
                                 ranges[k + 1] - ranges[k], owned));
    whole = concatAxis(b, loc, pieces, axis);
  }
  return whole;
}

/// `whole` with the kept ranges (records from `k` on) replaced by `part`.
static Value putPart(OpBuilder &b, Location loc, Value whole, Value part,
                     ArrayAttr records, size_t k = 0) {
  if (k == records.size())
    return part;
  auto [axis, ranges] = sliceRecord(records[k]);
  int64_t size = llvm::cast<RankedTensorType>(whole.getType()).getDimSize(axis);
  SmallVector<Value> pieces;
  int64_t at = 0, local = 0;
  for (size_t j = 0; j + 1 < ranges.size(); j += 2) {
    int64_t lo = ranges[j], len = ranges[j + 1] - lo;
    if (at < lo)
      pieces.push_back(sliceAxis(b, loc, whole, axis, at, lo - at));
    Value kept = sliceAxis(b, loc, part, axis, local, len);
    pieces.push_back(k + 1 == records.size()
                         ? kept
                         : putPart(b, loc,
                                   sliceAxis(b, loc, whole, axis, lo, len),
                                   kept, records, k + 1));
    at = lo + len;
    local += len;
  }
  if (at < size)
    pieces.push_back(sliceAxis(b, loc, whole, axis, at, size - at));
  return concatAxis(b, loc, pieces, axis);
}

LogicalResult BuildTraining::buildTrainStep(ModuleOp module,
                                            func::FuncOp forward,
                                            StringRef name,
                                            bool accumulateOnly) {
  MLIRContext *ctx = &getContext();
  Location loc = forward.getLoc();
  OpBuilder b(ctx);
  b.setInsertionPointAfter(forward);

  // Arguments: the forward's, then the label, then optimizer state. SDP
  // parameters this rank holds but does not train get neither gradients
  // nor state; they come back unchanged (the owners' values replace them).
  SmallVector<unsigned> paramArgs, frozenArgs;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    if (!forward.getArgAttr(i, attr::kParam) ||
        forward.getArgAttr(i, attr::kBuffer))
      continue;
    if (forward.getArgAttr(i, attr::kSdpFrozen))
      frozenArgs.push_back(i);
    else if (!frozen.lookup(
                 forward.getArgAttrOfType<StringAttr>(i, attr::kParam)
                     .getValue()))
      paramArgs.push_back(i);
    // --freeze: no gradient, no state and no result (it never changes).
  }
  SmallVector<StringRef> slots = stateSlots(
      optimizer, centered, optimizer == "rmsprop" && momentum > 0.0, ema > 0.0);
  SmallVector<Type> argTypes(forward.getArgumentTypes());
  SmallVector<DictionaryAttr> argAttrs = argAttrDicts(forward);
  int labelArg = -1;
  if (Type t = labelType(forward)) {
    labelArg = argTypes.size();
    argTypes.push_back(t);
    argAttrs.push_back(labelAttrs(b, label));
  }
  unsigned firstState = argTypes.size();
  for (unsigned p : paramArgs) {
    StringRef name =
        forward.getArgAttrOfType<StringAttr>(p, attr::kParam).getValue();
    // State for the trained part only.
    auto type = llvm::cast<RankedTensorType>(forward.getArgumentTypes()[p]);
    if (ArrayAttr part = trainedPart(forward, p))
      type = dist::slicedType(type, part);
    for (StringRef slot : slots) {
      argTypes.push_back(type);
      argAttrs.push_back(b.getDictionaryAttr(
          b.getNamedAttr(attr::kState, b.getStringAttr(name + "." + slot))));
    }
  }

  // Gradient accumulation: one accumulator per trained parameter (part).
  unsigned firstAcc = argTypes.size();
  if (accumulate > 1)
    for (unsigned p : paramArgs) {
      StringRef name =
          forward.getArgAttrOfType<StringAttr>(p, attr::kParam).getValue();
      auto type = llvm::cast<RankedTensorType>(forward.getArgumentTypes()[p]);
      if (ArrayAttr part = trainedPart(forward, p))
        type = dist::slicedType(type, part);
      argTypes.push_back(type);
      argAttrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr(attr::kState, b.getStringAttr(name + ".grad_accum")),
           b.getNamedAttr(attr::kRole,
                          b.getStringAttr(attr::kAccumulatorRole))}));
    }

  // Forward.
  IRMapping map;
  func::FuncOp fn = createStep(b, forward, name, argTypes, argAttrs, map);
  Block *body = &fn.front();
  auto ret = llvm::cast<func::ReturnOp>(forward.front().getTerminator());
  for (Operation &op : forward.front().without_terminator())
    b.clone(op, map);
  Value output = map.lookup(ret.getOperand(0));
  FailureOr<Value> lossValue = buildLoss(
      b, loc, output, labelArg >= 0 ? fn.getArgument(labelArg) : Value());
  if (failed(lossValue))
    return failure();

  // Values that depend on a parameter need gradients.
  DenseSet<Value> needsGrad;
  for (unsigned p : paramArgs)
    needsGrad.insert(fn.getArgument(p));
  SmallVector<Operation *> forwardOps;
  for (Operation &op : *body) {
    forwardOps.push_back(&op);
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return needsGrad.contains(v); }))
      needsGrad.insert(op.result_begin(), op.result_end());
  }
  if (!needsGrad.contains(*lossValue))
    return mlir::emitError(forward.getLoc(),
                           "the loss does not depend on any parameter");

  // Reverse sweep: gradients are appended after the forward.
  DenseMap<Value, Value> grads;
  SmallVector<Operation *> replaced; // by addGradient
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  grads[*lossValue] = b.create<ConstantOp>(
      loc, DenseElementsAttr::get(scalar, b.getF32FloatAttr(1.0f)));
  for (Operation *op : llvm::reverse(forwardOps)) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      resultGrads.push_back(grads.lookup(r));
      any |= static_cast<bool>(resultGrads.back());
    }
    if (!any)
      continue;
    auto differentiable = llvm::dyn_cast<GradientOpInterface>(op);
    if (!differentiable)
      return op->emitError("'")
             << op->getName() << "' has no gradient, but the loss depends "
             << "on parameters through it";
    // Integers carry no gradient: a loss that depends on a parameter only
    // through integer values would silently leave it untrained.
    if (auto cast = llvm::dyn_cast<CastOp>(op))
      if (needsGrad.contains(cast.getInput()) &&
          isIntegerElement(cast.getInput().getType().getElementType()))
        return op->emitError("the loss depends on parameters through "
                             "integer values (a cast from ")
               << cast.getInput().getType().getElementType() << " to "
               << cast.getType().getElementType()
               << "), which have no gradient";
    SmallVector<Value> operandGrads;
    if (failed(differentiable.buildGradients(b, resultGrads, operandGrads)))
      return failure();
    for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads)) {
      if (!grad || !needsGrad.contains(operand))
        continue;
      if (grad.getType() != operand.getType())
        return op->emitError("gradient of type ")
               << grad.getType() << " for an operand of type "
               << operand.getType();
      Value &acc = grads[operand];
      acc = acc ? addGradient(b, op->getLoc(), acc, grad, replaced) : grad;
    }
  }

  // Optimizer updates, in parameter order.
  SmallVector<Value> results;
  SmallVector<int64_t> updates;
  unsigned stateArg = firstState;
  // SDP backward masking: the optimizer sees the part this rank trains,
  // every part taken before the first update (where gradient buckets form).
  // With --accumulate, @train_step's gradient is the mean over the N
  // micro-batches (as N steps on loss / N would accumulate it), also formed
  // before the first update.
  SmallVector<std::pair<Value, Value>> trained;
  for (auto [j, p] : llvm::enumerate(paramArgs)) {
    Value w = fn.getArgument(p);
    Value g = grads.lookup(w);
    if (ArrayAttr part = trainedPart(forward, p)) {
      w = takePart(b, loc, w, part);
      if (g)
        g = takePart(b, loc, g, part, g.use_empty());
    }
    if (accumulate > 1 && !accumulateOnly && g) {
      Value inv = b.create<ConstantOp>(
          loc, DenseElementsAttr::get(
                   RankedTensorType::get({}, b.getF32Type()),
                   b.getF32FloatAttr(1.0f / static_cast<float>(accumulate))));
      g = b.create<MulOp>(
          loc, b.create<AddOp>(loc, fn.getArgument(firstAcc + j), g), inv);
    }
    trained.push_back({w, g});
  }
  for (auto [j, p, wg] : llvm::enumerate(paramArgs, trained)) {
    auto [w, g] = wg;
    ArrayAttr part = trainedPart(forward, p);
    if (accumulate > 1) {
      Value acc = fn.getArgument(firstAcc + j);
      if (accumulateOnly) {
        // Only the sum; the parameters and their state stay as they are.
        if (g) {
          results.push_back(b.create<AddOp>(loc, acc, g));
          updates.push_back(firstAcc + j);
        }
        continue;
      }
      if (g) {
        // g is the mean (above); the accumulator starts the next step at
        // zero.
        auto type = llvm::cast<RankedTensorType>(acc.getType());
        Value zero = b.create<ConstantOp>(
            loc,
            DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()),
                                   b.getF32FloatAttr(0.0f)));
        results.push_back(b.create<ExpandOp>(loc, type, zero));
        updates.push_back(firstAcc + j);
      }
    }
    SmallVector<Value> state;
    for (unsigned s = 0; s < slots.size(); ++s)
      state.push_back(fn.getArgument(stateArg + s));
    SmallVector<Value> next;
    StringRef pname =
        forward.getArgAttrOfType<StringAttr>(p, attr::kParam).getValue();
    FloatAttr lrScale = b.getF32FloatAttr(
                  static_cast<float>(lrScales.lookup(pname).value_or(1.0))),
              wdScale = b.getF32FloatAttr(noDecay.lookup(pname) ? 0.0f : 1.0f);
    // The optimizer's state; an EMA's slot comes last.
    ArrayRef<Value> optState = ArrayRef<Value>(state).drop_back(ema > 0.0);
    if (!g) {
      mlir::emitWarning(fn.getLoc(), "parameter '")
          << forward.getArgAttrOfType<StringAttr>(p, attr::kParam).getValue()
          << "' does not affect the loss and is not updated";
      next.push_back(w);
      next.append(optState.begin(), optState.end());
    } else if (optimizer == "sgd") {
      next.push_back(b.create<SgdUpdateOp>(loc, w, g, lrScale, wdScale));
    } else if (optimizer == "momentum") {
      auto op = b.create<MomentumUpdateOp>(loc, w, g, state[0], lrScale,
                                           wdScale, b.getBoolAttr(nesterov));
      next.append(op->result_begin(), op->result_end());
    } else if (optimizer == "adam" || optimizer == "adamw") {
      Operation *op =
          optimizer == "adam"
              ? b.create<AdamUpdateOp>(loc, w, g, state[0], state[1], lrScale,
                                       wdScale, b.getBoolAttr(true))
                    .getOperation()
              : b.create<AdamWUpdateOp>(loc, w, g, state[0], state[1], lrScale,
                                        wdScale, b.getBoolAttr(true))
                    .getOperation();
      next.append(op->result_begin(), op->result_end());
    } else if (optimizer == "lamb") {
      auto op = b.create<LambUpdateOp>(loc, w, g, state[0], state[1], lrScale,
                                       wdScale);
      next.append(op->result_begin(), op->result_end());
    } else if (optimizer == "lion") {
      auto op = b.create<LionUpdateOp>(loc, w, g, state[0], lrScale, wdScale);
      next.append(op->result_begin(), op->result_end());
    } else if (optimizer == "adagrad") {
      auto op =
          b.create<AdagradUpdateOp>(loc, w, g, state[0], lrScale, wdScale);
      next.append(op->result_begin(), op->result_end());
    } else if (optimizer == "rmsprop") {
      SmallVector<Type> stateTypes(optState.size(), w.getType());
      auto op = b.create<RmspropUpdateOp>(
          loc, w.getType(), stateTypes, w, g, optState, lrScale, wdScale,
          b.getBoolAttr(centered),
          b.getBoolAttr(optState.size() > 1 + size_t(centered)));
      next.append(op->result_begin(), op->result_end());
    }
    // The EMA follows the parameter's new value (AveragedModel's
    // update_parameters after optimizer.step()); a parameter the loss does
    // not reach is followed too, so the EMA holds its value.
    if (ema > 0.0)
      next.push_back(b.create<EmaUpdateOp>(loc, state.back(), next[0],
                                           b.getF32FloatAttr(ema)));
    if (part) {
      if (Operation *update = next[0].getDefiningOp();
          update && graph::isOptimizerUpdate(update))
        update->setAttr(attr::kSdpPartOf, b.getI64IntegerAttr(p));
      next[0] = putPart(b, loc, fn.getArgument(p), next[0], part);
    }
    results.push_back(next[0]);
    updates.push_back(p);
    for (unsigned s = 0; s < slots.size(); ++s) {
      results.push_back(next[1 + s]);
      updates.push_back(stateArg + s);
    }
    stateArg += slots.size();
  }
  for (unsigned p : frozenArgs) {
    if (accumulateOnly)
      break;
    results.push_back(fn.getArgument(p));
    updates.push_back(p);
  }
  // Buffers (BatchNorm running statistics) take the forward's new values.
  DenseMap<Value, Value> bufferUpdates;
  fn.walk([&](BatchNormOp bn) {
    bufferUpdates[bn.getRunningMean()] = bn.getNewMean();
    bufferUpdates[bn.getRunningVar()] = bn.getNewVar();
  });
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    if (!forward.getArgAttr(i, attr::kBuffer))
      continue;
    if (Value next = bufferUpdates.lookup(fn.getArgument(i))) {
      results.push_back(next);
      updates.push_back(i);
    }
  }
  results.push_back(*lossValue);
  b.create<func::ReturnOp>(loc, results);

  SmallVector<Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  fn.setFunctionType(b.getFunctionType(argTypes, resultTypes));
  for (auto [i, arg] : llvm::enumerate(updates))
    fn.setResultAttr(i, attr::kUpdates, b.getI64IntegerAttr(arg));
  fn.setResultAttr(results.size() - 1, attr::kOutput,
                   b.getStringAttr(attr::kLossOutput));
  // Slices' gradients that concatenations replaced, unless still used (a
  // concatenation once its slice_grad is gone); an operand's gradient may
  // have been replaced twice.
  llvm::sort(replaced);
  replaced.erase(std::unique(replaced.begin(), replaced.end()), replaced.end());
  for (bool erased = true; erased;) {
    erased = false;
    for (Operation *&op : replaced)
      if (op && op->use_empty()) {
        op->erase();
        op = nullptr;
        erased = true;
      }
  }
  return success();
}

LogicalResult BuildTraining::buildEvalStep(ModuleOp module,
                                           func::FuncOp forward) {
  MLIRContext *ctx = &getContext();
  Location loc = forward.getLoc();
  OpBuilder b(ctx);
  b.setInsertionPointAfter(forward);
  SmallVector<Type> argTypes(forward.getArgumentTypes());
  SmallVector<DictionaryAttr> argAttrs = argAttrDicts(forward);
  Type lt = labelType(forward);
  if (lt) {
    argTypes.push_back(lt);
    argAttrs.push_back(labelAttrs(b, label));
  }
  IRMapping map;
  func::FuncOp fn =
      createStep(b, forward, attr::kEvalFn, argTypes, argAttrs, map);
  for (Operation &op : forward.front().without_terminator()) {
    if (auto dropout = llvm::dyn_cast<DropoutOp>(op)) {
      mapDropoutToIdentity(b, dropout, map);
      continue;
    }
    // Evaluation normalises with the running statistics.
    if (auto bn = llvm::dyn_cast<BatchNormOp>(op)) {
      if (!bn.getNewMean().use_empty() || !bn.getNewVar().use_empty() ||
          !bn.getSavedMean().use_empty() || !bn.getSavedInvstd().use_empty())
        return bn.emitOpError("the model reads BatchNorm's running or saved "
                              "statistics; only its normalised output is "
                              "supported in evaluation");
      auto lookup = [&](Value v) { return map.lookup(v); };
      map.map(bn.getResult(),
              b.create<BatchNormInferenceOp>(
                   bn.getLoc(), bn.getResult().getType(), lookup(bn.getInput()),
                   lookup(bn.getScale()), lookup(bn.getBias()),
                   lookup(bn.getRunningMean()), lookup(bn.getRunningVar()),
                   bn.getEpsilonAttr())
                  .getResult());
      continue;
    }
    b.clone(op, map);
  }
  auto ret = llvm::cast<func::ReturnOp>(forward.front().getTerminator());
  SmallVector<Value> results{map.lookup(ret.getOperand(0))};
  if (lt) {
    FailureOr<Value> l =
        buildLoss(b, loc, results[0], fn.getArgument(argTypes.size() - 1));
    if (failed(l))
      return failure();
    results.push_back(*l);
  }
  b.create<func::ReturnOp>(loc, results);
  SmallVector<Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  fn.setFunctionType(b.getFunctionType(argTypes, resultTypes));
  fn.setResultAttr(0, attr::kOutput, b.getStringAttr(attr::kEvalOutput));
  if (lt)
    fn.setResultAttr(1, attr::kOutput, b.getStringAttr(attr::kEvalLossOutput));
  return success();
}

/// SDP's whole model was never trained as a whole: its BatchNorm running
/// statistics come from the subnetworks. @calibrate_step runs the forward
/// in training mode and returns only the new statistics, so the runtime can
/// re-estimate them on the assembled model (as slimmable networks do).
void BuildTraining::buildCalibrateStep(ModuleOp module, func::FuncOp forward) {
  OpBuilder b(&getContext());
  b.setInsertionPointAfter(forward);
  IRMapping map;
  func::FuncOp fn =
      createStep(b, forward, attr::kCalibrateFn, forward.getArgumentTypes(),
                 argAttrDicts(forward), map);
  DenseMap<Value, Value> next;
  for (Operation &op : forward.front().without_terminator()) {
    if (auto dropout = llvm::dyn_cast<DropoutOp>(op)) {
      mapDropoutToIdentity(b, dropout, map);
      continue;
    }
    Operation *clone = b.clone(op, map);
    if (auto bn = llvm::dyn_cast<BatchNormOp>(clone)) {
      next[bn.getRunningMean()] = bn.getNewMean();
      next[bn.getRunningVar()] = bn.getNewVar();
    }
  }
  SmallVector<Value> results;
  SmallVector<int64_t> updates;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    if (forward.getArgAttr(i, attr::kBuffer))
      if (Value v = next.lookup(fn.getArgument(i))) {
        results.push_back(v);
        updates.push_back(i);
      }
  b.create<func::ReturnOp>(forward.getLoc(), results);
  SmallVector<Type> types;
  for (Value v : results)
    types.push_back(v.getType());
  fn.setFunctionType(b.getFunctionType(forward.getArgumentTypes(), types));
  for (auto [i, arg] : llvm::enumerate(updates))
    fn.setResultAttr(i, attr::kUpdates, b.getI64IntegerAttr(arg));
}

void BuildTraining::runOnOperation() {
  ModuleOp module = getOperation();
  setProgramSeed(module, seed);
  auto forward = module.lookupSymbol<func::FuncOp>(attr::kForwardFn);
  if (!forward) {
    mlir::emitError(module.getLoc(), "no @forward function to train");
    return signalPassFailure();
  }
  // SDP: one training step per rank variant (@forward_rank<r>).
  SmallVector<func::FuncOp> variants;
  for (auto fn : module.getOps<func::FuncOp>())
    if (fn.getSymName().starts_with(attr::kForwardRankPrefix))
      variants.push_back(fn);
  // Each function is inserted right after its forward: eval first, so that
  // @train_step comes first in the module.
  if (failed(validateOptions(module, forward)) ||
      failed(parseGroups(forward)) || failed(buildEvalStep(module, forward)))
    return signalPassFailure();
  if (accumulate > 1 && !variants.empty()) {
    mlir::emitError(module.getLoc(),
                    "--accumulate does not combine with SDP yet");
    return signalPassFailure();
  }
  if (accumulate > 1 &&
      failed(buildTrainStep(module, forward, attr::kAccumulateFn,
                            /*accumulateOnly=*/true)))
    return signalPassFailure();
  if (variants.empty() &&
      failed(buildTrainStep(module, forward, attr::kTrainFn)))
    return signalPassFailure();
  bool hasBuffers = false;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    hasBuffers |= static_cast<bool>(forward.getArgAttr(i, attr::kBuffer));
  if (!variants.empty() && hasBuffers)
    buildCalibrateStep(module, forward);
  for (func::FuncOp variant : variants) {
    std::string name =
        (attr::kTrainRankPrefix +
         variant.getSymName().drop_front(attr::kForwardRankPrefix.size()))
            .str();
    if (failed(validateOptions(module, variant)) ||
        failed(buildTrainStep(module, variant, name)))
      return signalPassFailure();
    variant.erase();
  }

  Builder b(&getContext());
  auto f = [&](double v) { return b.getF64FloatAttr(v); };
  module->setAttr(
      attr::kTraining,
      b.getDictionaryAttr({
          b.getNamedAttr("loss", b.getStringAttr(loss)),
          b.getNamedAttr("label", b.getStringAttr(label)),
          b.getNamedAttr("optimizer", b.getStringAttr(optimizer)),
          b.getNamedAttr("lr", f(lr)),
          b.getNamedAttr("momentum", f(momentum)),
          b.getNamedAttr("nesterov", b.getBoolAttr(nesterov)),
          b.getNamedAttr("weight_decay", f(weightDecay)),
          b.getNamedAttr("beta1", f(beta1)),
          b.getNamedAttr("beta2", f(beta2)),
          b.getNamedAttr("eps", f(eps)),
          b.getNamedAttr("alpha", f(alpha)),
          b.getNamedAttr("lr_decay", f(lrDecay)),
          b.getNamedAttr("centered", b.getBoolAttr(centered)),
          b.getNamedAttr(
              "momentum_buffer",
              b.getBoolAttr(optimizer == "momentum" ||
                            (optimizer == "rmsprop" && momentum > 0.0))),
          b.getNamedAttr("ema", f(ema)),
          b.getNamedAttr("accumulate", b.getI64IntegerAttr(accumulate)),
      }));
  forward.erase();
}
