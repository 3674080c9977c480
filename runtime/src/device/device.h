//===- device.h - Arenas of CUDA programs -----------------------*- C++ -*-===//
//
// A program compiled with --target cuda addresses an arena in device memory.
// The session keeps its host arena as a mirror: the runtime's own code
// (parameter initialisation, checkpoints, export, SDP assembly, data binding)
// works on the host copy, and DeviceArena moves bytes between the two:
//
//  - before a step, the whole arena goes up if the host changed it, and the
//    inputs always do;
//  - after a step the device is ahead; whoever reads or writes the host
//    copy first calls pull() (the whole arena comes down once);
//  - a host write ends with hostChanged().
//
// The two are never both ahead: hostChanged() after pull() only.
//
// Built with CUDA (device_cuda.cpp) or without (device_none.cpp, where
// creating one fails with a message naming the cause).
//
//===----------------------------------------------------------------------===//

#ifndef OTC_RUNTIME_DEVICE_DEVICE_H
#define OTC_RUNTIME_DEVICE_DEVICE_H

#include "otc/runtime.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace otc {

struct StepComm;

class DeviceArena {
public:
  /// Device memory for an arena of `bytes` mirrored by `host` (which
  /// outlives it), on the CUDA device this process uses (device()), with a
  /// stream of its own. Throws an Error naming the cause.
  static std::unique_ptr<DeviceArena> create(uint8_t *host, uint64_t bytes);
  ~DeviceArena();

  /// What train_step/eval_step receive.
  uint8_t *devicePtr() const { return dev; }
  void *stream() const { return stream_; }

  /// Before a step: the whole arena if the host changed it (inputs go up as
  /// they are bound: pushHostRange). Asynchronous on stream().
  void beforeStep();
  /// After a step (which synchronized the stream): the device is ahead.
  void afterStep() { deviceAhead = true; }
  /// Copies [offset, offset + bytes) down now (the loss, an output).
  void download(uint64_t offset, uint64_t bytes);
  /// Makes the host copy current (the whole arena, once per step).
  void pull();
  /// The host copy changed (after pull()): it goes up before the next step.
  void hostChanged() { hostAhead = true; }

  /// Host-staged collectives (device_comm.cpp): the host mirror of a device
  /// pointer into the arena, brought down first (waits for the stream), and
  /// remembered to go back up with pushStaged().
  float *stage(float *devicePointer, int64_t count);
  /// Copies the staged ranges back up (asynchronously on stream()).
  void pushStaged();
  /// Copies the host mirror's `bytes` at `hostPointer` (in the mirror) up:
  /// a bound input, a skipped step's restored residuals.
  void pushHostRange(const void *hostPointer, uint64_t bytes);

private:
  /// "CUDA device 0 (NVIDIA H200)", for messages.
  std::string describe() const;
  DeviceArena() = default;
  void copyUp(uint64_t offset, uint64_t bytes);

  uint8_t *host = nullptr;
  uint8_t *dev = nullptr;
  uint64_t size = 0;
  void *stream_ = nullptr;
  int ordinal = 0;
  bool hostAhead = true; ///< the arena was built on the host
  bool deviceAhead = false;
  std::vector<std::pair<uint64_t, uint64_t>> staged;
};

/// Waits for the work enqueued on a CUDA stream (the profiler's timestamps);
/// a no-op without CUDA.
void synchronizeStream(void *stream);

/// The message of the CUDA kernel library's last error on this thread
/// (otckd_status_message), "" without CUDA.
std::string deviceStatusMessage();

/// Collectives that work on a CUDA program's device buffers themselves
/// (comm_nccl.cpp), instead of staging them through the host mirror.
class DeviceCollectives {
public:
  virtual ~DeviceCollectives() = default;
  /// Points `ctx`'s collectives at these; ctx.comm is the session's
  /// StepComm, whose `collectives` is this.
  virtual void useIn(otc_step_context_t &ctx) = 0;
  /// After the program's step returned `rc`: waits for the collectives it
  /// left running and, when the step is skipped, restores the residuals it
  /// changed. Returns rc, or what the collectives add to an OK step
  /// (OTC_STEP_SKIPPED_NONFINITE, OTC_STEP_ERR_COMM).
  virtual int finishStep(StepComm &sc, int rc) = 0;
};

/// NCCL for a CUDA program's session on `comm` with `arena` (and the SDP
/// owner groups' sub-communicators, split now), or NULL for
/// the host-staged collectives. OTC_CUDA_COLLECTIVES chooses: `nccl`
/// (an error if it cannot be had), `staged`, or unset: NCCL when the
/// world has more than one rank, the runtime has NCCL, and the node has a
/// device per rank (NCCL cannot put two ranks on one device).
std::unique_ptr<DeviceCollectives>
createDeviceCollectives(otc_comm_t *comm, DeviceArena &arena,
                        const std::vector<std::vector<int64_t>> &groups);

} // namespace otc

#endif // OTC_RUNTIME_DEVICE_DEVICE_H
