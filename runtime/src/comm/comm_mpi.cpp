//===- comm_mpi.cpp - MPI and local communicators -------------------------===//

#include "comm/comm.h"
#include "comm/comm_worker.h"
#include "comm/watchdog.h"
#include "core/profiler.h"
#include "core/status.h"

#include "otc/kernels.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

struct otc_comm {
  bool isMpi = false;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  uint64_t bytesSent = 0;
  uint64_t bytesReceived = 0;
  std::string lastError;
  /// SDP owner groups split off `comm` (MPI_COMM_NULL: local comm).
  std::map<std::vector<int64_t>, MPI_Comm> groups;
  /// The thread a step's collectives run on (comm_worker.h); created at the
  /// first step collective of an MPI comm with more than one rank.
  bool overlap = true;
  std::unique_ptr<otc::CommWorker> worker;
  /// Every wait in a collective (watchdog.h); started with more than one
  /// rank.
  otc::Watchdog watchdog;
};

namespace otc {
namespace {

void throwMpi(int rc, const char *call, const char *file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
    std::snprintf(text, sizeof text, "MPI error %d", rc);
  throw Error(OTC_UNAVAILABLE, std::string(call) + " failed at " + file + ":" +
                                   std::to_string(line) + ": " + text);
}

// Every MPI call goes through this macro so a failure becomes an error
// carrying the call, the place and MPI's own explanation. The place names
// this file, not the folder it was built in (an install names neither tree).
#define OTC_MPI_CHECK(call)                                                    \
  do {                                                                         \
    int otcMpiRc = (call);                                                     \
    if (otcMpiRc != MPI_SUCCESS)                                               \
      throwMpi(otcMpiRc, #call, "comm_mpi.cpp", __LINE__);                     \
  } while (false)

std::once_flag finalizeOnce;

/// MPI's thread support: the collectives' own thread needs
/// MPI_THREAD_SERIALIZED.
int threadLevel = MPI_THREAD_SINGLE;

void finalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
}

void ensureMpiInitialized() {
  int initialized = 0;
  OTC_MPI_CHECK(MPI_Initialized(&initialized));
  if (initialized) {
    OTC_MPI_CHECK(MPI_Query_thread(&threadLevel));
    return;
  }
  // Open MPI's non-blocking all-reduce (every step collective, watched by
  // the watchdog, is one) picks recursive doubling by default, 1.2-1.7x
  // slower on gradient buckets than Rabenseifner's reduce-scatter +
  // all-gather, which is as fast on small ones: the default unless the user
  // chose.
  setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "3", /*overwrite=*/0);
  OTC_MPI_CHECK(
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &threadLevel));
  // Finalize once, at process end: MPI cannot be re-initialised, so tying
  // it to the last communicator would break a later create.
  std::call_once(finalizeOnce, [] { std::atexit(finalizeAtExit); });
}

/// Starts a collective (`start` fills the request) and completes it under
/// the watchdog. On the collectives thread it tests with short sleeps in
/// between, which is enough to progress the transfer and leaves the core to
/// the step's compute; Open MPI's own waits spin.
template <typename Start>
void run(otc_comm_t *comm, const Collective &what, Start &&start) {
  comm->watchdog.checkUsable();
  MPI_Request request;
  start(&request);
  comm->watchdog.wait(
      what,
      [&] {
        int done = 0;
        OTC_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
        return done != 0;
      },
      onCommWorker());
}

/// In-place all-reduce of `n` elements on `on`.
void allReduce(otc_comm_t *comm, void *buf, int n, MPI_Datatype type, MPI_Op op,
               MPI_Comm on, const Collective &what) {
  run(comm, what, [&](MPI_Request *r) {
    OTC_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, buf, n, type, op, on, r));
  });
}

/// In-place all-gather of `bytes` per rank on `on`.
void allGatherBytes(otc_comm_t *comm, void *recv, int bytes, MPI_Comm on,
                    const Collective &what) {
  run(comm, what, [&](MPI_Request *r) {
    OTC_MPI_CHECK(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv,
                                 bytes, MPI_BYTE, on, r));
  });
}

void broadcast(otc_comm_t *comm, void *data, int n, MPI_Datatype type, int root,
               MPI_Comm on, const Collective &what) {
  run(comm, what, [&](MPI_Request *r) {
    OTC_MPI_CHECK(MPI_Ibcast(data, n, type, root, on, r));
  });
}

// MPI counts are ints; large buffers go in chunks.
constexpr int64_t kMaxChunk = std::numeric_limits<int>::max() / 8;

} // namespace

void allReduceMeanF32(otc_comm_t *comm, float *data, int64_t count) {
  if (!comm)
    throw Error(OTC_INVALID_ARGUMENT, "communicator is NULL");
  if (count < 0 || (count > 0 && !data))
    throw Error(OTC_INVALID_ARGUMENT, "all-reduce of a bad buffer");
  if (!comm->isMpi || comm->size == 1 || count == 0)
    return;
  for (int64_t begin = 0; begin < count; begin += kMaxChunk) {
    int n = int(std::min(kMaxChunk, count - begin));
    allReduce(comm, data + begin, n, MPI_FLOAT, MPI_SUM, comm->comm,
              {"all-reduce", count, "floats"});
  }
  float scale = 1.0f / float(comm->size);
  for (int64_t i = 0; i < count; ++i)
    data[i] *= scale;
  const uint64_t bytes = allReduceBytes(uint64_t(count) * 4, comm->size);
  comm->bytesSent += bytes;
  comm->bytesReceived += bytes;
}

void allReduceSumF64(otc_comm_t *comm, double *data, int64_t count,
                     bool counted) {
  if (!comm->isMpi || comm->size == 1 || count == 0)
    return;
  for (int64_t begin = 0; begin < count; begin += kMaxChunk) {
    int n = int(std::min(kMaxChunk, count - begin));
    allReduce(comm, data + begin, n, MPI_DOUBLE, MPI_SUM, comm->comm,
              {"sum", count, "doubles"});
  }
  if (counted) {
    comm->bytesSent += uint64_t(count) * sizeof(double);
    comm->bytesReceived += uint64_t(count) * sizeof(double);
  }
}

void allGatherInPlace(otc_comm_t *comm, void *recv, int64_t bytes,
                      bool counted) {
  if (!comm->isMpi || comm->size == 1 || bytes == 0)
    return;
  // Payloads are far below 2 GiB (a bucket of 2^29 floats); a larger one
  // would need a derived datatype, so it is refused rather than chunked.
  if (bytes > std::numeric_limits<int>::max())
    throw Error(OTC_INVALID_ARGUMENT,
                "a compressed payload of " + std::to_string(bytes) +
                    " bytes exceeds the 2 GiB all-gather limit; use smaller "
                    "buckets");
  allGatherBytes(comm, recv, int(bytes), comm->comm,
                 {"all-gather", bytes, "bytes per rank"});
  if (!counted)
    return;
  uint64_t peers = uint64_t(comm->size - 1);
  comm->bytesSent += uint64_t(bytes) * peers;
  comm->bytesReceived += uint64_t(bytes) * peers;
}

uint64_t allReduceBytes(uint64_t bytes, int64_t ranks) {
  if (ranks <= 1)
    return 0;
  return 2 * uint64_t(ranks - 1) * bytes / uint64_t(ranks);
}

namespace {

/// MPI's int counts and displacements of per-rank blocks; throws for a
/// block beyond them.
std::vector<int> mpiCounts(const int64_t *v, size_t n) {
  std::vector<int> out(n);
  for (size_t i = 0; i < n; ++i) {
    if (v[i] < 0 || v[i] > std::numeric_limits<int>::max())
      throw Error(OTC_INVALID_ARGUMENT,
                  "a compressed shard exchange of " + std::to_string(v[i]) +
                      " bytes exceeds MPI's 2 GiB limit; use smaller buckets");
    out[i] = int(v[i]);
  }
  return out;
}

/// The communicator of `group` (NULL: the world) and this rank's index in
/// it.
std::pair<MPI_Comm, int> onGroup(otc_comm_t *comm,
                                 const std::vector<int64_t> *group);

} // namespace

void allToAllV(otc_comm_t *comm, const std::vector<int64_t> *group,
               const uint8_t *send, const int64_t *sendBytes,
               const int64_t *sendOffset, uint8_t *recv,
               const int64_t *recvBytes, const int64_t *recvOffset) {
  const size_t w = group ? group->size() : size_t(comm->size);
  if (!comm->isMpi || w <= 1) {
    if (w == 1)
      std::memmove(recv + recvOffset[0], send + sendOffset[0],
                   size_t(std::min(sendBytes[0], recvBytes[0])));
    return;
  }
  auto [on, me] = onGroup(comm, group);
  std::vector<int> sc = mpiCounts(sendBytes, w), sd = mpiCounts(sendOffset, w),
                   rc = mpiCounts(recvBytes, w), rd = mpiCounts(recvOffset, w);
  int64_t most = 0;
  for (size_t r = 0; r < w; ++r)
    most = std::max(most, sendBytes[r]);
  run(comm, {"all-to-all", most, "bytes per rank at most", group},
      [&](MPI_Request *r) {
        OTC_MPI_CHECK(MPI_Ialltoallv(send, sc.data(), sd.data(), MPI_BYTE, recv,
                                     rc.data(), rd.data(), MPI_BYTE, on, r));
      });
  for (size_t r = 0; r < w; ++r)
    if (int(r) != me) {
      comm->bytesSent += uint64_t(sendBytes[r]);
      comm->bytesReceived += uint64_t(recvBytes[r]);
    }
}

void allGatherVInPlace(otc_comm_t *comm, const std::vector<int64_t> *group,
                       uint8_t *buf, const int64_t *bytes,
                       const int64_t *offset) {
  const size_t w = group ? group->size() : size_t(comm->size);
  if (!comm->isMpi || w <= 1)
    return;
  auto [on, me] = onGroup(comm, group);
  std::vector<int> c = mpiCounts(bytes, w), d = mpiCounts(offset, w);
  run(comm, {"all-gather", bytes[me], "bytes from this rank", group},
      [&](MPI_Request *r) {
        OTC_MPI_CHECK(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf,
                                      c.data(), d.data(), MPI_BYTE, on, r));
      });
  for (size_t r = 0; r < w; ++r)
    if (int(r) != me)
      comm->bytesReceived += uint64_t(bytes[r]);
  comm->bytesSent += uint64_t(bytes[me]) * (w - 1);
}

bool anyRank(otc_comm_t *comm, bool flag) {
  if (!comm->isMpi || comm->size == 1)
    return flag;
  int v = flag ? 1 : 0;
  allReduce(comm, &v, 1, MPI_INT, MPI_MAX, comm->comm,
            {"any-rank flag (non-finite gradients)"});
  comm->bytesSent += sizeof(int);
  comm->bytesReceived += sizeof(int);
  return v != 0;
}

bool allAgree(otc_comm_t *comm, bool ok) {
  if (!comm->isMpi || comm->size == 1)
    return ok;
  int v = ok ? 1 : 0;
  allReduce(comm, &v, 1, MPI_INT, MPI_MIN, comm->comm,
            {"agreement that every rank succeeded"});
  return v == 1;
}

void barrier(otc_comm_t *comm) {
  if (comm->isMpi && comm->size > 1)
    run(comm, {"barrier"},
        [&](MPI_Request *r) { OTC_MPI_CHECK(MPI_Ibarrier(comm->comm, r)); });
}

void broadcastBytes(otc_comm_t *comm, void *data, int64_t bytes, int root) {
  if (!comm->isMpi || comm->size == 1 || bytes == 0)
    return;
  if (bytes > std::numeric_limits<int>::max())
    throw Error(OTC_INTERNAL, "a set-up broadcast over 2 GiB");
  broadcast(comm, data, int(bytes), MPI_BYTE, root, comm->comm,
            {"set-up broadcast", bytes, "bytes"});
}

void countBytes(otc_comm_t *comm, uint64_t sent, uint64_t received) {
  comm->bytesSent += sent;
  comm->bytesReceived += received;
}

void abortAll(otc_comm_t *comm, int exitCode) {
  if (comm && comm->isMpi && comm->size > 1)
    MPI_Abort(comm->comm, exitCode);
}

namespace {

CommWorker *stepWorker(otc_comm_t *comm) {
  if (!comm || !comm->isMpi || comm->size <= 1 || !comm->overlap ||
      threadLevel < MPI_THREAD_SERIALIZED)
    return nullptr;
  if (!comm->worker)
    comm->worker = std::make_unique<CommWorker>(otck_get_num_threads());
  return comm->worker.get();
}

} // namespace

int runCollective(StepComm *sc, bool async, const char *what,
                  std::function<int()> job) {
  otc_comm_t *comm = sc ? sc->comm : nullptr;
  Profiler *profiler = sc ? sc->profiler : nullptr;
  auto guarded = [comm, profiler, what, job = std::move(job)] {
    const auto begin = Profiler::Clock::now();
    int rc;
    try {
      rc = job();
    } catch (const std::exception &e) {
      setCommError(comm, e.what());
      rc = OTC_STEP_ERR_COMM;
    }
    if (profiler)
      profiler->collective(what, begin, Profiler::Clock::now());
    return rc;
  };
  CommWorker *worker = stepWorker(comm);
  if (!worker)
    return guarded();
  if (!async)
    return worker->call(std::move(guarded));
  worker->post(std::move(guarded));
  return OTC_STEP_OK;
}

int drainCollectives(otc_comm_t *comm) {
  return comm && comm->worker ? comm->worker->drain() : OTC_STEP_OK;
}

int waitCollectivesCallback(void *opaque) {
  auto *sc = static_cast<StepComm *>(opaque);
  return drainCollectives(sc ? sc->comm : nullptr);
}

int allReduceMeanCallback(void *opaque, float *data, int64_t count) {
  auto *sc = static_cast<StepComm *>(opaque);
  return runCollective(sc, true, "all_reduce", [=] {
    allReduceMeanF32(sc ? sc->comm : nullptr, data, count);
    return OTC_STEP_OK;
  });
}

void splitGroups(otc_comm_t *comm,
                 const std::vector<std::vector<int64_t>> &groups) {
  for (const std::vector<int64_t> &g : groups) {
    for (int64_t r : g)
      if (r < 0 || r >= comm->size)
        throw Error(OTC_INVALID_ARGUMENT,
                    "SDP owner group names rank " + std::to_string(r) +
                        " of a world of " + std::to_string(comm->size));
    if (comm->groups.count(g))
      continue;
    MPI_Comm sub = MPI_COMM_NULL;
    if (comm->isMpi) {
      bool member = std::find(g.begin(), g.end(), comm->rank) != g.end();
      OTC_MPI_CHECK(MPI_Comm_split(comm->comm, member ? 0 : MPI_UNDEFINED,
                                   comm->rank, &sub));
      if (sub != MPI_COMM_NULL)
        OTC_MPI_CHECK(MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN));
    }
    comm->groups[g] = sub;
  }
}

void groupAllReduceMeanF32(otc_comm_t *comm, const std::vector<int64_t> &group,
                           float *data, int64_t count) {
  auto it = comm->groups.find(group);
  if (it == comm->groups.end() ||
      std::find(group.begin(), group.end(), comm->rank) == group.end())
    throw Error(OTC_INTERNAL, "all-reduce over an SDP owner group this rank "
                              "is not a member of");
  if (!comm->isMpi || group.size() <= 1 || count == 0)
    return;
  for (int64_t begin = 0; begin < count; begin += kMaxChunk) {
    int n = int(std::min(kMaxChunk, count - begin));
    allReduce(comm, data + begin, n, MPI_FLOAT, MPI_SUM, it->second,
              {"all-reduce", count, "floats", &group});
  }
  float scale = 1.0f / float(group.size());
  for (int64_t i = 0; i < count; ++i)
    data[i] *= scale;
  const uint64_t bytes =
      allReduceBytes(uint64_t(count) * 4, int64_t(group.size()));
  comm->bytesSent += bytes;
  comm->bytesReceived += bytes;
}

namespace {
/// The sub-communicator of `group` (this rank a member).
MPI_Comm groupComm(otc_comm_t *comm, const std::vector<int64_t> &group) {
  auto it = comm->groups.find(group);
  if (it == comm->groups.end() || it->second == MPI_COMM_NULL)
    throw Error(OTC_INTERNAL, "no communicator for this SDP owner group");
  return it->second;
}

std::pair<MPI_Comm, int> onGroup(otc_comm_t *comm,
                                 const std::vector<int64_t> *group) {
  if (!group)
    return {comm->comm, comm->rank};
  auto it = std::find(group->begin(), group->end(), int64_t(comm->rank));
  if (it == group->end())
    throw Error(OTC_INTERNAL, "a collective over an SDP owner group this "
                              "rank is not a member of");
  return {groupComm(comm, *group), int(it - group->begin())};
}
} // namespace

void groupAllGatherInPlace(otc_comm_t *comm, const std::vector<int64_t> &group,
                           void *recv, int64_t bytes) {
  if (!comm->isMpi || group.size() <= 1 || bytes == 0)
    return;
  if (bytes > std::numeric_limits<int>::max())
    throw Error(OTC_INVALID_ARGUMENT, "all-gather payload over 2 GiB");
  allGatherBytes(comm, recv, int(bytes), groupComm(comm, group),
                 {"all-gather", bytes, "bytes per rank", &group});
  comm->bytesSent += uint64_t(bytes) * (group.size() - 1);
  comm->bytesReceived += uint64_t(bytes) * (group.size() - 1);
}

void groupAllReduceSumF64(otc_comm_t *comm, const std::vector<int64_t> &group,
                          double *data, int64_t count) {
  if (!comm->isMpi || group.size() <= 1 || count == 0)
    return;
  allReduce(comm, data, int(count), MPI_DOUBLE, MPI_SUM, groupComm(comm, group),
            {"sum", count, "doubles", &group});
  comm->bytesSent += uint64_t(count) * sizeof(double);
  comm->bytesReceived += uint64_t(count) * sizeof(double);
}

int agreeFiniteCallback(void *opaque) {
  auto *sc = static_cast<StepComm *>(opaque);
  return runCollective(sc, false, "agree_finite", [=] {
    if (!sc)
      throw Error(OTC_INVALID_ARGUMENT, "agree_finite: comm is NULL");
    bool bad = anyRank(sc->comm, sc->pendingNonfinite);
    sc->pendingNonfinite = false;
    return bad ? OTC_STEP_SKIPPED_NONFINITE : OTC_STEP_OK;
  });
}

bool groupIdentical(otc_comm_t *comm, const std::vector<int64_t> &group,
                    const float *data, int64_t count) {
  if (!comm->isMpi || group.size() <= 1)
    return true;
  auto it = comm->groups.find(group);
  MPI_Comm on = int(group.size()) == comm->size ? comm->comm
                : it != comm->groups.end()      ? it->second
                                                : MPI_COMM_NULL;
  if (on == MPI_COMM_NULL)
    throw Error(OTC_INTERNAL, "no communicator for an SDP owner group");
  // Compared as integers: the minimum and maximum bit patterns agree iff
  // every member holds the same bits.
  std::vector<int32_t> lo(static_cast<size_t>(count)), hi;
  std::memcpy(lo.data(), data, size_t(count) * sizeof(float));
  hi = lo;
  for (int64_t begin = 0; begin < count; begin += kMaxChunk) {
    int n = int(std::min(kMaxChunk, count - begin));
    const Collective what{"comparison of owners' values", count, "floats",
                          on == comm->comm ? nullptr : &group};
    allReduce(comm, lo.data() + begin, n, MPI_INT32_T, MPI_MIN, on, what);
    allReduce(comm, hi.data() + begin, n, MPI_INT32_T, MPI_MAX, on, what);
  }
  return lo == hi;
}

void broadcastF32(otc_comm_t *comm, int64_t root, float *data, int64_t count) {
  if (root < 0 || root >= comm->size)
    throw Error(OTC_INTERNAL, "broadcast from rank " + std::to_string(root) +
                                  " of a world of " +
                                  std::to_string(comm->size));
  if (!comm->isMpi || comm->size == 1 || count == 0)
    return;
  for (int64_t begin = 0; begin < count; begin += kMaxChunk) {
    int n = int(std::min(kMaxChunk, count - begin));
    broadcast(comm, data + begin, n, MPI_FLOAT, int(root), comm->comm,
              {"broadcast from an owner", count, "floats"});
  }
  (root == comm->rank ? comm->bytesSent : comm->bytesReceived) +=
      uint64_t(count) * sizeof(float);
}

int groupAllReduceMeanCallback(void *opaque, int64_t group, float *data,
                               int64_t count) {
  auto *sc = static_cast<StepComm *>(opaque);
  return runCollective(sc, true, "group all_reduce", [=] {
    if (!sc || !sc->groups || group < 0 || group >= int64_t(sc->groups->size()))
      throw Error(OTC_INTERNAL, "the program names SDP owner group " +
                                    std::to_string(group) +
                                    ", which the manifest lacks");
    groupAllReduceMeanF32(sc->comm, (*sc->groups)[size_t(group)], data, count);
    return OTC_STEP_OK;
  });
}

int broadcastCallback(void *opaque, int64_t root, float *data, int64_t count) {
  auto *sc = static_cast<StepComm *>(opaque);
  return runCollective(sc, false, "broadcast", [=] {
    if (!sc)
      throw Error(OTC_INVALID_ARGUMENT, "broadcast: comm is NULL");
    broadcastF32(sc->comm, root, data, count);
    return OTC_STEP_OK;
  });
}

void watchWait(otc_comm_t *comm, const Collective &what,
               const std::function<bool()> &done) {
  comm->watchdog.wait(what, done, /*polite=*/false);
}

void enterStep(otc_comm_t *comm, int64_t step) {
  if (comm)
    comm->watchdog.enterStep(step);
}

void leaveStep(otc_comm_t *comm) {
  if (comm)
    comm->watchdog.leaveStep();
}

void setCommError(otc_comm_t *comm, const std::string &why) {
  if (comm)
    comm->lastError = why;
}

std::string takeCommError(otc_comm_t *comm) {
  std::string e;
  std::swap(e, comm->lastError);
  return e;
}

} // namespace otc

using namespace otc;

extern "C" {

otc_status_t otc_comm_create_mpi(otc_comm_t **out_comm) {
  return guard([&] {
    if (!out_comm)
      throw Error(OTC_INVALID_ARGUMENT, "out_comm is NULL");
    *out_comm = nullptr;
    ensureMpiInitialized();
    auto comm = std::make_unique<otc_comm>();
    comm->isMpi = true;
    // A private duplicate: our collectives never match the user's messages.
    OTC_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm->comm));
    try {
      OTC_MPI_CHECK(MPI_Comm_set_errhandler(comm->comm, MPI_ERRORS_RETURN));
      OTC_MPI_CHECK(MPI_Comm_rank(comm->comm, &comm->rank));
      OTC_MPI_CHECK(MPI_Comm_size(comm->comm, &comm->size));
      if (comm->size > 1)
        comm->watchdog.start(comm->comm, comm->rank, comm->size);
    } catch (...) {
      comm->watchdog.stop();
      MPI_Comm_free(&comm->comm);
      throw;
    }
    *out_comm = comm.release();
  });
}

otc_status_t otc_comm_create_local(otc_comm_t **out_comm) {
  return guard([&] {
    if (!out_comm)
      throw Error(OTC_INVALID_ARGUMENT, "out_comm is NULL");
    *out_comm = new otc_comm();
  });
}

int32_t otc_comm_rank(const otc_comm_t *comm) { return comm ? comm->rank : 0; }

int32_t otc_comm_size(const otc_comm_t *comm) { return comm ? comm->size : 0; }

void otc_comm_release(otc_comm_t *comm) {
  if (!comm)
    return;
  comm->worker.reset(); // finishes what it has queued
  if (comm->isMpi && comm->comm != MPI_COMM_NULL) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
      for (auto &[ranks, sub] : comm->groups)
        if (sub != MPI_COMM_NULL)
          MPI_Comm_free(&sub);
      comm->watchdog.stop();
      MPI_Comm_free(&comm->comm);
    }
  }
  delete comm;
}

otc_status_t otc_comm_all_reduce_mean_f32(otc_comm_t *comm, float *data,
                                          int64_t count) {
  return guard([&] { allReduceMeanF32(comm, data, count); });
}

otc_status_t otc_comm_barrier(otc_comm_t *comm) {
  return guard([&] {
    if (!comm)
      throw Error(OTC_INVALID_ARGUMENT, "communicator is NULL");
    barrier(comm);
  });
}

otc_status_t otc_comm_all_reduce_sum_f64(otc_comm_t *comm, double *data,
                                         int64_t count) {
  return guard([&] {
    if (!comm || (!data && count > 0) || count < 0)
      throw Error(OTC_INVALID_ARGUMENT,
                  "communicator or data is NULL, or count is negative");
    allReduceSumF64(comm, data, count);
  });
}

void otc_comm_abort(otc_comm_t *comm, int32_t exit_code) {
  abortAll(comm, exit_code);
}

otc_status_t otc_comm_set_timeout(otc_comm_t *comm, double seconds) {
  return guard([&] {
    if (!comm)
      throw Error(OTC_INVALID_ARGUMENT, "communicator is NULL");
    if (!std::isfinite(seconds) || seconds < 0)
      throw Error(OTC_INVALID_ARGUMENT,
                  "the collective timeout must be a finite number of "
                  "seconds >= 0 (0: no limit), got " +
                      std::to_string(seconds));
    comm->watchdog.setTimeout(seconds);
  });
}

void otc_comm_set_overlap(otc_comm_t *comm, int enabled) {
  if (!comm)
    return;
  if (!enabled)
    comm->worker.reset();
  comm->overlap = enabled != 0;
}

void otc_comm_bytes(const otc_comm_t *comm, uint64_t *out_sent,
                    uint64_t *out_received) {
  if (out_sent)
    *out_sent = comm ? comm->bytesSent : 0;
  if (out_received)
    *out_received = comm ? comm->bytesReceived : 0;
}

} // extern "C"
