//===- comm_worker.cpp - Collectives on a thread of their own -------------===//

#include "comm/comm_worker.h"

#include "otc/kernels.h"
#include "otc/program_abi.h"

namespace otc {

namespace {
thread_local bool isWorker = false;
} // namespace

bool onCommWorker() { return isWorker; }

CommWorker::CommWorker(int kernelThreads)
    : thread_([this, kernelThreads] { loop(kernelThreads); }) {}

CommWorker::~CommWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void CommWorker::post(std::function<int()> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back({std::move(job), nullptr});
  }
  wake_.notify_all();
}

int CommWorker::call(std::function<int()> job) {
  int result = -1;
  std::unique_lock<std::mutex> lock(mutex_);
  queue_.push_back({std::move(job), &result});
  wake_.notify_all();
  idle_.wait(lock, [&] { return result != -1; });
  return result;
}

int CommWorker::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return queue_.empty() && !busy_; });
  int status = status_;
  status_ = OTC_STEP_OK;
  failed_ = false;
  return status;
}

void CommWorker::loop(int kernelThreads) {
  // The thread count is a per-thread setting: this thread starts with the
  // default (all cores), not the caller's.
  otck_set_num_threads(kernelThreads);
  isWorker = true;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty())
      return; // stop_
    Job job = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    bool skip = failed_;
    lock.unlock();
    int rc = skip ? OTC_STEP_ERR_COMM : job.run();
    lock.lock();
    busy_ = false;
    if (rc != OTC_STEP_OK && rc != OTC_STEP_SKIPPED_NONFINITE)
      rc = OTC_STEP_ERR_COMM;
    if (rc == OTC_STEP_ERR_COMM)
      failed_ = true;
    if (job.result) {
      *job.result = rc;
    } else if (rc == OTC_STEP_ERR_COMM ||
               (rc == OTC_STEP_SKIPPED_NONFINITE && status_ == OTC_STEP_OK)) {
      status_ = rc;
    }
    idle_.notify_all();
  }
}

} // namespace otc
