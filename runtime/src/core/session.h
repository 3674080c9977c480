//===- session.h - Sessions: one program running on one rank ----*- C++ -*-===//

#ifndef OTC_RUNTIME_CORE_SESSION_H
#define OTC_RUNTIME_CORE_SESSION_H

#include "comm/compressed.h"
#include "core/profiler.h"
#include "core/program.h"
#include "device/device.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

struct ArenaDeleter {
  void operator()(uint8_t *p) const;
};
using Arena = std::unique_ptr<uint8_t, ArenaDeleter>;

struct otc_session {
  otc_program_t *program = nullptr;
  otc_comm_t *comm = nullptr;
  otc_session_options_t options{};
  Arena arena;
  int64_t step = 0;
  uint64_t seed = 0;
  float lastEvalLoss = 0;
  float lastGradNorm = 0; ///< of the last step that was not skipped
  bool hasEvalLoss = false;
  uint64_t stepBytesSent = 0, stepBytesReceived = 0;
  bool lastStepSkipped = false;
  /// --accumulate: micro-batches accumulated in the step under way.
  int32_t microBatches = 0;
  int64_t skippedSteps = 0; ///< checkpointed
  /// The hyperparameters of the next train step (checkpointed), set from
  /// `schedule` after every step when there is one (core/hyper.h).
  otc_hyperparams_t hyper{};
  std::optional<otc_lr_schedule_t> schedule; ///< checkpointed
  /// Per-bucket compressed all-reduce state (adaptive ratio, scratch).
  otc::CompressState compress;
  /// What the step context's `comm` points at; refreshed every step.
  otc::StepComm stepComm;

  /// The program this rank trains: the program itself, or (SDP) its
  /// variant for this rank.
  const otc_program_entry_t *entry = nullptr;
  const otc::Manifest *trainManifest = nullptr;
  /// SDP: the whole model, assembled from the owners for evaluation and
  /// export (allocated at the first use) and the step it was assembled at.
  Arena fullArena;
  int64_t assembledStep = -1;
  /// A CUDA program (--target cuda): its arena on the device, which `arena`
  /// mirrors (device.h). NULL for CPU programs.
  std::unique_ptr<otc::DeviceArena> device;
  /// Its collectives on the device (NCCL); NULL: staged through the host.
  std::unique_ptr<otc::DeviceCollectives> collectives;
  /// SDP with a CUDA program: the whole model's arena on the device
  /// (mirrored by fullArena), created with it.
  std::unique_ptr<otc::DeviceArena> fullDevice;
  /// Profiling (otc_session_set_profiling): the record, and whether the
  /// next train steps add to it.
  std::unique_ptr<otc::Profiler> profiler;
  bool profiling = false;

  bool isSdp() const { return !program->variants.empty(); }
  const otc::Manifest &manifest() const { return *trainManifest; }
  uint8_t *at(const otc::TensorSpec &t) const { return arena.get() + t.offset; }
  /// A CUDA program's host mirror: made current before the runtime reads or
  /// writes it (at()), marked changed after it writes. No-ops on the CPU.
  void pullFromDevice() const {
    if (device)
      device->pull();
  }
  void hostChanged() const {
    if (device)
      device->hostChanged();
  }
};

namespace otc {

/// Seed handed to step `step` (1-based): a pure function of the session
/// seed and the step, so a resumed run draws the same random numbers.
uint64_t stepSeed(uint64_t seed, int64_t step);

/// A zeroed, 64-byte aligned arena of `m` with its parameters' initial
/// values from the source model.
Arena makeArena(const Manifest &m);
/// "compiled for --world-size W but runs on N ranks; ..." message.
std::string worldSizeMismatchMessage(int32_t compiled, int32_t actual);

} // namespace otc

#endif // OTC_RUNTIME_CORE_SESSION_H
