//===- loader_test.cpp - Shuffling and sharding ---------------------------===//

#include "core/status.h"
#include "tooling/loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

using otc::Loader;

namespace {

TEST(Loader, PermutationIsAPermutationAndPinned) {
  std::vector<int64_t> p = otc::epochPermutation(1000, 7, 0);
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(1000);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(sorted, iota);
  EXPECT_NE(p, iota);
  // Deterministic from (seed, epoch); different otherwise.
  EXPECT_EQ(p, otc::epochPermutation(1000, 7, 0));
  EXPECT_NE(p, otc::epochPermutation(1000, 8, 0));
  EXPECT_NE(p, otc::epochPermutation(1000, 7, 1));
  // Pinned values: the order must not depend on the standard library.
  std::vector<int64_t> small = otc::epochPermutation(10, 42, 0);
  EXPECT_EQ(small, (std::vector<int64_t>{9, 6, 2, 0, 1, 4, 3, 8, 5, 7}));
}

TEST(Loader, CApiPermutationIsTheDriversOrder) {
  std::vector<int64_t> p(10);
  ASSERT_EQ(otc_epoch_permutation(10, 42, 0, p.data()), nullptr);
  EXPECT_EQ(p, otc::epochPermutation(10, 42, 0));
  EXPECT_EQ(otc_epoch_permutation(0, 1, 0, nullptr), nullptr);
  for (otc_status_t st : {otc_epoch_permutation(-1, 1, 0, p.data()),
                          otc_epoch_permutation(3, 1, 0, nullptr)}) {
    ASSERT_NE(st, nullptr);
    EXPECT_EQ(otc_status_code(st), OTC_INVALID_ARGUMENT);
    otc_status_free(st);
  }
}

// W ranks x batch B see exactly what 1 rank x batch W*B sees, step by step,
// across epoch boundaries.
TEST(Loader, ShardingMatchesBigBatch) {
  const int64_t n = 1000;
  for (bool shuffle : {true, false}) {
    Loader big(n, 1, 0, 64, 123, shuffle);
    Loader r0(n, 2, 0, 32, 123, shuffle), r1(n, 2, 1, 32, 123, shuffle);
    EXPECT_EQ(big.batchesPerEpoch(), 15); // last partial batch dropped
    EXPECT_EQ(r0.batchesPerEpoch(), 15);
    for (int step = 0; step < 40; ++step) {
      std::vector<int64_t> a = r0.next(), b = r1.next(), all = big.next();
      ASSERT_EQ(a.size(), 32u);
      a.insert(a.end(), b.begin(), b.end());
      ASSERT_EQ(a, all) << "step " << step;
      EXPECT_EQ(r0.epoch(), big.epoch());
    }
  }
}

TEST(Loader, NoShuffleIsIdentity) {
  Loader l(100, 1, 0, 10, 5, false);
  for (int b = 0; b < 10; ++b) {
    std::vector<int64_t> idx = l.next();
    for (int i = 0; i < 10; ++i)
      EXPECT_EQ(idx[size_t(i)], b * 10 + i);
  }
  EXPECT_EQ(l.next()[0], 0); // the second epoch starts over
  EXPECT_EQ(l.epoch(), 1);
}

TEST(Loader, EpochsReshuffleAndCoverEachSampleOnce) {
  Loader l(64, 1, 0, 8, 9, true);
  std::vector<int64_t> e0, e1;
  for (int i = 0; i < 8; ++i) {
    auto b = l.next();
    e0.insert(e0.end(), b.begin(), b.end());
  }
  for (int i = 0; i < 8; ++i) {
    auto b = l.next();
    e1.insert(e1.end(), b.begin(), b.end());
  }
  EXPECT_NE(e0, e1);
  std::sort(e0.begin(), e0.end());
  std::sort(e1.begin(), e1.end());
  EXPECT_EQ(e0, e1);
}

TEST(Loader, RestoreContinuesExactly) {
  Loader a(500, 2, 1, 16, 3, true);
  for (int i = 0; i < 20; ++i)
    a.next();
  Loader b(500, 2, 1, 16, 99, false);
  b.restore(a.state());
  for (int i = 0; i < 40; ++i)
    ASSERT_EQ(a.next(), b.next());
  Loader other(400, 2, 1, 16, 3, true);
  EXPECT_THROW(other.restore(a.state()), otc::Error);
}

TEST(Loader, TooFewSamples) {
  try {
    Loader l(10, 2, 0, 8, 0, true);
    FAIL() << "expected an error";
  } catch (const otc::Error &e) {
    EXPECT_NE(std::string(e.what()).find("fewer than one global batch of 16"),
              std::string::npos)
        << e.what();
  }
}

} // namespace
