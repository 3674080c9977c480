//===- profiler_test.cpp - Profiler: totals, trace and summary ------------===//

#include "core/profiler.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <sstream>
#include <thread>

using namespace otc;

namespace {

// Three sites: a product, a memory-bound kernel, a source that needs
// escaping in JSON.
const otc_profile_site_t kSites[] = {
    {"gemm", "/0/Gemm", 2e9, 1e6},
    {"relu", "/1/Relu", 0, 4e6},
    {"add", "a \"quoted\"\\node", 0, 0},
};

otc_program_entry_t entryWithSites() {
  otc_program_entry_t e{};
  e.num_sites = 3;
  e.sites = kSites;
  return e;
}

void call(Profiler &p, int32_t site, std::chrono::milliseconds busy) {
  Profiler::callback(&p, site, 1);
  std::this_thread::sleep_for(busy);
  Profiler::callback(&p, site, 0);
}

/// The ms/step and calls/step of the summary's row for kernel `name`.
bool summaryRow(const std::string &summary, const std::string &name, double &ms,
                double &calls) {
  const size_t row = summary.find("  " + name + " ");
  double share = 0;
  return row != std::string::npos &&
         std::sscanf(summary.c_str() + row + 2 + name.size(), " %lf%% %lf %lf",
                     &share, &ms, &calls) == 3;
}

} // namespace

TEST(Profiler, CountsCallsPerSiteAndStep) {
  otc_program_entry_t e = entryWithSites();
  int syncs = 0;
  Profiler p(e, [&] { ++syncs; });
  for (int64_t step = 1; step <= 3; ++step) {
    p.stepBegin(step);
    call(p, 0, std::chrono::milliseconds(20));
    call(p, 1, std::chrono::milliseconds(0));
    call(p, 1, std::chrono::milliseconds(0));
    p.stepEnd();
  }
  EXPECT_EQ(p.steps(), 3);
  // Every timestamp of the step thread waits for the device first.
  EXPECT_EQ(syncs, 3 * (2 + 3 * 2));

  std::ostringstream trace;
  p.writeTrace(trace, 1);
  nlohmann::json j = nlohmann::json::parse(trace.str());
  int steps = 0, gemms = 0, relus = 0;
  for (const auto &ev : j["traceEvents"]) {
    if (ev["ph"] == "M")
      continue;
    EXPECT_EQ(ev["pid"], 1);
    EXPECT_EQ(ev["ph"], "X");
    EXPECT_GE(ev["dur"].get<double>(), 0.0);
    if (ev["cat"] == "step")
      ++steps;
    else if (ev["name"] == "gemm") {
      ++gemms;
      EXPECT_EQ(ev["args"]["source"], "/0/Gemm");
      EXPECT_EQ(ev["cat"], "kernel,compute");
      EXPECT_GE(ev["dur"].get<double>(), 20e3); // microseconds
    } else if (ev["name"] == "relu")
      ++relus;
  }
  EXPECT_EQ(steps, 3);
  EXPECT_EQ(gemms, 3);
  EXPECT_EQ(relus, 6);

  std::ostringstream summary;
  p.writeSummary(summary, 1);
  std::string s = summary.str();
  EXPECT_NE(s.find("profile (rank 1): 3 steps"), std::string::npos) << s;
  // The gemm's 20 ms dominate: it is the first row, rated in GFLOP/s; relu
  // in GB/s.
  size_t gemm = s.find("  gemm "), relu = s.find("  relu ");
  ASSERT_NE(gemm, std::string::npos) << s;
  ASSERT_NE(relu, std::string::npos) << s;
  EXPECT_LT(gemm, relu) << s;
  EXPECT_NE(s.find("GFLOP/s", gemm), std::string::npos) << s;
  EXPECT_NE(s.find("GB/s", relu), std::string::npos) << s;
  EXPECT_NE(s.find(" 2.0  "), std::string::npos) << s; // relu: 2 calls/step
}

TEST(Profiler, SummaryLeavesOutTheWarmUpStep) {
  otc_program_entry_t e = entryWithSites();
  Profiler p(e, nullptr);
  // Step 1's gemm takes 60 ms (a first call's JIT), the others' 5 ms.
  for (int64_t step = 1; step <= 3; ++step) {
    p.stepBegin(step);
    call(p, 0, std::chrono::milliseconds(step == 1 ? 60 : 5));
    p.stepEnd();
  }
  std::ostringstream summary;
  p.writeSummary(summary, 0);
  const std::string s = summary.str();
  EXPECT_NE(s.find("3 steps (the first, a warm-up, left out below)"),
            std::string::npos)
      << s;
  // gemm: 1 call and 5-ish ms per step over steps 2 and 3, not 23 ms.
  double ms = 0, calls = 0;
  ASSERT_TRUE(summaryRow(s, "gemm", ms, calls)) << s;
  EXPECT_GE(ms, 5.0) << s;
  EXPECT_LT(ms, 15.0) << s;
  EXPECT_EQ(calls, 1.0) << s;
  // The trace keeps every step.
  std::ostringstream trace;
  p.writeTrace(trace, 0);
  const nlohmann::json j = nlohmann::json::parse(trace.str());
  int gemms = 0;
  for (const auto &ev : j["traceEvents"])
    gemms += ev["ph"] == "X" && ev["name"] == "gemm";
  EXPECT_EQ(gemms, 3);
}

TEST(Profiler, WarmUpIsTheWholeFirstStepWithItsMicroBatches) {
  otc_program_entry_t e = entryWithSites();
  Profiler p(e, nullptr);
  // Steps 7 and 8 of a run with 3 micro-batches each (they carry the step
  // they accumulate into): step 7's gemm calls are slow.
  for (int64_t step = 7; step <= 8; ++step)
    for (int micro = 0; micro < 3; ++micro) {
      p.stepBegin(step);
      call(p, 0, std::chrono::milliseconds(step == 7 ? 40 : 2));
      p.stepEnd();
    }
  std::ostringstream summary;
  p.writeSummary(summary, 0);
  const std::string s = summary.str();
  EXPECT_NE(s.find("6 steps (the first, a warm-up, left out below)"),
            std::string::npos)
      << s;
  double ms = 0, calls = 0;
  ASSERT_TRUE(summaryRow(s, "gemm", ms, calls)) << s;
  EXPECT_LT(ms, 10.0) << s; // step 8's micro-batches only
  EXPECT_EQ(calls, 1.0) << s;
}

TEST(Profiler, UnmatchedAndForeignSitesAreDropped) {
  otc_program_entry_t e = entryWithSites();
  Profiler p(e, nullptr);
  p.stepBegin(1);
  Profiler::callback(&p, 0, 1); // a step that returned inside a site
  Profiler::callback(&p, 7, 1); // not a site of this entry
  Profiler::callback(&p, -1, 0);
  Profiler::callback(&p, 1, 0); // an end without its begin
  call(p, 2, std::chrono::milliseconds(0));
  p.stepEnd();
  std::ostringstream trace;
  p.writeTrace(trace, 0);
  nlohmann::json j = nlohmann::json::parse(trace.str());
  std::vector<std::string> names;
  for (const auto &ev : j["traceEvents"])
    if (ev["ph"] == "X")
      names.push_back(ev["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"add", "step 1"}));
  // The source with quotes and a backslash survives the JSON.
  for (const auto &ev : j["traceEvents"])
    if (ev["ph"] == "X" && ev["name"] == "add")
      EXPECT_EQ(ev["args"]["source"], "a \"quoted\"\\node");
}

TEST(Profiler, CollectivesHaveTheirOwnTrack) {
  otc_program_entry_t e = entryWithSites();
  Profiler p(e, nullptr);
  p.stepBegin(4);
  std::thread t([&] {
    auto begin = Profiler::Clock::now();
    p.collective("compressed exchange", begin,
                 begin + std::chrono::milliseconds(3));
  });
  t.join();
  p.stepEnd();
  std::ostringstream trace;
  p.writeTrace(trace, 2);
  nlohmann::json j = nlohmann::json::parse(trace.str());
  bool named = false, seen = false;
  for (const auto &ev : j["traceEvents"]) {
    if (ev["ph"] == "M" && ev["name"] == "thread_name" && ev["tid"] == 1)
      named = ev["args"]["name"] == "collectives";
    if (ev["ph"] == "X" && ev["cat"] == "collective") {
      seen = true;
      EXPECT_EQ(ev["tid"], 1);
      EXPECT_EQ(ev["name"], "compressed exchange");
      EXPECT_EQ(ev["args"]["step"], 4);
      EXPECT_NEAR(ev["dur"].get<double>(), 3000.0, 1.0);
    }
  }
  EXPECT_TRUE(named);
  EXPECT_TRUE(seen);
  std::ostringstream summary;
  p.writeSummary(summary, 0);
  EXPECT_NE(summary.str().find("collectives thread: 3.000 ms per step"),
            std::string::npos)
      << summary.str();
}

TEST(Profiler, TraceIsBoundedTotalsAreNot) {
  otc_program_entry_t e = entryWithSites();
  Profiler p(e, nullptr, /*maxEvents=*/5);
  p.stepBegin(1);
  for (int i = 0; i < 10; ++i)
    call(p, 1, std::chrono::milliseconds(0));
  p.stepEnd();
  std::ostringstream trace, summary;
  p.writeTrace(trace, 0);
  nlohmann::json j = nlohmann::json::parse(trace.str());
  int events = 0;
  for (const auto &ev : j["traceEvents"])
    events += ev["ph"] == "X";
  EXPECT_EQ(events, 5);
  p.writeSummary(summary, 0);
  EXPECT_NE(summary.str().find("10.0"), std::string::npos) << summary.str();
  EXPECT_NE(summary.str().find("the trace holds the first 5 calls"),
            std::string::npos)
      << summary.str();
}
