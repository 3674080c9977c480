//===- profiler.h - Kernel and collective times of profiled steps -*- C++
//-*-===//
//
// A profiled step (otc_session_set_profiling) hands the program its
// profiler: the step calls Profiler::callback around each kernel and
// collective call (a site of the entry's `sites` table) and the collectives
// thread reports each job it runs (runCollective). The profiler keeps, per
// site, the calls and the time, and a trace of every call (up to a bound)
// that writeTrace writes as Chrome trace events (chrome://tracing,
// Perfetto): the step thread and the collectives on tracks of their own,
// one process per rank. A CUDA program's steps enqueue their kernels: the
// session's `sync` waits for the stream before each timestamp, so that a
// kernel's time is its own (and the step runs slower while profiled).
//
//===----------------------------------------------------------------------===//

#ifndef OTC_RUNTIME_CORE_PROFILER_H
#define OTC_RUNTIME_CORE_PROFILER_H

#include "otc/program_abi.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <ostream>
#include <vector>

namespace otc {

class Profiler {
public:
  using Clock = std::chrono::steady_clock;

  /// Profiles the steps of `entry` (sites and names); `sync`, when set, runs
  /// before every timestamp of the step thread. At most `maxEvents` calls
  /// are traced; the totals go on.
  Profiler(const otc_program_entry_t &entry, std::function<void()> sync,
           size_t maxEvents = size_t(1) << 21);

  /// otc_step_context_t::profile.
  static void callback(void *profiler, int32_t site, int32_t begin);

  /// Around one train step (skipped or not).
  void stepBegin(int64_t step);
  void stepEnd();
  /// A job of the collectives thread (any thread may call this).
  void collective(const char *what, Clock::time_point begin,
                  Clock::time_point end);

  int64_t steps() const { return steps_; }
  /// Chrome trace JSON of this rank (pid `rank`).
  void writeTrace(std::ostream &os, int rank) const;
  /// The table users read: kernels by share of the step time (time, calls,
  /// GFLOP/s or GB/s), then the busiest sites with their ONNX nodes; over
  /// the steps after the first profiled one (a warm-up, with its
  /// micro-batches) when there are any.
  void writeSummary(std::ostream &os, int rank) const;

private:
  struct Site {
    int64_t calls = 0;
    double seconds = 0;
  };
  struct Event {
    int32_t site;     ///< -1: the step itself; -2: a collective
    const char *what; ///< a collective's name
    int64_t step;
    Clock::time_point begin, end;
  };
  void mark(int32_t site, bool begin);
  void trace(const Event &e);

  const otc_program_entry_t &entry;
  std::function<void()> sync;
  size_t maxEvents;
  std::vector<Site> sites;
  Clock::time_point origin;
  // The step thread's open step and site.
  int64_t step = 0;
  Clock::time_point stepStart, siteStart;
  int32_t openSite = -1;
  int64_t steps_ = 0;
  double stepSeconds = 0;
  // The totals at the end of the first step (the warm-up the summary
  // leaves out when there are more).
  int64_t firstStep = 0;
  struct {
    int64_t steps = 0; // the first step's calls of stepEnd (micro-batches)
    std::vector<Site> sites;
    double stepSeconds = 0, collectiveSeconds = 0;
    int64_t collectiveCalls = 0;
  } warmUp;
  // Shared with the collectives thread.
  mutable std::mutex mu;
  std::vector<Event> events;
  bool truncated = false;
  double collectiveSeconds = 0;
  int64_t collectiveCalls = 0;
};

} // namespace otc

#endif // OTC_RUNTIME_CORE_PROFILER_H
