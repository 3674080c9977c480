//===- comm.h - Communicators -----------------------------------*- C++ -*-===//
//
// A communicator is either MPI (MPI_COMM_WORLD duplicated) or local (one
// rank, no MPI). Every collective a program's step runs (dense and
// compressed all-reduces, the compressed path's finiteness flag and norm) is
// counted in otc_comm_bytes; the runtime's own bookkeeping (loss, eval
// counts, agreement on errors) uses the uncounted helpers so that the
// per-step byte counts only reflect the program's gradient traffic.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_RUNTIME_COMM_COMM_H
#define OTC_RUNTIME_COMM_COMM_H

#include "otc/runtime.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace otc {

struct CompressState;
class DeviceArena;
class DeviceCollectives;
class Profiler;

/// What otc_step_context_t::comm points at during a step: the communicator
/// plus what the compressed all-reduce needs from the session (its per-bucket
/// state, the step and its seed), since the callbacks receive only `comm`.
struct StepComm {
  otc_comm_t *comm = nullptr;
  CompressState *compress = nullptr;
  int64_t step = 0;
  uint64_t seed = 0;
  /// SDP owner groups by index (the manifest's "sdp" "groups").
  const std::vector<std::vector<int64_t>> *groups = nullptr;
  /// SDP: a group bucket of this step was not finite (agree_finite tells
  /// every rank).
  bool pendingNonfinite = false;
  /// A CUDA program's arena: the collectives stage its buffers through the
  /// host mirror (device_comm.cpp). NULL for CPU programs.
  DeviceArena *device = nullptr;
  /// Its collectives on the device (NCCL), when it has them.
  DeviceCollectives *collectives = nullptr;
  /// The step's profiler (core/profiler.h), NULL when it is not profiled.
  Profiler *profiler = nullptr;
};

/// A collective as the watchdog names it (watchdog.h): "all-reduce of 2048
/// floats in SDP owner group {0, 2}".
struct Collective {
  const char *kind = "";
  int64_t count = 0; ///< of `unit`; 0: none named
  const char *unit = "";
  const std::vector<int64_t> *group = nullptr; ///< NULL: the world
};

/// Polls `done` until it returns true, watching the peers as the MPI
/// collectives' waits do (watchdog.h): throws on the collective timeout or
/// when a peer on this host has exited. Local and 1-rank comms just poll.
void watchWait(otc_comm_t *comm, const Collective &what,
               const std::function<bool()> &done);
/// The steps collectives are numbered by in the watchdog's reports.
void enterStep(otc_comm_t *comm, int64_t step);
void leaveStep(otc_comm_t *comm);

/// Points `ctx`'s collectives at the host-staged versions for CUDA programs
/// (device_comm.cpp); `ctx.comm` must be a StepComm with a device.
void useStagedCollectives(otc_step_context_t &ctx);

/// Averages `count` floats in place over all ranks and counts the bytes
/// (allReduceBytes).
void allReduceMeanF32(otc_comm_t *comm, float *data, int64_t count);
/// Sums doubles over all ranks; counted in the step's bytes only when
/// `counted` (the adaptive ratio's norm, not the runtime's bookkeeping).
void allReduceSumF64(otc_comm_t *comm, double *data, int64_t count,
                     bool counted = false);
/// All-gathers `bytes` per rank in place: rank r's block is
/// recv[r * bytes, (r + 1) * bytes). Counted, unless not `counted` (set-up),
/// as bytes * (W - 1) sent and received: each rank's block reaches W - 1
/// peers.
void allGatherInPlace(otc_comm_t *comm, void *recv, int64_t bytes,
                      bool counted = true);
/// All-to-all over the world (`group` NULL) or an SDP owner group (split
/// before; this rank a member), blocks of any size: send[sendOffset[r],
/// + sendBytes[r]) goes to rank r of it, recv[recvOffset[r], +
/// recvBytes[r]) comes from rank r (this rank's own block is copied).
/// Counted: the blocks to and from the others.
void allToAllV(otc_comm_t *comm, const std::vector<int64_t> *group,
               const uint8_t *send, const int64_t *sendBytes,
               const int64_t *sendOffset, uint8_t *recv,
               const int64_t *recvBytes, const int64_t *recvOffset);
/// In-place all-gather of blocks of any size over the world (`group` NULL)
/// or an SDP owner group: rank r's block is buf[offset[r], + bytes[r]).
/// Counted: this rank's block once per other rank sent, theirs received.
void allGatherVInPlace(otc_comm_t *comm, const std::vector<int64_t> *group,
                       uint8_t *buf, const int64_t *bytes,
                       const int64_t *offset);
/// The bytes one rank sends (and receives) in a mean all-reduce of `bytes`
/// over `ranks`: 2 (W - 1) / W of them, what a bandwidth-optimal
/// (reduce-scatter + all-gather, or ring) all-reduce moves; 0 for one rank.
/// The dense all-reduces count this.
uint64_t allReduceBytes(uint64_t bytes, int64_t ranks);
/// True on every rank iff `flag` is true on some rank (an int MAX
/// all-reduce, counted as 4 bytes each way when W > 1).
bool anyRank(otc_comm_t *comm, bool flag);
/// True on every rank iff `ok` is true on every rank.
bool allAgree(otc_comm_t *comm, bool ok);
void barrier(otc_comm_t *comm);
/// Rank `root`'s `bytes` at `data` reach every rank (uncounted: set-up,
/// such as NCCL's unique id).
void broadcastBytes(otc_comm_t *comm, void *data, int64_t bytes, int root);
/// Adds a step collective's traffic that ran outside MPI (NCCL) to the
/// counts otc_comm_bytes reports.
void countBytes(otc_comm_t *comm, uint64_t sent, uint64_t received);
/// Ends every rank of an MPI job (a rank failed where the others may be
/// blocked in a collective); returns only for a 1-rank or local comm.
void abortAll(otc_comm_t *comm, int exitCode);

/// The callback handed to programs (otc_step_context_t::all_reduce_mean_f32);
/// `comm` is a StepComm.
int allReduceMeanCallback(void *comm, float *data, int64_t count);
/// Runs a step collective (`job`, returning an OTC_STEP_* code): on the
/// communicator's collectives thread when it has one (comm_worker.h) —
/// queued when `async` (the status then comes from the next drain), else
/// waited for — and otherwise here. `what` names it on the profiler's
/// collectives track when the step is profiled.
int runCollective(StepComm *sc, bool async, const char *what,
                  std::function<int()> job);
/// Waits for the queued collectives; their combined status (CommWorker::drain).
int drainCollectives(otc_comm_t *comm);
/// otc_step_context_t::wait_collectives; `comm` is a StepComm.
int waitCollectivesCallback(void *comm);

/// SDP: creates a sub-communicator for every group not yet split off
/// `comm`. Collective: every rank calls it with the same list.
void splitGroups(otc_comm_t *comm,
                 const std::vector<std::vector<int64_t>> &groups);
/// Averages `count` floats over the ranks of `group` (split before; this
/// rank a member); counted like allReduceMeanF32.
void groupAllReduceMeanF32(otc_comm_t *comm, const std::vector<int64_t> &group,
                           float *data, int64_t count);
/// True on every member of `group` iff all members hold the same `count`
/// floats in `data` bit for bit (NaNs compare by bits too). Uncounted.
bool groupIdentical(otc_comm_t *comm, const std::vector<int64_t> &group,
                    const float *data, int64_t count);
/// allGatherInPlace and allReduceSumF64 over an SDP owner group (split
/// before; this rank a member): rank i of the group owns block i.
void groupAllGatherInPlace(otc_comm_t *comm, const std::vector<int64_t> &group,
                           void *recv, int64_t bytes);
void groupAllReduceSumF64(otc_comm_t *comm, const std::vector<int64_t> &group,
                          double *data, int64_t count);

/// Every rank receives `root`'s `count` floats; counted as sent by the
/// root and received by the others.
void broadcastF32(otc_comm_t *comm, int64_t root, float *data, int64_t count);
/// The step-context callbacks for the two (`comm` is a StepComm).
int groupAllReduceMeanCallback(void *comm, int64_t group, float *data,
                               int64_t count);
int broadcastCallback(void *comm, int64_t root, float *data, int64_t count);
int agreeFiniteCallback(void *comm);

/// Records why a collective run from a program failed (the callbacks return
/// a code, so the message waits here for the session to report it).
void setCommError(otc_comm_t *comm, const std::string &why);
/// Last error a collective run from a program reported (empty if none).
std::string takeCommError(otc_comm_t *comm);

} // namespace otc

#endif // OTC_RUNTIME_COMM_COMM_H
