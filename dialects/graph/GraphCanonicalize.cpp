//===- GraphCanonicalize.cpp - Transposes folded into products ------------===//
//
// Exporters write a Linear layer over [batch, tokens, features] as
// MatMul(x, Transpose(W)), and reverse mode adds the transpose's adjoint on
// W's gradient. Each would be a copy of the weight (or its gradient) every
// step; products read their operands transposed for free, so:
//   product(transpose(X), Y)      -> product(X, Y) with the flag flipped
//   transpose(product(A, B))      -> product(B, A), flags swapped and flipped
//   transpose(transpose(X))       -> one transpose (none for the identity)
// where the transposes swap the last two dimensions (a product's batch
// dimensions stay in place).
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphDialect.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace otc::graph;

namespace {

/// Whether `perm` keeps every dimension but the last two, which it swaps.
bool swapsLastTwo(ArrayRef<int64_t> perm) {
  const int64_t r = int64_t(perm.size());
  if (r < 2 || perm[r - 2] != r - 1 || perm[r - 1] != r - 2)
    return false;
  for (int64_t i = 0; i + 2 < r; ++i)
    if (perm[i] != i)
      return false;
  return true;
}

/// X when `v` is transpose(X) over its last two dimensions.
Value untransposed(Value v) {
  auto t = v.getDefiningOp<TransposeOp>();
  return t && swapsLastTwo(t.getPerm()) ? t.getInput() : Value();
}

/// product(transpose(X), Y) -> product(X, Y), transA flipped (B alike).
template <typename Product>
struct FoldOperandTranspose : OpRewritePattern<Product> {
  using OpRewritePattern<Product>::OpRewritePattern;
  LogicalResult matchAndRewrite(Product op,
                                PatternRewriter &rewriter) const override {
    Value a = untransposed(op.getA()), b = untransposed(op.getB());
    if (!a && !b)
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      if (a) {
        op.getAMutable().assign(a);
        op.setTransA(!op.getTransA());
      }
      if (b) {
        op.getBMutable().assign(b);
        op.setTransB(!op.getTransB());
      }
    });
    return success();
  }
};

/// transpose(op(A) op(B)) = op(B)^T op(A)^T, for a product (without a C
/// term) that nothing else reads.
struct FoldTransposeOfProduct : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    Value in = op.getInput();
    if (!swapsLastTwo(op.getPerm()) || !in.hasOneUse())
      return failure();
    auto swapped = [&](auto p) {
      return std::make_tuple(p.getB(), p.getA(),
                             rewriter.getBoolAttr(!p.getTransB()),
                             rewriter.getBoolAttr(!p.getTransA()));
    };
    if (auto g = in.getDefiningOp<GemmOp>(); g && !g.getC()) {
      auto [a, b, ta, tb] = swapped(g);
      rewriter.replaceOpWithNewOp<GemmOp>(op, op.getType(), a, b, Value(),
                                          g.getAlphaAttr(), g.getBetaAttr(), ta,
                                          tb);
      return success();
    }
    if (auto m = in.getDefiningOp<MatMulOp>()) {
      auto [a, b, ta, tb] = swapped(m);
      rewriter.replaceOpWithNewOp<MatMulOp>(op, op.getType(), a, b, ta, tb);
      return success();
    }
    return failure();
  }
};

/// transpose(transpose(X, p), q) = transpose(X, p o q); X when that is the
/// identity.
struct FoldTransposePair : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<TransposeOp>();
    if (!inner)
      return failure();
    ArrayRef<int64_t> p = inner.getPerm(), q = op.getPerm();
    SmallVector<int64_t> perm;
    bool identity = true;
    for (size_t i = 0; i < q.size(); ++i) {
      perm.push_back(p[q[i]]);
      identity &= perm.back() == int64_t(i);
    }
    if (identity)
      rewriter.replaceOp(op, inner.getInput());
    else
      rewriter.replaceOpWithNewOp<TransposeOp>(
          op, op.getType(), inner.getInput(),
          rewriter.getDenseI64ArrayAttr(perm));
    return success();
  }
};

} // namespace

void GemmOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                         MLIRContext *ctx) {
  patterns.add<FoldOperandTranspose<GemmOp>>(ctx);
}

void MatMulOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                           MLIRContext *ctx) {
  patterns.add<FoldOperandTranspose<MatMulOp>>(ctx);
}

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *ctx) {
  patterns.add<FoldTransposeOfProduct, FoldTransposePair>(ctx);
}
