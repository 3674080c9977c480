//===- watchdog.h - Collective timeouts and peers that went away -*- C++ -*-===//
//
// Every wait of an MPI communicator's collectives (and of a CUDA program's
// NCCL stream) goes through Watchdog::wait, which completes it while
// watching the peers, so that a stalled or dead rank ends the job with a
// report instead of a hang:
//  - a wait longer than the timeout (default 600 s, like torch's) asks the
//    peers it waits for where they are (a probe on a communicator of the
//    watchdog's own; ranks that are waiting answer from their own wait
//    loop) and fails naming the collective, the step and the ranks that did
//    not arrive, with the state of those on this host (stopped, exited,
//    running elsewhere);
//  - a peer on this host whose process is gone fails the wait at once (a
//    rank that dies is reported by its peers, not only by the launcher).
// Afterwards the communicator is broken: every later collective fails with
// the same report, and the caller ends the job (otc_comm_abort).
//
// Collectives are numbered per communicator (the world, each SDP owner
// group) from the start of each step, so that every member counts the same
// collectives the same way.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_RUNTIME_COMM_WATCHDOG_H
#define OTC_RUNTIME_COMM_WATCHDOG_H

#include "comm/comm.h"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace otc {

class Watchdog {
public:
  /// Collective over `world`: a duplicate for the probes, and every rank's
  /// host and process id.
  void start(MPI_Comm world, int rank, int size);
  /// Frees the duplicate (before MPI_Finalize).
  void stop();

  void setTimeout(double seconds) { timeout_ = seconds; }
  double timeout() const { return timeout_; }
  void enterStep(int64_t step);
  void leaveStep();

  /// Polls `done` until it returns true, watching the peers of `what`
  /// meanwhile (throws otc::Error, and breaks the communicator, on a
  /// timeout or a peer gone). `polite`: sleep between polls (the
  /// collectives' thread leaves the cores to the step's compute).
  void wait(const Collective &what, const std::function<bool()> &done,
            bool polite);
  /// Throws the report of an earlier failure: nothing more may start.
  void checkUsable() const;

private:
  struct Peer {
    std::string host; ///< its name, for the reports
    std::string key;  ///< host, boot id and pid namespace: same iff local
    int32_t pid = 0;
  };
  using Clock = std::chrono::steady_clock;

  std::string describe(const Collective &what, int64_t index) const;
  std::vector<int> peersOf(const Collective &what) const;
  bool local(int rank) const;
  /// The state of a peer's process on this host: "exited", "stopped",
  /// "running" or "" (unknown).
  std::string processState(int rank) const;
  /// Answers probes (with `current`) and collects answers to ours.
  void service(const std::string &current);
  [[noreturn]] void fail(const std::string &why);
  [[noreturn]] void timedOut(const Collective &what, const std::string &where,
                             double waited);

  bool started_ = false;
  MPI_Comm control_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::vector<Peer> peers_;
  double timeout_ = 600;
  std::atomic<int64_t> step_{0};
  std::atomic<bool> inStep_{false};
  /// Collectives counted since the step began (or ended), per communicator:
  /// the world is the empty group.
  std::map<std::vector<int64_t>, int64_t> counts_;
  /// Answers to this rank's probes, by rank.
  std::map<int, std::string> answers_;
  /// Sends not yet complete (answers and probes), with their buffers.
  std::deque<std::pair<MPI_Request, std::vector<char>>> sends_;
  std::string broken_;
};

} // namespace otc

#endif // OTC_RUNTIME_COMM_WATCHDOG_H
