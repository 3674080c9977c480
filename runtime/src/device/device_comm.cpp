//===- device_comm.cpp - Collectives of CUDA programs, staged on the host -===//
//
// The step-context callbacks of a CUDA program whose communicator is MPI (or
// local): each brings its device buffers down into the arena's host mirror
// (waiting for the kernels that wrote them), runs the CPU collective there,
// and the buffers go back up when the program waits for its collectives (or
// at once, for the collectives a step does not overlap). Every semantic of
// the CPU path (averaging, compression with error feedback, the adaptive
// ratio, momentum factor masking, agreement on non-finite buckets, byte
// counts) is therefore the same code.
//
//===----------------------------------------------------------------------===//

#include "comm/comm.h"
#include "comm/compressed.h"
#include "device/device.h"

namespace otc {

namespace {

/// Runs `fn` with the step's DeviceArena; a failed copy becomes the step's
/// collective error (nothing may throw into the program).
template <typename Fn> int staged(void *comm, Fn fn) {
  auto *sc = static_cast<StepComm *>(comm);
  try {
    return fn(*sc->device);
  } catch (const std::exception &e) {
    setCommError(sc->comm, e.what());
    return OTC_STEP_ERR_COMM;
  }
}

int allReduce(void *comm, float *data, int64_t count) {
  return staged(comm, [&](DeviceArena &d) {
    return allReduceMeanCallback(comm, d.stage(data, count), count);
  });
}

int groupAllReduce(void *comm, int64_t group, float *data, int64_t count) {
  return staged(comm, [&](DeviceArena &d) {
    return groupAllReduceMeanCallback(comm, group, d.stage(data, count), count);
  });
}

int groupCompressed(void *comm, int64_t group, const otc_compress_desc_t *desc,
                    float *data, int64_t count, float *residual,
                    float *velocity, float momentum, float *state,
                    int64_t bucket) {
  return staged(comm, [&](DeviceArena &d) {
    float *hostResidual = residual ? d.stage(residual, count) : nullptr;
    float *hostVelocity = velocity ? d.stage(velocity, count) : nullptr;
    float *hostState =
        state && desc ? d.stage(state, compressStateFloats(*desc)) : state;
    return groupCompressedAllReduceCallback(
        comm, group, desc, d.stage(data, count), count, hostResidual,
        hostVelocity, momentum, hostState, bucket);
  });
}

int compressed(void *comm, const otc_compress_desc_t *desc, float *data,
               int64_t count, float *residual, float *velocity, float momentum,
               float *state, int64_t bucket) {
  return groupCompressed(comm, -1, desc, data, count, residual, velocity,
                         momentum, state, bucket);
}

int broadcast(void *comm, int64_t root, float *data, int64_t count) {
  return staged(comm, [&](DeviceArena &d) {
    int rc = broadcastCallback(comm, root, d.stage(data, count), count);
    d.pushStaged();
    return rc;
  });
}

int waitCollectives(void *comm) {
  int rc = waitCollectivesCallback(comm);
  int pushed = staged(comm, [](DeviceArena &d) {
    d.pushStaged();
    return int(OTC_STEP_OK);
  });
  return rc != OTC_STEP_OK ? rc : pushed;
}

} // namespace

void useStagedCollectives(otc_step_context_t &ctx) {
  ctx.all_reduce_mean_f32 = allReduce;
  ctx.compressed_all_reduce_mean_f32 = compressed;
  ctx.group_all_reduce_mean_f32 = groupAllReduce;
  ctx.broadcast_f32 = broadcast;
  ctx.group_compressed_all_reduce_mean_f32 = groupCompressed;
  ctx.wait_collectives = waitCollectives;
}

} // namespace otc
