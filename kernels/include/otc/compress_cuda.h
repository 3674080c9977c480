/*===- otc/compress_cuda.h - Gradient compression on CUDA --------*- C -*-===*\
|*                                                                            *|
|* The CUDA twin of otc/compress.h (library otc_kernels_cuda): same configs, *|
|* same payload bit for bit, all pointers on the device, asynchronous on    *|
|* `stream`. The config is read on the host during the call.                 *|
|*                                                                            *|
|* Element-wise payloads (NONE, FP16, BF16) must be aligned to their value   *|
|* size, as buffers from cudaMalloc (and payloads laid back to back) are.    *|
|* Payloads from other ranks must hold distinct indices within a block (as  *|
|* every compressor writes them); duplicates would race.                     *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef OTC_COMPRESS_CUDA_H
#define OTC_COMPRESS_CUDA_H

#include "otc/compress.h"

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* otck_compress_f32 on the device. *d_nonfinite (device memory) becomes 1 if
 * g (or g + residual) holds a NaN or an infinity, and nothing else is
 * written (residual unchanged, payload unspecified); 0 otherwise. Read it
 * after the stream reaches this point. Returns cudaErrorInvalidValue for an
 * invalid config, else the launch status. */
cudaError_t otck_cuda_compress_f32(const otck_compress_config *config,
                                   int64_t n, const float *d_g,
                                   float *d_residual, void *d_payload,
                                   int *d_nonfinite, cudaStream_t stream);

/* otck_decompress_sum_f32 on the device: d_out = scale * the sum of the
 * `count` decompressed payloads at d_payloads (back to back). */
cudaError_t otck_cuda_decompress_sum_f32(const otck_compress_config *config,
                                         int64_t n, const void *d_payloads,
                                         int64_t count, float scale,
                                         float *d_out, cudaStream_t stream);

/* Sets *d_flag (device memory) to 1 if one of the n floats at d_x is a NaN
 * or an infinity; leaves it as it is otherwise. What the exchanges check a
 * dense mean with. */
cudaError_t otck_cuda_flag_nonfinite_f32(int64_t n, const float *d_x,
                                         int *d_flag, cudaStream_t stream);

/* *d_out (device memory) = the sum of d_x[i]^2, accumulated in double (the
 * adaptive ratio's norm: NaN or infinite iff some element is). The order of
 * the additions is not fixed. */
cudaError_t otck_cuda_sum_squares_f64(int64_t n, const float *d_x,
                                      double *d_out, cudaStream_t stream);

/* otck_compress_accumulate_f32 on the device: d_saved = d_velocity (when
 * not NULL), then d_velocity = momentum * d_velocity + d_g, the same floats
 * as the CPU. Returns cudaErrorInvalidValue for a bad buffer, else the
 * launch status. */
cudaError_t otck_cuda_compress_accumulate_f32(int64_t n, float momentum,
                                              const float *d_g,
                                              float *d_velocity, float *d_saved,
                                              cudaStream_t stream);

/* otck_compress_mask_sent_f32 on the device: d_buf[i] = 0 at every index the
 * payload at d_payload sends (all n for the dense methods). */
cudaError_t otck_cuda_compress_mask_sent_f32(const otck_compress_config *config,
                                             int64_t n, const void *d_payload,
                                             float *d_buf, cudaStream_t stream);

/* otck_compress_mask_sent_tail_f32 on the device: the same floats as the
 * CPU. */
cudaError_t otck_cuda_compress_mask_sent_tail_f32(
    const otck_compress_config *config, int64_t n, const void *d_payload,
    float tail, float *d_velocity, float *d_residual, cudaStream_t stream);

/*--- PowerSGD on the device -------------------------------------------------*/
/* The twins of otc/compress.h's PowerSGD kernels: the matrix list is read on
 * the host during the call, the buffers are device memory, the work is
 * enqueued on `stream`. Each returns cudaErrorInvalidValue where the CPU
 * kernel returns -1 (nothing enqueued), else the status of the enqueueing: a
 * launch's, or a cuBLAS failure as a CUDA error (cudaErrorMemoryAllocation,
 * cudaErrorNotSupported, cudaErrorLaunchFailure, cudaErrorUnknown) unless
 * the CUDA runtime reports one of its own. The products run on cuBLAS in
 * FP32 math (no TF32), so results match the CPU's to float rounding;
 * Gram-Schmidt sums in double in another order than the CPU, so its floats
 * are the CPU's but in rare near-ties; the initial Q is the CPU's bit for
 * bit. */

/* otck_powersgd_project_f32 on the device: P_i = M_i Q_i. */
cudaError_t otck_cuda_powersgd_project_f32(const otck_powersgd_matrix *mats,
                                           int64_t num, int64_t rank,
                                           const float *d_m, const float *d_q,
                                           float *d_p, cudaStream_t stream);

/* otck_powersgd_project_feedback_f32 on the device: the accumulation of
 * otck_cuda_compress_accumulate_f32 (momentum 1) on each matrix, then
 * otck_cuda_powersgd_project_f32 on the residual. */
cudaError_t otck_cuda_powersgd_project_feedback_f32(
    const otck_powersgd_matrix *mats, int64_t num, int64_t rank,
    const float *d_g, float *d_residual, float *d_saved, const float *d_q,
    float *d_p, cudaStream_t stream);

/* otck_powersgd_orthonormalize_f32 on the device (one thread block per
 * matrix). */
cudaError_t
otck_cuda_powersgd_orthonormalize_f32(const otck_powersgd_matrix *mats,
                                      int64_t num, int64_t rank, float *d_p,
                                      float eps, cudaStream_t stream);

/* otck_powersgd_back_project_f32 on the device: Q_i = M_i^T P_i. */
cudaError_t otck_cuda_powersgd_back_project_f32(
    const otck_powersgd_matrix *mats, int64_t num, int64_t rank,
    const float *d_m, const float *d_p, float *d_q, cudaStream_t stream);

/* otck_powersgd_decompress_f32 on the device: d_out_i = scale * P_i Q_i^T,
 * then d_residual_i -= d_out_i when d_residual is not NULL. It does not
 * report an overflow as the CPU kernel does: the caller checks d_out. */
cudaError_t otck_cuda_powersgd_decompress_f32(const otck_powersgd_matrix *mats,
                                              int64_t num, int64_t rank,
                                              const float *d_p,
                                              const float *d_q, float scale,
                                              float *d_out, float *d_residual,
                                              cudaStream_t stream);

/* otck_powersgd_init_q_f32 on the device: the same values bit for bit.
 * *d_filled (device memory; NULL: not counted) becomes the number of Q_i
 * filled, the CPU kernel's return value; read it after the stream reaches
 * this point. */
cudaError_t otck_cuda_powersgd_init_q_f32(const otck_powersgd_matrix *mats,
                                          int64_t num, int64_t rank,
                                          uint64_t seed, float *d_q,
                                          int64_t *d_filled,
                                          cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* OTC_COMPRESS_CUDA_H */
