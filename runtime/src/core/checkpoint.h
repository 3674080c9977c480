//===- checkpoint.h - Atomic, checksummed checkpoints -----------*- C++ -*-===//
//
// Layout (little-endian):
//   "OTCCKPT1"  u32 version  u32 flags  u64 total_bytes  u64 manifest_hash
//   i32 world_size  i32 reserved  i64 step  u64 seed  u32 sections  u32 0
//   sections: u32 kind (1 param, 2 state, 3 extra, 4 runtime, 5 sdp,
//             6 hyper) u32 name_len
//             u64 bytes name data
//   u32 crc32 (zlib) of everything before it.
// "state" sections hold every manifest state tensor: optimizer state, the
// weights' EMA ("<param>.ema") and error-feedback residuals alike. The one
// "runtime" section (version 2) is
//   i64 skipped_steps  u32 buckets  u32 0
//   per bucket: f64 norm0 (adaptive ‖g‖₀, 0 unset)  f32 last ratio  u32 0
//               i64 compressed steps
// The one "hyper" section (version 3) holds the hyperparameters of the next
// step and the lr schedule:
//   f64 lr weight_decay momentum beta1 beta2 eps alpha lr_decay
//   u32 has_schedule  u32 0
//   schedule (has_schedule 1): i32 kind  i32 cycle_momentum  f64 base_lr
//     i64 warmup_steps  f64 warmup_start_factor  i64 total_steps  f64 lr_min
//     i64 step_size  f64 gamma  wsd_decay_fraction  pct_start  div_factor
//     final_div_factor  base_momentum  max_momentum
// A version 2 file has none: the session keeps its hyperparameters.
// A loader validates magic, version, size, checksum and program hash and
// parses every section before it changes anything in the session. Version 1
// (before the compressed all-reduce) is refused.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_RUNTIME_CORE_CHECKPOINT_H
#define OTC_RUNTIME_CORE_CHECKPOINT_H

#include "core/program.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace otc {

struct SavedBucket {
  double norm0 = 0;
  float ratio = 0;
  int64_t steps = 0;
};

struct CheckpointData {
  int64_t step = 0;
  uint64_t seed = 0;
  int32_t worldSize = 0;
  std::map<std::string, std::vector<uint8_t>> params, state;
  std::vector<uint8_t> extra;
  int64_t skippedSteps = 0;
  std::vector<SavedBucket> buckets;
  std::optional<otc_hyperparams_t> hyper; ///< absent in version 2
  std::optional<otc_lr_schedule_t> schedule;
};

/// Reads and fully validates a checkpoint for `manifest`; throws an Error
/// naming the file and the problem.
CheckpointData readCheckpoint(const std::string &path,
                              const Manifest &manifest);

/// Writes `bytes` to `path` via path.tmp, fsync, rename and a directory
/// fsync, so a crash leaves either the old or the new file.
void writeFileAtomically(const std::string &path, const std::string &bytes);

} // namespace otc

#endif // OTC_RUNTIME_CORE_CHECKPOINT_H
