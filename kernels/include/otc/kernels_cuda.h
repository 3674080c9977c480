/*===- otc/kernels_cuda.h - The kernel library on CUDA -----------*- C -*-===*\
|*                                                                            *|
|* What programs compiled with `otc-compile --target cuda` call (library     *|
|* otc_kernels_cuda). otckd_X is the CUDA twin of otck_X of otc/kernels.h:   *|
|* the same arguments and the same results, with these differences:          *|
|*  - tensors are device pointers; shapes, strides, permutations and the     *|
|*    scalar `value` of otckd_fill are host memory, read during the call;    *|
|*  - calls are asynchronous on the calling thread's current stream          *|
|*    (otckd_set_stream) and never synchronize it;                           *|
|*  - a twin of a kernel that returns an error code returns 0 and records    *|
|*    the error on the device; otckd_take_status reports it.                 *|
|* Results match the CPU twins to float rounding (reductions and GEMMs sum  *|
|* in another order), not bit for bit.                                      *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef OTC_KERNELS_CUDA_H
#define OTC_KERNELS_CUDA_H

#include "otc/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/*--- Streams, status, constants --------------------------------------------*/

/* Makes `stream` (a cudaStream_t; NULL: the legacy default stream) the
 * calling thread's current stream for every later otckd_ call. */
void otckd_set_stream(void *stream);

/* Status codes of otckd_take_status: an OTCK_ERR_* code of otc/kernels.h
 * recorded by a kernel on the device, or a CUDA error. */
#define OTCKD_ERR_CUDA 100

/* Waits for the current stream and returns the first error recorded since
 * the last call (OTCK_OK if none), then clears it. OTCKD_ERR_CUDA when a
 * launch or the stream failed; otckd_status_message says why. Launch and
 * cuBLAS failures are recorded per calling thread; kernel codes in one
 * status word per device, shared by every stream and thread on it (the
 * first code wins until a call takes it). */
int otckd_take_status(void);

/* The message of the last non-zero otckd_take_status (static storage of
 * the calling thread; "" if none). */
const char *otckd_status_message(void);

/* A device copy of `bytes` bytes of host memory `host` that never changes
 * (a program's constants): copied on the first call for `host`, the same
 * pointer afterwards, freed at exit. NULL if the device cannot hold it. */
const void *otckd_constant(const void *host, int64_t bytes);

/* Copies the float at `device` to *host once the work enqueued before it on
 * the current stream is done: the one call that waits for the stream (a
 * step's decision to skip a non-finite update). 0 on success. */
int otckd_read_f32(const float *device, float *host);

/*--- GEMM ------------------------------------------------------------------*/

void otckd_gemm_f32(int transA, int transB, int64_t M, int64_t N, int64_t K,
                    float alpha, const float *A, const float *B, float beta,
                    float *C);
void otckd_batched_gemm_f32(int batch_rank, const int64_t *batch_shape,
                            const int64_t *a_strides, const int64_t *b_strides,
                            int transA, int transB, int64_t M, int64_t N,
                            int64_t K, const float *A, const float *B,
                            float *C);
void otckd_strided_gemm_f32(int batch_rank, const int64_t *batch_shape,
                            const int64_t *a_strides, const int64_t *b_strides,
                            const int64_t *c_strides, int transA, int transB,
                            int64_t M, int64_t N, int64_t K, const float *A,
                            int64_t lda, const float *B, int64_t ldb, float *C,
                            int64_t ldc);
/* The bfloat16 products: A and B rounded into the workspace
 * (otck_gemm_bf16_workspace_bytes), cublasGemmEx summing in FP32. */
void otckd_gemm_bf16(int transA, int transB, int64_t M, int64_t N, int64_t K,
                     float alpha, const float *A, const float *B, float beta,
                     float *C, void *workspace);
void otckd_batched_gemm_bf16(int batch_rank, const int64_t *batch_shape,
                             const int64_t *a_strides, const int64_t *b_strides,
                             int transA, int transB, int64_t M, int64_t N,
                             int64_t K, const float *A, const float *B,
                             float *C, void *workspace);

/*--- Elementwise -----------------------------------------------------------*/

void otckd_binary_f32(otck_binary_op op, int rank, const int64_t *out_shape,
                      const float *a, const int64_t *a_strides, const float *b,
                      const int64_t *b_strides, float *out);
void otckd_binary_grad_f32(otck_binary_op op, int rank,
                           const int64_t *out_shape, const float *a,
                           const int64_t *a_strides, const float *b,
                           const int64_t *b_strides, const float *dy, float *da,
                           float *db);
/* A division by zero is recorded (OTCK_ERR_DIVISION_BY_ZERO); an unknown
 * type code, op or rank is recorded as a failure. Both return 0. */
int otckd_binary_int(int op, int dtype, int rank, const int64_t *out_shape,
                     const void *a, const int64_t *a_strides, const void *b,
                     const int64_t *b_strides, void *out);
int otckd_compare(otck_compare_op op, int dtype, int rank,
                  const int64_t *out_shape, const void *a,
                  const int64_t *a_strides, const void *b,
                  const int64_t *b_strides, uint8_t *out);
/* Twins of otck_logic and otck_not (bools: non-zero is true, out is 0/1). */
void otckd_logic(otck_logic_op op, int rank, const int64_t *out_shape,
                 const uint8_t *a, const int64_t *a_strides, const uint8_t *b,
                 const int64_t *b_strides, uint8_t *out);
void otckd_not(int64_t n, const uint8_t *x, uint8_t *y);
/* Twin of otck_cast (cast_ops.h converts each element on both): returns
 * OTCK_ERR_UNSUPPORTED, y untouched, for another type code. */
int otckd_cast(int64_t n, int from_type, const void *x, int to_type, void *y);
void otckd_unary_f32(otck_unary_op op, int64_t n, const float *x, float *y,
                     float alpha, float beta);
void otckd_unary_grad_f32(otck_unary_op op, int64_t n, const float *dy,
                          const float *x, const float *y, float *dx,
                          float alpha, float beta);

/*--- Dropout ---------------------------------------------------------------*/

/* The CPU's mask bit for bit (the same counter-based draw per element), so
 * CUDA and CPU programs drop the same elements. */
void otckd_dropout_f32(int64_t n, const float *x, float *y, float *mask,
                       float ratio, uint64_t seed, uint64_t stream);

/*--- Data movement ---------------------------------------------------------*/

void otckd_transpose(int rank, const int64_t *in_shape, const int64_t *perm,
                     const void *x, void *y, int64_t elem_size);
void otckd_copy(int64_t nbytes, const void *x, void *y);
void otckd_fill_f32(int64_t n, float value, float *y);
void otckd_fill(int64_t n, const void *value, void *dst, int64_t elem_size);
void otckd_strided_copy(int rank, const int64_t *shape, const void *src,
                        const int64_t *src_strides, void *dst,
                        const int64_t *dst_strides, int64_t elem_size);
void otckd_strided_add_f32(int rank, const int64_t *shape, const float *src,
                           const int64_t *src_strides, float *dst,
                           const int64_t *dst_strides);
void otckd_reduce_sum_to_f32(int rank, const int64_t *in_shape, const float *x,
                             const int64_t *y_strides, int64_t y_size,
                             float *y);
/* Twins of otck_pad and otck_pad_grad_f32 (shapes, pads and the constant
 * value on the host, as for otck_pad; a value of at most 32 bytes). */
void otckd_pad(int rank, const int64_t *in_shape, const int64_t *pads_begin,
               const int64_t *pads_end, int mode, const void *value,
               const void *x, void *y, int64_t elem_size);
void otckd_pad_grad_f32(int rank, const int64_t *in_shape,
                        const int64_t *pads_begin, const int64_t *pads_end,
                        int mode, const float *dy, float *dx);
/* Twins of otck_resize_f32 and otck_resize_grad_f32 (shapes and scales on
 * the host), bit for bit: the CPU's sampling rule (both libraries share it),
 * one thread per y element (forward) or per dx element (gradient, adding the
 * dy elements that read it in the CPU's order: no atomics). */
void otckd_resize_f32(int rank, const int64_t *in_shape,
                      const int64_t *out_shape, const float *scales, int mode,
                      int coord_mode, int nearest_mode, const float *x,
                      float *y);
void otckd_resize_grad_f32(int rank, const int64_t *in_shape,
                           const int64_t *out_shape, const float *scales,
                           int mode, int coord_mode, int nearest_mode,
                           const float *dy, float *dx);
/* Twins of otck_trilu and otck_one_hot_f32 (indices on the device); x and y
 * of trilu may alias. */
void otckd_trilu(int64_t batch, int64_t rows, int64_t cols, int64_t k,
                 int upper, const void *x, void *y, int64_t elem_size);
int otckd_one_hot_f32(int64_t outer, int64_t depth, int64_t inner,
                      const int64_t *indices, float off_value, float on_value,
                      float *y);
/* Twins of otck_cumsum_f32/_i64: one thread per line, the CPU's order of
 * additions (float accumulated in double). x and y may alias. */
void otckd_cumsum_f32(int64_t outer, int64_t n, int64_t inner, int exclusive,
                      int reverse, const float *x, float *y);
void otckd_cumsum_i64(int64_t outer, int64_t n, int64_t inner, int exclusive,
                      int reverse, const int64_t *x, int64_t *y);
/* Twins of otck_arg_reduce_f32/_i64: one thread per output, scanning n in
 * the CPU's order (the same ties and NaN rule). */
void otckd_arg_reduce_f32(int is_max, int64_t outer, int64_t n, int64_t inner,
                          int select_last_index, const float *x, int64_t *y);
void otckd_arg_reduce_i64(int is_max, int64_t outer, int64_t n, int64_t inner,
                          int select_last_index, const int64_t *x, int64_t *y);
/* Twin of otck_topk_f32: the CPU's order (ties to the lower index, NaN
 * above every number, -0 equal to +0), so the same values and indices bit
 * for bit; slices longer than 256 are radix sorted through stream-ordered
 * scratch (at most INT_MAX elements). */
void otckd_topk_f32(int64_t outer, int64_t n, int64_t inner, int64_t k,
                    int largest, int sorted, const float *x, float *values,
                    int64_t *indices);
/* Twins of otck_gather_elements, otck_gather_elements_grad_f32 and
 * otck_scatter_elements_f32 (shapes on the host, indices on the device): an
 * index outside [-axis_dim, axis_dim) records OTCK_ERR_INDEX_OUT_OF_RANGE
 * (y, or dx, unspecified). Repeated indices combine in the CPU's order
 * (increasing position), bit for bit, without atomics (a NaN that a sum or
 * product makes is the GPU's canonical NaN); with few index columns and a
 * long axis, the gradient and the scatter sort the positions through
 * stream-ordered scratch (CUB radix sort). y of the scatter may alias
 * data. */
int otckd_gather_elements(int rank, const int64_t *x_shape,
                          const int64_t *idx_shape, int axis, const void *x,
                          const int64_t *indices, void *y, int64_t elem_size);
int otckd_gather_elements_grad_f32(int rank, const int64_t *x_shape,
                                   const int64_t *idx_shape, int axis,
                                   const int64_t *indices, const float *dy,
                                   float *dx);
int otckd_scatter_elements_f32(int rank, const int64_t *data_shape,
                               const int64_t *idx_shape, int axis,
                               int reduction, const float *data,
                               const int64_t *indices, const float *updates,
                               float *y);

/*--- Softmax and losses ----------------------------------------------------*/

void otckd_softmax_f32(int64_t outer, int64_t n, int64_t inner, const float *x,
                       float *y, int log_softmax);
void otckd_softmax_grad_f32(int64_t outer, int64_t n, int64_t inner,
                            const float *y, const float *dy, float *dx,
                            int log_softmax);
/* A label outside [0, C) records OTCK_ERR_LABEL_OUT_OF_RANGE; loss[0] is
 * then NaN (probs are still written). otckd_softmax_ce_f32 and otckd_mse_f32
 * reduce through a small stream-ordered scratch buffer (cudaMallocAsync on
 * the current stream), as does otckd_copy of overlapping ranges. */
int otckd_softmax_ce_f32(int64_t N, int64_t C, const float *logits,
                         const int64_t *labels, float *probs, float *loss);
void otckd_softmax_ce_grad_f32(int64_t N, int64_t C, const float *probs,
                               const int64_t *labels, const float *dloss,
                               float *dlogits);
void otckd_mse_f32(int64_t n, const float *pred, const float *target,
                   float *loss);
void otckd_mse_grad_f32(int64_t n, const float *pred, const float *target,
                        const float *dloss, float *dpred);

/*--- Optimizers ------------------------------------------------------------*/

void otckd_sgd_f32(int64_t n, float *w, const float *g, float lr, float wd);
void otckd_momentum_f32(int64_t n, float *w, const float *g, float *v, float lr,
                        float mu, float wd, int nesterov);
void otckd_adam_f32(int64_t n, float *w, const float *g, float *m, float *v,
                    float lr, float beta1, float beta2, float eps, float wd,
                    int64_t step, int decoupled);
/* `sizes` and the pointer arrays are HOST arrays (read during the call) of
 * element counts and DEVICE pointers, as for gradient clipping below. Each
 * call launches one kernel per 64 non-empty parameters (the pointers travel
 * as kernel parameters), not one per parameter, and gives the bits of one
 * call of the update above per parameter. */
void otckd_sgd_multi_f32(int64_t count, const int64_t *sizes, float *const *w,
                         const float *const *g, float lr, float wd);
void otckd_momentum_multi_f32(int64_t count, const int64_t *sizes,
                              float *const *w, const float *const *g,
                              float *const *v, float lr, float mu, float wd,
                              int nesterov);
void otckd_adam_multi_f32(int64_t count, const int64_t *sizes, float *const *w,
                          const float *const *g, float *const *m,
                          float *const *v, float lr, float beta1, float beta2,
                          float eps, float wd, int64_t step, int decoupled);
void otckd_adagrad_f32(int64_t n, float *w, const float *g, float *sum,
                       float lr, float lr_decay, float wd, float eps,
                       int64_t step);
/* grad_avg and momentum_buf are device pointers or NULL, as on the CPU. */
void otckd_rmsprop_f32(int64_t n, float *w, const float *g, float *square_avg,
                       float *grad_avg, float *momentum_buf, float lr,
                       float alpha, float eps, float wd, float momentum);
void otckd_lion_f32(int64_t n, float *w, const float *g, float *m, float lr,
                    float beta1, float beta2, float wd);
/* The norms are summed in double per block, then by one block in a fixed
 * order (the same bits from run to run, not the CPU's order: results match
 * it to float rounding), through stream-ordered scratch; the trust ratio
 * stays on the device, and out_trust_ratio (nullable) is a DEVICE pointer
 * that receives it. */
void otckd_lamb_f32(int64_t n, float *w, const float *g, float *m, float *v,
                    float lr, float beta1, float beta2, float eps, float wd,
                    int64_t step, float *out_trust_ratio);
void otckd_ema_f32(int64_t n, float *ema, const float *w, float decay,
                   int64_t updates);

/*--- Gradient clipping -----------------------------------------------------*/

/* `data` and `sizes` are HOST arrays (read during the call) of DEVICE
 * pointers and their element counts. Each call launches one kernel per 128
 * arrays (the pointers and sizes travel as kernel parameters), not one per
 * array. otckd_global_norm_f32 sums the squares in double per block, then
 * one block adds the partials in a fixed order (through stream-ordered
 * scratch) and writes the DEVICE scalar out_norm; the same bits from run to
 * run, the CPU's value to float rounding. otckd_clip_by_norm_f32 reads norm
 * from device memory (no host round trip) and gives the CPU's bits. */
void otckd_global_norm_f32(int64_t count, const float *const *data,
                           const int64_t *sizes, float *out_norm);
void otckd_clip_by_norm_f32(int64_t count, float *const *data,
                            const int64_t *sizes, const float *norm,
                            float max_norm);
void otckd_clip_by_value_f32(int64_t count, float *const *data,
                             const int64_t *sizes, float clip);

/*--- Transformers: gather, LayerNorm, where, reductions --------------------*/

/* An index outside [-axis_dim, axis_dim) records OTCK_ERR_INDEX_OUT_OF_RANGE
 * (y, or dx, unspecified). otckd_gather_grad_f32 is deterministic (no float
 * atomics): it sorts the indices through stream-ordered scratch (CUB radix
 * sort) and adds each dx row's dy rows in index order, as the CPU. */
int otckd_gather(int64_t outer, int64_t axis_dim, int64_t inner, const void *x,
                 int64_t num_indices, const int64_t *indices, void *y,
                 int64_t elem_size);
int otckd_gather_grad_f32(int64_t outer, int64_t axis_dim, int64_t inner,
                          int64_t num_indices, const int64_t *indices,
                          const float *dy, float *dx);
/* otckd_layer_norm_grad_f32 sums dscale/dbias through scratch. */
void otckd_layer_norm_f32(int64_t M, int64_t D, const float *x,
                          const float *scale, const float *bias, float eps,
                          float *y, float *mean, float *invstd);
void otckd_layer_norm_grad_f32(int64_t M, int64_t D, const float *dy,
                               const float *x, const float *scale,
                               const float *mean, const float *invstd,
                               float *dx, float *dscale, float *dbias);
/* cond and the strides are as in otck_where (cond on the device). */
void otckd_where(int rank, const int64_t *out_shape, const uint8_t *cond,
                 const int64_t *c_strides, const void *a,
                 const int64_t *a_strides, const void *b,
                 const int64_t *b_strides, void *out, int64_t elem_size);
/* `reduced` is host memory; MAX, MIN and PROD gradients use scratch. */
void otckd_reduce_f32(otck_reduce_op op, int rank, const int64_t *in_shape,
                      const uint8_t *reduced, const float *x, float *y);
void otckd_reduce_grad_f32(otck_reduce_op op, int rank, const int64_t *in_shape,
                           const uint8_t *reduced, const float *x,
                           const float *y, const float *dy, float *dx);

/*--- Convolution, pooling, normalization (CNNs) ----------------------------*/

/* Descriptors are host structs. The conv twins use no workspace (the
 * argument is accepted for the CPU signature and may be null): direct
 * kernels, one thread per output (forward) or input (grad_input) element,
 * one block per weight (grad_weight) or channel (grad_bias); every sum runs
 * in a fixed order, so results do not vary from run to run. A descriptor
 * the CPU twin ignores (spatial not 1..3, bad sizes or groups) records a
 * failure (OTCKD_ERR_CUDA) instead of leaving the outputs unwritten. */
int64_t otckd_conv_workspace_bytes(const otck_conv_desc *d);
void otckd_conv_f32(const otck_conv_desc *d, const float *x, const float *w,
                    const float *bias, float *y, void *workspace);
void otckd_conv_grad_input_f32(const otck_conv_desc *d, const float *dy,
                               const float *w, float *dx, void *workspace);
void otckd_conv_grad_weight_f32(const otck_conv_desc *d, const float *dy,
                                const float *x, float *dw, void *workspace);
void otckd_conv_grad_bias_f32(const otck_conv_desc *d, const float *dy,
                              float *db);
/* ConvTranspose (the descriptor as for otck_conv_transpose_f32): the
 * grad_input kernel on x plus the bias, one thread per y element. */
void otckd_conv_transpose_f32(const otck_conv_desc *d, const float *x,
                              const float *w, const float *bias, float *y,
                              void *workspace);
/* Pooling: one thread per output (forward) or input element (backward,
 * gathering the outputs whose windows reach it: no atomics).
 * otckd_max_pool_grad_f32 expects the indices of otckd_max_pool_f32 (each
 * inside its window). */
void otckd_max_pool_f32(const otck_pool_desc *d, const float *x, float *y,
                        int64_t *indices);
void otckd_max_pool_grad_f32(const otck_pool_desc *d, const float *dy,
                             const int64_t *indices, float *dx);
void otckd_avg_pool_f32(const otck_pool_desc *d, const float *x, float *y);
void otckd_avg_pool_grad_f32(const otck_pool_desc *d, const float *dy,
                             float *dx);
/* BatchNorm: one block per channel sums in double, in a fixed order. */
void otckd_batch_norm_train_f32(int64_t N, int64_t C, int64_t S, const float *x,
                                const float *scale, const float *bias,
                                float eps, float momentum,
                                int unbiased_running_var, float *y,
                                float *saved_mean, float *saved_invstd,
                                float *running_mean, float *running_var);
void otckd_batch_norm_infer_f32(int64_t N, int64_t C, int64_t S, const float *x,
                                const float *scale, const float *bias,
                                const float *mean, const float *var, float eps,
                                float *y);
void otckd_batch_norm_grad_f32(int64_t N, int64_t C, int64_t S, const float *dy,
                               const float *x, const float *scale,
                               const float *saved_mean,
                               const float *saved_invstd, float *dx,
                               float *dscale, float *dbias);
/* InstanceNorm, bit for bit: one block per (n, c) row adds in the CPU's
 * float lanes and blocks; the gradient's dscale/dbias add the rows' sums per
 * channel in the CPU's order (through scratch). */
void otckd_instance_norm_f32(int64_t N, int64_t C, int64_t S, const float *x,
                             const float *scale, const float *bias, float eps,
                             float *y, float *mean, float *invstd);
void otckd_instance_norm_grad_f32(int64_t N, int64_t C, int64_t S,
                                  const float *dy, const float *x,
                                  const float *scale, const float *mean,
                                  const float *invstd, float *dx, float *dscale,
                                  float *dbias);

#ifdef __cplusplus
}
#endif

#endif /* OTC_KERNELS_CUDA_H */
