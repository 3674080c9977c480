/*===- otc/kernels.h - OTC kernel library C ABI ------------------*- C -*-===*\
|*                                                                            *|
|* The one C ABI that emitted programs call. Every tensor is a contiguous,    *|
|* row-major buffer; shapes and strides are int64_t arrays of length `rank`   *|
|* (strides in elements, 0 for a broadcast dimension). Kernels never allocate *|
|* and never abort; the few that can meet bad user data return non-zero.      *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef OTC_KERNELS_H
#define OTC_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Maximum tensor rank the strided kernels accept. */
#define OTCK_MAX_RANK 8

/* Status codes returned by kernels that can fail on user data. */
#define OTCK_OK 0
#define OTCK_ERR_LABEL_OUT_OF_RANGE 1
#define OTCK_ERR_DIVISION_BY_ZERO 2 /* integer division or modulo by 0 */
#define OTCK_ERR_UNSUPPORTED 3      /* a type code or rank a kernel lacks */

/*--- GEMM ------------------------------------------------------------------*/

/* C[M,N] = alpha * op(A) * op(B) + beta * C. op(A) is [M,K], op(B) is [K,N];
 * A is stored [M,K] (or [K,M] when transA), B is [K,N] (or [N,K] when transB).
 * beta == 0 overwrites C without reading it (NaN in C does not propagate). */
void otck_gemm_f32(int transA, int transB, int64_t M, int64_t N, int64_t K,
                   float alpha, const float *A, const float *B, float beta,
                   float *C);

/*--- Elementwise -----------------------------------------------------------*/

/* Binary ops. Kernels taking two operands broadcast them with strides: out[i]
 * = a[..] op b[..] over out_shape, a_strides/b_strides in elements with 0 on
 * broadcast dimensions (numpy broadcasting). */
typedef enum otck_binary_op {
  OTCK_ADD = 0,
  OTCK_SUB = 1,
  OTCK_MUL = 2,
  OTCK_DIV = 3,  /* integers: truncates toward zero (C) */
  OTCK_POW = 4,  /* float: std::pow; a row whose exponent is one broadcast
                    value takes OTCK_POW_SCALAR's exact special cases */
  OTCK_MAX = 5,  /* NaN in either operand gives NaN */
  OTCK_MIN = 6,  /* NaN in either operand gives NaN */
  OTCK_MOD = 7,  /* ONNX Mod fmod=0: Python's a - floor(a/b) b, sign of b */
  OTCK_FMOD = 8, /* ONNX Mod fmod=1: C fmod / %, sign of a */
  OTCK_PRELU = 9 /* a = x, b = slope: a >= 0 ? a : b * a */
} otck_binary_op;

/* Float: IEEE results (x / 0 = inf, fmod(x, 0) = NaN), never an error. out
 * may alias a or b when it has the same shape and strides. */
void otck_binary_f32(otck_binary_op op, int rank, const int64_t *out_shape,
                     const float *a, const int64_t *a_strides, const float *b,
                     const int64_t *b_strides, float *out);

/* Backward of a binary op: da and db are out_shape-sized, contiguous (the
 * compiler reduces them to the operands' shapes with otck_reduce_sum_to_f32);
 * either may be NULL when not needed; dy is contiguous out_shape. da or db may
 * alias dy. a and b are read through their strides (ADD and SUB read neither:
 * NULL is fine). PyTorch's formulas:
 *   ADD  da = dy, db = dy            SUB  da = dy, db = -dy
 *   MUL  da = dy b, db = dy a        DIV  da = dy / b, db = -dy (a / b) / b
 *   POW  da = b == 0 ? 0 : dy b a^(b-1),
 *        db = (a == 0 && b >= 0) ? 0 : dy a^b log(a)
 *   MAX  the larger operand gets dy, a tie gives dy/2 to each (MIN alike;
 *        with a NaN operand both get dy)
 *   MOD  da = dy, db = -dy floor(a / b)   FMOD da = dy, db = -dy trunc(a / b)
 *   PRELU da = a > 0 ? dy : b dy, db (dslope) = a > 0 ? 0 : a dy */
void otck_binary_grad_f32(otck_binary_op op, int rank, const int64_t *out_shape,
                          const float *a, const int64_t *a_strides,
                          const float *b, const int64_t *b_strides,
                          const float *dy, float *da, float *db);

/* Integer binary ops (every otck_binary_op), wrapping on overflow (two's
 * complement; INT_MIN / -1 = INT_MIN). DIV/MOD/FMOD by zero (and POW of 0 to
 * a negative power) write 0 there and return OTCK_ERR_DIVISION_BY_ZERO; POW
 * to a negative power truncates (1, -1 or 0 otherwise). Returns
 * OTCK_ERR_UNSUPPORTED for a rank outside [0, OTCK_MAX_RANK]. */
int otck_binary_i32(otck_binary_op op, int rank, const int64_t *out_shape,
                    const int32_t *a, const int64_t *a_strides,
                    const int32_t *b, const int64_t *b_strides, int32_t *out);
int otck_binary_i64(otck_binary_op op, int rank, const int64_t *out_shape,
                    const int64_t *a, const int64_t *a_strides,
                    const int64_t *b, const int64_t *b_strides, int64_t *out);

/* Unary ops: y = f(x; alpha, beta). The kernels take every parameter
 * explicitly; the ONNX attribute defaults are listed for the compiler.
 * `grad` names the forward tensor otck_unary_grad_f32 reads: x (input),
 * y (output) or - (neither).
 *
 *   op               y                                     grad  defaults
 *   RELU             max(x, 0)                             y (0 at x = 0)
 *   SIGMOID          1 / (1 + exp(-x))                     y
 *   TANH             tanh(x)                               y
 *   NEG              -x                                    -
 *   EXP              exp(x)                                y
 *   LOG              log(x)                                x
 *   SQRT             sqrt(x)                               y
 *   SCALE            alpha x                               -
 *   LEAKY_RELU       x > 0 ? x : alpha x                   x     alpha 0.01
 *   ELU              x > 0 ? x : alpha expm1(x)            x     alpha 1
 *   SELU             beta (x > 0 ? x : alpha expm1(x))     x     see below
 *   CELU             x > 0 ? x : alpha expm1(x / alpha)    x     alpha 1
 *   GELU             x Phi(x) = x (1 + erf(x / sqrt 2)) / 2  x
 *   GELU_TANH        x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2  x
 *   HARD_SIGMOID     clamp(alpha x + beta, 0, 1)           y     0.2, 0.5
 *   HARD_SWISH       x clamp(x + 3, 0, 6) / 6              x
 *   MISH             x tanh(softplus(x))                   x
 *   SOFTPLUS         log(1 + exp(x))                       x
 *   SOFTSIGN         x / (1 + |x|)                         x
 *   ABS              |x|                                   x (0 at x = 0)
 *   RECIPROCAL       1 / x                                 y
 *   SIN, COS         sin(x), cos(x)                        x
 *   ERF              erf(x)                                x
 *   SIGN             -1, 0 or 1 (+0 for +-0)               -, dx = 0
 *   FLOOR, CEIL      floor(x), ceil(x)                     -, dx = 0
 *   ROUND            nearest integer, ties to even         -, dx = 0
 *   CLIP             min(max(x, alpha), beta)              x     -inf, inf
 *                    (dx = dy where alpha <= x <= beta, as torch.clamp)
 *   POW_SCALAR       x^alpha (std::pow; alpha 2, 3, 0.5,   x
 *                    -0.5, -1, -2 as x x, x x x, sqrt(x), 1 / sqrt(x),
 *                    1 / x, 1 / (x x), as torch.pow; dx = 0 for alpha 0)
 *   ADD_SCALAR       x + alpha                             -
 *   IDENTITY         x                                     -
 *   THRESHOLDED_RELU x > alpha ? x : 0                     x     alpha 1
 *   SHRINK           x < -alpha ? x + beta :               x     0.5, 0
 *                    x > alpha ? x - beta : 0  (alpha = lambd, beta = bias)
 *   TAN              tan(x)                                y
 *   ASIN ACOS ATAN SINH COSH ASINH ACOSH ATANH             x
 *
 * SELU: alpha = 1.67326319217681884765625, beta (gamma) =
 * 1.05070102214813232421875. Gradients at kinks are PyTorch's (RELU, ABS
 * 0 at 0; LEAKY_RELU, ELU take the x <= 0 side; HARD_SWISH x/3 + 1/2 on
 * [-3, 3]; HARD_SIGMOID 0 where y is 0 or 1). At +-inf each op returns its
 * limit (GELU(-inf) = 0, SOFTSIGN(inf) = 1, ...) and each gradient too. NaN
 * gives NaN, except x^0 = 1 and the gradients of SIGN/FLOOR/CEIL/ROUND (0).
 * The vectorised functions are within 1e-6 relative or 1e-7 absolute of
 * the exact value; TAN, the inverse and hyperbolic trigonometric ops and
 * POW_SCALAR with another exponent call libm. */
typedef enum otck_unary_op {
  OTCK_RELU = 0,
  OTCK_SIGMOID = 1,
  OTCK_TANH = 2,
  OTCK_NEG = 3,
  OTCK_EXP = 4,
  OTCK_LOG = 5,
  OTCK_SQRT = 6,
  OTCK_SCALE = 7,
  OTCK_LEAKY_RELU = 8,
  OTCK_ELU = 9,
  OTCK_SELU = 10,
  OTCK_CELU = 11,
  OTCK_GELU = 12,
  OTCK_GELU_TANH = 13,
  OTCK_HARD_SIGMOID = 14,
  OTCK_HARD_SWISH = 15,
  OTCK_MISH = 16,
  OTCK_SOFTPLUS = 17,
  OTCK_SOFTSIGN = 18,
  OTCK_ABS = 19,
  OTCK_RECIPROCAL = 20,
  OTCK_SIN = 21,
  OTCK_COS = 22,
  OTCK_ERF = 23,
  OTCK_SIGN = 24,
  OTCK_FLOOR = 25,
  OTCK_CEIL = 26,
  OTCK_ROUND = 27,
  OTCK_CLIP = 28,
  OTCK_POW_SCALAR = 29,
  OTCK_ADD_SCALAR = 30,
  OTCK_IDENTITY = 31,
  OTCK_THRESHOLDED_RELU = 32,
  OTCK_SHRINK = 33,
  OTCK_TAN = 34,
  OTCK_ASIN = 35,
  OTCK_ACOS = 36,
  OTCK_ATAN = 37,
  OTCK_SINH = 38,
  OTCK_COSH = 39,
  OTCK_ASINH = 40,
  OTCK_ACOSH = 41,
  OTCK_ATANH = 42
} otck_unary_op;

/* y = f(x) elementwise over n elements; alpha and beta as listed above
 * (ignored by the other ops). x and y may alias. */
void otck_unary_f32(otck_unary_op op, int64_t n, const float *x, float *y,
                    float alpha, float beta);

/* dx = dy * f'(x), from the one forward tensor the op's `grad` column names
 * (x: forward input, y: forward output); the other may be NULL. Given NULL
 * for the tensor it reads, the kernel returns without writing dx. dx may
 * alias dy, x or y. alpha and beta as in the forward. */
void otck_unary_grad_f32(otck_unary_op op, int64_t n, const float *dy,
                         const float *x, const float *y, float *dx, float alpha,
                         float beta);

/* Element types of otck_cast: ONNX TensorProto.DataType numbers. */
typedef enum otck_dtype {
  OTCK_DT_FLOAT = 1,
  OTCK_DT_UINT8 = 2,
  OTCK_DT_INT8 = 3,
  OTCK_DT_UINT16 = 4,
  OTCK_DT_INT16 = 5,
  OTCK_DT_INT32 = 6,
  OTCK_DT_INT64 = 7,
  OTCK_DT_BOOL = 9, /* one byte, 0 or 1 (any nonzero byte reads as 1) */
  OTCK_DT_FLOAT16 = 10,
  OTCK_DT_DOUBLE = 11,
  OTCK_DT_UINT32 = 12,
  OTCK_DT_UINT64 = 13,
  OTCK_DT_BFLOAT16 = 16
} otck_dtype;

/* y = (to_type) x over n elements, between any two otck_dtype types:
 * to a float type: round to nearest even, once (double -> fp16/bf16 and
 *   integer -> fp16/bf16 included), overflow to +-inf, NaN stays NaN;
 * float -> integer: truncate toward zero, saturate out-of-range values to the
 *   type's range (+-inf too), NaN -> 0;
 * integer -> integer: wraps modulo 2^bits (numpy's astype);
 * -> bool: nonzero (NaN too) -> 1; bool -> x: 0 or 1.
 * x and y may alias only when the two types have the same size. Returns
 * OTCK_ERR_UNSUPPORTED (y untouched) for another type code. */
int otck_cast(int64_t n, int from_type, const void *x, int to_type, void *y);

/*--- Data movement ---------------------------------------------------------*/

/* y = transpose(x, perm) for elements of `elem_size` bytes; in_shape is x's
 * shape, y's shape is in_shape permuted. */
void otck_transpose(int rank, const int64_t *in_shape, const int64_t *perm,
                    const void *x, void *y, int64_t elem_size);

/* Copies n bytes (reshape/identity materialisation). */
void otck_copy(int64_t nbytes, const void *x, void *y);

/* Sets n floats to value. */
void otck_fill_f32(int64_t n, float value, float *y);

/* y (y_size elements, zero-initialised by the kernel) = sum of x over the
 * dimensions where y_strides is 0: reduces a broadcast result back to an
 * operand's shape. in_shape is x's shape; y_strides index y for each of x's
 * dimensions. */
void otck_reduce_sum_to_f32(int rank, const int64_t *in_shape, const float *x,
                            const int64_t *y_strides, int64_t y_size, float *y);

/*--- Dropout ---------------------------------------------------------------*/

/* Training-mode dropout: mask[i] = 0 with probability `ratio`, else
 * 1 / (1 - ratio); y = x * mask. The draw for element i depends only on
 * (seed, stream, i) (a counter-based generator), so a step is reproducible
 * whatever the thread count. */
void otck_dropout_f32(int64_t n, const float *x, float *y, float *mask,
                      float ratio, uint64_t seed, uint64_t stream);

/*--- Softmax family (along one axis: x viewed as [outer, n, inner]) -------*/

void otck_softmax_f32(int64_t outer, int64_t n, int64_t inner, const float *x,
                      float *y, int log_softmax);
/* dx from the forward output y and dy. */
void otck_softmax_grad_f32(int64_t outer, int64_t n, int64_t inner,
                           const float *y, const float *dy, float *dx,
                           int log_softmax);

/*--- Losses (mean reduction) -----------------------------------------------*/

/* loss[0] = mean_i -log softmax(logits[i])[labels[i]]; probs [N,C] receives
 * the softmax (reused by the backward). Returns OTCK_ERR_LABEL_OUT_OF_RANGE
 * when a label is outside [0, C). */
int otck_softmax_ce_f32(int64_t N, int64_t C, const float *logits,
                        const int64_t *labels, float *probs, float *loss);
/* dlogits = dloss[0] * (probs - onehot(labels)) / N. */
void otck_softmax_ce_grad_f32(int64_t N, int64_t C, const float *probs,
                              const int64_t *labels, const float *dloss,
                              float *dlogits);

/* loss[0] = mean((pred - target)^2) over n elements. */
void otck_mse_f32(int64_t n, const float *pred, const float *target,
                  float *loss);
/* dpred = dloss[0] * 2 (pred - target) / n. */
void otck_mse_grad_f32(int64_t n, const float *pred, const float *target,
                       const float *dloss, float *dpred);

/*--- Optimizers (in place, PyTorch torch.optim semantics) -----------------*/

/* w -= lr * (g + wd * w) */
void otck_sgd_f32(int64_t n, float *w, const float *g, float lr, float wd);
/* torch.optim.SGD with momentum (dampening 0):
 * d = g + wd*w; v = mu*v + d; w -= lr * (nesterov ? d + mu*v : v). */
void otck_momentum_f32(int64_t n, float *w, const float *g, float *v, float lr,
                       float mu, float wd, int nesterov);
/* torch.optim.Adam (decoupled == 0: d = g + wd*w) and AdamW (decoupled == 1:
 * w *= 1 - lr*wd first). step is 1-based (bias correction). */
void otck_adam_f32(int64_t n, float *w, const float *g, float *m, float *v,
                   float lr, float beta1, float beta2, float eps, float wd,
                   int64_t step, int decoupled);

/*--- Threads ---------------------------------------------------------------*/

/* Sets the number of threads the kernels (and the BLAS) use; <= 0 keeps the
 * default (OMP_NUM_THREADS / all cores). */
void otck_set_num_threads(int n);

#ifdef __cplusplus
}
#endif

#endif /* OTC_KERNELS_H */
