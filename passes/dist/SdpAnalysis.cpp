//===- SdpAnalysis.cpp - droppable components for SDP ---------------------===//

#include "passes/dist/SdpAnalysis.h"

#include "dialects/Attributes.h"
#include "dialects/graph/GraphDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"

#include <variant>

using namespace mlir;
using namespace otc;
using namespace otc::sdp;

StringRef otc::sdp::paramName(func::FuncOp forward, unsigned arg) {
  if (auto name = forward.getArgAttrOfType<StringAttr>(arg, attr::kParam))
    return name.getValue();
  return "";
}

namespace {

/// Facts about @forward every search needs.
class Graph {
public:
  explicit Graph(func::FuncOp fn) : fn(fn) {
    // A value is static when it depends on parameters and constants only.
    for (BlockArgument arg : fn.getArguments())
      if (fn.getArgAttr(arg.getArgNumber(), attr::kParam))
        staticValues.insert(arg);
    for (Operation &op : fn.front()) {
      position[&op] = position.size();
      if (llvm::all_of(op.getOperands(),
                       [&](Value v) { return staticValues.contains(v); }))
        staticValues.insert(op.result_begin(), op.result_end());
    }
  }

  bool isStatic(Value v) const { return staticValues.contains(v); }

  /// The parameter argument `v` is, if any.
  std::optional<unsigned> paramArg(Value v) const {
    auto arg = llvm::dyn_cast<BlockArgument>(v);
    if (arg && arg.getOwner() == &fn.front() &&
        fn.getArgAttr(arg.getArgNumber(), attr::kParam))
      return arg.getArgNumber();
    return std::nullopt;
  }

  bool isTrainable(unsigned arg) const {
    return !fn.getArgAttr(arg, attr::kBuffer);
  }

  /// Ops computed (transitively) from `v`, in program order.
  llvm::SetVector<Operation *> descendants(Value v) const {
    llvm::SetVector<Operation *> out;
    DenseSet<Value> reached{v};
    for (Operation &op : fn.front()) {
      if (llvm::none_of(op.getOperands(),
                        [&](Value o) { return reached.contains(o); }))
        continue;
      out.insert(&op);
      reached.insert(op.result_begin(), op.result_end());
    }
    return out;
  }

  /// Collects the parameters `v` (a static value) is computed from and the
  /// static ops in between.
  void staticSources(Value v, llvm::SetVector<unsigned> &params,
                     DenseSet<Operation *> &ops) const {
    if (std::optional<unsigned> p = paramArg(v)) {
      params.insert(*p);
      return;
    }
    Operation *def = v.getDefiningOp();
    if (!def || !ops.insert(def).second)
      return;
    for (Value o : def->getOperands())
      staticSources(o, params, ops);
  }

  /// The first user of `v` not in `allowed`, if any.
  Operation *userOutside(Value v, const DenseSet<Operation *> &allowed) const {
    for (Operation *user : v.getUsers())
      if (!allowed.contains(user))
        return user;
    return nullptr;
  }

  /// The common dotted prefix of the names of `params` ("layer1.0" for
  /// "layer1.0.conv1.weight" and "layer1.0.bn1.bias").
  std::string commonName(ArrayRef<unsigned> params) const {
    SmallVector<StringRef> prefix;
    bool first = true;
    for (unsigned p : params) {
      SmallVector<StringRef> parts;
      paramName(fn, p).split(parts, '.');
      if (!parts.empty())
        parts.pop_back(); // the tensor's own name ("weight")
      if (first) {
        prefix = parts;
        first = false;
        continue;
      }
      size_t n = 0;
      while (n < prefix.size() && n < parts.size() && prefix[n] == parts[n])
        ++n;
      prefix.resize(n);
    }
    return prefix.empty() ? std::string("<model>") : llvm::join(prefix, ".");
  }

  mutable func::FuncOp fn;
  DenseMap<Operation *, size_t> position;
  DenseSet<Value> staticValues;
};

/// Why `x + f` is not a droppable residual branch, or the branch.
std::variant<std::string, sdp::Block>
residualBranch(const Graph &g, Operation *add, Value x, Value f) {
  llvm::SetVector<Operation *> fromX = g.descendants(x);
  Operation *fdef = f.getDefiningOp();
  if (!fdef || !fromX.contains(fdef))
    return std::string("not a residual connection: neither operand is "
                       "computed from the other (a projection shortcut?)");
  // The branch: the ops between x and f.
  DenseSet<Operation *> branch{fdef};
  SmallVector<Operation *> work{fdef};
  llvm::SetVector<unsigned> params;
  DenseSet<Operation *> staticOps;
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    for (Value v : op->getOperands()) {
      if (v == x)
        continue;
      Operation *def = v.getDefiningOp();
      if (def && fromX.contains(def)) {
        if (branch.insert(def).second)
          work.push_back(def);
        continue;
      }
      if (!g.isStatic(v))
        return std::string("the branch also reads an activation other than "
                           "the residual input (a projection shortcut or a "
                           "skip from elsewhere)");
      g.staticSources(v, params, staticOps);
    }
  }
  // Nothing computed inside the branch may be used outside it.
  for (Operation *op : branch)
    for (Value r : op->getResults()) {
      if (r == f) {
        if (!f.hasOneUse())
          return std::string("the branch output is used besides the "
                             "residual add");
        continue;
      }
      if (Operation *user = g.userOutside(r, branch))
        return ("a value inside the branch is also used outside it (by '" +
                user->getName().getStringRef() + "')")
            .str();
    }
  DenseSet<Operation *> allowed(branch);
  allowed.insert(staticOps.begin(), staticOps.end());
  for (Operation *op : staticOps)
    for (Value r : op->getResults())
      if (g.userOutside(r, allowed))
        return std::string("a constant the branch reads is shared with ops "
                           "outside it");
  sdp::Block block;
  for (unsigned p : params) {
    if (g.userOutside(g.fn.getArgument(p), allowed))
      return ("parameter '" + paramName(g.fn, p) +
              "' is also used outside the branch")
          .str();
    block.params.push_back({p, -1});
  }
  if (llvm::none_of(params, [&](unsigned p) { return g.isTrainable(p); }))
    return std::string("the branch has no trainable parameters");
  block.add = add;
  block.residual = x;
  block.branch = f;
  for (Operation *op : fromX)
    if (branch.contains(op))
      block.ops.push_back(op);
  block.name = g.commonName(params.getArrayRef());
  return block;
}

void findBlocks(const Graph &g, Components &out) {
  for (Operation &op : g.fn.front()) {
    auto add = llvm::dyn_cast<graph::AddOp>(op);
    if (!add)
      continue;
    Value lhs = add.getLhs(), rhs = add.getRhs();
    // Bias adds and the like: one side is a parameter or constant.
    if (g.isStatic(lhs) || g.isStatic(rhs))
      continue;
    if (lhs.getType() != add.getType() || rhs.getType() != add.getType()) {
      out.rejected.push_back(
          {add, "the operands' shapes differ from the result's (broadcast)"});
      continue;
    }
    std::variant<std::string, sdp::Block> a = residualBranch(g, add, lhs, rhs);
    std::variant<std::string, sdp::Block> b = residualBranch(g, add, rhs, lhs);
    if (auto *block = std::get_if<sdp::Block>(&a))
      out.blocks.push_back(std::move(*block));
    else if (auto *block = std::get_if<sdp::Block>(&b))
      out.blocks.push_back(std::move(*block));
    else // report the reason for the orientation that reached furthest
      out.rejected.push_back(
          {add, std::get<std::string>(a).rfind("not a residual", 0) == 0
                    ? std::get<std::string>(b)
                    : std::get<std::string>(a)});
  }
  // A branch holding another one would drop it as a side effect: keep the
  // inner (finer) ones.
  DenseSet<Operation *> adds;
  for (sdp::Block &b : out.blocks)
    adds.insert(b.add);
  SmallVector<sdp::Block> kept;
  for (sdp::Block &b : out.blocks) {
    auto inner = llvm::find_if(
        b.ops, [&](Operation *op) { return op != b.add && adds.contains(op); });
    if (inner != b.ops.end()) {
      out.rejected.push_back({b.add, "the branch contains another residual "
                                     "branch (the inner ones are dropped)"});
      continue;
    }
    kept.push_back(std::move(b));
  }
  out.blocks = std::move(kept);
  // Two branches of one module (attention and MLP of a Transformer block)
  // share a prefix: number the later ones.
  llvm::StringMap<int> seen;
  for (sdp::Block &b : out.blocks)
    if (int n = seen[b.name]++)
      b.name += "#" + std::to_string(n);
}

/// The parameter weight of a gemm/matmul/conv: the argument, the axis of
/// its output features (`out`) or of its input features (`!out`), and the
/// transpose between the parameter and the op (torch exports Linear on 3-D
/// inputs as MatMul(x, Transpose(W))), if any.
struct WeightUse {
  unsigned arg;
  int64_t axis;
  Operation *transpose = nullptr;
  int64_t transposedAxis = -1; // the features' axis after the transpose
};

std::optional<WeightUse> weightAxis(const Graph &g, Operation *op, bool out) {
  // `axis` is the features' axis of the weight operand `w` as the op sees
  // it; a 2-D transpose of a parameter in between flips it.
  auto use = [&](Value w, int64_t rank,
                 int64_t axis) -> std::optional<WeightUse> {
    auto t = llvm::cast<RankedTensorType>(w.getType());
    if (t.getRank() != rank && rank >= 0)
      return std::nullopt;
    if (std::optional<unsigned> p = g.paramArg(w))
      return WeightUse{*p, axis};
    auto tr = w.getDefiningOp<graph::TransposeOp>();
    if (!tr || t.getRank() != 2 || tr.getPerm() != ArrayRef<int64_t>{1, 0})
      return std::nullopt;
    if (std::optional<unsigned> p = g.paramArg(tr.getInput()))
      return WeightUse{*p, 1 - axis, tr, axis};
    return std::nullopt;
  };
  if (auto gemm = llvm::dyn_cast<graph::GemmOp>(op)) {
    if (gemm.getTransA())
      return std::nullopt;
    return use(gemm.getB(), 2, gemm.getTransB() == out ? 0 : 1);
  }
  if (auto mm = llvm::dyn_cast<graph::MatMulOp>(op)) {
    if (mm.getTransA())
      return std::nullopt;
    return use(mm.getB(), 2, mm.getTransB() == out ? 0 : 1);
  }
  if (auto conv = llvm::dyn_cast<graph::ConvOp>(op)) {
    if (conv.getGroupAttr().getInt() != 1)
      return std::nullopt;
    std::optional<unsigned> p = g.paramArg(conv.getWeight());
    if (!p)
      return std::nullopt;
    return WeightUse{*p, out ? 0 : 1};
  }
  return std::nullopt;
}

/// The feature axis of the producer's output.
int64_t outputFeatureAxis(Operation *op) {
  if (llvm::isa<graph::ConvOp>(op))
    return 1;
  return llvm::cast<RankedTensorType>(op->getResult(0).getType()).getRank() - 1;
}

/// Whether static operand `v`, broadcast against a value of rank `rank`
/// whose features lie along `axis` (`width` elements), is per-feature
/// (returns its feature axis) or the same for every feature (returns -1;
/// it may vary along other axes, as a causal mask does); fails otherwise.
FailureOr<int64_t> perFeatureOperand(Value v, int64_t axis, int64_t rank,
                                     int64_t width) {
  auto t = llvm::cast<RankedTensorType>(v.getType());
  int64_t d = axis - (rank - t.getRank());
  if (d < 0 || t.getDimSize(d) == 1)
    return -1;
  if (t.getDimSize(d) != width)
    return failure();
  return d;
}

int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

/// Where the features lie after a reshape, if it keeps them whole: the dims
/// before the feature axis are unchanged and the axis either keeps its
/// size, splits a feature's `unit` elements off into dims of their own, or
/// merges those back in; or (torch's MultiheadAttention) the dim before
/// the feature axis merges with the features as their `outer` repeat,
/// [.., b, h * d] -> [.., b * h, d], and splits back out to the dim before
/// that, [t, b * h, d] -> [t * b, h * d].
std::optional<FeatureAxis> reshapedAxis(ArrayRef<int64_t> in,
                                        ArrayRef<int64_t> out, FeatureAxis f,
                                        int64_t features) {
  int64_t a = f.axis;
  if (f.sections != 1)
    return std::nullopt;
  if (a >= 1 && f.outer == 1 && f.unit > 1 && in.size() == out.size() &&
      in.take_front(a - 1) == out.take_front(a - 1) &&
      in.drop_front(a + 1) == out.drop_front(a + 1) &&
      out[a - 1] == in[a - 1] * features && out[a] == f.unit)
    return FeatureAxis{a - 1, 1, 1, in[a - 1]};
  if (a >= 1 && f.outer > 1 && f.unit == 1 && a + 1 < int64_t(in.size()) &&
      out.size() + 1 == in.size() &&
      in.take_front(a - 1) == out.take_front(a - 1) &&
      in.drop_front(a + 2) == out.drop_front(a + 1) &&
      out[a - 1] == in[a - 1] * f.outer && out[a] == features * in[a + 1])
    return FeatureAxis{a, in[a + 1], 1, 1};
  if (f.outer != 1 || int64_t(out.size()) <= a ||
      in.take_front(a) != out.take_front(a))
    return std::nullopt;
  if (in[a] == out[a])
    return f;
  // Split [features * unit] -> [features, d1, ..., dk] with prod(d) = unit.
  if (out[a] == features && f.unit > 1)
    for (size_t k = a + 1; k <= out.size(); ++k)
      if (product(out.slice(a + 1, k - a - 1)) == f.unit &&
          in.drop_front(a + 1) == out.drop_front(k))
        return FeatureAxis{a, 1, 1};
  // Merge [features, d1, ..., dk] -> [features * prod(d)].
  if (in[a] == features && f.unit == 1)
    for (size_t k = a + 1; k <= in.size(); ++k) {
      int64_t unit = product(in.slice(a + 1, k - a - 1));
      if (out[a] == features * unit &&
          in.drop_front(k) == out.drop_front(a + 1))
        return FeatureAxis{a, unit, 1};
    }
  return std::nullopt;
}

/// The softmax-like axis an op normalises or scans along, if any.
std::optional<int64_t> alongAxis(Operation *op, int64_t rank) {
  int64_t axis;
  if (auto s = llvm::dyn_cast<graph::SoftmaxOp>(op))
    axis = s.getAxis();
  else if (auto s = llvm::dyn_cast<graph::LogSoftmaxOp>(op))
    axis = s.getAxis();
  else if (auto a = op->getAttrOfType<IntegerAttr>("axis"))
    axis = a.getInt();
  else
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

/// The producer (an op with a parameter weight) whose output `v` is,
/// through reshapes, transposes and arithmetic with static operands (a
/// bias, a scale); null if there is none.
Operation *producerOf(const Graph &g, Value v) {
  for (int depth = 0; depth < 8; ++depth) {
    Operation *op = v.getDefiningOp();
    if (!op)
      return nullptr;
    if (weightAxis(g, op, /*out=*/true))
      return op;
    if (llvm::isa<graph::ReshapeOp, graph::TransposeOp>(op)) {
      v = op->getOperand(0);
      continue;
    }
    if (!llvm::isa<graph::AddOp, graph::SubOp, graph::MulOp, graph::DivOp>(op))
      return nullptr;
    auto dynamic = llvm::make_filter_range(
        op->getOperands(), [&](Value o) { return !g.isStatic(o); });
    if (std::distance(dynamic.begin(), dynamic.end()) != 1)
      return nullptr;
    v = *dynamic.begin();
  }
  return nullptr;
}

/// Follows the features `producers` make (`features` of them, lying as
/// `start` in each output) to the consumers that contract them. Attention
/// heads from separate q, k and v projections are one group of three
/// producers: when an attention matmul meets heads from a producer not in
/// `producers`, that producer is returned in `missing` (and the group
/// rejected) for the caller to try again with it.
std::variant<std::string, NeuronGroup>
neuronGroup(const Graph &g, ArrayRef<Operation *> producers, int64_t features,
            FeatureAxis start, bool heads, bool *movedAxes = nullptr,
            Operation **missing = nullptr) {
  NeuronGroup group;
  group.producer = producers.front();
  group.features = features;
  group.heads = heads;
  auto width = [&](const FeatureAxis &f) {
    return f.outer * f.sections * features * f.unit;
  };
  DenseSet<Operation *> members;
  DenseSet<unsigned> weights;
  // A transposed weight narrows along with its parameter.
  auto addTranspose = [&](const WeightUse &w, FeatureAxis f) {
    if (!w.transpose)
      return;
    members.insert(w.transpose);
    f.axis = w.transposedAxis;
    group.values.push_back({w.transpose->getResult(0), f});
  };
  DenseMap<Value, FeatureAxis> region;
  size_t begin = g.position.lookup(producers.front());
  for (Operation *producer : producers) {
    WeightUse produced = *weightAxis(g, producer, /*out=*/true);
    weights.insert(produced.arg);
    group.params.push_back(
        {produced.arg, produced.axis, start.unit, start.sections});
    members.insert(producer);
    addTranspose(produced, start);
    // The producer's own bias.
    Value bias;
    if (auto gemm = llvm::dyn_cast<graph::GemmOp>(producer))
      bias = gemm.getC();
    if (auto conv = llvm::dyn_cast<graph::ConvOp>(producer))
      bias = conv.getBias();
    if (bias) {
      std::optional<unsigned> b = g.paramArg(bias);
      auto bt = llvm::cast<RankedTensorType>(bias.getType());
      if (!b || bt.getRank() != 1 || bt.getDimSize(0) != width(start))
        return std::string(
            "the producer's bias is not a per-feature parameter");
      group.params.push_back({*b, 0, start.unit, start.sections});
    }
    Value out = producer->getResult(0);
    if (out.getType() != producers.front()->getResult(0).getType())
      return std::string("the q, k and v projections differ in shape");
    region[out] = start;
    group.values.push_back({out, start});
    begin = std::min(begin, g.position.lookup(producer));
  }

  for (Operation &op : g.fn.front()) {
    if (g.position.lookup(&op) <= begin)
      continue;
    SmallVector<unsigned> inRegion;
    for (OpOperand &o : op.getOpOperands())
      if (region.count(o.get()))
        inRegion.push_back(o.getOperandNumber());
    if (inRegion.empty())
      continue;
    auto reject = [&](const Twine &why) {
      return ("the features reach '" + op.getName().getStringRef() + "', " +
              why)
          .str();
    };
    if (llvm::isa<func::ReturnOp>(op))
      return std::string("the features are a model output");
    Value first = op.getOperand(inRegion[0]);
    FeatureAxis a = region.lookup(first);
    int64_t rank = llvm::cast<RankedTensorType>(first.getType()).getRank();
    auto join = [&](Value v, FeatureAxis at) {
      region[v] = at;
      group.values.push_back({v, at});
    };
    // Consumers contract the features away.
    if (inRegion.size() == 1 && inRegion[0] == 0 && a.sections == 1 &&
        a.outer == 1 &&
        a.axis == (llvm::isa<graph::ConvOp>(op) ? 1 : rank - 1)) {
      if (auto w = weightAxis(g, &op, /*out=*/false)) {
        if (weights.contains(w->arg))
          return reject("whose weight is the producer's");
        group.params.push_back({w->arg, w->axis, a.unit, 1});
        addTranspose(*w, a);
        group.consumerInputs.push_back(&op.getOpOperand(0));
        members.insert(&op);
        continue;
      }
    }
    // Per-feature ops keep the features where they are.
    if (auto bn = llvm::dyn_cast<graph::BatchNormOp>(op)) {
      if (inRegion.size() != 1 || inRegion[0] != 0 || a.axis != 1 ||
          a.unit != 1 || a.sections != 1 || a.outer != 1)
        return reject("not as the normalised input");
      for (Value s : {bn.getScale(), bn.getBias(), bn.getRunningMean(),
                      bn.getRunningVar()}) {
        std::optional<unsigned> p = g.paramArg(s);
        if (!p)
          return reject("whose statistics are not parameters");
        group.params.push_back({*p, 0});
      }
      join(bn.getResult(), a);
      for (Value r : op.getResults().drop_front())
        join(r, FeatureAxis{0, 1, 1});
      members.insert(&op);
      continue;
    }
    bool unary = op.getNumOperands() == 1 &&
                 op.hasTrait<OpTrait::SameOperandsAndResultType>() &&
                 llvm::isa<graph::GraphDialect>(op.getDialect());
    if (unary || llvm::isa<graph::DropoutOp>(op)) {
      // Elementwise, or along one axis (softmax, cumsum), or positional
      // over the last two (trilu): only away from the features.
      if (alongAxis(&op, rank) == a.axis ||
          (llvm::isa<graph::TriluOp>(op) && a.axis >= rank - 2))
        return reject("which mixes the features along their axis");
      for (Value r : op.getResults())
        join(r, a);
      members.insert(&op);
      continue;
    }
    if (llvm::isa<graph::AddOp, graph::SubOp, graph::MulOp, graph::DivOp,
                  graph::WhereOp>(op)) {
      if (op.getResult(0).getType() != first.getType())
        return reject("which broadcasts them to a larger shape");
      for (OpOperand &o : op.getOpOperands()) {
        if (region.count(o.get())) {
          FeatureAxis b = region.lookup(o.get());
          // Broadcasting aligns trailing dims: equal axes of equal ranks.
          if (b.axis != a.axis || b.unit != a.unit ||
              b.sections != a.sections || b.outer != a.outer ||
              llvm::cast<RankedTensorType>(o.get().getType()).getRank() != rank)
            return reject("which mixes two feature layouts");
          continue;
        }
        if (!g.isStatic(o.get()))
          return reject("which combines them with an activation outside "
                        "the group (the residual stream is never sliced)");
        FailureOr<int64_t> at =
            perFeatureOperand(o.get(), a.axis, rank, width(a));
        if (failed(at))
          return reject("with an operand that is neither per-feature nor "
                        "uniform");
        if (*at >= 0) {
          std::optional<unsigned> p = g.paramArg(o.get());
          if (!p || llvm::isa<graph::WhereOp>(op) || a.outer != 1)
            return reject("with a per-feature constant (only parameters "
                          "are sliced)");
          group.params.push_back({*p, *at, a.unit, a.sections});
        }
      }
      join(op.getResult(0), a);
      members.insert(&op);
      continue;
    }
    if (heads) {
      auto inShape = llvm::cast<RankedTensorType>(first.getType()).getShape();
      auto outShape =
          llvm::cast<RankedTensorType>(op.getResult(0).getType()).getShape();
      // q, k or v: one whole section of the fused projection.
      if (auto slice = llvm::dyn_cast<graph::SliceOp>(op)) {
        int64_t section = features * a.unit;
        int64_t s = slice.getStarts()[a.axis] / section;
        bool whole =
            llvm::all_of(slice.getSteps(), [](int64_t st) { return st == 1; });
        for (int64_t d = 0; d < rank; ++d)
          whole &= d == a.axis ? slice.getStarts()[d] == s * section &&
                                     outShape[d] == section
                               : outShape[d] == inShape[d];
        if (a.sections < 2 || a.outer != 1 || !whole)
          return reject("which does not take one whole section of them");
        group.sectionSlices.push_back({&op, s, a});
        join(op.getResult(0), FeatureAxis{a.axis, a.unit, 1});
        members.insert(&op);
        continue;
      }
      if (llvm::isa<graph::ReshapeOp>(op)) {
        std::optional<FeatureAxis> to =
            reshapedAxis(inShape, outShape, a, features);
        if (!to)
          return reject("which splits or merges them with other dims");
        join(op.getResult(0), *to);
        members.insert(&op);
        continue;
      }
      if (auto tr = llvm::dyn_cast<graph::TransposeOp>(op)) {
        FeatureAxis to = a;
        to.axis = llvm::find(tr.getPerm(), a.axis) - tr.getPerm().begin();
        join(op.getResult(0), to);
        members.insert(&op);
        continue;
      }
      // q @ k^T and attention @ v: heads on the same batch axis of both;
      // the other operand's heads may come from a projection of their own.
      if (llvm::isa<graph::MatMulOp>(op) && inRegion.size() == 1 && missing)
        if (Operation *p = producerOf(g, op.getOperand(1 - inRegion[0]));
            p && !llvm::is_contained(producers, p)) {
          *missing = p;
          return reject("whose other operand's heads come from another "
                        "projection");
        }
      if (llvm::isa<graph::MatMulOp>(op) && inRegion.size() == 2) {
        FeatureAxis b = region.lookup(op.getOperand(1));
        auto bt = llvm::cast<RankedTensorType>(op.getOperand(1).getType());
        if (a.unit != 1 || a.sections != 1 || b.unit != 1 || b.sections != 1 ||
            a.axis != b.axis || a.outer != b.outer || a.axis >= rank - 2 ||
            bt.getRank() != rank)
          return reject("which does not keep the heads apart");
        join(op.getResult(0), a);
        members.insert(&op);
        continue;
      }
    }
    if (llvm::isa<graph::ReshapeOp, graph::SliceOp, graph::TransposeOp>(op)) {
      if (movedAxes)
        *movedAxes = true;
      return reject("which moves them to other axes");
    }
    return reject("which does not act on each feature separately");
  }
  if (group.consumerInputs.empty())
    return std::string("no matmul, gemm or conv consumes the features");
  for (ParamUse &p : group.params)
    if (Operation *user = g.userOutside(g.fn.getArgument(p.arg), members))
      return ("parameter '" + paramName(g.fn, p.arg) +
              "' is also used outside the group (by '" +
              user->getName().getStringRef() + "')")
          .str();
  // Named after its producer: the first parameter with a module path
  // (torch names MatMul weights it transposes "onnx::MatMul_<n>"); several
  // producers (q, k, v) after the module they share.
  group.name = paramName(g.fn, group.params.front().arg).str();
  for (ParamUse &p : group.params)
    if (paramName(g.fn, p.arg).contains('.')) {
      group.name = paramName(g.fn, p.arg).rsplit('.').first.str();
      break;
    }
  if (producers.size() > 1) {
    StringRef common = group.name;
    for (unsigned w : weights) {
      StringRef n = paramName(g.fn, w);
      size_t k = 0;
      while (k < common.size() && k < n.size() && common[k] == n[k])
        ++k;
      common = common.take_front(k);
    }
    if (size_t dot = common.rfind('.'); dot != StringRef::npos && dot > 0)
      group.name = common.take_front(dot).str();
  }
  return group;
}

/// Attention heads among the features `producer` makes: the first reshape
/// computed from them that splits a last axis of H * d elements into
/// [H, d] (or, as torch's MultiheadAttention exports it, [.., b, H * d]
/// into [.., b * H, d]) gives H heads of d elements each, the producer's F
/// features F / (H * d) sections (q, k, v) of them.
std::optional<std::pair<int64_t, int64_t>> headShape(const Graph &g,
                                                     Operation *producer) {
  auto out = llvm::cast<RankedTensorType>(producer->getResult(0).getType());
  int64_t f = out.getShape().back();
  for (Operation *op : g.descendants(producer->getResult(0))) {
    auto reshape = llvm::dyn_cast<graph::ReshapeOp>(op);
    if (!reshape)
      continue;
    auto in = llvm::cast<RankedTensorType>(reshape.getInput().getType());
    auto to = llvm::cast<RankedTensorType>(reshape.getType());
    ArrayRef<int64_t> is = in.getShape(), ts = to.getShape();
    int64_t h, d = ts.back();
    if (ts.size() == is.size() + 1 && is.drop_back() == ts.drop_back(2)) {
      h = ts[ts.size() - 2];
    } else if (ts.size() == is.size() && is.size() >= 2 &&
               is.drop_back(2) == ts.drop_back(2) &&
               ts[ts.size() - 2] % is[is.size() - 2] == 0) {
      h = ts[ts.size() - 2] / is[is.size() - 2];
      if (h * d != is.back())
        return std::nullopt;
    } else {
      return std::nullopt;
    }
    if (h < 2 || f % (h * d) != 0)
      return std::nullopt;
    return std::pair(h, d);
  }
  return std::nullopt;
}

void findGroups(const Graph &g, Components &out) {
  DenseSet<Operation *> claimed; // k and v of a group found from its q
  for (Operation &op : g.fn.front()) {
    if (!weightAxis(g, &op, /*out=*/true) || claimed.contains(&op))
      continue;
    int64_t axis = outputFeatureAxis(&op);
    int64_t width = llvm::cast<RankedTensorType>(op.getResult(0).getType())
                        .getDimSize(axis);
    bool movedAxes = false;
    std::variant<std::string, NeuronGroup> r =
        neuronGroup(g, {&op}, width, FeatureAxis{axis, 1, 1},
                    /*heads=*/false, &movedAxes);
    // Features that move to other axes may be attention heads, from this
    // projection alone or with the others the attention matmuls meet.
    SmallVector<Operation *> producers{&op};
    if (movedAxes && !llvm::isa<graph::ConvOp>(op))
      if (auto hd = headShape(g, &op)) {
        auto [h, d] = *hd;
        std::variant<std::string, NeuronGroup> heads;
        Operation *missing = nullptr;
        do {
          if (missing)
            producers.push_back(missing);
          missing = nullptr;
          heads = neuronGroup(g, producers, h,
                              FeatureAxis{axis, d, width / (h * d)},
                              /*heads=*/true, nullptr, &missing);
          if (missing && claimed.contains(missing)) {
            heads = std::string("the attention meets heads of a projection "
                                "already in another group");
            break;
          }
        } while (missing && producers.size() < 3);
        if (std::holds_alternative<NeuronGroup>(heads))
          r = std::move(heads);
        else
          r = "as attention heads: " + std::get<std::string>(heads);
      }
    if (auto *group = std::get_if<NeuronGroup>(&r)) {
      out.groups.push_back(std::move(*group));
      claimed.insert(producers.begin(), producers.end());
      // A projection tried alone before (v ahead of q) is in the group now.
      llvm::erase_if(out.rejected, [&](const Rejection &rj) {
        return llvm::is_contained(producers, rj.op);
      });
    } else {
      out.rejected.push_back({&op, std::get<std::string>(r)});
    }
  }
}

} // namespace

Components otc::sdp::findComponents(func::FuncOp forward, StringRef mode) {
  Graph g(forward);
  Components out;
  if (mode == "block")
    findBlocks(g, out);
  else
    findGroups(g, out);
  return out;
}
