/*===- otc/compress.h - Gradient compression kernels C ABI -------*- C -*-===*\
|*                                                                            *|
|* Block-wise gradient compression for the compressed all-reduce (DESIGN §8). *|
|* A bucket of n floats is cut into blocks of `block_size` (the last one may  *|
|* be short). Every method writes a FIXED-size payload (so ranks can          *|
|* all-gather them), laid out block by block:                                 *|
|*                                                                            *|
|*   NONE       n * 4 bytes: the floats                                       *|
|*   FP16/BF16  n * 2 bytes: the values rounded to nearest-even               *|
|*   INT8       per block: fp32 scale (absmax / 127), then block_size int8    *|
|*   TOPK       per block: k indices (uint8; uint16 if block_size > 256),     *|
|*              then k fp32 values: the k largest |g| of the block            *|
|*   TOPK_INT8  per block: fp32 scale, k indices, k int8 values               *|
|*   RANDOMK    as TOPK, with k indices drawn uniformly without replacement   *|
|*              from (seed, block) — identical on every rank for one seed     *|
|*                                                                            *|
|* k = ceil(ratio * block_size), at least 1, at most block_size (evaluated    *|
|* with ratio lowered by 2^-24 so that a float ratio's rounding cannot add    *|
|* one: 0.3f * 10 gives 3). A short last block of m elements keeps            *|
|* min(k, m) and pads the unused slots with index 0 and value 0; decoders     *|
|* skip the padding. Indices are ascending within a block; ties in |g| go     *|
|* to the lower index. Multi-byte fields are little-endian and unaligned.     *|
|* Scales are absmax / 127 over the kept values; an all-zero block (or one    *|
|* whose absmax / 127 underflows) has scale 0 and decodes to zeros (never     *|
|* NaN). Quantisation is round(v / scale) to nearest even, clamped to         *|
|* [-127, 127]. FP16 overflows to infinity as IEEE rounding does (|v| >=      *|
|* 65520). RANDOMK draws its subset by Floyd's algorithm from SplitMix64 of   *|
|* (seed, block index); kernels/shared/compress_format.h is the reference.    *|
|*                                                                            *|
|* PowerSGD, the low-rank method, has kernels of its own (the last section):  *|
|* its factors are computed, all-reduced and decompressed in several steps.   *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef OTC_COMPRESS_H
#define OTC_COMPRESS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum otck_compress_method {
  OTCK_COMPRESS_NONE = 0,
  OTCK_COMPRESS_FP16 = 1,
  OTCK_COMPRESS_BF16 = 2,
  OTCK_COMPRESS_INT8 = 3,
  OTCK_COMPRESS_TOPK = 4,
  OTCK_COMPRESS_TOPK_INT8 = 5,
  OTCK_COMPRESS_RANDOMK = 6,
  /* Not a block codec (the functions below refuse it): PowerSGD, the
   * compressed all-reduce's low-rank method (otck_powersgd_*). */
  OTCK_COMPRESS_POWERSGD = 7,
} otck_compress_method;

typedef struct otck_compress_config {
  otck_compress_method method;
  int64_t block_size; /* elements per block, 1..65536 */
  float ratio;        /* kept fraction for TOPK/TOPK_INT8/RANDOMK, (0, 1] */
  uint64_t seed;      /* RANDOMK: same seed on every rank for a step */
} otck_compress_config;

/* Elements kept per block (block_size for dense methods); -1 for an invalid
 * config. */
int64_t otck_compress_k(const otck_compress_config *config);

/* Payload bytes for a bucket of n floats; -1 for an invalid config. */
int64_t otck_compress_payload_bytes(const otck_compress_config *config,
                                    int64_t n);

/* The reduce-scatter exchange's cut of a bucket of n floats into `shards`
 * ranges of whole blocks, as even as the blocks allow (the first
 * blocks % shards shards get one block more, so shard 0's payload is the
 * largest): shard s starts at element *begin and holds the returned count
 * of floats (0 when there are fewer blocks than shards). -1 for an
 * invalid config, n < 0, s outside [0, shards) or a NULL `begin`. */
int64_t otck_compress_shard(const otck_compress_config *config, int64_t n,
                            int64_t shards, int64_t s, int64_t *begin);

/* Compresses g (n floats) into `payload`. With error feedback (`residual`
 * not NULL) it compresses g + residual and then sets
 * residual = (g + residual) - decompress(payload), so that
 * g + r_old == decompress(payload) + r_new exactly up to float rounding.
 * Returns 1 if g (or g + residual) holds a NaN or an infinity (the payload
 * is then unspecified; the residual is left unchanged, so a skipped step
 * does not poison it), -1 for an invalid config (nothing written), 0
 * otherwise. The payload does not depend on the thread count. */
int otck_compress_f32(const otck_compress_config *config, int64_t n,
                      const float *g, float *residual, void *payload);

/* otck_compress_f32 that also copies the residual as it was into `saved`
 * (n floats, not NULL when residual is not), so that the caller can undo
 * the step after the compression succeeded (another rank's gradient was
 * not finite): one pass over the residual where a copy, a finiteness check
 * and the compression would take three. Returns as otck_compress_f32 (on 1
 * the residual is unchanged and `saved` holds it too); -1 also for a NULL
 * `saved` with a residual. */
int otck_compress_saving_f32(const otck_compress_config *config, int64_t n,
                             const float *g, float *residual, float *saved,
                             void *payload);

/* out = scale * sum over `count` payloads (laid back to back, each
 * otck_compress_payload_bytes long: an all-gather's result) of their
 * decompressed buckets. out is overwritten, not accumulated into; count 0
 * gives zeros (+0.0, whatever the scale). Sums run in payload order, so every
 * rank computes the same floats; only where a sum is NaN may its bits differ
 * between the CPU and CUDA kernels (the hardware's NaN). Returns 1 when some
 * element of out is a NaN or an infinity (finite gradients can give one:
 * fp16 and bf16 encode values beyond their range as infinities, and a sum of
 * payloads can overflow), 0 when all are finite, -1 for an invalid config
 * (nothing written). */
int otck_decompress_sum_f32(const otck_compress_config *config, int64_t n,
                            const void *payloads, int64_t count, float scale,
                            float *out);

/* Deep Gradient Compression's momentum correction, the velocity of the
 * compressed all-reduce: saved = velocity (when `saved` is not NULL), then
 * velocity = momentum * velocity + g, element-wise over n floats (a product
 * and a sum, each rounded: no fused multiply-add). Returns -1 for n < 0 or a
 * NULL buffer (n > 0), 0 otherwise. */
int otck_compress_accumulate_f32(int64_t n, float momentum, const float *g,
                                 float *velocity, float *saved);

/* Deep Gradient Compression's momentum factor masking: buf[i] = 0 at every
 * index i that `payload` (one compressed bucket of n floats, as
 * otck_compress_f32 wrote it) sends. TOPK, TOPK_INT8, RANDOMK: each block's
 * kept indices (a short last block's padding slots are not indices); the
 * dense methods NONE, FP16, BF16 and INT8 send every element, so all n are
 * zeroed. Returns -1 for an invalid config or buffer (nothing written), 0
 * otherwise. */
int otck_compress_mask_sent_f32(const otck_compress_config *config, int64_t n,
                                const void *payload, float *buf);

/* Momentum factor masking that also takes back what a compressed momentum
 * tail left unsent (the compressed all-reduce's momentum correction): at
 * every index i that `payload` sends (as otck_compress_mask_sent_f32),
 * velocity[i] = 0; at every other index, when `residual` is not NULL,
 * residual[i] = residual[i] - tail * velocity[i] (a product and a
 * difference, each rounded). With tail 0 and no residual it is
 * otck_compress_mask_sent_f32. Returns -1 for an invalid config or buffer
 * (nothing written), 0 otherwise. */
int otck_compress_mask_sent_tail_f32(const otck_compress_config *config,
                                     int64_t n, const void *payload, float tail,
                                     float *velocity, float *residual);

/*--- PowerSGD: the low-rank method ------------------------------------------*/
/* PowerSGD (Vogels et al. 2019; torch's powerSGD_hook) approximates each
 * matrix M_i of a bucket by P_i Q_i^T of rank r_i = min(rank, rows_i,
 * cols_i). Per step, as torch's hook, with M the error-compensated bucket
 * (gradient plus residual) and Q the factors kept from the step before:
 *   init_q (a fresh, all-zero Q_i gets normal values), orthonormalize Q (the
 *   list with rows and cols swapped), project (P = M Q; project_feedback
 *   forms M = g + residual in the same pass), all-reduce P (sum),
 *   orthonormalize P, back_project (Q = M^T P), all-reduce Q (sum),
 *   decompress (out = P Q^T / ranks, residual = M - out).
 * (torch divides the Q it keeps by the ranks; orthonormalising it at the
 * next step makes that moot.) The factors of all matrices lie back to back
 * in list order, each row-major: P_i (rows_i x r_i) in p, Q_i (cols_i x r_i)
 * in q; the buckets m, out and residual are flat float buffers holding
 * every matrix (the caller's to size: offset + rows * cols of the last
 * matrix at least). p and q must not overlap m, out or residual, nor each
 * other. Every function checks its list and arguments first: on -1 nothing
 * was written. */

/* PowerSGD's view of a bucket: a matrix of `rows` x `cols` floats,
 * row-major, at element `offset` of the bucket. A bucket's matrices are
 * ascending and disjoint; the elements between them are no matrix's (the
 * kernels neither read nor write them). */
typedef struct otck_powersgd_matrix {
  int64_t offset, rows, cols;
} otck_powersgd_matrix;

/* Floats of all P_i (the sum of rows_i * r_i) and of all Q_i (the sum of
 * cols_i * r_i). -1 for an invalid list: rank < 1, num < 0, `mats` NULL with
 * num > 0, a matrix with rows or cols < 1, an offset that is negative or
 * falls before the end of the matrix before it, or a size or end beyond
 * int64. num == 0 is valid (0 floats; `mats` may then be NULL). */
int64_t otck_powersgd_p_floats(const otck_powersgd_matrix *mats, int64_t num,
                               int64_t rank);
int64_t otck_powersgd_q_floats(const otck_powersgd_matrix *mats, int64_t num,
                               int64_t rank);

/* P_i = M_i Q_i for every matrix, M_i at m + offset_i. Returns -1 for an
 * invalid list or a NULL buffer (num > 0), 0 otherwise. */
int otck_powersgd_project_f32(const otck_powersgd_matrix *mats, int64_t num,
                              int64_t rank, const float *m, const float *q,
                              float *p);

/* Error feedback's first step and the projection in one pass over each
 * matrix: saved_i = residual_i (when `saved` is not NULL), residual_i =
 * residual_i + g_i (M, each sum rounded: the floats of
 * otck_compress_accumulate_f32 with momentum 1), then P_i = M_i Q_i, the
 * same floats as otck_powersgd_project_f32 on M. The elements between
 * matrices are neither read nor written. No two of g, residual, saved, q
 * and p may overlap. Returns -1 for an invalid list or a NULL
 * g, residual, q or p (num > 0), 0 otherwise. */
int otck_powersgd_project_feedback_f32(const otck_powersgd_matrix *mats,
                                       int64_t num, int64_t rank,
                                       const float *g, float *residual,
                                       float *saved, const float *q, float *p);

/* Orthonormalises the columns of every P_i in place, as torch's
 * _orthogonalize_gram_schmidt (modified Gram-Schmidt): for each column j in
 * order, col_j /= (||col_j|| + eps), then every later column
 * col_k -= (col_j . col_k) col_j. The norms and dot products are summed in
 * double and rounded to float (torch sums in float); the divisions and
 * updates are float operations, each rounded (no fused multiply-add). A
 * column whose norm is 0 when its turn comes (all its elements +-0) has its
 * step skipped, whatever eps: it stays zero (torch divides 0 by 0 into NaN
 * when eps is 0), and its P_i has fewer than r_i orthonormal columns. NaN and
 * infinities propagate. The Q_i are orthonormalised by the same call on the
 * list with every matrix's rows and cols swapped (as valid as the list: the
 * same offsets and sizes), whose P_i are laid out as the list's Q_i. Returns
 * -1 for an invalid list, a NULL p (num > 0) or an eps that is negative or
 * not finite, 0 otherwise. */
int otck_powersgd_orthonormalize_f32(const otck_powersgd_matrix *mats,
                                     int64_t num, int64_t rank, float *p,
                                     float eps);

/* Q_i = M_i^T P_i for every matrix. Returns as otck_powersgd_project_f32. */
int otck_powersgd_back_project_f32(const otck_powersgd_matrix *mats,
                                   int64_t num, int64_t rank, const float *m,
                                   const float *p, float *q);

/* out_i = scale * (P_i Q_i^T), the product rounded to float and then the
 * scaling (the ranks' mean: scale = 1 / ranks), written at out + offset_i;
 * the other elements of out are untouched. Then, when `residual` is not
 * NULL, residual_i -= out_i element-wise in place (residual holds M: it
 * becomes M - out, the error fed back into the next step); residual must not
 * overlap out. Returns -1 for an invalid list or a NULL p, q or out
 * (num > 0; nothing written), 1 when some element written to out is a NaN
 * or an infinity (finite factors can overflow), 0 otherwise. */
int otck_powersgd_decompress_f32(const otck_powersgd_matrix *mats, int64_t num,
                                 int64_t rank, const float *p, const float *q,
                                 float scale, float *out, float *residual);

/* Fills every Q_i whose elements are all +0.0 or -0.0 (a fresh state) with
 * standard normal values; a Q_i that holds any other value (NaN included)
 * is left as it is. Element j of Q_i (row-major index) is
 * z = sqrt(-2 ln u1) cos(2 pi u2), evaluated in double and rounded to
 * float, with key = splitmix64(seed ^ splitmix64(i)),
 * b1 = splitmix64(key + 2j), b2 = splitmix64(key + 2j + 1),
 * u1 = ((b1 >> 40) + 1) 2^-24 in (0, 1], u2 = (b2 >> 40) 2^-24 in [0, 1)
 * (kernels/shared/random.h, whose own ln and cos are within a few double
 * ulps of the exact values: every target draws the same bits). The same
 * seed gives the same Q on every rank. Returns the number of Q_i filled, -1
 * for an invalid list or a NULL q (num > 0). */
int64_t otck_powersgd_init_q_f32(const otck_powersgd_matrix *mats, int64_t num,
                                 int64_t rank, uint64_t seed, float *q);

#ifdef __cplusplus
}
#endif

#endif /* OTC_COMPRESS_H */
