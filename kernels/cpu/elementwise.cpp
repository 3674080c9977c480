//===- elementwise.cpp - Binary, unary and unary-backward kernels ---------===//
//
// Binary ops take numpy broadcasting as strides. The iteration space is first
// simplified (size-1 dimensions dropped, dimensions that are contiguous in
// both operands merged), so the common cases become one flat loop or a loop
// over rows whose inner loop has unit or zero stride on each side.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "parallel.h"
#include "vmath.h"

#include <cmath>

using namespace otc::kernels;

namespace {

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

struct AddOp {
  float operator()(float a, float b) const { return a + b; }
};
struct SubOp {
  float operator()(float a, float b) const { return a - b; }
};
struct MulOp {
  float operator()(float a, float b) const { return a * b; }
};
struct DivOp {
  float operator()(float a, float b) const { return a / b; }
};

/// The iteration space of a binary op after simplification.
struct BinaryPlan {
  int rank = 0;
  int64_t shape[OTCK_MAX_RANK];
  int64_t aStride[OTCK_MAX_RANK];
  int64_t bStride[OTCK_MAX_RANK];
  int64_t total = 1;
};

BinaryPlan planBinary(int rank, const int64_t *shape, const int64_t *as,
                      const int64_t *bs) {
  BinaryPlan p;
  for (int d = 0; d < rank; ++d) {
    p.total *= shape[d];
    if (shape[d] == 1)
      continue;
    if (p.rank > 0) {
      int prev = p.rank - 1;
      if (p.aStride[prev] == as[d] * shape[d] &&
          p.bStride[prev] == bs[d] * shape[d]) {
        p.shape[prev] *= shape[d];
        p.aStride[prev] = as[d];
        p.bStride[prev] = bs[d];
        continue;
      }
    }
    p.shape[p.rank] = shape[d];
    p.aStride[p.rank] = as[d];
    p.bStride[p.rank] = bs[d];
    ++p.rank;
  }
  return p;
}

/// out[0, n) = a[i * sa] op b[i * sb], specialised for unit and zero strides.
template <typename Op>
void binaryRow(Op op, int64_t n, const float *a, int64_t sa, const float *b,
               int64_t sb, float *out) {
  if (sa == 1 && sb == 1) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      out[i] = op(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const float bv = b[0];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      out[i] = op(a[i], bv);
  } else if (sa == 0 && sb == 1) {
    const float av = a[0];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      out[i] = op(av, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i)
      out[i] = op(a[i * sa], b[i * sb]);
  }
}

/// Computes out[begin, end) (flat output indices) of the planned op.
template <typename Op>
void binaryRange(Op op, const BinaryPlan &p, const float *a, const float *b,
                 float *out, int64_t begin, int64_t end) {
  const int last = p.rank - 1;
  const int64_t inner = p.shape[last];
  const int64_t ia = p.aStride[last], ib = p.bStride[last];
  // Multi-index of the row holding `begin`, and the operands' offsets there.
  int64_t idx[OTCK_MAX_RANK];
  int64_t row = begin / inner, j = begin % inner;
  int64_t offA = 0, offB = 0;
  for (int d = last - 1; d >= 0; --d) {
    idx[d] = row % p.shape[d];
    row /= p.shape[d];
    offA += idx[d] * p.aStride[d];
    offB += idx[d] * p.bStride[d];
  }
  for (int64_t pos = begin; pos < end;) {
    int64_t len = std::min(inner - j, end - pos);
    binaryRow(op, len, a + offA + j * ia, ia, b + offB + j * ib, ib, out + pos);
    pos += len;
    j = 0;
    for (int d = last - 1; d >= 0; --d) {
      offA += p.aStride[d];
      offB += p.bStride[d];
      if (++idx[d] < p.shape[d])
        break;
      offA -= p.aStride[d] * p.shape[d];
      offB -= p.bStride[d] * p.shape[d];
      idx[d] = 0;
    }
  }
}

template <typename Op>
void binaryImpl(Op op, int rank, const int64_t *shape, const float *a,
                const int64_t *as, const float *b, const int64_t *bs,
                float *out) {
  BinaryPlan p = planBinary(rank, shape, as, bs);
  if (p.total <= 0)
    return;
  if (p.rank == 0) {
    out[0] = op(a[0], b[0]);
    return;
  }
  parallelFor(p.total, 1, kParallelGrain, [&](int64_t begin, int64_t end) {
    binaryRange(op, p, a, b, out, begin, end);
  });
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

/// y[i] = f(x[i]) over [0, n); parallel above `grain` elements.
template <typename F>
void unaryMap(int64_t n, const float *x, float *y, int64_t grain, F f) {
  parallelFor(n, 1, grain, [&](int64_t begin, int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i)
      y[i] = f(x[i]);
  });
}

/// dx[i] = f(dy[i], saved[i]) over [0, n).
template <typename F>
void gradMap(int64_t n, const float *dy, const float *saved, float *dx, F f) {
  parallelFor(n, 1, kParallelGrain, [&](int64_t begin, int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i)
      dx[i] = f(dy[i], saved[i]);
  });
}

} // namespace

extern "C" void otck_binary_f32(otck_binary_op op, int rank,
                                const int64_t *out_shape, const float *a,
                                const int64_t *a_strides, const float *b,
                                const int64_t *b_strides, float *out) {
  if (rank < 0 || rank > OTCK_MAX_RANK)
    return;
  switch (op) {
  case OTCK_ADD:
    binaryImpl(AddOp(), rank, out_shape, a, a_strides, b, b_strides, out);
    return;
  case OTCK_SUB:
    binaryImpl(SubOp(), rank, out_shape, a, a_strides, b, b_strides, out);
    return;
  case OTCK_MUL:
    binaryImpl(MulOp(), rank, out_shape, a, a_strides, b, b_strides, out);
    return;
  case OTCK_DIV:
    binaryImpl(DivOp(), rank, out_shape, a, a_strides, b, b_strides, out);
    return;
  }
}

extern "C" void otck_unary_f32(otck_unary_op op, int64_t n, const float *x,
                               float *y, float alpha) {
  switch (op) {
  case OTCK_RELU:
    // NaN propagates (as torch.relu); -0 stays -0.
    unaryMap(n, x, y, kParallelGrain,
             [](float v) { return v < 0.0f ? 0.0f : v; });
    return;
  case OTCK_SIGMOID:
    unaryMap(n, x, y, kParallelGrainHeavy, [](float v) { return vsigmoid(v); });
    return;
  case OTCK_TANH:
    unaryMap(n, x, y, kParallelGrainHeavy, [](float v) { return vtanh(v); });
    return;
  case OTCK_NEG:
    unaryMap(n, x, y, kParallelGrain, [](float v) { return -v; });
    return;
  case OTCK_EXP:
    unaryMap(n, x, y, kParallelGrainHeavy, [](float v) { return vexp(v); });
    return;
  case OTCK_LOG:
    unaryMap(n, x, y, kParallelGrainHeavy, [](float v) { return vlog(v); });
    return;
  case OTCK_SQRT:
    unaryMap(n, x, y, kParallelGrain, [](float v) { return std::sqrt(v); });
    return;
  case OTCK_SCALE:
    unaryMap(n, x, y, kParallelGrain, [alpha](float v) { return alpha * v; });
    return;
  }
}

extern "C" void otck_unary_grad_f32(otck_unary_op op, int64_t n,
                                    const float *dy, const float *saved,
                                    float *dx) {
  switch (op) {
  case OTCK_RELU:
    gradMap(n, dy, saved, dx,
            [](float g, float y) { return y <= 0.0f ? 0.0f : g; });
    return;
  case OTCK_SIGMOID:
    gradMap(n, dy, saved, dx,
            [](float g, float y) { return g * (y * (1.0f - y)); });
    return;
  case OTCK_TANH:
    gradMap(n, dy, saved, dx,
            [](float g, float y) { return g * (1.0f - y * y); });
    return;
  case OTCK_EXP:
    gradMap(n, dy, saved, dx, [](float g, float y) { return g * y; });
    return;
  case OTCK_SQRT:
    gradMap(n, dy, saved, dx, [](float g, float y) { return g / (2.0f * y); });
    return;
  case OTCK_NEG:
    gradMap(n, dy, saved, dx, [](float g, float) { return -g; });
    return;
  case OTCK_LOG:
  case OTCK_SCALE:
    // Need the forward input or alpha: differentiated by other kernels.
    return;
  }
}
