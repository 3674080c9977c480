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

/*--- GEMM ------------------------------------------------------------------*/

/* C[M,N] = alpha * op(A) * op(B) + beta * C. op(A) is [M,K], op(B) is [K,N];
 * A is stored [M,K] (or [K,M] when transA), B is [K,N] (or [N,K] when transB).
 * beta == 0 overwrites C without reading it (NaN in C does not propagate). */
void otck_gemm_f32(int transA, int transB, int64_t M, int64_t N, int64_t K,
                   float alpha, const float *A, const float *B, float beta,
                   float *C);

/*--- Elementwise -----------------------------------------------------------*/

typedef enum otck_binary_op {
  OTCK_ADD = 0,
  OTCK_SUB = 1,
  OTCK_MUL = 2,
  OTCK_DIV = 3,
} otck_binary_op;

/* out[i] = a[i] op b[i] over out_shape with numpy broadcasting expressed as
 * strides (a_strides/b_strides have 0 on broadcast dimensions). */
void otck_binary_f32(otck_binary_op op, int rank, const int64_t *out_shape,
                     const float *a, const int64_t *a_strides, const float *b,
                     const int64_t *b_strides, float *out);

typedef enum otck_unary_op {
  OTCK_RELU = 0,
  OTCK_SIGMOID = 1,
  OTCK_TANH = 2,
  OTCK_NEG = 3,
  OTCK_EXP = 4,
  OTCK_LOG = 5,
  OTCK_SQRT = 6,
  OTCK_SCALE = 7, /* y = alpha * x */
} otck_unary_op;

/* y = f(x) elementwise over n elements; `alpha` is used by OTCK_SCALE only.
 * x and y may alias. */
void otck_unary_f32(otck_unary_op op, int64_t n, const float *x, float *y,
                    float alpha);

/* Backward of a unary op from the forward's output y ("saved"):
 * RELU dx = dy * (y > 0), SIGMOID dx = dy * y (1 - y), TANH dx = dy (1 - y^2),
 * EXP dx = dy * y, SQRT dx = dy / (2 y), NEG dx = -dy. LOG and SCALE need the
 * input or alpha and are differentiated by other kernels (dx untouched). */
void otck_unary_grad_f32(otck_unary_op op, int64_t n, const float *dy,
                         const float *saved, float *dx);

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
