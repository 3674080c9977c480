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

#ifdef __cplusplus
}
#endif

#endif /* OTC_COMPRESS_H */
