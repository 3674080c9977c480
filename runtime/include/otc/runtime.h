/*===- otc/runtime.h - OTC runtime C API -------------------------*- C -*-===*\
|*                                                                            *|
|* Loads compiled training programs and runs them on one rank of a job.       *|
|*                                                                            *|
|* Conventions (as IREE / ONNX Runtime):                                      *|
|*  - every fallible call returns an otc_status_t: NULL means OK (cheap);     *|
|*    a non-NULL status owns a code and a message and must be released with   *|
|*    otc_status_free; no C++ exception or abort crosses this boundary;       *|
|*  - output parameters come last and are named out_*;                        *|
|*  - objects are created by *_create or *_load and released by *_release,    *|
|*    which accept NULL;                                                      *|
|*  - a session is used by one thread at a time; distinct sessions are        *|
|*    independent except that they may share an MPI process.                  *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef OTC_RUNTIME_H
#define OTC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "otc/program_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/*--- Status ----------------------------------------------------------------*/

typedef enum otc_status_code {
  OTC_OK = 0,
  OTC_INVALID_ARGUMENT = 1,    /* a flag, a shape, a value the caller gave */
  OTC_NOT_FOUND = 2,           /* a file or a name that does not exist */
  OTC_DATA_LOSS = 3,           /* a corrupt or truncated file */
  OTC_FAILED_PRECONDITION = 4, /* e.g. world size differs from the compiled */
  OTC_UNAVAILABLE = 5,         /* a communicator or CUDA device failure */
  OTC_INTERNAL = 6,
  OTC_IO_ERROR = 7,
} otc_status_code_t;

typedef struct otc_status *otc_status_t;

otc_status_code_t otc_status_code(otc_status_t status);
/* The message; valid until the status is freed. "" for NULL (OK). */
const char *otc_status_message(otc_status_t status);
void otc_status_free(otc_status_t status);
/* The code's name, e.g. "DATA_LOSS"; a static string. */
const char *otc_status_code_name(otc_status_code_t code);

/*--- Programs --------------------------------------------------------------*/

typedef struct otc_program otc_program_t;

/* Wraps an entry table linked into the process (the emitted executable). */
otc_status_t otc_program_from_entry(const otc_program_entry_t *entry,
                                    otc_program_t **out_program);
/* dlopens a program built with `otc-compile --emit=lib`. */
otc_status_t otc_program_load(const char *path, otc_program_t **out_program);
void otc_program_release(otc_program_t *program);

/* The program's manifest (JSON); valid while the program lives. */
const char *otc_program_manifest(const otc_program_t *program);
int32_t otc_program_world_size(const otc_program_t *program);

/*--- Communicators ---------------------------------------------------------*/

typedef struct otc_comm otc_comm_t;

/* A communicator over MPI_COMM_WORLD (initialises MPI when needed). With a
 * single process started without mpirun this is a 1-rank communicator. */
otc_status_t otc_comm_create_mpi(otc_comm_t **out_comm);
/* A 1-rank communicator that needs no MPI. */
otc_status_t otc_comm_create_local(otc_comm_t **out_comm);
int32_t otc_comm_rank(const otc_comm_t *comm);
int32_t otc_comm_size(const otc_comm_t *comm);
void otc_comm_release(otc_comm_t *comm);
/* Averages `count` floats in place over all ranks (what programs call
 * through otc_step_context_t); counted in otc_comm_bytes. */
otc_status_t otc_comm_all_reduce_mean_f32(otc_comm_t *comm, float *data,
                                          int64_t count);
otc_status_t otc_comm_barrier(otc_comm_t *comm);
/* Overlap (default on): with MPI and more than one rank, a training step's
 * collectives run on a thread of the communicator's own, in the order the
 * program calls them, and a gradient bucket's compressed all-reduce goes on
 * while the step computes the gradients before it; the step waits for them
 * before its first optimizer update. Needs MPI_THREAD_SERIALIZED (otherwise
 * off). 0 turns it off: every collective then runs in the calling thread. */
void otc_comm_set_overlap(otc_comm_t *comm, int enabled);
/* Bytes this rank sent to (and received from) the collectives programs run
 * (dense and compressed all-reduces with their finiteness flag and norm)
 * since the communicator was created; 0 on a 1-rank communicator. A dense
 * all-reduce of n floats counts 4n; an all-gather of P-byte payloads counts
 * P * (W - 1) (each payload reaches W - 1 peers). */
void otc_comm_bytes(const otc_comm_t *comm, uint64_t *out_sent,
                    uint64_t *out_received);

/*--- Sessions --------------------------------------------------------------*/

typedef struct otc_session otc_session_t;

typedef struct otc_session_options {
  uint64_t seed;       /* data shuffling, dropout */
  int32_t num_threads; /* <= 0: default */
} otc_session_options_t;

void otc_session_options_initialize(otc_session_options_t *options);

/* Creates a session: allocates the arena and loads the initial parameters
 * from the program's source ONNX model. Fails with FAILED_PRECONDITION when
 * the communicator's size differs from the compiled world size. The session
 * keeps references to program and comm; both must outlive it. */
otc_status_t otc_session_create(otc_program_t *program, otc_comm_t *comm,
                                const otc_session_options_t *options,
                                otc_session_t **out_session);
void otc_session_release(otc_session_t *session);

/* Copies one batch of the named input (row-major, the manifest's dtype and
 * shape; `bytes` must match exactly). */
otc_status_t otc_session_bind_input(otc_session_t *session, const char *name,
                                    const void *data, size_t bytes);
/* Runs one training step on the bound inputs; *out_loss gets this rank's
 * loss. A step the program skips because some rank's gradient held a NaN or
 * an infinity (OTC_STEP_SKIPPED_NONFINITE, agreed by every rank) is not an
 * error: it returns OK with nothing updated (weights, optimizer state,
 * error-feedback residuals and adaptive-ratio state are as before) and does
 * not advance otc_session_step, so the next train_step runs the same
 * optimizer step (same Adam bias correction and step seed) on the next
 * batch; otc_session_last_step_skipped says so. */
otc_status_t otc_session_train_step(otc_session_t *session, float *out_loss);
/* 1 if the last otc_session_train_step was skipped (see above), else 0. */
int32_t otc_session_last_step_skipped(const otc_session_t *session);
/* Steps skipped since training began (checkpointed). */
int64_t otc_session_skipped_steps(const otc_session_t *session);
/* Gradient buckets the program has reduced through
 * compressed_all_reduce_mean_f32 (highest bucket index + 1). */
int64_t otc_session_compress_buckets(const otc_session_t *session);
/* The kept fraction bucket `bucket` used at its last compressed step (the
 * adaptive ratio when adaptive); 0 before its first compressed step. */
float otc_session_compress_ratio(const otc_session_t *session, int64_t bucket);
/* Runs the forward on the bound inputs; copies the model output (manifest
 * "eval_output") into `out` when out_bytes matches its size. */
otc_status_t otc_session_eval_step(otc_session_t *session, void *out,
                                   size_t out_bytes);
/* The eval loss of the last otc_session_eval_step (manifest
 * "eval_loss_offset"); FAILED_PRECONDITION when the program computes none. */
otc_status_t otc_session_eval_loss(const otc_session_t *session,
                                   float *out_loss);
/* Number of optimizer steps taken so far. */
int64_t otc_session_step(const otc_session_t *session);
/* Bytes this rank sent to / received from collectives in its last
 * otc_session_train_step (skipped or not), counted as otc_comm_bytes. */
void otc_session_step_bytes(const otc_session_t *session, uint64_t *out_sent,
                            uint64_t *out_received);

/* Reads / writes a parameter by its ONNX initializer name. */
otc_status_t otc_session_get_param(const otc_session_t *session,
                                   const char *name, void *out,
                                   size_t out_bytes);
otc_status_t otc_session_set_param(otc_session_t *session, const char *name,
                                   const void *data, size_t bytes);

/* Checkpoints: weights, all manifest state (optimizer state and
 * error-feedback residuals), step, RNG seed, the compressed all-reduce's
 * per-bucket state (adaptive ‖g‖₀), skipped-step count and caller data
 * (`extra`, e.g. the data loader's position). Written atomically (temp file,
 * fsync, rename) with a checksum; loading verifies format version, checksum,
 * program and world size and never leaves the session half-updated. */
otc_status_t otc_session_save_checkpoint(const otc_session_t *session,
                                         const char *path, const void *extra,
                                         size_t extra_bytes);
/* On success *out_extra_bytes is the size of the saved extra data, which is
 * copied into `extra` if it fits in extra_capacity. */
otc_status_t otc_session_load_checkpoint(otc_session_t *session,
                                         const char *path, void *extra,
                                         size_t extra_capacity,
                                         size_t *out_extra_bytes);

/* Validates a checkpoint file for `program` (magic, size, checksum,
 * program hash) without loading it. */
otc_status_t otc_checkpoint_validate(const otc_program_t *program,
                                     const char *path);

/* Writes the source ONNX model with its initializers replaced by the trained
 * values. */
otc_status_t otc_session_export_onnx(const otc_session_t *session,
                                     const char *path);

/*--- Driver ----------------------------------------------------------------*/

/* The training executable's main: parses flags (--steps, --epochs, --data,
 * --dataset, --eval-data, --checkpoint-dir, --resume, --export, --metrics,
 * ...), runs the loop and returns the process exit code. */
int otc_driver_main(int argc, char **argv, const otc_program_entry_t *entry);

#ifdef __cplusplus
}
#endif

#endif /* OTC_RUNTIME_H */
