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
#define OTCK_ERR_INDEX_OUT_OF_RANGE 2
#define OTCK_ERR_DIVISION_BY_ZERO 3 /* integer division or modulo by 0 */
#define OTCK_ERR_UNSUPPORTED 4      /* a type code or rank a kernel lacks */

/*--- GEMM ------------------------------------------------------------------*/

/* C[M,N] = alpha * op(A) * op(B) + beta * C. op(A) is [M,K], op(B) is [K,N];
 * A is stored [M,K] (or [K,M] when transA), B is [K,N] (or [N,K] when transB).
 * beta == 0 overwrites C without reading it (NaN in C does not propagate). */
void otck_gemm_f32(int transA, int transB, int64_t M, int64_t N, int64_t K,
                   float alpha, const float *A, const float *B, float beta,
                   float *C);

/* For each index i of the broadcast batch shape (batch_rank dims):
 * C[i] = op(A[a(i)]) * op(B[b(i)]) with M x N x K matrices as
 * otck_gemm_f32 (alpha 1, beta 0); a_strides/b_strides count whole matrices
 * per batch dimension (0 on a broadcast one), C is contiguous. */
void otck_batched_gemm_f32(int batch_rank, const int64_t *batch_shape,
                           const int64_t *a_strides, const int64_t *b_strides,
                           int transA, int transB, int64_t M, int64_t N,
                           int64_t K, const float *A, const float *B, float *C);

/* Products of strided matrices, as a matmul reads operands through a
 * transpose (attention's heads) and writes its result through one: for each
 * index i of the batch shape, C_i = op(A_i) * op(B_i) (alpha 1, beta 0, op
 * as otck_gemm_f32), where X_i starts at X + sum_d i_d * x_strides[d]
 * elements (0 on a broadcast dimension) and its rows lie ldx elements apart,
 * the elements of a row contiguous (lda >= K, or M when transA; ldb >= N,
 * or K when transB; ldc >= N). */
void otck_strided_gemm_f32(int batch_rank, const int64_t *batch_shape,
                           const int64_t *a_strides, const int64_t *b_strides,
                           const int64_t *c_strides, int transA, int transB,
                           int64_t M, int64_t N, int64_t K, const float *A,
                           int64_t lda, const float *B, int64_t ldb, float *C,
                           int64_t ldc);

/* Mixed precision (`--precision bf16`): the products below, and the
 * convolutions whose descriptor says OTCK_COMPUTE_BF16, round their two
 * operands to bfloat16 (nearest even) and sum the products in float; C and
 * every other tensor stay float. Where the CPU has no bfloat16 kernel for a
 * shape (oneDNN offers only its reference one: no AVX-512), and on the CPU
 * for products whose C has an edge under 192 (where bfloat16 is slower
 * than float), they compute in float instead; so do convolutions whose
 * window covers the whole input (one product over the batch) for a batch
 * under 192. */
#define OTCK_COMPUTE_F32 0
#define OTCK_COMPUTE_BF16 1

/* Bytes of workspace otck_gemm_bf16 / otck_batched_gemm_bf16 need for A and
 * B tensors of a_elements and b_elements floats (their bfloat16 copies).
 * Contents are scratch. */
int64_t otck_gemm_bf16_workspace_bytes(int64_t a_elements, int64_t b_elements);
/* otck_gemm_f32 in bfloat16 (above); A is [M,K] or [K,M], B [K,N] or [N,K]
 * as there. Same bits whatever the thread count. */
void otck_gemm_bf16(int transA, int transB, int64_t M, int64_t N, int64_t K,
                    float alpha, const float *A, const float *B, float beta,
                    float *C, void *workspace);
/* otck_batched_gemm_f32 in bfloat16. */
void otck_batched_gemm_bf16(int batch_rank, const int64_t *batch_shape,
                            const int64_t *a_strides, const int64_t *b_strides,
                            int transA, int transB, int64_t M, int64_t N,
                            int64_t K, const float *A, const float *B, float *C,
                            void *workspace);

/*--- Elementwise -----------------------------------------------------------*/

/* Binary ops. Kernels taking two operands broadcast them with strides: out[i]
 * = a[..] op b[..] over out_shape, a_strides/b_strides in elements with 0 on
 * broadcast dimensions (numpy broadcasting). */
typedef enum otck_binary_op {
  OTCK_ADD = 0,
  OTCK_SUB = 1,
  OTCK_MUL = 2,
  OTCK_DIV = 3,   /* integers: truncates toward zero (C) */
  OTCK_POW = 4,   /* float: std::pow; a row whose exponent is one broadcast
                     value takes OTCK_POW_SCALAR's exact special cases */
  OTCK_MAX = 5,   /* NaN in either operand gives NaN */
  OTCK_MIN = 6,   /* NaN in either operand gives NaN */
  OTCK_MOD = 7,   /* ONNX Mod fmod=0: Python's a - floor(a/b) b, sign of b */
  OTCK_FMOD = 8,  /* ONNX Mod fmod=1: C fmod / %, sign of a */
  OTCK_PRELU = 9, /* a = x, b = slope: a >= 0 ? a : b * a */
  /* Integers only (otck_binary_int; the float kernels do nothing): ONNX
   * BitShift. A shift by the width or more, or by a negative amount, gives
   * 0; a right shift of a negative value fills with its sign. */
  OTCK_SHIFT_LEFT = 10,
  OTCK_SHIFT_RIGHT = 11
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
 * OTCK_ERR_UNSUPPORTED for a rank outside [0, OTCK_MAX_RANK] or an `op` that
 * is not an otck_binary_op (an int: any value may be passed and refused). */
int otck_binary_i32(int op, int rank, const int64_t *out_shape,
                    const int32_t *a, const int64_t *a_strides,
                    const int32_t *b, const int64_t *b_strides, int32_t *out);
int otck_binary_i64(int op, int rank, const int64_t *out_shape,
                    const int64_t *a, const int64_t *a_strides,
                    const int64_t *b, const int64_t *b_strides, int64_t *out);
/* The same over any integer type `dtype` (an otck_dtype: INT8, INT16,
 * INT32, INT64, UINT8, UINT16, UINT32, UINT64; unsigned types wrap modulo
 * 2^bits and never take the negative cases), with the shifts. Returns
 * OTCK_ERR_UNSUPPORTED for another type code, op or rank. */
int otck_binary_int(int op, int dtype, int rank, const int64_t *out_shape,
                    const void *a, const int64_t *a_strides, const void *b,
                    const int64_t *b_strides, void *out);

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
 * for the tensor it reads, the kernel returns without writing dx. GELU and
 * GELU_TANH read x; given y as well, they take Phi(x) (the sigmoid) as
 * y / x instead of computing it again, which is several times cheaper. dx
 * may alias dy, x or y. alpha and beta as in the forward. */
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
/* The three updates above over `count` parameters in one call (parameter a:
 * sizes[a] elements at w[a], g[a] and its state; the hyperparameters shared):
 * the same bits as one call per parameter, with the threads splitting all
 * the parameters' elements together rather than each parameter's, so that a
 * model of many small parameters keeps every thread busy. */
void otck_sgd_multi_f32(int64_t count, const int64_t *sizes, float *const *w,
                        const float *const *g, float lr, float wd);
void otck_momentum_multi_f32(int64_t count, const int64_t *sizes,
                             float *const *w, const float *const *g,
                             float *const *v, float lr, float mu, float wd,
                             int nesterov);
void otck_adam_multi_f32(int64_t count, const int64_t *sizes, float *const *w,
                         const float *const *g, float *const *m,
                         float *const *v, float lr, float beta1, float beta2,
                         float eps, float wd, int64_t step, int decoupled);
/* torch.optim.Adagrad (1.13, single tensor; initial_accumulator_value is the
 * caller's initial `sum`). step is 1-based (clamped to 1):
 * d = g + wd*w (skipped when wd == 0); clr = lr / (1 + (step - 1) * lr_decay)
 * in double, rounded to float; sum += d*d (one FMA: addcmul_ with value 1);
 * w += (-clr * d) / (sqrt(sum) + eps). */
void otck_adagrad_f32(int64_t n, float *w, const float *g, float *sum, float lr,
                      float lr_decay, float wd, float eps, int64_t step);
/* torch.optim.RMSprop (1.13, single tensor): d = g + wd*w (skipped when
 * wd == 0); sq = alpha*sq + (1-alpha)*d*d; centered when grad_avg is not
 * NULL: ga = alpha*ga + (1-alpha)*d, avg = sqrt(sq - ga*ga) + eps, else
 * avg = sqrt(sq) + eps; with momentum_buf (pass it exactly when
 * momentum > 0, as torch takes that branch): buf = momentum*buf + d/avg,
 * w -= lr*buf; without: w += (-lr * d) / avg. 1 - alpha is computed in
 * double and rounded to float; add-with-alpha and addcmul are one FMA. */
void otck_rmsprop_f32(int64_t n, float *w, const float *g, float *square_avg,
                      float *grad_avg, float *momentum_buf, float lr,
                      float alpha, float eps, float wd, float momentum);
/* Lion (Chen et al. 2023; lucidrains/lion-pytorch's update_fn): w *= 1 -
 * lr*wd (the factor in double, rounded to float; skipped when wd == 0);
 * c = beta1*m + (1-beta1)*g; w -= lr * sign(c); m = beta2*m + (1-beta2)*g.
 * sign is torch's: 0 for 0 and for NaN (a NaN gradient leaves w alone and
 * makes m NaN). 1 - beta is computed in double; the moment updates are one
 * FMA each (torch's add_ with alpha). */
void otck_lion_f32(int64_t n, float *w, const float *g, float *m, float lr,
                   float beta1, float beta2, float wd);
/* LAMB (You et al. 2020), one tensor, with DeepSpeed FusedLamb's trust
 * ratio (bias_correction, max_coeff 10, min_coeff 0.01). step is 1-based
 * (clamped to 1): m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;
 * u = (m / (1-b1^step)) / (sqrt(v / (1-b2^step)) + eps) + wd*w;
 * r1 = ||w|| (before the update), r2 = ||u||; trust = (r1 != 0 && r2 != 0)
 * ? clamp(r1 / r2, 0.01, 10) : 1 (DeepSpeed clamps the ratio, not ||w||; a
 * NaN norm gives a NaN trust, as DeepSpeed's lamb_coeff);
 * w += -(lr * trust) * u (the factor rounded to float, one FMA: add_ with
 * alpha). Other scalars in double, rounded to float; the norms'
 * squares summed in double over a fixed chunking (the same bits whatever
 * the thread count); no scratch: m and v are updated while the norms are
 * summed, then u is recomputed from them. out_trust_ratio (nullable)
 * receives trust. */
void otck_lamb_f32(int64_t n, float *w, const float *g, float *m, float *v,
                   float lr, float beta1, float beta2, float eps, float wd,
                   int64_t step, float *out_trust_ratio);
/* Exponential moving average of weights (torch.optim.swa_utils.
 * AveragedModel with get_ema_multi_avg_fn(decay)): updates <= 0 (the first
 * update) copies w into ema; otherwise ema = lerp(ema, w, weight) with
 * weight = float(1 - double(decay)) and torch's CPU lerp: |weight| < 0.5 ?
 * ema + weight*(w - ema) : w - (w - ema)*(1 - weight), where the multiply
 * and the add are one FMA, as in torch's vectorised lerp (fmadd(weight or
 * weight - 1, w - ema, ema or w)). */
void otck_ema_f32(int64_t n, float *ema, const float *w, float decay,
                  int64_t updates);

/*--- Gradient clipping (over many arrays in one call) ---------------------*/

/* The arrays are data[0..count) with sizes[0..count) elements each (a size
 * of 0 may come with a NULL pointer): the gradient tensors or buckets of an
 * arena, treated as one vector. */

/* out_norm[0] = sqrt(sum of x*x over every element), the squares summed in
 * double over a fixed chunking of the concatenated elements (the same bits
 * whatever the thread count), rounded to float once. An infinite element
 * gives inf, a NaN gives NaN; count == 0 gives 0. */
void otck_global_norm_f32(int64_t count, const float *const *data,
                          const int64_t *sizes, float *out_norm);
/* torch.nn.utils.clip_grad_norm_ (1.13) given the total norm: coef =
 * max_norm / (norm[0] + 1e-6) in float as torch evaluates it
 * ((1 / (norm + 1e-6f)) * max_norm: Tensor.__rtruediv__ is reciprocal then
 * mul), clamped to at most 1 (NaN stays NaN); every element x *= coef
 * (nothing is written when coef is 1: x * 1 is x). norm is read from memory
 * (an arena slot, typically otck_global_norm_f32's output). */
void otck_clip_by_norm_f32(int64_t count, float *const *data,
                           const int64_t *sizes, const float *norm,
                           float max_norm);
/* torch.nn.utils.clip_grad_value_: x = clamp(x, -clip, clip); NaN stays
 * NaN. */
void otck_clip_by_value_f32(int64_t count, float *const *data,
                            const int64_t *sizes, float clip);

/*--- Reductions, indexing, data movement ----------------------------------*/

/* Semantics are ONNX's (opsets 13-17). Data-movement kernels are
 * type-agnostic (elements of `elem_size` bytes), arithmetic ones float32,
 * indices int64 (negative ones count from the end). Kernels that split a
 * reduction or a scatter across threads give results that do not depend on
 * the thread count. */

/* dst[i . dst_strides] = src[i . src_strides] for every multi-index i of
 * `shape`. Strides are in elements; source strides may be 0 (broadcast) or
 * negative (reversed slice; src points at element [0, ..., 0]); destination
 * strides are non-negative and address distinct elements. */
void otck_strided_copy(int rank, const int64_t *shape, const void *src,
                       const int64_t *src_strides, void *dst,
                       const int64_t *dst_strides, int64_t elem_size);

/* Sets n elements of dst to *value. */
void otck_fill(int64_t n, const void *value, void *dst, int64_t elem_size);

/* dst[i . dst_strides] += src[i . src_strides] over `shape`: the backward of
 * Expand, Slice and Tile. A 0 destination stride sums over that dimension;
 * positions that differ in a dimension with a non-zero destination stride are
 * distinct. Sums are accumulated in double. */
void otck_strided_add_f32(int rank, const int64_t *shape, const float *src,
                          const int64_t *src_strides, float *dst,
                          const int64_t *dst_strides);

typedef enum otck_pad_mode {
  OTCK_PAD_CONSTANT = 0,
  OTCK_PAD_REFLECT = 1,
  OTCK_PAD_EDGE = 2,
} otck_pad_mode;

/* ONNX Pad. y has in_shape[d] + pads_begin[d] + pads_end[d] elements along d.
 * Negative pads crop: the input is cropped first, then padded (reflect and
 * edge mirror the cropped edges). `value` (one element) is read in constant
 * mode only. Reflect repeats periodically when a pad exceeds the size - 1;
 * reflect or edge padding of an empty dimension writes zeros. */
void otck_pad(int rank, const int64_t *in_shape, const int64_t *pads_begin,
              const int64_t *pads_end, int mode, const void *value,
              const void *x, void *y, int64_t elem_size);
/* dx (in_shape) = adjoint of otck_pad applied to dy: each input position
 * receives the sum of the dy elements it was copied to (0 if cropped). */
void otck_pad_grad_f32(int rank, const int64_t *in_shape,
                       const int64_t *pads_begin, const int64_t *pads_end,
                       int mode, const float *dy, float *dx);

typedef enum otck_reduce_op {
  OTCK_REDUCE_SUM = 0,
  OTCK_REDUCE_MEAN = 1,
  OTCK_REDUCE_MAX = 2,
  OTCK_REDUCE_MIN = 3,
  OTCK_REDUCE_PROD = 4,
  OTCK_REDUCE_SUM_SQUARE = 5,
  OTCK_REDUCE_L1 = 6,
  OTCK_REDUCE_L2 = 7,
  OTCK_REDUCE_LOG_SUM_EXP = 8,
} otck_reduce_op;

/* y = op over the dimensions d of x where reduced[d] != 0; y is contiguous
 * over the kept dimensions in order (keepdims only changes y's shape).
 * Accumulates in double. Empty reductions: SUM, SUM_SQUARE, L1, L2 give 0,
 * MEAN NaN, MAX -inf, MIN +inf, PROD 1, LOG_SUM_EXP -inf. MAX and MIN
 * propagate NaN. */
void otck_reduce_f32(otck_reduce_op op, int rank, const int64_t *in_shape,
                     const uint8_t *reduced, const float *x, float *y);
/* dx (x's shape) from x, the forward's y and dy (both y-shaped):
 * SUM dy, MEAN dy/count, SUM_SQUARE 2 x dy, L1 sign(x) dy (0 at 0),
 * L2 x/y dy (0 where y == 0), LOG_SUM_EXP exp(x - y) dy (0 where y = -inf),
 * MAX/MIN dy split evenly among the positions equal to y (NaN positions when
 * y is NaN), PROD dy * (product of the other elements), exact with zeros. */
void otck_reduce_grad_f32(otck_reduce_op op, int rank, const int64_t *in_shape,
                          const uint8_t *reduced, const float *x,
                          const float *y, const float *dy, float *dx);

/* ArgMax (is_max) / ArgMin of x viewed as [outer, n, inner] along n; y is
 * [outer, inner]. Ties give the first index, or the last when
 * select_last_index. NaN wins over any number (numpy and PyTorch). n == 0
 * writes 0. */
void otck_arg_reduce_f32(int is_max, int64_t outer, int64_t n, int64_t inner,
                         int select_last_index, const float *x, int64_t *y);
/* The same over int64 (token ids, masks: exact where float32 is not). */
void otck_arg_reduce_i64(int is_max, int64_t outer, int64_t n, int64_t inner,
                         int select_last_index, const int64_t *x, int64_t *y);

/* CumSum of x viewed as [outer, n, inner] along n, accumulated in double.
 * The backward is the same kernel with `reverse` flipped. x and y may
 * alias. */
void otck_cumsum_f32(int64_t outer, int64_t n, int64_t inner, int exclusive,
                     int reverse, const float *x, float *y);
/* The same over int64 (wrapping as two's complement). */
void otck_cumsum_i64(int64_t outer, int64_t n, int64_t inner, int exclusive,
                     int reverse, const int64_t *x, int64_t *y);

/* TopK of x viewed as [outer, n, inner] along n (0 <= k <= n); values and
 * indices are [outer, k, inner]. Equal values are ordered by the lower index;
 * NaN ranks above every number. Results are always sorted (best first),
 * which `sorted == 0` allows. The backward is otck_gather_elements_grad_f32
 * with the indices. */
void otck_topk_f32(int64_t outer, int64_t n, int64_t inner, int64_t k,
                   int largest, int sorted, const float *x, float *values,
                   int64_t *indices);

/* Gather along an axis: x is [outer, axis_dim, inner], y is
 * [outer, num_indices, inner]. Returns OTCK_ERR_INDEX_OUT_OF_RANGE (y left
 * unspecified) when an index is outside [-axis_dim, axis_dim). */
int otck_gather(int64_t outer, int64_t axis_dim, int64_t inner, const void *x,
                int64_t num_indices, const int64_t *indices, void *y,
                int64_t elem_size);
/* dx [outer, axis_dim, inner] = 0, then dy's rows are added at their indices
 * (repeated indices in index order). */
int otck_gather_grad_f32(int64_t outer, int64_t axis_dim, int64_t inner,
                         int64_t num_indices, const int64_t *indices,
                         const float *dy, float *dx);

/* GatherElements: y (idx_shape) [i] = x[i with i[axis] = indices[i]].
 * idx_shape[d] <= x_shape[d] off the axis. */
int otck_gather_elements(int rank, const int64_t *x_shape,
                         const int64_t *idx_shape, int axis, const void *x,
                         const int64_t *indices, void *y, int64_t elem_size);
/* dx (x_shape) = 0, then dy (idx_shape) scatter-added at the indices
 * (repeated indices in index order). Also the backward of TopK. */
int otck_gather_elements_grad_f32(int rank, const int64_t *x_shape,
                                  const int64_t *idx_shape, int axis,
                                  const int64_t *indices, const float *dy,
                                  float *dx);

typedef enum otck_scatter_reduction {
  OTCK_SCATTER_NONE = 0,
  OTCK_SCATTER_ADD = 1,
  OTCK_SCATTER_MUL = 2,
  OTCK_SCATTER_MAX = 3,
  OTCK_SCATTER_MIN = 4,
} otck_scatter_reduction;

/* ScatterElements: y = data (y may alias data), then for every position i of
 * idx_shape in row-major order y[i with i[axis] = indices[i]] =
 * reduction(that element, updates[i]) (NONE overwrites, so the last repeated
 * index wins; MAX/MIN propagate NaN). */
int otck_scatter_elements_f32(int rank, const int64_t *data_shape,
                              const int64_t *idx_shape, int axis, int reduction,
                              const float *data, const int64_t *indices,
                              const float *updates, float *y);

/* OneHot: y [outer, depth, inner] = on_value where the index (indices
 * [outer, inner], negative ones + depth) equals the depth position, else
 * off_value; an index out of range gives a row of off_value (ONNX).
 * Always returns OTCK_OK. */
int otck_one_hot_f32(int64_t outer, int64_t depth, int64_t inner,
                     const int64_t *indices, float off_value, float on_value,
                     float *y);

/* out = cond ? a : b over out_shape, broadcasting by strides (0 on broadcast
 * dimensions) as in otck_binary_f32; cond is uint8 (non-zero = true). */
void otck_where(int rank, const int64_t *out_shape, const uint8_t *cond,
                const int64_t *c_strides, const void *a,
                const int64_t *a_strides, const void *b,
                const int64_t *b_strides, void *out, int64_t elem_size);

typedef enum otck_compare_op {
  OTCK_CMP_EQUAL = 0,
  OTCK_CMP_LESS = 1,
  OTCK_CMP_LESS_OR_EQUAL = 2,
  OTCK_CMP_GREATER = 3,
  OTCK_CMP_GREATER_OR_EQUAL = 4,
} otck_compare_op;

/* out = (a op b) as uint8 0/1 over out_shape, broadcasting by strides
 * (IEEE comparisons: NaN compares false). */
void otck_compare_f32(otck_compare_op op, int rank, const int64_t *out_shape,
                      const float *a, const int64_t *a_strides, const float *b,
                      const int64_t *b_strides, uint8_t *out);
void otck_compare_i64(otck_compare_op op, int rank, const int64_t *out_shape,
                      const int64_t *a, const int64_t *a_strides,
                      const int64_t *b, const int64_t *b_strides, uint8_t *out);

/* otck_compare_f32 over any element type `dtype` the comparisons take (an
 * otck_dtype: FLOAT, DOUBLE, BOOL or an integer type). Returns
 * OTCK_ERR_UNSUPPORTED (out untouched) for another type code or rank. */
int otck_compare(otck_compare_op op, int dtype, int rank,
                 const int64_t *out_shape, const void *a,
                 const int64_t *a_strides, const void *b,
                 const int64_t *b_strides, uint8_t *out);

typedef enum otck_logic_op {
  OTCK_LOGIC_AND = 0,
  OTCK_LOGIC_OR = 1,
  OTCK_LOGIC_XOR = 2,
} otck_logic_op;

/* out = a op b over out_shape for bools (uint8, non-zero = true; out is 0/1),
 * broadcasting by strides. */
void otck_logic(otck_logic_op op, int rank, const int64_t *out_shape,
                const uint8_t *a, const int64_t *a_strides, const uint8_t *b,
                const int64_t *b_strides, uint8_t *out);
/* y = !x over n bools (y is 0/1); x and y may alias. */
void otck_not(int64_t n, const uint8_t *x, uint8_t *y);

/* Trilu of x viewed as [batch, rows, cols]: upper keeps the elements with
 * col - row >= k, lower those with col - row <= k; the others become zero
 * bytes. x and y may alias. */
void otck_trilu(int64_t batch, int64_t rows, int64_t cols, int64_t k, int upper,
                const void *x, void *y, int64_t elem_size);

typedef enum otck_resize_mode {
  OTCK_RESIZE_NEAREST = 0,
  OTCK_RESIZE_LINEAR = 1,
} otck_resize_mode;

typedef enum otck_resize_coord {
  OTCK_RESIZE_HALF_PIXEL = 0,
  OTCK_RESIZE_PYTORCH_HALF_PIXEL = 1,
  OTCK_RESIZE_ALIGN_CORNERS = 2,
  OTCK_RESIZE_ASYMMETRIC = 3,
  OTCK_RESIZE_TF_HALF_PIXEL_FOR_NN = 4,
} otck_resize_coord;

typedef enum otck_resize_nearest {
  OTCK_RESIZE_ROUND_PREFER_FLOOR = 0,
  OTCK_RESIZE_ROUND_PREFER_CEIL = 1,
  OTCK_RESIZE_FLOOR = 2,
  OTCK_RESIZE_CEIL = 3,
} otck_resize_nearest;

/* ONNX Resize (no antialias, no cubic, no tf_crop_and_resize) over every
 * dimension: scales[d] is ONNX's scale of dimension d (out_shape[d] is
 * usually floor(in_shape[d] * scales[d])); coordinates are computed in
 * double. Linear is n-linear over all dimensions, with sample coordinates
 * clamped to [0, in - 1]; nearest clamps its index into range. */
void otck_resize_f32(int rank, const int64_t *in_shape,
                     const int64_t *out_shape, const float *scales, int mode,
                     int coord_mode, int nearest_mode, const float *x,
                     float *y);
/* dx (in_shape) = adjoint of otck_resize_f32 applied to dy (out_shape). */
void otck_resize_grad_f32(int rank, const int64_t *in_shape,
                          const int64_t *out_shape, const float *scales,
                          int mode, int coord_mode, int nearest_mode,
                          const float *dy, float *dx);

/*--- Convolution, pooling, normalization -----------------------------------*/

/* Layout is NCHW: [batch, channels, spatial...] with 1 to 3 spatial
 * dimensions. Descriptors hold 3 entries per spatial array, the first
 * `spatial` of them in the tensor's order (D, H, W); the others are ignored.
 * Kernels given an invalid descriptor (spatial not 1..3, a negative size,
 * a kernel, stride, dilation or conv channel count below 1, groups not
 * dividing the channels) do nothing; sizes of 0 are valid.
 * Results are the same bits whatever the thread count. */

/* A convolution (ONNX Conv): x [batch, in_channels, in...], w [out_channels,
 * in_channels / groups, kernel...], y [batch, out_channels, out...].
 * Position o of y reads x at o * stride - pad_begin + k * dilation (zero
 * outside x); the end pads are implied by out[], which the compiler computes
 * (auto_pad resolved). groups divides both channel counts. */
typedef struct otck_conv_desc {
  int32_t spatial; /* 1, 2 or 3 */
  int32_t compute; /* OTCK_COMPUTE_F32 or OTCK_COMPUTE_BF16 */
  int64_t batch, in_channels, out_channels, groups;
  int64_t in[3], out[3], kernel[3], stride[3], dilation[3], pad_begin[3];
} otck_conv_desc;

/* Bytes of workspace every conv kernel below (grad_bias excepted) needs for
 * `d` (0 possible: the pointer may then be null); depends on the descriptor
 * only, never on the thread count, and stays under 256 MiB unless one
 * column buffer or the weights alone come near that. Float-aligned is
 * enough; contents are scratch, never read before written. */
int64_t otck_conv_workspace_bytes(const otck_conv_desc *d);
/* y = conv(x, w) + bias (bias nullable, [out_channels]). */
void otck_conv_f32(const otck_conv_desc *d, const float *x, const float *w,
                   const float *bias, float *y, void *workspace);
/* dx [batch, in_channels, in...] = d(sum dy * y) / dx (overwritten; input
 * positions no output reads get 0). */
void otck_conv_grad_input_f32(const otck_conv_desc *d, const float *dy,
                              const float *w, float *dx, void *workspace);
/* dw [out_channels, in_channels / groups, kernel...] (overwritten). */
void otck_conv_grad_weight_f32(const otck_conv_desc *d, const float *dy,
                               const float *x, float *dw, void *workspace);
/* db [out_channels] = sum of dy over batch and out positions. */
void otck_conv_grad_bias_f32(const otck_conv_desc *d, const float *dy,
                             float *db);
/* ONNX ConvTranspose as the adjoint of a convolution. `d` describes the
 * forward convolution whose *input* has y's shape and whose output has x's:
 * d->in = ConvTranspose's output size (output_padding and output_shape
 * included), d->out = x's spatial size, d->in_channels = ConvTranspose's
 * output channels, d->out_channels = its input channels, same kernel,
 * strides, dilations, groups and pad_begin. ConvTranspose's weight
 * [C_in, C_out / groups, kernel...] is then exactly that convolution's
 * weight, and y = conv_grad_input(dy = x) + bias (bias nullable,
 * [d->in_channels]). Uses otck_conv_workspace_bytes(d) of workspace. */
void otck_conv_transpose_f32(const otck_conv_desc *d, const float *x,
                             const float *w, const float *bias, float *y,
                             void *workspace);

/* Max and average pooling, x [batch, channels, in...], y [batch, channels,
 * out...]. Window o covers x positions o * stride - pad_begin + k * dilation
 * for k in [0, kernel); out[] is computed by the compiler (ceil_mode
 * included), so windows may run past the input. */
typedef struct otck_pool_desc {
  int32_t spatial;           /* 1, 2 or 3 */
  int32_t count_include_pad; /* average pooling only */
  int64_t batch, channels;
  int64_t in[3], out[3], kernel[3], stride[3], dilation[3], pad_begin[3],
      pad_end[3];
} otck_pool_desc;

/* y = max over the window's positions inside x, as PyTorch: ties keep the
 * first position in row-major order, a NaN wins (index of the window's last
 * NaN); a window with no position inside x gives -inf and index -1.
 * indices (nullable, shaped like y) receive the flat index of the max within
 * x's (n, c) plane (ONNX's Indices add (n * channels + c) * plane size). */
void otck_max_pool_f32(const otck_pool_desc *d, const float *x, float *y,
                       int64_t *indices);
/* dx (overwritten) = dy scattered to the forward's indices, summed where
 * windows share a max; indices outside the plane are skipped. */
void otck_max_pool_grad_f32(const otck_pool_desc *d, const float *dy,
                            const int64_t *indices, float *dx);
/* y = sum of the window's positions inside x / divisor, where divisor counts
 * the window positions inside [-pad_begin, in + pad_end) when
 * count_include_pad, else those inside x (PyTorch's avg_pool, ceil_mode
 * included; dilation as ONNX AveragePool-19). An empty divisor gives 0. */
void otck_avg_pool_f32(const otck_pool_desc *d, const float *x, float *y);
/* dx (overwritten) = adjoint of otck_avg_pool_f32. */
void otck_avg_pool_grad_f32(const otck_pool_desc *d, const float *dy,
                            float *dx);

/* Normalisations. Statistics are accumulated in double over a fixed
 * order, so results do not depend on the thread count; variances are
 * biased; invstd = 1 / sqrt(var + eps). */

/* Training-mode BatchNorm, x viewed as [N, C, S] (S = product of the spatial
 * dims): batch mean/var per channel over N and S; y = (x - mean) * invstd *
 * scale + bias; saved_mean/saved_invstd [C] for the backward. running_mean /
 * running_var [C] are updated in place: running = running * momentum +
 * batch_stat * (1 - momentum) (ONNX convention: PyTorch's momentum is
 * 1 - this), running_var taking the unbiased variance (n / (n - 1), n = N*S;
 * NaN when n == 1, as PyTorch) when unbiased_running_var is 1 (PyTorch) and
 * the biased one when 0 (ONNX). saved_* and running_* are nullable. N*S == 0
 * leaves every output untouched. */
void otck_batch_norm_train_f32(int64_t N, int64_t C, int64_t S, const float *x,
                               const float *scale, const float *bias, float eps,
                               float momentum, int unbiased_running_var,
                               float *y, float *saved_mean, float *saved_invstd,
                               float *running_mean, float *running_var);
/* Inference BatchNorm: y = (x - mean) / sqrt(var + eps) * scale + bias. */
void otck_batch_norm_infer_f32(int64_t N, int64_t C, int64_t S, const float *x,
                               const float *scale, const float *bias,
                               const float *mean, const float *var, float eps,
                               float *y);
/* Backward of otck_batch_norm_train_f32 (batch statistics): dx [N, C, S],
 * dscale/dbias [C] (both nullable; zero when N*S == 0). */
void otck_batch_norm_grad_f32(int64_t N, int64_t C, int64_t S, const float *dy,
                              const float *x, const float *scale,
                              const float *saved_mean,
                              const float *saved_invstd, float *dx,
                              float *dscale, float *dbias);
/* LayerNorm over the trailing D elements of each of M rows: y = (x - mean) *
 * invstd * scale + bias; scale/bias [D] (bias nullable); mean/invstd [M]
 * (nullable) are saved for the backward. */
void otck_layer_norm_f32(int64_t M, int64_t D, const float *x,
                         const float *scale, const float *bias, float eps,
                         float *y, float *mean, float *invstd);
/* Backward of otck_layer_norm_f32: dx [M, D]; dscale/dbias [D] (nullable;
 * sums over the M rows, zero when M == 0). */
void otck_layer_norm_grad_f32(int64_t M, int64_t D, const float *dy,
                              const float *x, const float *scale,
                              const float *mean, const float *invstd, float *dx,
                              float *dscale, float *dbias);
/* InstanceNorm, x viewed as [N, C, S]: statistics per (n, c) over S;
 * scale/bias [C]; mean/invstd [N*C] (nullable) saved for the backward. */
void otck_instance_norm_f32(int64_t N, int64_t C, int64_t S, const float *x,
                            const float *scale, const float *bias, float eps,
                            float *y, float *mean, float *invstd);
/* Backward of otck_instance_norm_f32: dx [N, C, S]; dscale/dbias [C]
 * (nullable). */
void otck_instance_norm_grad_f32(int64_t N, int64_t C, int64_t S,
                                 const float *dy, const float *x,
                                 const float *scale, const float *mean,
                                 const float *invstd, float *dx, float *dscale,
                                 float *dbias);

/*--- Threads ---------------------------------------------------------------*/

/* Sets the number of threads the kernels (and the BLAS) use; <= 0 keeps the
 * default (OMP_NUM_THREADS / all cores). */
void otck_set_num_threads(int n);
/* The number of threads the kernels use when called from this thread (the
 * setting is per thread: a new thread starts with the default). */
int otck_get_num_threads(void);

#ifdef __cplusplus
}
#endif

#endif /* OTC_KERNELS_H */
