/*===- otc/program_abi.h - Entry table of a compiled program -----*- C -*-===*\
|*                                                                            *|
|* What otc-compile emits and the runtime loads. A compiled program owns no   *|
|* memory: every tensor of a step (parameters, optimizer state, inputs,       *|
|* gradients, activations) lives at a static offset in one arena that the     *|
|* runtime allocates with `arena_bytes` bytes (aligned to 64). The manifest *|
|* (JSON, see docs in the README) says where parameters, optimizer state and  *|
|* inputs live so the runtime can fill, checkpoint and export them.           *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef OTC_PROGRAM_ABI_H
#define OTC_PROGRAM_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OTC_PROGRAM_ABI_VERSION 10

/* Status codes a step returns (0 = success). */
#define OTC_STEP_OK 0
#define OTC_STEP_ERR_COMM 1        /* a collective failed */
#define OTC_STEP_ERR_LABEL_RANGE 2 /* a label outside [0, classes) */
/* A gradient held a NaN or an infinity on some rank: every rank returns this
 * before any optimizer update, the step is skipped and reported. */
#define OTC_STEP_SKIPPED_NONFINITE 3
/* An index input (Gather, GatherElements, ScatterElements, ...) held a value
 * outside its dimension. */
#define OTC_STEP_ERR_INDEX_RANGE 4
/* An integer division or modulo by zero. */
#define OTC_STEP_ERR_DIVISION_BY_ZERO 5
/* A CUDA launch or stream failed (CUDA programs). */
#define OTC_STEP_ERR_DEVICE 6

/* Where a program's arena lives (otc_program_entry_t::device). */
#define OTC_DEVICE_CPU 0
#define OTC_DEVICE_CUDA 1

/* How a compressed all-reduce's ranks exchange their payloads
 * (otc_compress_desc_t::exchange; src/comm/compressed.cpp has the details):
 *  ALL_GATHER      every rank all-gathers every payload (P * (W - 1) bytes
 *                  sent per rank) and sums their decompressions;
 *  REDUCE_SCATTER  rank s owns shard s of the bucket (otck_compress_shard):
 *                  an all-to-all gives it every rank's payload of its shard,
 *                  it sums them, compresses the sum again (its error goes to
 *                  the owner's residual) and all-gathers it: about
 *                  2 P (W - 1) / W bytes sent per rank, whatever W;
 *  ALL_REDUCE      method NONE only: a plain fp32 mean all-reduce.
 * ABI 9: the field was reserved (0) before. */
#define OTC_EXCHANGE_ALL_GATHER 0
#define OTC_EXCHANGE_REDUCE_SCATTER 1
#define OTC_EXCHANGE_ALL_REDUCE 2

/* A compressed all-reduce as the compiler configured it (DESIGN §8). */
typedef struct otc_compress_desc {
  int32_t method;         /* otck_compress_method (otc/compress.h) */
  int32_t error_feedback; /* 1: `residual` holds this rank's error */
  int32_t adaptive;       /* 1: ratio follows the gradient norm */
  int32_t exchange;       /* OTC_EXCHANGE_* */
  int64_t block_size;     /* elements per block */
  float ratio;            /* kept fraction (unused when adaptive: the
                             adaptive ratio starts at ratio_max) */
  float ratio_min;        /* adaptive bounds */
  float ratio_max;
  int64_t warmup_steps; /* first steps sent dense (fp32) */
  /* ABI 9. 1: with a velocity u (momentum correction), Nesterov's: what is
   * sent is built on g (the look-ahead momentum * u + g and its tail)
   * rather than on u (compressed.cpp). */
  int32_t nesterov;
  /* ABI 9, method OTCK_COMPRESS_POWERSGD (exchange ALL_REDUCE): the rank of
   * the approximation, and the bucket's matrices as `num_matrices` triples
   * (offset, rows, cols) in floats, ascending and disjoint; the rest of the
   * bucket is averaged uncompressed. 0 and NULL otherwise. */
  int32_t powersgd_rank;
  int64_t num_matrices;
  const int64_t *matrices;
} otc_compress_desc_t;

/* The optimizer's hyperparameters, which a training step reads at run time
 * (otc_session_set_hyperparameter, the learning-rate schedule): never
 * constants of the program. A parameter group's compile-time factors
 * (--lr-scale, --no-weight-decay) multiply `lr` and `weight_decay`. Fields an
 * optimizer does not have are ignored. */
typedef struct otc_hyperparams {
  double lr;
  double weight_decay;
  double momentum; /* SGD with momentum; RMSprop compiled with a buffer */
  double beta1;    /* Adam, AdamW, LAMB, Lion */
  double beta2;
  double eps; /* Adam, AdamW, LAMB, Adagrad, RMSprop */
  /* ABI 7 */
  double alpha;    /* RMSprop's smoothing constant */
  double lr_decay; /* Adagrad */
} otc_hyperparams_t;

/* What the runtime hands a step. */
typedef struct otc_step_context {
  /* 1-based index of the optimizer step being run (Adam bias correction).
   * A step that returns OTC_STEP_SKIPPED_NONFINITE does not advance it: the
   * next train_step gets the same step (and seed) with the next batch. */
  int64_t step;
  /* Seed for this step's random numbers (dropout), derived from --seed. */
  uint64_t seed;
  /* Communicator for the collectives; opaque to the program. */
  void *comm;
  /* Averages `count` floats of `data` in place over all ranks of `comm`.
   * Returns 0 on success. The runtime may return before it is done
   * (overlap): until wait_collectives returns, the step must not touch
   * `data`; a failure then comes from wait_collectives. */
  int (*all_reduce_mean_f32)(void *comm, float *data, int64_t count);
  /* Averages the gradient bucket `data` (`count` floats) over all ranks
   * through `desc`'s compression: compress (adding and updating
   * `residual`, `count` floats, when error feedback is on), all-gather the
   * fixed-size payloads, sum their decompressions, divide by the world
   * size. `bucket` numbers the step's buckets from 0 (runtime state such as
   * the adaptive ratio is kept per bucket). The runtime may return before
   * the exchange is done (overlap): until wait_collectives returns, the
   * step must not touch `data`, `residual` or `velocity`. Returns 0,
   * OTC_STEP_SKIPPED_NONFINITE when any rank's bucket was not finite (all
   * ranks agree), or OTC_STEP_ERR_COMM; with overlap, those come from
   * wait_collectives. Each bucket is reduced at most once per train_step; on
   * OTC_STEP_SKIPPED_NONFINITE the step returns it at once, having applied
   * no optimizer update (the runtime then restores the residuals of the
   * buckets reduced in that step). ABI 8: `velocity` (`count` floats, NULL
   * without) is this rank's momentum, Deep Gradient Compression's momentum
   * correction with factor masking: velocity = momentum * velocity + data
   * is what gets compressed (with its tail and the residual), then velocity
   * is zeroed at every index this rank sent (momentum in [0, 1)); a dense
   * step sends it whole and keeps it; a skipped step restores it as the
   * residual. ABI 9: with desc->nesterov,
   * the data is the base the tail is added to; `state` is the method's own
   * per-rank state, NULL but for PowerSGD (its matrices' Q, warm-started;
   * restored too when the step is skipped). The exact semantics (warm-up,
   * adaptive ratio formula, bytes counted) are documented in the runtime's
   * src/comm/compressed.cpp. */
  int (*compressed_all_reduce_mean_f32)(void *comm,
                                        const otc_compress_desc_t *desc,
                                        float *data, int64_t count,
                                        float *residual, float *velocity,
                                        float momentum, float *state,
                                        int64_t bucket);
  /* SDP: averages `count` floats of `data` in place over the ranks of owner
   * group `group` (an index into the manifest's "sdp" "groups"; this rank is
   * a member). Returns 0 on success; overlapped as all_reduce_mean_f32. */
  int (*group_all_reduce_mean_f32)(void *comm, int64_t group, float *data,
                                   int64_t count);
  /* SDP backward masking: every rank receives rank `root`'s `count` floats
   * in `data`. Returns 0 on success. */
  int (*broadcast_f32)(void *comm, int64_t root, float *data, int64_t count);
  /* SDP: compressed_all_reduce_mean_f32 over the ranks of owner group
   * `group`. A non-finite bucket does not end the step here (the other
   * ranks are not in the group): it is remembered for agree_finite. */
  int (*group_compressed_all_reduce_mean_f32)(void *comm, int64_t group,
                                              const otc_compress_desc_t *desc,
                                              float *data, int64_t count,
                                              float *residual, float *velocity,
                                              float momentum, float *state,
                                              int64_t bucket);
  /* SDP: called by every rank before its first optimizer update. Returns
   * OTC_STEP_SKIPPED_NONFINITE on every rank when a group bucket of any
   * rank was not finite, 0 otherwise (or OTC_STEP_ERR_COMM). */
  int (*agree_finite)(void *comm);
  /* Waits for the all-reduces (dense and compressed) this step has
   * started; called before the first optimizer update, before anything
   * else touches their buffers and before the step returns. Returns 0,
   * OTC_STEP_SKIPPED_NONFINITE (every rank agrees) or OTC_STEP_ERR_COMM. */
  int (*wait_collectives)(void *comm);
  /* CUDA programs: the cudaStream_t the step enqueues its kernels on. The
   * collectives above are ordered after the work enqueued on it before the
   * call, and wait_collectives orders the later work after them. NULL for
   * CPU programs. */
  void *stream;
  /* This step's hyperparameters (host memory; never NULL in a train_step). */
  const otc_hyperparams_t *hyper;
  /* ABI 10: the profiler, NULL unless the run profiles this step. Around
   * every kernel and collective call the step calls profile(profiler, site,
   * 1) before and profile(profiler, site, 0) after it, `site` indexing the
   * entry's `sites`. A step that returns early leaves its last site open. */
  void *profiler;
  void (*profile)(void *profiler, int32_t site, int32_t begin);
} otc_step_context_t;

/* A kernel or collective call of a step function, for the profiler. */
typedef struct otc_profile_site {
  const char *name;   /* the exec kernel ("gemm") or the collective */
  const char *source; /* the ONNX node it came from ("/0/Gemm"), or "" */
  double flops;       /* floating-point operations of one call (0: none
                       * counted: a memory-bound kernel) */
  double bytes;       /* bytes of its operands, read and written */
} otc_profile_site_t;

typedef struct otc_program_entry {
  uint32_t abi_version;      /* OTC_PROGRAM_ABI_VERSION */
  const char *manifest_json; /* NUL-terminated JSON manifest */
  uint64_t arena_bytes;      /* bytes of the arena the steps address */
  /* One training step: forward, loss, backward, gradient averaging,
   * optimizer update, all in `arena`. The loss lands at the manifest's
   * "loss" offset. NULL in a program compiled for inference (manifest
   * "mode": "inference"), whose eval_step writes every graph output at its
   * manifest "outputs" offset. */
  int (*train_step)(uint8_t *arena, const otc_step_context_t *ctx);
  /* Forward only on the same inputs; the model output lands at the
   * manifest's "eval_output" offset (and the loss at "eval_loss", if any). */
  int (*eval_step)(uint8_t *arena, const otc_step_context_t *ctx);
  /* Subnetwork data parallelism: rank r trains `variants[rank_variant[r]]`
   * (a complete program of its own: manifest, arena, train_step), and this
   * entry is the whole model (eval_step only), which the runtime assembles
   * from the owners for evaluation and export; its manifest's "sdp" object
   * has the plan (components, owners, groups). 0 and NULL otherwise. */
  int32_t num_variants;
  const struct otc_program_entry *const *variants;
  const int32_t *rank_variant; /* one per rank of the compiled world */
  /* SDP whole model with BatchNorm: the forward in training mode, writing
   * only the new running statistics, which the runtime re-estimates on the
   * assembled model before evaluation and export. NULL otherwise. */
  int (*calibrate_step)(uint8_t *arena, const otc_step_context_t *ctx);
  /* OTC_DEVICE_CPU, or OTC_DEVICE_CUDA: `arena` is device memory of the
   * current CUDA device and every step synchronizes ctx->stream before it
   * returns. */
  int32_t device;
  /* Gradient accumulation (--accumulate N > 1): a training step is N
   * micro-batches; accumulate_step runs the first N - 1 (forward, backward,
   * the gradients added to the manifest's "accumulator" state; no
   * communication, no update) and train_step the last (its gradients added,
   * the sum divided by N, averaged over the ranks, the update, the
   * accumulators zeroed). NULL and 1 otherwise. */
  int (*accumulate_step)(uint8_t *arena, const otc_step_context_t *ctx);
  int32_t accumulate;
  /* ABI 10: the call sites of every step function, for the profiler. */
  int32_t num_sites;
  const otc_profile_site_t *sites;
} otc_program_entry_t;

/* Symbol every compiled program exports. */
#define OTC_PROGRAM_ENTRY_SYMBOL "otc_program_entry"
typedef const otc_program_entry_t *(*otc_program_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* OTC_PROGRAM_ABI_H */
