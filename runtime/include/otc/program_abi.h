/*===- otc/program_abi.h - Entry table of a compiled program -----*- C -*-===*\
|*                                                                            *|
|* What otc-compile emits and the runtime loads. A compiled program owns no   *|
|* memory: every tensor of a step (parameters, optimizer state, inputs,       *|
|* gradients, activations) lives at a static offset in one arena that the     *|
|* runtime allocates with `arena_bytes` bytes (aligned to 64). The manifest    *|
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

#define OTC_PROGRAM_ABI_VERSION 1

/* Status codes a step returns (0 = success). */
#define OTC_STEP_OK 0
#define OTC_STEP_ERR_COMM 1           /* a collective failed */
#define OTC_STEP_ERR_LABEL_RANGE 2    /* a label outside [0, classes) */

/* What the runtime hands a step. */
typedef struct otc_step_context {
  /* 1-based index of the optimizer step being run (Adam bias correction). */
  int64_t step;
  /* Seed for this step's random numbers (dropout), derived from --seed. */
  uint64_t seed;
  /* Communicator for the collectives; opaque to the program. */
  void *comm;
  /* Averages `count` floats of `data` in place over all ranks of `comm`.
   * Returns 0 on success. */
  int (*all_reduce_mean_f32)(void *comm, float *data, int64_t count);
} otc_step_context_t;

typedef struct otc_program_entry {
  uint32_t abi_version;      /* OTC_PROGRAM_ABI_VERSION */
  const char *manifest_json; /* NUL-terminated JSON manifest */
  uint64_t arena_bytes;      /* bytes of the arena the steps address */
  /* One training step: forward, loss, backward, gradient averaging,
   * optimizer update, all in `arena`. The loss lands at the manifest's
   * "loss" offset. */
  int (*train_step)(uint8_t *arena, const otc_step_context_t *ctx);
  /* Forward only on the same inputs; the model output lands at the
   * manifest's "eval_output" offset (and the loss at "eval_loss", if any). */
  int (*eval_step)(uint8_t *arena, const otc_step_context_t *ctx);
} otc_program_entry_t;

/* Symbol every compiled program exports. */
#define OTC_PROGRAM_ENTRY_SYMBOL "otc_program_entry"
typedef const otc_program_entry_t *(*otc_program_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* OTC_PROGRAM_ABI_H */
