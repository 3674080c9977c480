//===- elementwise.cu - Unary and binary float kernels, with backwards ----===//
//
// The CUDA twins of the float kernels of cpu/elementwise.cpp: one thread per
// output element in grid-stride loops. Binary ops simplify their iteration
// space on the host as the CPU does (size-1 dimensions dropped, dimensions
// contiguous in both operands merged) and pass it to the kernel by value;
// each thread turns its flat index into the operands' offsets. The formulas
// are the CPU's, operation for operation (the library is compiled without
// contraction into fused multiply-adds); transcendental functions come from
// CUDA's libdevice instead of cpu/vmath.h, hence results equal to float
// rounding rather than bit for bit.
//
//===----------------------------------------------------------------------===//

#include "cuda_common.h"

#include <math_constants.h>

#include <limits>

namespace otc::kernels::cuda {
namespace {

//===----------------------------------------------------------------------===//
// Float binary
//===----------------------------------------------------------------------===//

/// v^e with PyTorch's exact special cases for the common exponents (the
/// CPU's dispatchPow), powf otherwise.
__device__ inline float powScalar(float v, float e) {
  if (e == 2.0f)
    return v * v;
  if (e == 3.0f)
    return v * v * v;
  if (e == 0.5f)
    return sqrtf(v);
  if (e == -0.5f)
    return 1.0f / sqrtf(v);
  if (e == -1.0f)
    return 1.0f / v;
  if (e == -2.0f)
    return 1.0f / (v * v);
  if (e == 1.0f)
    return v;
  if (e == 0.0f)
    return 1.0f;
  return powf(v, e);
}

/// PyTorch's remainder: the sign of the divisor.
__device__ inline float modOp(float a, float b) {
  const float r = fmodf(a, b);
  return r != 0.0f && ((r < 0.0f) != (b < 0.0f)) ? r + b : r;
}

__device__ inline float binaryOp(otck_binary_op op, float a, float b) {
  switch (op) {
  case OTCK_ADD:
    return a + b;
  case OTCK_SUB:
    return a - b;
  case OTCK_MUL:
    return a * b;
  case OTCK_DIV:
    return a / b;
  case OTCK_POW:
    return powf(a, b);
  case OTCK_MAX: {
    const float m = a > b ? a : b; // a NaN b gives b
    return a != a ? a : m;
  }
  case OTCK_MIN: {
    const float m = a < b ? a : b;
    return a != a ? a : m;
  }
  case OTCK_MOD:
    return modOp(a, b);
  case OTCK_FMOD:
    return fmodf(a, b);
  case OTCK_PRELU:
    return a >= 0.0f ? a : b * a;
  case OTCK_SHIFT_LEFT: // integers only
  case OTCK_SHIFT_RIGHT:
    break;
  }
  return CUDART_NAN_F;
}

/// `powRows`: the plan's innermost dimension reads a contiguously and b
/// broadcast, where the CPU takes pow(tensor, scalar)'s special cases.
__global__ void binaryKernel(otck_binary_op op, BinaryPlan p, const float *a,
                             const float *b, float *out, bool powRows) {
  for (int64_t i = globalThread(); i < p.total; i += gridThreads()) {
    int64_t offA, offB;
    binaryOffsets(p, i, offA, offB);
    const float av = a[offA], bv = b[offB];
    out[i] = powRows ? powScalar(av, bv) : binaryOp(op, av, bv);
  }
}

//===----------------------------------------------------------------------===//
// Float binary backward
//===----------------------------------------------------------------------===//

/// torch.div(a, b, rounding_mode="floor") for floats, as the CPU computes it.
__device__ inline float floorDivide(float a, float b) {
  if (b == 0.0f)
    return a / b;
  const float mod = fmodf(a, b);
  float div = (a - mod) / b;
  if (mod != 0.0f && ((b < 0.0f) != (mod < 0.0f)))
    div -= 1.0f;
  if (div == 0.0f)
    return copysignf(0.0f, a / b);
  const float fl = floorf(div);
  return div - fl > 0.5f ? fl + 1.0f : fl;
}

__device__ inline void binaryGradOp(otck_binary_op op, float av, float bv,
                                    float g, float &ga, float &gb) {
  switch (op) {
  case OTCK_ADD:
    ga = g;
    gb = g;
    return;
  case OTCK_SUB:
    ga = g;
    gb = -1.0f * g;
    return;
  case OTCK_MUL:
    ga = g * bv;
    gb = g * av;
    return;
  case OTCK_DIV:
    ga = g / bv;
    gb = -g * ((av / bv) / bv);
    return;
  case OTCK_POW:
    ga = bv == 0.0f ? 0.0f : g * (bv * powf(av, bv - 1.0f));
    gb = av == 0.0f && bv >= 0.0f ? 0.0f : g * (powf(av, bv) * logf(av));
    return;
  case OTCK_MAX: {
    const float share = av == bv ? 0.5f * g : g;
    ga = av < bv ? 0.0f : share;
    gb = av > bv ? 0.0f : share;
    return;
  }
  case OTCK_MIN: {
    const float share = av == bv ? 0.5f * g : g;
    ga = av > bv ? 0.0f : share;
    gb = av < bv ? 0.0f : share;
    return;
  }
  case OTCK_MOD:
    ga = g;
    gb = -g * floorDivide(av, bv);
    return;
  case OTCK_FMOD:
    ga = g;
    gb = -g * truncf(av / bv);
    return;
  case OTCK_PRELU:
    ga = av > 0.0f ? g : bv * g;
    gb = av > 0.0f ? 0.0f : av * g;
    return;
  case OTCK_SHIFT_LEFT: // integers only
  case OTCK_SHIFT_RIGHT:
    break;
  }
  ga = gb = CUDART_NAN_F;
}

/// da, db (either may be null) over the plan; dy, da, db contiguous.
__global__ void binaryGradKernel(otck_binary_op op, BinaryPlan p,
                                 const float *a, const float *b,
                                 const float *dy, float *da, float *db) {
  for (int64_t i = globalThread(); i < p.total; i += gridThreads()) {
    int64_t offA, offB;
    binaryOffsets(p, i, offA, offB);
    float ga, gb;
    binaryGradOp(op, a[offA], b[offB], dy[i], ga, gb);
    if (da)
      da[i] = ga;
    if (db)
      db[i] = gb;
  }
}

/// ADD and SUB: da = dy, db = sign dy, reading neither operand.
__global__ void addSubGradKernel(int64_t n, float sign, const float *dy,
                                 float *da, float *db) {
  for (int64_t i = globalThread(); i < n; i += gridThreads()) {
    const float g = dy[i];
    if (da)
      da[i] = g;
    if (db)
      db[i] = sign * g;
  }
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kGeluTanhBeta = 0.7978845608028654f; // sqrt(2 / pi)
constexpr float kGeluTanhKappa = 0.044715f;

/// 1 / (1 + exp(-x)) without overflow for either sign of x (cpu vsigmoid).
__device__ inline float sigmoid(float x) {
  const float ax = x < 0.0f ? -x : x;
  const float e = expf(-ax);
  const float r = 1.0f / (1.0f + e);
  return x >= 0.0f ? r : e * r;
}

/// sigmoid(v) and sigmoid(v) (1 - sigmoid(v)) from one exp.
__device__ inline float sigmoidAndSlope(float v, float &slope) {
  const float ax = v < 0.0f ? -v : v;
  const float e = expf(-ax);
  const float inv = 1.0f / (1.0f + e);
  slope = e * inv * inv;
  return v >= 0.0f ? inv : e * inv;
}

__device__ inline float geluTanhInner(float v) {
  return kGeluTanhBeta * (v + kGeluTanhKappa * (v * v * v));
}

/// tanh(softplus(x)) = w / (w + 2), w = e^x (e^x + 2); r = 1 - that.
__device__ inline float mishTanh(float v, float &r) {
  const float n = expf(v);
  const float w = n * (n + 2.0f);
  r = 2.0f / (w + 2.0f);
  return w < kInf ? w / (w + 2.0f) : 1.0f;
}

/// exp(-k x^2), with x^2 exact (in double).
__device__ inline float expNegSquare(float x, float k) {
  const double xd = x;
  return float(exp(-double(k) * (xd * xd)));
}

/// The standard normal CDF, with relative precision in the lower tail.
__device__ inline float normCdf(float x) { return normcdff(x); }

__device__ float unaryOp(otck_unary_op op, float v, float alpha, float beta) {
  switch (op) {
  case OTCK_RELU:
    return v < 0.0f ? 0.0f : v;
  case OTCK_SIGMOID:
    return sigmoid(v);
  case OTCK_TANH:
    return tanhf(v);
  case OTCK_NEG:
    return -v;
  case OTCK_EXP:
    return expf(v);
  case OTCK_LOG:
    return logf(v);
  case OTCK_SQRT:
    return sqrtf(v);
  case OTCK_SCALE:
    return alpha * v;
  case OTCK_LEAKY_RELU:
    return v > 0.0f ? v : v * alpha;
  case OTCK_ELU:
    return v > 0.0f ? v : expm1f(v) * alpha;
  case OTCK_SELU:
    // beta = scale; the negative side is expm1(x) * (alpha * scale).
    return v > 0.0f ? v * beta : expm1f(v) * (alpha * beta);
  case OTCK_CELU: {
    const float inv = float(1.0 / double(alpha));
    return v > 0.0f ? v : expm1f(v * inv) * alpha;
  }
  case OTCK_GELU:
    return v == -kInf ? 0.0f : v * normCdf(v);
  case OTCK_GELU_TANH: {
    const float s = sigmoid(2.0f * geluTanhInner(v));
    return v == -kInf ? 0.0f : v * s;
  }
  case OTCK_HARD_SIGMOID: {
    float t = alpha * v + beta;
    t = t > 1.0f ? 1.0f : t;
    return t < 0.0f ? 0.0f : t; // NaN passes both
  }
  case OTCK_HARD_SWISH: {
    float c = v + 3.0f;
    c = c < 0.0f ? 0.0f : c;
    c = c > 6.0f ? 6.0f : c;
    return v == -kInf ? 0.0f : v * c / 6.0f;
  }
  case OTCK_MISH: {
    float r;
    const float t = mishTanh(v, r);
    return v == -kInf ? 0.0f : v * t;
  }
  case OTCK_SOFTPLUS: {
    // log1p(exp(x)) = max(x, 0) + log1p(exp(-|x|)) never overflows.
    const float ax = v < 0.0f ? -v : v;
    return (v > 0.0f ? v : 0.0f) + log1pf(expf(-ax));
  }
  case OTCK_SOFTSIGN: {
    const float ax = fabsf(v);
    return ax == kInf ? copysignf(1.0f, v) : v / (1.0f + ax);
  }
  case OTCK_ABS:
    return fabsf(v);
  case OTCK_RECIPROCAL:
    return 1.0f / v;
  case OTCK_SIN:
    return sinf(v);
  case OTCK_COS:
    return cosf(v);
  case OTCK_ERF:
    return erff(v);
  case OTCK_SIGN:
    return v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : v == 0.0f ? 0.0f : v;
  case OTCK_FLOOR:
    return floorf(v);
  case OTCK_CEIL:
    return ceilf(v);
  case OTCK_ROUND:
    return rintf(v); // ties to even in the default rounding mode
  case OTCK_CLIP: {
    const float m = v < alpha ? alpha : v;
    return m > beta ? beta : m; // NaN passes both; alpha > beta gives beta
  }
  case OTCK_POW_SCALAR:
    return powScalar(v, alpha);
  case OTCK_ADD_SCALAR:
    return v + alpha;
  case OTCK_IDENTITY:
    return v;
  case OTCK_THRESHOLDED_RELU:
    return v <= alpha ? 0.0f : v;
  case OTCK_SHRINK:
    return v >= -alpha && v <= alpha ? 0.0f : v < 0.0f ? v + beta : v - beta;
  case OTCK_TAN:
    return tanf(v);
  case OTCK_ASIN:
    return asinf(v);
  case OTCK_ACOS:
    return acosf(v);
  case OTCK_ATAN:
    return atanf(v);
  case OTCK_SINH:
    return sinhf(v);
  case OTCK_COSH:
    return coshf(v);
  case OTCK_ASINH:
    return asinhf(v);
  case OTCK_ACOSH:
    return acoshf(v);
  case OTCK_ATANH:
    return atanhf(v);
  }
  return CUDART_NAN_F;
}

/// dx from dy and s, the forward tensor the op reads (x, y or unused).
__device__ float unaryGradOp(otck_unary_op op, float g, float v, float alpha,
                             float beta) {
  switch (op) {
  case OTCK_RELU:
    return v <= 0.0f ? 0.0f : g;
  case OTCK_SIGMOID:
    return g * (v * (1.0f - v));
  case OTCK_TANH:
    return g * (1.0f - v * v);
  case OTCK_EXP:
    return g * v;
  case OTCK_LOG:
    return g / v;
  case OTCK_SQRT:
    return g / (2.0f * v);
  case OTCK_NEG:
    return -g;
  case OTCK_SCALE:
    return alpha * g;
  case OTCK_LEAKY_RELU:
    return v > 0.0f ? g : g * alpha;
  case OTCK_ELU:
    return v > 0.0f ? g : g * alpha * expf(v);
  case OTCK_SELU:
    return v > 0.0f ? g * beta : g * (alpha * beta) * expf(v);
  case OTCK_CELU: {
    const float inv = float(1.0 / double(alpha));
    return v > 0.0f ? g : g * expf(v * inv);
  }
  case OTCK_GELU: {
    constexpr float kInvSqrt2Pi = 0.3989422804014327f;
    const float pdf = kInvSqrt2Pi * expNegSquare(v, 0.5f);
    const float xpdf = pdf == 0.0f ? 0.0f : v * pdf; // 0 at +-inf, not NaN
    return g * (normCdf(v) + xpdf);
  }
  case OTCK_GELU_TANH: {
    // d/dx x sigmoid(2u) = sigmoid(2u) + 2 x sigmoid'(2u) u'.
    float slope;
    const float sg = sigmoidAndSlope(2.0f * geluTanhInner(v), slope);
    const float du = kGeluTanhBeta * (1.0f + 3.0f * kGeluTanhKappa * (v * v));
    const float right = slope == 0.0f ? 0.0f : 2.0f * v * slope * du;
    return g * (sg + right);
  }
  case OTCK_HARD_SIGMOID:
    return v > 0.0f && v < 1.0f ? g * alpha : 0.0f;
  case OTCK_HARD_SWISH: {
    const float r = v > 3.0f ? g : g * (v / 3.0f + 0.5f);
    return v < -3.0f ? 0.0f : r;
  }
  case OTCK_MISH: {
    // tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2), 1 - t^2 = r (1 + t).
    float r;
    const float t = mishTanh(v, r);
    const float sg = sigmoid(v);
    float right = v * sg * (r * (1.0f + t));
    right = r == 0.0f ? 0.0f : right; // 0, not inf * 0, at +-inf
    right = sg == 0.0f ? 0.0f : right;
    return g * (t + right);
  }
  case OTCK_SOFTPLUS:
    return g * sigmoid(v);
  case OTCK_SOFTSIGN: {
    const float d = 1.0f + fabsf(v);
    return g / (d * d);
  }
  case OTCK_ABS:
    return v > 0.0f ? g : v < 0.0f ? -g : 0.0f;
  case OTCK_RECIPROCAL:
    return -g * (v * v);
  case OTCK_SIN:
    return 1.0f * g * cosf(v);
  case OTCK_COS:
    return -1.0f * g * sinf(v);
  case OTCK_ERF: {
    constexpr float kTwoOverSqrtPi = 1.1283791670955126f;
    return g * (kTwoOverSqrtPi * expNegSquare(v, 1.0f));
  }
  case OTCK_SIGN:
  case OTCK_FLOOR:
  case OTCK_CEIL:
  case OTCK_ROUND:
    return 0.0f;
  case OTCK_CLIP:
    // torch.clamp's backward: the bounds themselves pass the gradient.
    return v >= alpha && v <= beta ? g : 0.0f;
  case OTCK_POW_SCALAR:
    return alpha == 0.0f ? 0.0f : g * (alpha * powScalar(v, alpha - 1.0f));
  case OTCK_ADD_SCALAR:
  case OTCK_IDENTITY:
    return g;
  case OTCK_THRESHOLDED_RELU:
    return v > alpha ? g : 0.0f;
  case OTCK_SHRINK:
    return v >= -alpha && v <= alpha ? 0.0f : g;
  case OTCK_TAN:
    return g * (1.0f + v * v);
  case OTCK_ASIN:
    return g / sqrtf((1.0f - v) * (1.0f + v));
  case OTCK_ACOS:
    return -g / sqrtf((1.0f - v) * (1.0f + v));
  case OTCK_ATAN:
    return g / (1.0f + v * v);
  case OTCK_SINH:
    return g * coshf(v);
  case OTCK_COSH:
    return g * sinhf(v);
  case OTCK_ASINH:
    return g / sqrtf(v * v + 1.0f);
  case OTCK_ACOSH:
    return g / sqrtf((v - 1.0f) * (v + 1.0f));
  case OTCK_ATANH:
    return g / ((1.0f - v) * (1.0f + v));
  }
  return CUDART_NAN_F;
}

/// True for the op values otck_unary_op defines.
bool knownUnary(otck_unary_op op) {
  return int(op) >= int(OTCK_RELU) && int(op) <= int(OTCK_ATANH);
}

__global__ void unaryKernel(otck_unary_op op, int64_t n, const float *x,
                            float *y, float alpha, float beta) {
  for (int64_t i = globalThread(); i < n; i += gridThreads())
    y[i] = unaryOp(op, x[i], alpha, beta);
}

/// s is the forward tensor the op reads, or null when it reads none.
__global__ void unaryGradKernel(otck_unary_op op, int64_t n, const float *dy,
                                const float *s, float *dx, float alpha,
                                float beta) {
  for (int64_t i = globalThread(); i < n; i += gridThreads())
    dx[i] = unaryGradOp(op, dy[i], s ? s[i] : 0.0f, alpha, beta);
}

/// Phi(x) of GELU's output y = x Phi(x) (the tanh form's sigmoid(2u)
/// alike): y / x, with the CPU's limits (1/2 for |x| < 2^-60, 1 at +inf, 0
/// at -inf).
__device__ inline float geluFactorOf(float x, float y) {
  const float ax = fabsf(x);
  if (ax == kInf)
    return x > 0.0f ? 1.0f : 0.0f;
  return ax < 0x1p-60f ? 0.5f : y / x;
}

/// GELU's and GELU_TANH's gradients given the forward's output as well as
/// its input, as the CPU's geluGradFromOutput.
__global__ void geluGradFromOutputKernel(otck_unary_op op, int64_t n,
                                         const float *dy, const float *x,
                                         const float *y, float *dx) {
  for (int64_t i = globalThread(); i < n; i += gridThreads()) {
    const float g = dy[i], v = x[i], s = geluFactorOf(v, y[i]);
    if (op == OTCK_GELU) {
      constexpr float kInvSqrt2Pi = 0.3989422804014327f;
      const float pdf = kInvSqrt2Pi * expNegSquare(v, 0.5f);
      const float xpdf = pdf == 0.0f ? 0.0f : v * pdf;
      dx[i] = g * (s + xpdf);
    } else {
      const float slope = s * (1.0f - s);
      const float du = kGeluTanhBeta * (1.0f + 3.0f * kGeluTanhKappa * (v * v));
      const float right = slope == 0.0f ? 0.0f : 2.0f * v * slope * du;
      dx[i] = g * (s + right);
    }
  }
}

bool knownBinary(otck_binary_op op) {
  return int(op) >= int(OTCK_ADD) && int(op) <= int(OTCK_PRELU);
}

} // namespace
} // namespace otc::kernels::cuda

using namespace otc::kernels;
using namespace otc::kernels::cuda;

extern "C" void otckd_binary_f32(otck_binary_op op, int rank,
                                 const int64_t *out_shape, const float *a,
                                 const int64_t *a_strides, const float *b,
                                 const int64_t *b_strides, float *out) {
  if (rank < 0 || rank > OTCK_MAX_RANK || !knownBinary(op))
    return;
  const BinaryPlan p = planBinary(rank, out_shape, a_strides, b_strides);
  if (p.total <= 0)
    return;
  const int last = p.rank - 1;
  const bool powRows = op == OTCK_POW && p.a[last] == 1 && p.b[last] == 0;
  binaryKernel<<<gridFor(p.total), kThreads, 0, currentStream()>>>(
      op, p, a, b, out, powRows);
  checkLaunch("otckd_binary_f32");
}

extern "C" void otckd_binary_grad_f32(otck_binary_op op, int rank,
                                      const int64_t *out_shape, const float *a,
                                      const int64_t *a_strides, const float *b,
                                      const int64_t *b_strides, const float *dy,
                                      float *da, float *db) {
  if (rank < 0 || rank > OTCK_MAX_RANK || !knownBinary(op) || (!da && !db))
    return;
  cudaStream_t stream = currentStream();
  if (op == OTCK_ADD || op == OTCK_SUB) {
    int64_t total = 1;
    for (int d = 0; d < rank; ++d)
      total *= out_shape[d];
    if (total <= 0)
      return;
    addSubGradKernel<<<gridFor(total), kThreads, 0, stream>>>(
        total, op == OTCK_ADD ? 1.0f : -1.0f, dy, da, db);
    checkLaunch("otckd_binary_grad_f32");
    return;
  }
  const BinaryPlan p = planBinary(rank, out_shape, a_strides, b_strides);
  if (p.total <= 0)
    return;
  binaryGradKernel<<<gridFor(p.total), kThreads, 0, stream>>>(op, p, a, b, dy,
                                                              da, db);
  checkLaunch("otckd_binary_grad_f32");
}

extern "C" void otckd_unary_f32(otck_unary_op op, int64_t n, const float *x,
                                float *y, float alpha, float beta) {
  if (n <= 0 || !knownUnary(op))
    return;
  unaryKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(op, n, x, y, alpha,
                                                            beta);
  checkLaunch("otckd_unary_f32");
}

extern "C" void otckd_unary_grad_f32(otck_unary_op op, int64_t n,
                                     const float *dy, const float *x,
                                     const float *y, float *dx, float alpha,
                                     float beta) {
  if (n <= 0 || !knownUnary(op))
    return;
  const GradReads reads = gradReads(op);
  if ((reads == GradReads::X && !x) || (reads == GradReads::Y && !y))
    return;
  if ((op == OTCK_GELU || op == OTCK_GELU_TANH) && y) {
    geluGradFromOutputKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(
        op, n, dy, x, y, dx);
    checkLaunch("otckd_unary_grad_f32");
    return;
  }
  const float *s = reads == GradReads::X   ? x
                   : reads == GradReads::Y ? y
                                           : nullptr;
  unaryGradKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(
      op, n, dy, s, dx, alpha, beta);
  checkLaunch("otckd_unary_grad_f32");
}
