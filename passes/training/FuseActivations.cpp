//===- FuseActivations.cpp - activation expansions to single ops ----------===//
//
// Exporters before opset 20 write GELU as its formula, and Mish (before
// opset 18) likewise:
//   erf form   0.5 * x * (1 + erf(x / sqrt(2)))
//   tanh form  0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
//   Mish       x * tanh(softplus(x))
// in whatever order of factors the exporter chose. Each becomes graph.gelu
// or graph.mish: one kernel instead of 5-10, one saved activation instead of
// several, and one gradient op. Products are read as a coefficient times a
// list of factors, so operand order and how constants are grouped do not
// matter. Intermediate values used elsewhere stay as they are.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>

namespace otc {
#define GEN_PASS_DEF_FUSEACTIVATIONS
#include "passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

/// The value of a splat float constant, if `v` is one.
std::optional<double> splatValue(Value v) {
  auto c = v.getDefiningOp<graph::ConstantOp>();
  if (!c)
    return std::nullopt;
  auto dense = llvm::dyn_cast<DenseFPElementsAttr>(c.getValue());
  if (!dense || !dense.isSplat())
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

bool near(double a, double b) { return std::abs(a - b) <= 1e-6 * std::abs(b); }

/// `v` as coefficient * product of factors. Mul and Div-by-constant ops
/// are looked through when `v` is their only use (the root always), so a
/// fused op never duplicates work another user still needs.
struct Product {
  double coef = 1.0;
  SmallVector<Value> factors;
};

void flatten(Value v, bool root, Product &p) {
  if (std::optional<double> c = splatValue(v)) {
    p.coef *= *c;
    return;
  }
  Operation *op = v.getDefiningOp();
  if (op && (root || v.hasOneUse())) {
    if (auto mul = llvm::dyn_cast<graph::MulOp>(op)) {
      flatten(mul.getLhs(), false, p);
      flatten(mul.getRhs(), false, p);
      return;
    }
    if (auto div = llvm::dyn_cast<graph::DivOp>(op))
      if (std::optional<double> c = splatValue(div.getRhs()); c && *c != 0) {
        flatten(div.getLhs(), false, p);
        p.coef /= *c;
        return;
      }
    if (auto pow = llvm::dyn_cast<graph::PowOp>(op))
      if (std::optional<double> c = splatValue(pow.getRhs()); c && *c == 3) {
        for (int i = 0; i < 3; ++i)
          flatten(pow.getLhs(), false, p);
        return;
      }
  }
  p.factors.push_back(v);
}

Product product(Value v) {
  Product p;
  flatten(v, /*root=*/true, p);
  return p;
}

/// `v` = 1 + f(...) for the unary op F (single use): returns f's operand.
template <typename F> Value onePlus(Value v) {
  auto add = v.getDefiningOp<graph::AddOp>();
  if (!add || !v.hasOneUse())
    return {};
  for (int i = 0; i < 2; ++i) {
    Value c = add->getOperand(i), other = add->getOperand(1 - i);
    std::optional<double> one = splatValue(c);
    auto f = other.template getDefiningOp<F>();
    if (one && *one == 1.0 && f && other.hasOneUse())
      return f->getOperand(0);
  }
  return {};
}

/// 0.5 * x * (1 + erf(x / sqrt 2)) or the tanh form: gelu's operand and
/// approximation, or a null value.
std::pair<Value, StringRef> matchGelu(Value root) {
  Product p = product(root);
  if (!near(p.coef, 0.5) || p.factors.size() != 2)
    return {};
  for (int i = 0; i < 2; ++i) {
    Value x = p.factors[i], sum = p.factors[1 - i];
    if (x.getType() != root.getType())
      continue;
    if (Value z = onePlus<graph::ErfOp>(sum)) {
      Product inner = product(z);
      if (near(inner.coef, M_SQRT1_2) && inner.factors.size() == 1 &&
          inner.factors[0] == x)
        return {x, "none"};
    }
    if (Value u = onePlus<graph::TanhOp>(sum)) {
      // u = sqrt(2/pi) * (x + 0.044715 * x^3)
      Product inner = product(u);
      auto add = inner.factors.size() == 1
                     ? inner.factors[0].getDefiningOp<graph::AddOp>()
                     : graph::AddOp();
      if (!add || !near(inner.coef, std::sqrt(2.0 / M_PI)) ||
          !add->getResult(0).hasOneUse())
        continue;
      for (auto [lin, cubic] : {std::pair(add.getLhs(), add.getRhs()),
                                std::pair(add.getRhs(), add.getLhs())}) {
        if (lin != x || cubic == x)
          continue;
        Product c = cubic.hasOneUse() ? product(cubic) : Product{};
        if (near(c.coef, 0.044715) && c.factors.size() == 3 &&
            llvm::all_of(c.factors, [&](Value f) { return f == x; }))
          return {x, "tanh"};
      }
    }
  }
  return {};
}

/// x * tanh(softplus(x)): mish's operand, or a null value.
Value matchMish(Value root) {
  Product p = product(root);
  if (p.coef != 1.0)
    return {};
  for (int i = 0; i < 2 && p.factors.size() == 2; ++i) {
    Value x = p.factors[i];
    Value t = p.factors[1 - i];
    auto tanh = t.getDefiningOp<graph::TanhOp>();
    if (!tanh || !t.hasOneUse() || x.getType() != root.getType())
      continue;
    auto sp = tanh.getOperand().getDefiningOp<graph::SoftplusOp>();
    if (sp && sp.getOperand() == x && tanh.getOperand().hasOneUse())
      return x;
  }
  return {};
}

struct FuseActivations : otc::impl::FuseActivationsBase<FuseActivations> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto fn : module.getOps<func::FuncOp>()) {
      // Roots in reverse order: an outer match is tried before the
      // products inside it could match something smaller.
      SmallVector<graph::MulOp> roots;
      fn.walk([&](graph::MulOp op) { roots.push_back(op); });
      llvm::SmallPtrSet<Operation *, 16> erased;
      for (graph::MulOp op : llvm::reverse(roots)) {
        if (erased.contains(op))
          continue;
        OpBuilder b(op);
        Value fused;
        if (auto [x, approx] = matchGelu(op.getResult()); x)
          fused =
              b.create<graph::GeluOp>(op.getLoc(), x, b.getStringAttr(approx));
        else if (Value mx = matchMish(op.getResult()))
          fused = b.create<graph::MishOp>(op.getLoc(), mx);
        if (!fused)
          continue;
        op.getResult().replaceAllUsesWith(fused);
        eraseDeadTree(op, erased);
      }
    }
  }

  /// Erases `op` and the ops feeding it that have no other use left.
  static void eraseDeadTree(Operation *op,
                            llvm::SmallPtrSetImpl<Operation *> &erased) {
    SmallVector<Operation *> work{op};
    while (!work.empty()) {
      Operation *o = work.pop_back_val();
      if (!o->use_empty() || !isPure(o))
        continue;
      SmallVector<Operation *> defs;
      for (Value v : o->getOperands())
        if (Operation *d = v.getDefiningOp())
          defs.push_back(d);
      erased.insert(o);
      o->erase();
      for (Operation *d : defs)
        if (d->use_empty() && !llvm::is_contained(work, d))
          work.push_back(d);
    }
  }
};

} // namespace
