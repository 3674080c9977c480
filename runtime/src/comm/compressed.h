//===- compressed.h - Compressed gradient all-reduce ------------*- C++ -*-===//
//
// The runtime side of DESIGN §8: otc_step_context_t's
// compressed_all_reduce_mean_f32 and the per-session, per-bucket state it
// keeps (adaptive ratio, scratch buffers, what a skipped step must undo).
// The formulas are documented at the top of compressed.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_RUNTIME_COMM_COMPRESSED_H
#define OTC_RUNTIME_COMM_COMPRESSED_H

#include "comm/comm.h"

#include <otc/compress.h>

#include <cstdint>
#include <deque>
#include <vector>

namespace otc {

struct BucketState {
  // Checkpointed.
  double norm0 = 0;  ///< ‖g‖₀: the largest norm so far; 0 = unset
  float ratio = 0;   ///< ratio of the last compressed step; 0 = none yet
  int64_t steps = 0; ///< compressed (not dense) steps completed

  // Scratch, allocated once per bucket size and reused every step.
  std::vector<uint8_t> gathered;    ///< W payloads; this rank's is compressed
                                    ///< in place at rank * payload bytes
                                    ///< (reduce-scatter: alone, at 0)
  std::vector<float> savedResidual; ///< residual before this step's update
  std::vector<float> savedVelocity; ///< velocity before this step's update
  std::vector<float> outgoing;      ///< momentum correction: what is sent
                                    ///< (the velocity with its tail)
  float tail = 0; ///< momentum correction: the tail factor taken back where
                  ///< nothing was sent (otck_compress_mask_sent_tail_f32)
  // PowerSGD's: its P factors, the bucket's uncompressed rest gathered, and
  // the state (its Q) before this step's update.
  std::vector<float> lowRankP;
  std::vector<float> uncompressed;
  std::vector<float> savedState;
  // The reduce-scatter exchange's (compressed.cpp): the payloads of this
  // rank's shard from every rank, the owners' second-stage blocks (each a
  // flag and a payload), this rank's second compression's error and what
  // goes back to its residual.
  std::vector<uint8_t> received;
  std::vector<uint8_t> shardBlocks;
  std::vector<float> shardError;
  std::vector<float> returned; ///< this rank's values the second stage dropped
  bool meanNonfinite = false;  ///< pieces: this step's mean is not finite
};

/// Undo record of one bucket compressed in the current train step: if a
/// later bucket of the same step is skipped, this one must be undone too.
struct BucketUndo {
  int64_t bucket = 0;
  float *residual = nullptr; ///< NULL without error feedback
  float *velocity = nullptr; ///< NULL without momentum (factor masking)
  int64_t count = 0;
  double norm0 = 0;
  float ratio = 0;
  int64_t steps = 0;
  float *state = nullptr; ///< PowerSGD's Q, stateCount floats; or NULL
  int64_t stateCount = 0;
};

struct CompressState {
  /// A deque: a queued exchange holds its bucket's address while the step
  /// adds the next buckets.
  std::deque<BucketState> buckets;
  std::vector<BucketUndo> touched; ///< this step's; cleared at its start

  BucketState &bucket(int64_t index);
  /// Restores every bucket this step compressed (residual, velocity,
  /// PowerSGD's Q and adaptive state), so a skipped step leaves no trace.
  void undoStep();
};

/// ratio = clamp(ratio_max * norm / norm0, ratio_min, ratio_max); ratio_max
/// while norm0 is unset (0).
float adaptiveRatio(double norm, double norm0, float ratioMin, float ratioMax);

/// What momentum correction sends (compressed.cpp): with `copied`,
/// base + scale * u (u the velocity, base u or, for Nesterov, the
/// gradient) built in a scratch buffer, else u itself. A compressed step
/// adds the tail m/(1-m) u; `unsent` * u then goes back out of the residual
/// where nothing was sent, leaving there what plain masking would have (u,
/// or the look-ahead m u + g). A dense step sends u, or for Nesterov the
/// look-ahead (scale m), and masks nothing. momentum in [0, 1).
struct MomentumTail {
  bool copied = false;
  float scale = 0, unsent = 0;
};
MomentumTail momentumTail(float momentum, bool nesterov, bool dense);

/// True for the methods with a kept ratio (top-k, random-k).
bool compressUsesRatio(int32_t method);
/// The floats of the method's state the program passes (`state`): PowerSGD's
/// Q of every matrix, cols * min(rank, rows, cols); 0 for the other methods
/// and for a malformed matrix list (checkMatrices names it).
int64_t compressStateFloats(const otc_compress_desc_t &desc);
/// Throws an Error naming `bucket` unless PowerSGD's matrices are
/// ascending, disjoint and within the bucket of `count` floats.
void checkMatrices(const otc_compress_desc_t &desc, int64_t count,
                   int64_t bucket);
/// Throws an Error naming `bucket` for a descriptor no kernel accepts.
void checkCompressDesc(const otc_compress_desc_t &desc, int64_t bucket);
/// The kernels' configuration of `bucket` at `ratio` in the step seeded
/// `stepSeed` (random-k draws from both).
otck_compress_config compressConfig(const otc_compress_desc_t &desc,
                                    float ratio, uint64_t stepSeed,
                                    int64_t bucket);
/// Payload bytes of `n` elements; throws when the kernels refuse `cfg`.
int64_t compressPayloadBytes(const otck_compress_config &cfg, int64_t n,
                             int64_t bucket);

/// Where the reduce-scatter exchange cuts a bucket into `world` shards
/// (otck_compress_shard): shard s is elements [begin[s], + size[s]) and
/// bytes [offset[s], + bytes[s]) of the bucket's payload (whole blocks, so
/// its payload is that range), and its owner's second-stage block (a
/// 4-byte flag, the payload, padding to 4 bytes) is region[s] bytes at
/// regionOffset[s] of the all-gather, regionTotal in all.
struct Shards {
  std::vector<int64_t> begin, size, offset, bytes, region, regionOffset;
  int64_t regionTotal = 0;
};
/// Throws an Error naming `bucket` when the method's payload does not cut
/// at block boundaries.
Shards cutShards(const otck_compress_config &cfg, int64_t count, int world,
                 int64_t bucket);

/// The compressed mean all-reduce of one bucket over all ranks (`group`
/// -1) or an SDP owner group: with a `velocity` (momentum correction with
/// factor masking) it first sets velocity = momentum * velocity + data and
/// compresses that with its momentum tail, zeroing it where this rank's
/// payload sends (compressed.cpp); it
/// compresses here and runs the exchange
/// through runCollective (queued on the collectives thread when there is
/// one; its status then comes from the drain). Returns OTC_STEP_OK,
/// OTC_STEP_SKIPPED_NONFINITE (the same on every rank; a group bucket
/// instead sets StepComm::pendingNonfinite) or OTC_STEP_ERR_COMM, and
/// throws an Error for a bad descriptor.
int compressedAllReduceMean(StepComm &sc, const otc_compress_desc_t &desc,
                            float *data, int64_t count, float *residual,
                            float *velocity, float momentum, float *state,
                            int64_t bucket, int64_t group = -1);

/// otc_step_context_t::compressed_all_reduce_mean_f32; `comm` is a StepComm.
int compressedAllReduceCallback(void *comm, const otc_compress_desc_t *desc,
                                float *data, int64_t count, float *residual,
                                float *velocity, float momentum, float *state,
                                int64_t bucket);
/// otc_step_context_t::group_compressed_all_reduce_mean_f32.
int groupCompressedAllReduceCallback(void *comm, int64_t group,
                                     const otc_compress_desc_t *desc,
                                     float *data, int64_t count,
                                     float *residual, float *velocity,
                                     float momentum, float *state,
                                     int64_t bucket);

} // namespace otc

#endif // OTC_RUNTIME_COMM_COMPRESSED_H
