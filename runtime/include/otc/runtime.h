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
/* The source model the program reads its initial weights from and export
 * writes back with the trained values: the copy otc-compile keeps beside
 * the program (<program>.model.onnx). The manifest names it relative to the
 * file holding the entry table (the library, or the executable); an entry
 * table in no file (built at run time) leaves it relative to the working
 * folder. "" if the program names none. */
const char *otc_program_model_path(const otc_program_t *program);
int32_t otc_program_world_size(const otc_program_t *program);
/* FAILED_PRECONDITION, naming the `mpirun -np` to use, when `world_size`
 * differs from the compiled world size. */
otc_status_t otc_program_check_world_size(const otc_program_t *program,
                                          int32_t world_size);
/* Samples per rank in one step (the leading axis of every input). */
int64_t otc_program_batch(const otc_program_t *program);
/* The seed given to otc-compile (the default session seed). */
uint64_t otc_program_seed(const otc_program_t *program);
/* The loss the program trains: "cross-entropy", "nll", "mse", ... or
 * "none"; valid while the program lives. */
const char *otc_program_loss(const otc_program_t *program);

typedef enum otc_program_feature {
  /* Subnetwork data parallelism: each rank trains its own subnetwork; the
   * whole model is assembled for evaluation and export
   * (otc_session_assemble_full_model). */
  OTC_PROGRAM_SDP = 1u << 0,
  OTC_PROGRAM_EVAL_STEP = 1u << 1, /* otc_session_eval_step runs */
  OTC_PROGRAM_EVAL_LOSS = 1u << 2, /* otc_session_eval_loss has a value */
  /* SDP with BatchNorm: otc_session_calibrate_full_model re-estimates the
   * whole model's running statistics. */
  OTC_PROGRAM_CALIBRATE_STEP = 1u << 3,
  /* Some state differs between ranks (error-feedback residuals, SDP
   * subnetworks): every rank saves and loads its own checkpoint. */
  OTC_PROGRAM_PER_RANK_STATE = 1u << 4,
  /* An EMA of the weights (otc_session_export_onnx_ema). */
  OTC_PROGRAM_EMA = 1u << 5,
} otc_program_feature_t;

/* Micro-batches per optimizer step (--accumulate; 1 without, 0 for NULL). */
int32_t otc_program_accumulate(const otc_program_t *program);
/* The program's otc_program_feature_t bits; 0 for NULL. */
uint32_t otc_program_features(const otc_program_t *program);

/* Element types of inputs and outputs. F16 and BF16 are storage types: the
 * runtime copies them but converts no data to or from them. */
typedef enum otc_dtype {
  OTC_DTYPE_F32 = 0,
  OTC_DTYPE_F64 = 1,
  OTC_DTYPE_I64 = 2,
  OTC_DTYPE_I32 = 3,
  OTC_DTYPE_U8 = 4,
  OTC_DTYPE_BOOL = 5,
  OTC_DTYPE_I8 = 6,
  OTC_DTYPE_I16 = 7,
  OTC_DTYPE_U16 = 8,
  OTC_DTYPE_U32 = 9,
  OTC_DTYPE_U64 = 10,
  OTC_DTYPE_F16 = 11,
  OTC_DTYPE_BF16 = 12,
} otc_dtype_t;

/* The manifest's name, e.g. "f32"; a static string ("" if unknown). */
const char *otc_dtype_name(otc_dtype_t dtype);
/* Bytes per element; 0 if unknown. */
size_t otc_dtype_size(otc_dtype_t dtype);

/* A tensor the program reads or writes; every pointer is valid while the
 * program lives. */
typedef struct otc_tensor_info {
  const char *name;
  const char *role; /* inputs: "data", "label" or "" */
  otc_dtype_t dtype;
  int32_t rank;
  const int64_t *shape; /* `rank` extents, the batch first */
} otc_tensor_info_t;

/* The program's inputs in the manifest's order (what
 * otc_session_bind_input takes). */
int64_t otc_program_input_count(const otc_program_t *program);
/* INVALID_ARGUMENT when `index` is outside [0, otc_program_input_count). */
otc_status_t otc_program_input(const otc_program_t *program, int64_t index,
                               otc_tensor_info_t *out_info);
/* The model output otc_session_eval_step copies out; NOT_FOUND when the
 * program has none. */
otc_status_t otc_program_eval_output(const otc_program_t *program,
                                     otc_tensor_info_t *out_info);

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
/* A collective that waits longer than `seconds` for its peers (default
 * 600; 0: no limit) fails with OTC_UNAVAILABLE naming the collective, the
 * step and the ranks that did not arrive (a stopped or exited process on
 * this host says so); a peer process on this host that exits fails the
 * wait at once. The communicator is unusable afterwards: end the job with
 * otc_comm_abort. CUDA programs' NCCL waits are watched the same way. */
otc_status_t otc_comm_set_timeout(otc_comm_t *comm, double seconds);
/* Bytes this rank sent to (and received from) the collectives programs run
 * (dense and compressed all-reduces with their finiteness flag and norm)
 * since the communicator was created; 0 on a 1-rank communicator. A dense
 * all-reduce of n floats counts 4n; an all-gather of P-byte payloads counts
 * P * (W - 1) (each payload reaches W - 1 peers). */
void otc_comm_bytes(const otc_comm_t *comm, uint64_t *out_sent,
                    uint64_t *out_received);
/* Sums `count` doubles in place over all ranks: bookkeeping such as losses
 * and evaluation counts, not counted in otc_comm_bytes. Collective. */
otc_status_t otc_comm_all_reduce_sum_f64(otc_comm_t *comm, double *data,
                                         int64_t count);
/* Ends every rank of an MPI job with `exit_code` (a rank failed where the
 * others may be blocked in a collective) and does not return; returns,
 * doing nothing, for a 1-rank or local communicator. */
void otc_comm_abort(otc_comm_t *comm, int32_t exit_code);

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
/* Gradient accumulation (a program compiled with --accumulate N > 1): each
 * optimizer step is N micro-batches, the first N - 1 run by this call (one
 * batch bound per call; its gradients are summed, nothing is communicated
 * or updated; *out_loss gets the micro-batch's loss), the last by
 * otc_session_train_step. FAILED_PRECONDITION for a program without
 * accumulation or when N - 1 micro-batches are already accumulated; a
 * checkpoint is saved only between steps. */
otc_status_t otc_session_accumulate_step(otc_session_t *session,
                                         float *out_loss);
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
/* The global gradient norm before clipping of the last train step that was
 * not skipped (programs compiled with --clip-grad-norm or
 * --clip-grad-value; FAILED_PRECONDITION otherwise). */
otc_status_t otc_session_grad_norm(const otc_session_t *session,
                                   float *out_norm);
/* Number of optimizer steps taken so far. */
int64_t otc_session_step(const otc_session_t *session);
/* Bytes this rank sent to / received from collectives in its last
 * otc_session_train_step (skipped or not), counted as otc_comm_bytes. */
void otc_session_step_bytes(const otc_session_t *session, uint64_t *out_sent,
                            uint64_t *out_received);

/* Profiling: with on != 0, every train step (and accumulated micro-batch)
 * from now on records the time of each kernel and collective call of the
 * program and the jobs of the collectives thread; 0 stops recording (what
 * was recorded stays). A CUDA program waits for its stream around each
 * kernel while profiled, so that each time is the kernel's own. */
otc_status_t otc_session_set_profiling(otc_session_t *session, int32_t on);
/* Writes what the profiled steps recorded: the summary (the kernels by share
 * of the step time, with calls and GFLOP/s or GB/s, then the busiest call
 * sites with their ONNX nodes; the first profiled step and its micro-batches
 * are left out of it as a warm-up when later steps were profiled) to
 * `summary_path` ("-": standard output) and
 * the Chrome trace (chrome://tracing, Perfetto; this rank is process
 * `rank`, its step and its collectives thread are tracks) to `trace_path`;
 * either may be NULL. FAILED_PRECONDITION when no step was profiled. */
otc_status_t otc_session_write_profile(const otc_session_t *session,
                                       const char *trace_path,
                                       const char *summary_path);

/* The manifest (JSON) of what this session's rank runs: the program's own,
 * or with SDP (OTC_PROGRAM_SDP) its rank's subnetwork, whose parameters
 * (otc_session_get_param, otc_session_set_param), state and memory plan
 * are that subnetwork's; valid while the session lives. "" for NULL. */
const char *otc_session_manifest(const otc_session_t *session);

/*--- Hyperparameters and the learning-rate schedule ------------------------*/

/* A training step reads the optimizer's hyperparameters at run time; they
 * start at the values given to otc-compile and are checkpointed with the
 * schedule. Names: "lr", "weight_decay", "momentum" (momentum SGD), "beta1",
 * "beta2", "eps" (Adam, AdamW).
 * Sets `name` for the following train steps. INVALID_ARGUMENT for an unknown
 * name, a value out of range (lr >= 0, weight_decay >= 0, momentum and betas
 * in [0, 1), eps > 0, all finite) or a hyperparameter the program's
 * optimizer does not have; FAILED_PRECONDITION for "lr" while a schedule
 * sets it. */
otc_status_t otc_session_set_hyperparameter(otc_session_t *session,
                                            const char *name, double value);
/* The value the next train step uses (for "lr": the schedule's, if set). */
otc_status_t otc_session_get_hyperparameter(const otc_session_t *session,
                                            const char *name,
                                            double *out_value);
/* Shorthands for "lr"; otc_session_get_lr returns 0 for a NULL session. */
otc_status_t otc_session_set_lr(otc_session_t *session, double lr);
double otc_session_get_lr(const otc_session_t *session);

/* Learning-rate schedules, as torch.optim.lr_scheduler computes them. With
 * k = step - 1 (optimizer steps already taken), W = warmup_steps and
 * T = total_steps, D = T - W and j = min(k - W, D) after the warm-up:
 *   warm-up (k < W, every kind but ONECYCLE): base_lr * (f + (1 - f) k / W),
 *     f = warmup_start_factor (LinearLR);
 *   CONSTANT: base_lr;
 *   LINEAR:   base_lr + (lr_min - base_lr) j / D (LinearLR to lr_min);
 *   COSINE:   lr_min + (base_lr - lr_min) (1 + cos(pi j / D)) / 2
 *             (CosineAnnealingLR with T_max = D, held at lr_min after it);
 *   STEP:     base_lr * gamma^floor((k - W) / step_size) (StepLR);
 *   WSD:      warm-up, base_lr for D - E steps, then linear to lr_min over
 *             the last E = round(wsd_decay_fraction * D) (at least 1);
 *   ONECYCLE: OneCycleLR(max_lr = base_lr, total_steps = T, pct_start,
 *             anneal_strategy "cos", div_factor, final_div_factor), held at
 *             its final lr after T; with cycle_momentum the program's
 *             momentum (SGD momentum, Adam's beta1) goes from
 *             max_momentum to base_momentum and back, as torch does. */
typedef enum otc_lr_schedule_kind {
  OTC_LR_CONSTANT = 0,
  OTC_LR_LINEAR = 1,
  OTC_LR_COSINE = 2,
  OTC_LR_STEP = 3,
  OTC_LR_WSD = 4,
  OTC_LR_ONECYCLE = 5
} otc_lr_schedule_kind_t;

typedef struct otc_lr_schedule {
  int32_t kind;               /* otc_lr_schedule_kind_t */
  int32_t cycle_momentum;     /* ONECYCLE */
  double base_lr;             /* > 0; the peak lr */
  int64_t warmup_steps;       /* >= 0; < total_steps when it decays */
  double warmup_start_factor; /* in [0, 1] */
  int64_t total_steps;        /* >= 1 for LINEAR, COSINE, WSD, ONECYCLE */
  double lr_min;              /* in [0, base_lr] */
  int64_t step_size;          /* STEP: >= 1 */
  double gamma;               /* STEP: > 0 */
  double wsd_decay_fraction;  /* WSD: in (0, 1] */
  double pct_start;           /* ONECYCLE: in (0, 1) */
  double div_factor;          /* ONECYCLE: > 0 */
  double final_div_factor;    /* ONECYCLE: > 0 */
  double base_momentum;       /* ONECYCLE: 0 <= base <= max < 1 */
  double max_momentum;
} otc_lr_schedule_t;

/* CONSTANT at lr 0 (to be set), no warm-up, torch's defaults for the rest
 * (gamma 0.1, step_size 1, wsd_decay_fraction 0.1, pct_start 0.3,
 * div_factor 25, final_div_factor 1e4, momentum 0.85..0.95, cycled). */
void otc_lr_schedule_initialize(otc_lr_schedule_t *schedule);
/* INVALID_ARGUMENT naming the first field out of range. */
otc_status_t otc_lr_schedule_validate(const otc_lr_schedule_t *schedule);
/* The schedule's lr of 1-based optimizer step `step` and, for ONECYCLE with
 * cycle_momentum, its momentum (*out_momentum untouched otherwise; either
 * pointer may be NULL). */
otc_status_t otc_lr_schedule_evaluate(const otc_lr_schedule_t *schedule,
                                      int64_t step, double *out_lr,
                                      double *out_momentum);
/* Makes `schedule` set the lr (and ONECYCLE's momentum) of every following
 * train step from the step count; NULL removes it (the lr keeps the last
 * value set). A momentum cycle on a program without momentum is refused. */
otc_status_t otc_session_set_lr_schedule(otc_session_t *session,
                                         const otc_lr_schedule_t *schedule);
/* The schedule in use: 1 and a copy in *out (when not NULL), or 0. */
int32_t otc_session_get_lr_schedule(const otc_session_t *session,
                                    otc_lr_schedule_t *out);

/* SDP (OTC_PROGRAM_SDP) evaluates and exports the whole model, assembled
 * from the subnetworks the ranks train. The three calls below are OK and do
 * nothing for other programs. */

/* Brings the whole model up to date with the current step from the ranks
 * holding each parameter element (otc_session_eval_step and
 * otc_session_export_onnx do so themselves).
 * Collective: every rank calls it, even one with nothing to evaluate. */
otc_status_t otc_session_assemble_full_model(otc_session_t *session);
/* With OTC_PROGRAM_CALIBRATE_STEP (BatchNorm): moves the whole model's
 * running statistics towards the batch bound to this rank (assembling the
 * model first if needed); local to the rank, else does nothing. */
otc_status_t otc_session_calibrate_full_model(otc_session_t *session);
/* Averages the whole model's running statistics over all ranks, after each
 * rank calibrated on its own batches. Collective. */
otc_status_t otc_session_average_full_buffers(otc_session_t *session);

/* Reads / writes a parameter by its ONNX initializer name. */
otc_status_t otc_session_get_param(const otc_session_t *session,
                                   const char *name, void *out,
                                   size_t out_bytes);
otc_status_t otc_session_set_param(otc_session_t *session, const char *name,
                                   const void *data, size_t bytes);

/* Checkpoints: weights, all manifest state (optimizer state and
 * error-feedback residuals), step, RNG seed, hyperparameters and schedule, the
 * compressed all-reduce's per-bucket state (adaptive ‖g‖₀), skipped-step count
 * and caller data
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

/* Programs compiled with `otc-compile --ema DECAY` (OTC_PROGRAM_EMA) keep an
 * exponential moving average of every trained parameter, updated after each
 * optimizer step as torch.optim.swa_utils.AveragedModel with an EMA avg_fn
 * (the first step copies the weights, then ema = decay * ema + (1 - decay) *
 * w); checkpoints hold it with the optimizer state. Buffers (BatchNorm
 * running statistics) are not averaged (AveragedModel's use_buffers=False):
 * both calls below give their current values. FAILED_PRECONDITION for a
 * program without EMA. Local to the rank (no collective). */

/* Writes the source ONNX model with its initializers replaced by the EMA of
 * the trained values (what otc_session_export_onnx writes otherwise). */
otc_status_t otc_session_export_onnx_ema(const otc_session_t *session,
                                         const char *path);
/* Reads the EMA of a parameter by its ONNX initializer name, as
 * otc_session_get_param reads its value. */
otc_status_t otc_session_get_ema_param(const otc_session_t *session,
                                       const char *name, void *out,
                                       size_t out_bytes);

/*--- Driver ----------------------------------------------------------------*/

/* The training executable's data order: the permutation of 0..n-1 it
 * draws for data seed `seed` and 0-based epoch `epoch` (`--seed`), written
 * to out[0..n). An embedder feeding batches in this order trains exactly as
 * the executable does. INVALID_ARGUMENT for n < 0 or a NULL out with n > 0. */
otc_status_t otc_epoch_permutation(int64_t n, uint64_t seed, int64_t epoch,
                                   int64_t *out);

/* The training executable's main: parses flags (--steps, --epochs, --data,
 * --dataset, --eval-data, --checkpoint-dir, --resume, --export, --metrics,
 * ...), runs the loop and returns the process exit code. */
int otc_driver_main(int argc, char **argv, const otc_program_entry_t *entry);

#ifdef __cplusplus
}
#endif

#endif /* OTC_RUNTIME_H */
