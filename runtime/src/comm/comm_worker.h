//===- comm_worker.h - Collectives on a thread of their own -----*- C++ -*-===//
//
// A step's collectives run on one thread per communicator, in the order the
// program calls them (the same on every rank), so that a gradient bucket's
// exchange goes on while the program computes the gradients of the layers
// before it (DESIGN §8: collectives start when their bucket is complete and
// are awaited only by the optimizer). All-reduces (dense and compressed) are
// posted and return at once; every other collective is a call that waits
// for its own result (and so for everything posted before it);
// wait_collectives, which a program calls before it touches an all-reduced
// buffer or updates anything, drains the queue and returns the step's
// combined status.
//
// Only this thread calls MPI while it has work; the caller calls MPI again
// after a drain (MPI_THREAD_SERIALIZED).
//
//===----------------------------------------------------------------------===//

#ifndef OTC_RUNTIME_COMM_COMM_WORKER_H
#define OTC_RUNTIME_COMM_COMM_WORKER_H

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace otc {

/// True on a CommWorker's thread: MPI waits there sleep between tests
/// rather than spin on a core the step's compute needs.
bool onCommWorker();

class CommWorker {
public:
  /// `kernelThreads`: the kernel thread count the jobs use (the compression
  /// kernels run on this thread).
  explicit CommWorker(int kernelThreads);
  ~CommWorker();
  CommWorker(const CommWorker &) = delete;
  CommWorker &operator=(const CommWorker &) = delete;

  /// Queues `job`; its status (an OTC_STEP_* code) counts in drain's.
  void post(std::function<int()> job);
  /// Runs `job` after everything queued and returns its status.
  int call(std::function<int()> job);
  /// Waits until the queue is empty. Returns the posted jobs' combined
  /// status since the last drain: OTC_STEP_ERR_COMM if any failed, else
  /// OTC_STEP_SKIPPED_NONFINITE if any skipped, else OTC_STEP_OK.
  int drain();

private:
  struct Job {
    std::function<int()> run;
    int *result = nullptr; ///< call(): where its status goes
  };
  void loop(int kernelThreads);

  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<Job> queue_;
  bool busy_ = false, stop_ = false;
  /// A job failed: the rest are not run (the ranks may no longer be in
  /// step) until the next drain.
  bool failed_ = false;
  int status_ = 0;
  std::thread thread_;
};

} // namespace otc

#endif // OTC_RUNTIME_COMM_COMM_WORKER_H
