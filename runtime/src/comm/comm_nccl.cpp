//===- comm_nccl.cpp - Collectives of CUDA programs on NCCL ---------------===//
//
// When every rank of a CUDA program has a device of its own, a step's
// collectives run on NCCL over the arena's device buffers. They run on a
// communication stream that first waits (cudaEvent) for the work the
// program enqueued before the call, so a bucket's exchange overlaps with
// the backward kernels enqueued after it; wait_collectives makes the host
// wait for the exchanges (it must return whether the step is skipped) and
// orders the program's later work after them.
//
// Semantics and byte counts are those of the CPU path (compressed.cpp):
//  - all_reduce_mean_f32: ncclAllReduce with ncclAvg (NCCL scales before it
//    sums, so a mean may differ from MPI's in its last bit);
//  - compressed, dense steps (NONE, warm-up): the same, then a flag of the
//    mean's finiteness (otck_cuda_flag_nonfinite_f32) in a device slot;
//  - compressed steps: the residual is saved on the device, then
//    otck_cuda_compress_f32 writes this rank's payload into its slot of the
//    gather buffer and its non-finite flag, an int MAX all-reduce of the
//    flag (not in an owner group: agree_finite decides there, as on the
//    CPU), an in-place ncclAllGather of the fixed-size payloads, and
//    otck_cuda_decompress_sum_f32 scaled by 1/W. The reduce-scatter
//    exchange runs its two stages as grouped ncclSend/ncclRecv. The
//    adaptive ratio's norm is summed in double on the device and
//    all-reduced over MPI.
//  - wait_collectives reads the step's flags: a non-finite one over the
//    world skips the step on every rank (the flags were all-reduced; the
//    means are identical). In an SDP owner group it is remembered instead,
//    and agree_finite tells every rank (an MPI int MAX, as on the CPU). A
//    skipped step restores every residual it changed.
//  - SDP owner groups get sub-communicators (ncclCommSplit, one per distinct
//    member set, ranked in the manifest's order) when the session starts;
//    broadcast_f32 is ncclBroadcast, ordered like the rest.
// Payloads are bit for bit the CPU's (otc/compress_cuda.h).
//
//===----------------------------------------------------------------------===//

#include "comm/comm.h"
#include "comm/compressed.h"
#include "core/status.h"
#include "device/device.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <thread>

#ifdef OTC_HAVE_NCCL
#include "otc/compress_cuda.h"

#include <nccl.h>
#endif

namespace otc {

namespace {

#ifdef OTC_HAVE_NCCL

/// Whether every rank has a device of its own (NCCL refuses two ranks on
/// one): the UUIDs of the ranks' current devices, all-gathered, all differ.
/// A collective: every rank of a multi-rank job calls it. Devices hidden
/// from each other (CUDA_VISIBLE_DEVICES) count by what they are, not by
/// their ordinals.
bool devicesOfTheirOwn(otc_comm_t *comm) {
  const int world = otc_comm_size(comm), rank = otc_comm_rank(comm);
  std::vector<cudaUUID_t> ids(static_cast<size_t>(world));
  int device = 0;
  cudaDeviceProp prop{};
  const bool known = cudaGetDevice(&device) == cudaSuccess &&
                     cudaGetDeviceProperties(&prop, device) == cudaSuccess;
  if (known)
    ids[size_t(rank)] = prop.uuid;
  allGatherInPlace(comm, ids.data(), sizeof(cudaUUID_t), /*counted=*/false);
  for (int i = 0; i < world; ++i)
    for (int j = i + 1; j < world; ++j)
      if (std::memcmp(&ids[size_t(i)], &ids[size_t(j)], sizeof(cudaUUID_t)) ==
          0)
        return false;
  return known;
}

void checkCuda(cudaError_t rc, const char *what) {
  if (rc != cudaSuccess)
    throw Error(OTC_UNAVAILABLE,
                std::string(what) + " failed: " + cudaGetErrorString(rc));
}

void checkNccl(ncclResult_t rc, const char *what, bool setUp = false) {
  if (rc == ncclSuccess)
    return;
  std::string why = std::string(what) + " failed: " + ncclGetErrorString(rc);
  if (setUp && rc == ncclInvalidUsage)
    why += " (NCCL needs a CUDA device per rank; where ranks share devices, "
           "set OTC_CUDA_COLLECTIVES=staged)";
  throw Error(OTC_UNAVAILABLE, why);
}

/// Device scratch of one bucket: allocated at its first compressed step for
/// the largest payload its descriptor can produce, reused afterwards.
struct Scratch {
  uint8_t *gathered = nullptr; ///< W payloads, this rank's at rank * P
  int64_t gatheredBytes = 0;
  float *saved = nullptr; ///< the residual before this step's update
  int64_t savedCount = 0;
  float *savedVelocity = nullptr; ///< the velocity before this step's update
  int64_t savedVelocityCount = 0;
  // The reduce-scatter exchange's: this rank's shard from every rank, the
  // owners' blocks (flag and payload), this rank's second compression's
  // error (compressed.cpp, reduceScatter).
  uint8_t *received = nullptr;
  int64_t receivedBytes = 0;
  uint8_t *blocks = nullptr;
  int64_t blocksBytes = 0;
  float *error = nullptr;
  int64_t errorCount = 0;
  float *returned = nullptr; ///< this rank's values the owners dropped
  int64_t returnedCount = 0;
  float *outgoing = nullptr; ///< momentum correction: what is sent
  int64_t outgoingCount = 0;
  float *lowRankP = nullptr; ///< PowerSGD's P factors
  int64_t lowRankPCount = 0;
  float *savedState = nullptr; ///< PowerSGD's Q before this step's update
  int64_t savedStateCount = 0;
};

/// Finiteness flags one step can hold.
constexpr int kMaxChecks = 1 << 14;

class Nccl final : public DeviceCollectives {
public:
  Nccl(otc_comm_t *comm, DeviceArena &arena,
       const std::vector<std::vector<int64_t>> &groups)
      : comm(comm) {
    world = otc_comm_size(comm);
    rank = otc_comm_rank(comm);
    compute = static_cast<cudaStream_t>(arena.stream());
    try {
      setUp(groups);
    } catch (...) {
      release();
      throw;
    }
  }

  ~Nccl() override { release(); }

  void useIn(otc_step_context_t &ctx) override {
    ctx.all_reduce_mean_f32 = [](void *c, float *data, int64_t count) {
      return guarded(
          c, [&](Nccl &n, StepComm &) { return n.allReduce(data, count); });
    };
    ctx.compressed_all_reduce_mean_f32 =
        [](void *c, const otc_compress_desc_t *desc, float *data, int64_t count,
           float *residual, float *velocity, float momentum, float *state,
           int64_t bucket) {
          return guarded(c, [&](Nccl &n, StepComm &sc) {
            return n.compressed(sc, desc, data, count, residual, velocity,
                                momentum, state, bucket, -1);
          });
        };
    ctx.group_all_reduce_mean_f32 = [](void *c, int64_t group, float *data,
                                       int64_t count) {
      return guarded(c, [&](Nccl &n, StepComm &) {
        return n.allReduce(data, count, group);
      });
    };
    ctx.group_compressed_all_reduce_mean_f32 =
        [](void *c, int64_t group, const otc_compress_desc_t *desc, float *data,
           int64_t count, float *residual, float *velocity, float momentum,
           float *state, int64_t bucket) {
          return guarded(c, [&](Nccl &n, StepComm &sc) {
            return n.compressed(sc, desc, data, count, residual, velocity,
                                momentum, state, bucket, group);
          });
        };
    ctx.broadcast_f32 = [](void *c, int64_t root, float *data, int64_t count) {
      return guarded(c, [&](Nccl &n, StepComm &) {
        return n.broadcast(root, data, count);
      });
    };
    ctx.agree_finite = [](void *c) {
      return guarded(c, [](Nccl &n, StepComm &sc) {
        int rc = n.settle(sc);
        bool bad = sc.pendingNonfinite || rc == OTC_STEP_SKIPPED_NONFINITE;
        sc.pendingNonfinite = false;
        return anyRank(n.comm, bad) ? int(OTC_STEP_SKIPPED_NONFINITE)
                                    : int(OTC_STEP_OK);
      });
    };
    ctx.wait_collectives = [](void *c) {
      return guarded(c, [](Nccl &n, StepComm &sc) { return n.settle(sc); });
    };
  }

  int finishStep(StepComm &sc, int rc) override {
    try {
      int settled = settle(sc);
      if (rc == OTC_STEP_OK)
        rc = settled;
      if (rc == OTC_STEP_SKIPPED_NONFINITE)
        for (const Changed &c : changed)
          checkCuda(cudaMemcpyAsync(c.state, c.saved, size_t(c.count) * 4,
                                    cudaMemcpyDeviceToDevice, compute),
                    "cudaMemcpyAsync");
      changed.clear();
      return rc;
    } catch (const std::exception &e) {
      changed.clear();
      failed = true;
      // A failed kernel also fails the stream: the program's code says more.
      if (rc != OTC_STEP_OK && rc != OTC_STEP_SKIPPED_NONFINITE)
        return rc;
      setCommError(sc.comm, e.what());
      return OTC_STEP_ERR_COMM;
    }
  }

private:
  void setUp(const std::vector<std::vector<int64_t>> &groupList) {
    // Rank 0's id, and whether it got one: every rank learns either.
    struct {
      int ok;
      ncclUniqueId id;
    } root{};
    ncclResult_t idRc = ncclSuccess;
    if (rank == 0)
      root.ok = (idRc = ncclGetUniqueId(&root.id)) == ncclSuccess;
    broadcastBytes(comm, &root, sizeof root, 0);
    if (!root.ok) {
      checkNccl(rank == 0 ? idRc : ncclSystemError, "ncclGetUniqueId", true);
      throw Error(OTC_UNAVAILABLE, "rank 0 could not create an NCCL id");
    }
    // Every rank has the id before any blocks in ncclCommInitRank: an MPI
    // that progresses the broadcast lazily would otherwise leave a rank
    // waiting in it while the others wait in NCCL.
    barrier(comm);
    checkNccl(ncclCommInitRank(&nccl, world, root.id, rank), "ncclCommInitRank",
              true);
    // One sub-communicator per distinct owner set, split on every rank in
    // the manifest's order (a collective over the world); a member's NCCL
    // rank is its index in the set, the slot the all-gather fills.
    std::map<std::vector<int64_t>, size_t> first;
    for (const std::vector<int64_t> &g : groupList) {
      Group &mine = groups.emplace_back();
      mine.size = int(g.size());
      auto it = std::find(g.begin(), g.end(), int64_t(rank));
      mine.rank = it == g.end() ? -1 : int(it - g.begin());
      auto [seen, fresh] = first.emplace(g, groups.size() - 1);
      if (!fresh) {
        mine.comm = groups[seen->second].comm;
        continue;
      }
      checkNccl(ncclCommSplit(nccl, mine.rank < 0 ? NCCL_SPLIT_NOCOLOR : 0,
                              mine.rank < 0 ? rank : mine.rank, &mine.comm,
                              nullptr),
                "ncclCommSplit", true);
      if (mine.comm)
        owned.push_back(mine.comm);
    }
    checkCuda(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking),
              "cudaStreamCreateWithFlags");
    checkCuda(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming),
              "cudaEventCreate");
    checkCuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming),
              "cudaEventCreate");
    checkCuda(cudaMalloc(&dFlags, kMaxChecks * sizeof(int)), "cudaMalloc");
    checkCuda(cudaMallocHost(&hFlags, kMaxChecks * sizeof(int)),
              "cudaMallocHost");
    checkCuda(cudaMalloc(&dSum, sizeof(double)), "cudaMalloc");
    checkCuda(cudaMallocHost(&hSum, sizeof(double)), "cudaMallocHost");
  }

  /// Frees what setUp made (also after it failed half-way).
  void release() {
    // A failed step may have left a collective spinning on the device:
    // aborting its communicators ends it, so they go before the wait.
    if (failed)
      destroyCommunicators();
    if (side)
      cudaStreamSynchronize(side);
    for (Scratch &s : scratch) {
      cudaFree(s.gathered);
      cudaFree(s.saved);
      cudaFree(s.savedVelocity);
      cudaFree(s.received);
      cudaFree(s.blocks);
      cudaFree(s.error);
      cudaFree(s.returned);
      cudaFree(s.outgoing);
      cudaFree(s.lowRankP);
      cudaFree(s.savedState);
    }
    scratch.clear();
    cudaFree(dFlags);
    cudaFreeHost(hFlags);
    cudaFree(dSum);
    cudaFreeHost(hSum);
    dFlags = nullptr, hFlags = nullptr, dSum = nullptr, hSum = nullptr;
    if (ready)
      cudaEventDestroy(ready);
    if (done)
      cudaEventDestroy(done);
    if (side)
      cudaStreamDestroy(side);
    ready = done = nullptr;
    side = nullptr;
    destroyCommunicators();
  }

  /// Owner groups' communicators, then the world's; aborted after a
  /// failure (a collective may still be pending), destroyed otherwise.
  void destroyCommunicators() {
    for (ncclComm_t c : owned)
      failed ? ncclCommAbort(c) : ncclCommDestroy(c);
    owned.clear();
    if (nccl)
      failed ? ncclCommAbort(nccl) : ncclCommDestroy(nccl);
    nccl = nullptr;
  }

  /// Waits for the communication stream as cudaStreamSynchronize would,
  /// watching the communicators meanwhile: a collective that failed (a
  /// peer died, the network broke) leaves its kernel spinning, and a plain
  /// synchronize would wait for it forever. Throws NCCL's error instead,
  /// or the watchdog's (watchdog.h: a peer that does not arrive within the
  /// collective timeout, or exited); the caller marks the session failed,
  /// which aborts the communicators (ncclCommAbort).
  void waitSide(const char *what) {
    watchWait(comm, {"NCCL collectives of the communication stream"}, [&] {
      const cudaError_t rc = cudaStreamQuery(side);
      if (rc == cudaSuccess)
        return true;
      if (rc != cudaErrorNotReady)
        checkCuda(rc, what);
      checkAsyncErrors();
      std::this_thread::yield();
      return false;
    });
    checkAsyncErrors();
  }

  void checkAsyncErrors() {
    ncclResult_t async = ncclSuccess;
    for (ncclComm_t c : owned) {
      checkNccl(ncclCommGetAsyncError(c, &async), "ncclCommGetAsyncError");
      checkNccl(async, "a collective in an owner group");
    }
    checkNccl(ncclCommGetAsyncError(nccl, &async), "ncclCommGetAsyncError");
    checkNccl(async, "a collective");
  }

  template <typename Fn> static int guarded(void *c, Fn fn) {
    auto *sc = static_cast<StepComm *>(c);
    auto &self = *static_cast<Nccl *>(sc->collectives);
    try {
      return fn(self, *sc);
    } catch (const std::exception &e) {
      self.failed = true;
      setCommError(sc->comm, e.what());
      return OTC_STEP_ERR_COMM;
    }
  }

  /// The communication stream waits for what the program enqueued so far.
  void startAfterCompute() {
    checkCuda(cudaEventRecord(ready, compute), "cudaEventRecord");
    checkCuda(cudaStreamWaitEvent(side, ready, 0), "cudaStreamWaitEvent");
    pending = true;
  }

  void count(uint64_t sent, uint64_t received) {
    if (world > 1)
      countBytes(comm, sent, received);
  }

  /// Where a collective runs: the world (group -1) or an owner group.
  struct On {
    ncclComm_t comm;
    int size, rank;
    bool group;
  };

  On on(int64_t group) const {
    if (group < 0)
      return {nccl, world, rank, false};
    if (group >= int64_t(groups.size()) || groups[size_t(group)].rank < 0)
      throw Error(OTC_INTERNAL, "the program names SDP owner group " +
                                    std::to_string(group) +
                                    ", which the manifest lacks or this rank "
                                    "is not a member of");
    const Group &g = groups[size_t(group)];
    return {g.comm, g.size, g.rank, true};
  }

  void allReduceAvg(const On &o, float *data, int64_t n) {
    // NCCL counts are size_t; one call covers any bucket.
    checkNccl(
        ncclAllReduce(data, data, size_t(n), ncclFloat, ncclAvg, o.comm, side),
        "ncclAllReduce");
    if (o.size > 1)
      count(uint64_t(n) * 4, uint64_t(n) * 4);
  }

  int allReduce(float *data, int64_t n, int64_t group = -1) {
    if (n < 0 || (n > 0 && !data))
      throw Error(OTC_INVALID_ARGUMENT, "all-reduce of a bad buffer");
    On o = on(group);
    if (n == 0)
      return OTC_STEP_OK;
    startAfterCompute();
    allReduceAvg(o, data, n);
    return OTC_STEP_OK;
  }

  int broadcast(int64_t root, float *data, int64_t n) {
    if (root < 0 || root >= world)
      throw Error(OTC_INTERNAL, "broadcast from rank " + std::to_string(root) +
                                    " of a world of " + std::to_string(world));
    if (n <= 0)
      return OTC_STEP_OK;
    startAfterCompute();
    checkNccl(
        ncclBroadcast(data, data, size_t(n), ncclFloat, int(root), nccl, side),
        "ncclBroadcast");
    if (world > 1) {
      if (root == rank)
        count(uint64_t(n) * 4, 0);
      else
        count(0, uint64_t(n) * 4);
    }
    // Not waited for by the program: what it enqueues next comes after.
    checkCuda(cudaEventRecord(done, side), "cudaEventRecord");
    checkCuda(cudaStreamWaitEvent(compute, done, 0), "cudaStreamWaitEvent");
    return OTC_STEP_OK;
  }

  /// A device flag for this step, 0 until a check sets it; settle() reads
  /// it. `group`: an owner group's (agree_finite decides), not the world's.
  int *newFlag(bool group) {
    if (flagsUsed == kMaxChecks)
      throw Error(OTC_INTERNAL, "a step checks more than " +
                                    std::to_string(kMaxChecks) + " buckets");
    flagInGroup[size_t(flagsUsed)] = group;
    int *flag = dFlags + flagsUsed++;
    checkCuda(cudaMemsetAsync(flag, 0, sizeof(int), side), "cudaMemsetAsync");
    return flag;
  }

  /// Queues a finiteness check of `n` floats.
  void checkFinite(const float *data, int64_t n, bool group) {
    checkCuda(otck_cuda_flag_nonfinite_f32(n, data, newFlag(group), side),
              "otck_cuda_flag_nonfinite_f32");
  }

  int compressed(StepComm &sc, const otc_compress_desc_t *descp, float *data,
                 int64_t n, float *residual, float *velocity, float momentum,
                 float *state, int64_t bucket, int64_t group) {
    if (!descp)
      throw Error(OTC_INVALID_ARGUMENT, "compressed all-reduce: desc is NULL");
    const otc_compress_desc_t &desc = *descp;
    if (!sc.compress)
      throw Error(OTC_INVALID_ARGUMENT, "compressed all-reduce without a "
                                        "session communicator");
    if (n < 0 || (n > 0 && !data))
      throw Error(OTC_INVALID_ARGUMENT, "compressed all-reduce of bucket " +
                                            std::to_string(bucket) +
                                            ": bad gradient buffer");
    checkCompressDesc(desc, bucket);
    const bool feedback = desc.error_feedback != 0;
    if (feedback && n > 0 && !residual)
      throw Error(OTC_INVALID_ARGUMENT,
                  "compressed all-reduce of bucket " + std::to_string(bucket) +
                      ": error feedback is on but the residual is NULL");
    if (velocity && !(momentum >= 0.0f && momentum < 1.0f))
      throw Error(OTC_INVALID_ARGUMENT,
                  "compressed all-reduce of bucket " + std::to_string(bucket) +
                      ": momentum correction needs a momentum in [0, 1), got " +
                      std::to_string(momentum));
    if (velocity && desc.method == OTCK_COMPRESS_POWERSGD)
      throw Error(OTC_INVALID_ARGUMENT, "compressed all-reduce of bucket " +
                                            std::to_string(bucket) +
                                            ": PowerSGD keeps no velocity");
    checkMatrices(desc, n, bucket);
    if ((compressStateFloats(desc) > 0) != (state != nullptr))
      throw Error(OTC_INVALID_ARGUMENT,
                  "compressed all-reduce of bucket " + std::to_string(bucket) +
                      ": PowerSGD's state and the method disagree");
    BucketState &b = sc.compress->bucket(bucket);
    const On o = on(group);
    if (n == 0)
      return OTC_STEP_OK;
    startAfterCompute();
    if (desc.method == OTCK_COMPRESS_POWERSGD && sc.step > desc.warmup_steps)
      return powerSgd(o, desc, data, n, feedback ? residual : nullptr, state, b,
                      bucket);
    // Momentum correction: velocity = momentum * velocity + data (saved for
    // an undo); what is sent is the velocity with its tail (compressed.cpp).
    const bool dense = desc.exchange == OTC_EXCHANGE_ALL_REDUCE ||
                       sc.step <= desc.warmup_steps;
    const float *src = data;
    const MomentumTail t = momentumTail(momentum, desc.nesterov != 0, dense);
    if (velocity) {
      Scratch &s = velocityScratchOf(bucket, n);
      checkCuda(otck_cuda_compress_accumulate_f32(n, momentum, data, velocity,
                                                  s.savedVelocity, side),
                "otck_cuda_compress_accumulate_f32");
      changed.push_back({velocity, s.savedVelocity, n});
      src = velocity;
      if (t.copied) { // u's tail (or the look-ahead): base + scale u
        growFloats(s.outgoing, s.outgoingCount, n,
                   "cudaMalloc of a bucket's momentum tail");
        checkCuda(cudaMemcpyAsync(s.outgoing, velocity, size_t(n) * 4,
                                  cudaMemcpyDeviceToDevice, side),
                  "cudaMemcpyAsync");
        checkCuda(otck_cuda_compress_accumulate_f32(
                      n, t.scale, desc.nesterov ? data : velocity, s.outgoing,
                      nullptr, side),
                  "otck_cuda_compress_accumulate_f32");
        src = s.outgoing;
      }
    }
    if (dense) {
      if (velocity) // all of it is sent, and keeps its momentum
        checkCuda(cudaMemcpyAsync(data, src, size_t(n) * 4,
                                  cudaMemcpyDeviceToDevice, side),
                  "cudaMemcpyAsync");
      allReduceAvg(o, data, n);
      checkFinite(data, n, o.group);
      return OTC_STEP_OK;
    }
    BucketUndo undo{bucket, nullptr, nullptr, n, b.norm0, b.ratio, b.steps};
    const bool adaptive = desc.adaptive && compressUsesRatio(desc.method);
    float ratio = compressUsesRatio(desc.method) ? desc.ratio : 1.f;
    if (adaptive) {
      // The ratio is needed on the host before compressing: the host waits
      // here for this bucket's gradient (and the exchanges before it).
      // The velocity's norm, not its tail's (which the momentum scales).
      checkCuda(
          otck_cuda_sum_squares_f64(n, velocity ? velocity : src, dSum, side),
          "otck_cuda_sum_squares_f64");
      checkCuda(cudaMemcpyAsync(hSum, dSum, sizeof(double),
                                cudaMemcpyDeviceToHost, side),
                "cudaMemcpyAsync");
      waitSide("the collectives' stream");
      double sq = *hSum;
      if (o.group)
        groupAllReduceSumF64(comm, (*sc.groups)[size_t(group)], &sq, 1);
      else
        allReduceSumF64(comm, &sq, 1, /*counted=*/true);
      double mean = std::sqrt(sq / double(o.size));
      if (!std::isfinite(mean)) { // every member saw the same sum
        if (!o.group)
          return OTC_STEP_SKIPPED_NONFINITE;
        sc.pendingNonfinite = true; // the exchange goes on, then agree_finite
        mean = b.norm0;
      }
      b.norm0 = std::max(b.norm0, mean);
      ratio = adaptiveRatio(mean, b.norm0, desc.ratio_min, desc.ratio_max);
    }
    otck_compress_config cfg = compressConfig(desc, ratio, sc.seed, bucket);
    int64_t p = compressPayloadBytes(cfg, n, bucket);
    Scratch &s = scratchOf(bucket, desc, cfg, n, p, o.size);
    if (feedback) {
      checkCuda(cudaMemcpyAsync(s.saved, residual, size_t(n) * 4,
                                cudaMemcpyDeviceToDevice, side),
                "cudaMemcpyAsync");
      changed.push_back({residual, s.saved, n});
    }
    int *flag = newFlag(o.group);
    // The all-gather's slot of this rank; the two-stage exchange sends
    // pieces of the payload from the buffer's start.
    const bool twoStage =
        desc.exchange == OTC_EXCHANGE_REDUCE_SCATTER && o.size > 1;
    uint8_t *mine = s.gathered + (twoStage ? 0 : size_t(o.rank) * size_t(p));
    checkCuda(otck_cuda_compress_f32(&cfg, n, src,
                                     feedback ? residual : nullptr, mine, flag,
                                     side),
              "otck_cuda_compress_f32");
    // Factor masking. A non-finite bucket's payload is unspecified, but its
    // step is skipped and the velocity restored.
    if (velocity)
      checkCuda(otck_cuda_compress_mask_sent_tail_f32(
                    &cfg, n, mine, t.unsent, velocity,
                    feedback ? residual : nullptr, side),
                "otck_cuda_compress_mask_sent_tail_f32");
    uint64_t peers = uint64_t(o.size - 1), flagBytes = o.group ? 0 : 4;
    if (!o.group)
      checkNccl(ncclAllReduce(flag, flag, 1, ncclInt32, ncclMax, nccl, side),
                "ncclAllReduce");
    if (twoStage) {
      count(flagBytes, flagBytes);
      reduceScatter(o, cfg, data, n, feedback ? residual : nullptr, s, bucket);
    } else {
      if (peers)
        count(flagBytes + uint64_t(p) * peers, flagBytes + uint64_t(p) * peers);
      checkNccl(
          ncclAllGather(mine, s.gathered, size_t(p), ncclUint8, o.comm, side),
          "ncclAllGather");
      checkCuda(otck_cuda_decompress_sum_f32(&cfg, n, s.gathered, o.size,
                                             1.0f / float(o.size), data, side),
                "otck_cuda_decompress_sum_f32");
    }
    // Finite gradients can give a mean that is not (fp16 and bf16 decode
    // values beyond their range as infinities; the sum of the payloads can
    // overflow): every member decoded the same.
    checkFinite(data, n, o.group);
    sc.compress->touched.push_back(undo);
    b.ratio = cfg.ratio;
    ++b.steps;
    return OTC_STEP_OK;
  }

  /// The two-stage exchange of compressed.cpp's reduceScatter on the
  /// communication stream, this rank's payload at the start of
  /// `s.gathered`: grouped sends and receives carry the all-to-all of the
  /// shards and the all-gather of the owners' blocks. The owners' flags
  /// (written by the second compression, which leaves its error at zero and
  /// the block's payload at zero bytes for a sum that is not finite) become
  /// this step's checks, so the step is skipped on every member as on the
  /// CPU. With error feedback the owners' errors go back to the residuals
  /// as compressed.cpp's returnDropped has them.
  void reduceScatter(const On &o, const otck_compress_config &cfg, float *data,
                     int64_t n, float *residual, Scratch &s, int64_t bucket) {
    const Shards sh = cutShards(cfg, n, o.size, bucket);
    const size_t w = size_t(o.size), me = size_t(o.rank);
    const int64_t mine = sh.size[me], p = sh.bytes[me];
    growBytes(s.received, s.receivedBytes, p * int64_t(w),
              "cudaMalloc of a compressed bucket's shards");
    growBytes(s.blocks, s.blocksBytes, sh.regionTotal,
              "cudaMalloc of a compressed bucket's shard blocks");
    if (residual)
      growFloats(s.error, s.errorCount, std::max<int64_t>(mine, 1),
                 "cudaMalloc of a shard's compression error");
    uint64_t sent = 0, received = 0;
    checkNccl(ncclGroupStart(), "ncclGroupStart");
    for (size_t r = 0; r < w; ++r) {
      if (r == me)
        continue;
      checkNccl(ncclSend(s.gathered + sh.offset[r], size_t(sh.bytes[r]),
                         ncclUint8, int(r), o.comm, side),
                "ncclSend");
      checkNccl(ncclRecv(s.received + r * size_t(p), size_t(p), ncclUint8,
                         int(r), o.comm, side),
                "ncclRecv");
      sent += uint64_t(sh.bytes[r]);
      received += uint64_t(p);
    }
    checkNccl(ncclGroupEnd(), "ncclGroupEnd");
    if (p > 0)
      checkCuda(cudaMemcpyAsync(s.received + me * size_t(p),
                                s.gathered + sh.offset[me], size_t(p),
                                cudaMemcpyDeviceToDevice, side),
                "cudaMemcpyAsync");
    float *sum = data + sh.begin[me];
    checkCuda(otck_cuda_decompress_sum_f32(&cfg, mine, s.received, o.size, 1.0f,
                                           sum, side),
              "otck_cuda_decompress_sum_f32");
    uint8_t *block = s.blocks + sh.regionOffset[me];
    checkCuda(cudaMemsetAsync(block, 0, size_t(sh.region[me]), side),
              "cudaMemsetAsync");
    if (residual)
      checkCuda(cudaMemsetAsync(s.error, 0, size_t(mine) * 4, side),
                "cudaMemsetAsync");
    checkCuda(otck_cuda_compress_f32(&cfg, mine, sum,
                                     residual ? s.error : nullptr, block + 4,
                                     reinterpret_cast<int *>(block), side),
              "otck_cuda_compress_f32");
    checkNccl(ncclGroupStart(), "ncclGroupStart");
    for (size_t r = 0; r < w; ++r) {
      if (r == me)
        continue;
      checkNccl(ncclSend(block, size_t(4 + sh.bytes[me]), ncclUint8, int(r),
                         o.comm, side),
                "ncclSend");
      checkNccl(ncclRecv(s.blocks + sh.regionOffset[r], size_t(4 + sh.bytes[r]),
                         ncclUint8, int(r), o.comm, side),
                "ncclRecv");
      sent += uint64_t(4 + sh.bytes[me]);
      received += uint64_t(4 + sh.bytes[r]);
    }
    checkNccl(ncclGroupEnd(), "ncclGroupEnd");
    count(sent, received);
    for (size_t r = 0; r < w; ++r) {
      checkCuda(cudaMemcpyAsync(newFlag(o.group), s.blocks + sh.regionOffset[r],
                                4, cudaMemcpyDeviceToDevice, side),
                "cudaMemcpyAsync");
      checkCuda(otck_cuda_decompress_sum_f32(
                    &cfg, sh.size[r], s.blocks + sh.regionOffset[r] + 4, 1,
                    1.0f / float(o.size), data + sh.begin[r], side),
                "otck_cuda_decompress_sum_f32");
    }
    if (!residual)
      return;
    // compressed.cpp's returnDropped: this rank's values the owners
    // dropped back to its residual, its quantisation error where it kept.
    // (A skipped step restores the residual.)
    growFloats(s.returned, s.returnedCount, n,
               "cudaMalloc of a bucket's dropped values");
    auto kernel = [&](cudaError_t rc) {
      checkCuda(rc, "the second stage's error feedback");
    };
    kernel(otck_cuda_decompress_sum_f32(&cfg, n, s.gathered, 1, 1.0f,
                                        s.returned, side));
    for (size_t r = 0; r < w; ++r)
      kernel(otck_cuda_compress_mask_sent_f32(&cfg, sh.size[r],
                                              s.blocks + sh.regionOffset[r] + 4,
                                              s.returned + sh.begin[r], side));
    kernel(otck_cuda_compress_accumulate_f32(n, 1.0f, s.returned, residual,
                                             nullptr, side));
    kernel(cudaMemcpyAsync(s.returned, s.error, size_t(mine) * 4,
                           cudaMemcpyDeviceToDevice, side));
    kernel(otck_cuda_compress_mask_sent_f32(&cfg, mine, block + 4, s.returned,
                                            side));
    kernel(otck_cuda_compress_accumulate_f32(mine, -1.0f, s.error, s.returned,
                                             nullptr, side));
    kernel(otck_cuda_compress_accumulate_f32(
        mine, 1.0f, s.returned, residual + sh.begin[me], nullptr, side));
  }

  /// compressed.cpp's powerSgd on the communication stream: the device
  /// kernels of otc/compress_cuda.h, NCCL's average for the uncompressed
  /// rest (one call per range, grouped), P and Q; each average's
  /// finiteness is a check of this step, the residual and Q are restored
  /// when it is skipped.
  int powerSgd(const On &o, const otc_compress_desc_t &desc, float *data,
               int64_t n, float *residual, float *q, BucketState &b,
               int64_t bucket) {
    if (scratch.size() <= size_t(bucket))
      scratch.resize(size_t(bucket) + 1);
    Scratch &s = scratch[size_t(bucket)];
    std::vector<otck_powersgd_matrix> mats(size_t(desc.num_matrices));
    for (size_t i = 0; i < mats.size(); ++i)
      mats[i] = {desc.matrices[3 * i], desc.matrices[3 * i + 1],
                 desc.matrices[3 * i + 2]};
    const int64_t num = int64_t(mats.size()), rank = desc.powersgd_rank;
    const int64_t qFloats = compressStateFloats(desc);
    const int64_t pFloats =
        num ? otck_powersgd_p_floats(mats.data(), num, rank) : 0;
    if (pFloats < 0)
      throw Error(OTC_INVALID_ARGUMENT, "compressed all-reduce of bucket " +
                                            std::to_string(bucket) +
                                            ": bad PowerSGD matrices");
    auto refused = [&](cudaError_t rc, const char *what) {
      checkCuda(rc, what);
    };
    if (residual) {
      growFloats(s.saved, s.savedCount, n,
                 "cudaMalloc of a bucket's saved residual");
      refused(cudaMemcpyAsync(s.saved, residual, size_t(n) * 4,
                              cudaMemcpyDeviceToDevice, side),
              "cudaMemcpyAsync");
      changed.push_back({residual, s.saved, n});
    }
    if (qFloats) {
      growFloats(s.savedState, s.savedStateCount, qFloats,
                 "cudaMalloc of a bucket's saved PowerSGD state");
      refused(cudaMemcpyAsync(s.savedState, q, size_t(qFloats) * 4,
                              cudaMemcpyDeviceToDevice, side),
              "cudaMemcpyAsync");
      changed.push_back({q, s.savedState, qFloats});
    }
    // M: g + e on the matrices (in the residual's buffer, formed by the
    // projection below), else g.
    float *m = residual ? residual : data;
    // The uncompressed rest, range by range in one NCCL group.
    int64_t rest = 0, at = 0;
    checkNccl(ncclGroupStart(), "ncclGroupStart");
    auto range = [&](int64_t begin, int64_t end) {
      if (end <= begin)
        return;
      checkNccl(ncclAllReduce(data + begin, data + begin, size_t(end - begin),
                              ncclFloat, ncclAvg, o.comm, side),
                "ncclAllReduce");
      rest += end - begin;
    };
    for (const otck_powersgd_matrix &x : mats) {
      range(at, x.offset);
      at = x.offset + x.rows * x.cols;
    }
    range(at, n);
    checkNccl(ncclGroupEnd(), "ncclGroupEnd");
    uint64_t bytes = 0;
    if (o.size > 1)
      bytes = allReduceBytes(uint64_t(rest) * 4, o.size) +
              allReduceBytes(uint64_t(pFloats) * 4, o.size) +
              allReduceBytes(uint64_t(qFloats) * 4, o.size);
    count(bytes, bytes);
    if (num > 0) {
      growFloats(s.lowRankP, s.lowRankPCount, pFloats,
                 "cudaMalloc of a bucket's PowerSGD factors");
      float *p = s.lowRankP;
      refused(otck_cuda_powersgd_init_q_f32(mats.data(), num, rank,
                                            uint64_t(bucket), q, nullptr, side),
              "otck_cuda_powersgd_init_q_f32");
      if (residual)
        refused(otck_cuda_powersgd_project_feedback_f32(mats.data(), num, rank,
                                                        data, residual, nullptr,
                                                        q, p, side),
                "otck_cuda_powersgd_project_feedback_f32");
      else
        refused(otck_cuda_powersgd_project_f32(mats.data(), num, rank, data, q,
                                               p, side),
                "otck_cuda_powersgd_project_f32");
      checkNccl(ncclAllReduce(p, p, size_t(pFloats), ncclFloat, ncclAvg, o.comm,
                              side),
                "ncclAllReduce");
      checkFinite(p, pFloats, o.group);
      refused(otck_cuda_powersgd_orthonormalize_f32(mats.data(), num, rank, p,
                                                    0.0f, side),
              "otck_cuda_powersgd_orthonormalize_f32");
      refused(otck_cuda_powersgd_back_project_f32(mats.data(), num, rank, m, p,
                                                  q, side),
              "otck_cuda_powersgd_back_project_f32");
      checkNccl(ncclAllReduce(q, q, size_t(qFloats), ncclFloat, ncclAvg, o.comm,
                              side),
                "ncclAllReduce");
      refused(otck_cuda_powersgd_decompress_f32(mats.data(), num, rank, p, q,
                                                1.0f, data, residual, side),
              "otck_cuda_powersgd_decompress_f32");
    }
    checkFinite(data, n, o.group);
    ++b.steps;
    return OTC_STEP_OK;
  }

  /// `buf` holds at least `bytes` bytes (its old contents are dropped).
  void growBytes(uint8_t *&buf, int64_t &have, int64_t bytes,
                 const char *what) {
    if (have >= bytes)
      return;
    waitSide("the collectives' stream");
    cudaFree(buf);
    buf = nullptr;
    have = 0;
    checkCuda(cudaMalloc(&buf, size_t(bytes)), what);
    have = bytes;
  }

  Scratch &scratchOf(int64_t bucket, const otc_compress_desc_t &desc,
                     const otck_compress_config &cfg, int64_t n, int64_t p,
                     int size) {
    if (scratch.size() <= size_t(bucket))
      scratch.resize(size_t(bucket) + 1);
    Scratch &s = scratch[size_t(bucket)];
    int64_t cap = p;
    if (desc.adaptive && compressUsesRatio(desc.method)) {
      otck_compress_config most = cfg;
      most.ratio = desc.ratio_max;
      cap = std::max(p, compressPayloadBytes(most, n, bucket));
    }
    if (s.gatheredBytes < cap * size) {
      waitSide("the collectives' stream");
      cudaFree(s.gathered);
      s.gathered = nullptr;
      s.gatheredBytes = 0;
      checkCuda(cudaMalloc(&s.gathered, size_t(cap) * size_t(size)),
                "cudaMalloc of a compressed bucket's payloads");
      s.gatheredBytes = cap * size;
    }
    if (desc.error_feedback)
      growFloats(s.saved, s.savedCount, n,
                 "cudaMalloc of a bucket's saved residual");
    return s;
  }

  /// `buf` holds at least `n` floats (its old contents are dropped).
  void growFloats(float *&buf, int64_t &count, int64_t n, const char *what) {
    if (count >= n)
      return;
    waitSide("the collectives' stream");
    cudaFree(buf);
    buf = nullptr;
    count = 0;
    checkCuda(cudaMalloc(&buf, size_t(n) * 4), what);
    count = n;
  }

  /// The bucket's device copy of its velocity before this step.
  Scratch &velocityScratchOf(int64_t bucket, int64_t n) {
    if (scratch.size() <= size_t(bucket))
      scratch.resize(size_t(bucket) + 1);
    Scratch &s = scratch[size_t(bucket)];
    growFloats(s.savedVelocity, s.savedVelocityCount, n,
               "cudaMalloc of a bucket's saved velocity");
    return s;
  }

  /// Waits for the collectives enqueued so far and reads their checks: a
  /// non-finite one over the world skips the step (every rank sees it); one
  /// in an owner group is left for agree_finite. The program's later work
  /// is ordered after the collectives.
  int settle(StepComm &sc) {
    if (!pending)
      return OTC_STEP_OK;
    // This step's checks are spent whatever happens below: a failure must
    // not leave them to the next step.
    struct Spent {
      Nccl &n;
      ~Spent() {
        n.pending = false;
        n.flagsUsed = 0;
      }
    } spent{*this};

    if (flagsUsed)
      checkCuda(cudaMemcpyAsync(hFlags, dFlags, size_t(flagsUsed) * 4,
                                cudaMemcpyDeviceToHost, side),
                "cudaMemcpyAsync");
    waitSide("the collectives' stream");
    bool bad = false;
    auto note = [&](bool nonfinite, bool group) {
      if (nonfinite && group)
        sc.pendingNonfinite = true;
      else if (nonfinite)
        bad = true;
    };

    for (int i = 0; i < flagsUsed; ++i)
      note(hFlags[i] != 0, flagInGroup[size_t(i)]);
    checkCuda(cudaEventRecord(done, side), "cudaEventRecord");
    checkCuda(cudaStreamWaitEvent(compute, done, 0), "cudaStreamWaitEvent");
    return bad ? OTC_STEP_SKIPPED_NONFINITE : OTC_STEP_OK;
  }

  otc_comm_t *comm;
  int world = 1, rank = 0;
  ncclComm_t nccl = nullptr;
  cudaStream_t compute = nullptr, side = nullptr;
  cudaEvent_t ready = nullptr, done = nullptr;
  int *dFlags = nullptr, *hFlags = nullptr;
  int flagsUsed = 0;
  /// Whether each flag belongs to an owner group (agree_finite decides).
  std::vector<bool> flagInGroup = std::vector<bool>(kMaxChecks);
  double *dSum = nullptr, *hSum = nullptr; ///< an adaptive bucket's norm²
  bool failed = false; ///< a collective failed: abort the communicators
  struct Group {
    ncclComm_t comm = nullptr; ///< NULL where this rank is not a member
    int size = 0, rank = -1;
  };
  std::deque<Group> groups;
  std::vector<ncclComm_t> owned; ///< the distinct group communicators
  bool pending = false;          ///< collectives enqueued since the last wait
  std::deque<Scratch> scratch;
  /// Residuals and velocities this step changed, with their saved copies.
  struct Changed {
    float *state, *saved;
    int64_t count;
  };
  std::vector<Changed> changed;
};

#endif // OTC_HAVE_NCCL

} // namespace

std::unique_ptr<DeviceCollectives>
createDeviceCollectives(otc_comm_t *comm, DeviceArena &arena,
                        const std::vector<std::vector<int64_t>> &groups) {
  const char *v = std::getenv("OTC_CUDA_COLLECTIVES");
  std::string mode = v && *v ? v : "auto";
  if (mode != "auto" && mode != "nccl" && mode != "staged")
    throw Error(OTC_INVALID_ARGUMENT,
                "OTC_CUDA_COLLECTIVES is '" + mode +
                    "'; use nccl or staged, or leave it unset");
    // Every rank must take the same path: each says whether it can, and NCCL
    // is used only if all can (an int MIN all-reduce).
#ifndef OTC_HAVE_NCCL
  (void)arena, (void)groups;
  bool possible = false, own = true;
#else
  // One rank needs no NCCL; ranks sharing a device cannot have it. Every
  // rank compares devices, whatever its mode, so that all take part.
  const bool own = otc_comm_size(comm) == 1 || devicesOfTheirOwn(comm);
  bool possible = mode == "nccl"   ? own
                  : mode == "auto" ? otc_comm_size(comm) > 1 && own
                                   : false;
#endif
  bool everyone = allAgree(comm, possible);
  if (mode == "nccl" && !everyone)
    throw Error(OTC_FAILED_PRECONDITION,
                !own       ? "OTC_CUDA_COLLECTIVES=nccl, but ranks share a "
                             "CUDA device (NCCL needs one per rank); use "
                             "staged"
                : possible ? "OTC_CUDA_COLLECTIVES=nccl, but another rank "
                             "cannot use NCCL"
                           : "OTC_CUDA_COLLECTIVES=nccl, but the OTC runtime "
                             "was built without NCCL");
  if (!everyone)
    return nullptr;
#ifdef OTC_HAVE_NCCL
  return std::make_unique<Nccl>(comm, arena, groups);
#else
  return nullptr;
#endif
}

} // namespace otc
