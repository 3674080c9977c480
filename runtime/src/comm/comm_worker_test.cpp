//===- comm_worker_test.cpp - The collectives thread ----------------------===//
//
// Order, the status a call and a drain return, and that a failed job stops
// the rest until the next drain.
//
//===----------------------------------------------------------------------===//

#include "comm/comm_worker.h"

#include "otc/program_abi.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace {

using otc::CommWorker;

TEST(CommWorker, RunsJobsInOrderOffTheCallingThread) {
  CommWorker w(1);
  std::vector<int> order; // written by the worker only, read after drain
  std::atomic<bool> release{false};
  const std::thread::id caller = std::this_thread::get_id();
  bool elsewhere = true;
  w.post([&] {
    // Blocks until the caller has posted everything: post must not wait.
    while (!release.load())
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    elsewhere = std::this_thread::get_id() != caller;
    order.push_back(0);
    return OTC_STEP_OK;
  });
  for (int i = 1; i < 5; ++i)
    w.post([&, i] {
      order.push_back(i);
      return OTC_STEP_OK;
    });
  release = true;
  // A call runs after everything posted before it.
  EXPECT_EQ(w.call([&] {
    order.push_back(5);
    return OTC_STEP_OK;
  }),
            OTC_STEP_OK);
  EXPECT_EQ(w.drain(), OTC_STEP_OK);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(elsewhere);
}

TEST(CommWorker, DrainCombinesThePostedStatuses) {
  CommWorker w(1);
  w.post([] { return OTC_STEP_OK; });
  w.post([] { return OTC_STEP_SKIPPED_NONFINITE; });
  w.post([] { return OTC_STEP_OK; });
  EXPECT_EQ(w.drain(), OTC_STEP_SKIPPED_NONFINITE);
  // Reset by the drain.
  EXPECT_EQ(w.drain(), OTC_STEP_OK);
  // A call's own status is the caller's, not the drain's.
  EXPECT_EQ(w.call([] { return OTC_STEP_SKIPPED_NONFINITE; }),
            OTC_STEP_SKIPPED_NONFINITE);
  EXPECT_EQ(w.drain(), OTC_STEP_OK);
}

TEST(CommWorker, AFailureStopsTheRestUntilTheDrain) {
  CommWorker w(1);
  int ran = 0;
  w.post([] { return OTC_STEP_SKIPPED_NONFINITE; });
  w.post([] { return OTC_STEP_ERR_COMM; });
  w.post([&] {
    ++ran;
    return OTC_STEP_OK;
  });
  EXPECT_EQ(w.call([&] {
    ++ran;
    return OTC_STEP_OK;
  }),
            OTC_STEP_ERR_COMM);
  EXPECT_EQ(w.drain(), OTC_STEP_ERR_COMM); // failure outranks a skip
  EXPECT_EQ(ran, 0);
  // Any other code a job returns counts as a failure too.
  w.post([] { return 42; });
  EXPECT_EQ(w.drain(), OTC_STEP_ERR_COMM);
  w.post([&] {
    ++ran;
    return OTC_STEP_OK;
  });
  EXPECT_EQ(w.drain(), OTC_STEP_OK);
  EXPECT_EQ(ran, 1);
}

TEST(CommWorker, DestructionFinishesWhatIsQueued) {
  int ran = 0;
  {
    CommWorker w(1);
    for (int i = 0; i < 3; ++i)
      w.post([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        ++ran;
        return OTC_STEP_OK;
      });
  }
  EXPECT_EQ(ran, 3);
}

} // namespace
