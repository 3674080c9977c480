//===- exchange_test.cpp - The compressed exchanges on W ranks ------------===//
//
// Runs under `mpirun -np W` (W >= 2; CTest runs 3 and 4): the two-stage
// reduce-scatter exchange of the compressed all-reduce against a reference
// every rank computes alone from all ranks' buckets, against the all-gather
// exchange where compression is lossless, its byte counts, and its agreed
// skips. Every rank runs every test, calling the collectives in the same
// order.
//
//===----------------------------------------------------------------------===//

#include "comm/compressed.h"

#include <otc/compress.h>

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace otc;

namespace {

otc_comm_t *gComm = nullptr;
int gRank = 0, gWorld = 1;

otc_compress_desc_t desc(otck_compress_method method, float ratio,
                         int64_t block, bool feedback, int32_t exchange) {
  otc_compress_desc_t d{};
  d.method = method;
  d.error_feedback = feedback;
  d.exchange = exchange;
  d.block_size = block;
  d.ratio = d.ratio_min = d.ratio_max = ratio;
  return d;
}

/// Rank r's bucket at a step: the same on every rank for (r, step).
std::vector<float> bucketOf(int r, int step, int64_t n) {
  std::mt19937_64 rng(uint64_t(7919 * step + r));
  std::normal_distribution<float> normal;
  std::vector<float> g(static_cast<size_t>(n));
  for (float &v : g)
    v = normal(rng);
  return g;
}

uint64_t sentBytes() {
  uint64_t s = 0;
  otc_comm_bytes(gComm, &s, nullptr);
  return s;
}

/// A compressed all-reduce as a program sees it: started, then waited for.
int reduce(StepComm &sc, const otc_compress_desc_t &d, float *data, int64_t n,
           float *residual, int64_t bucket = 0, int64_t group = -1) {
  int rc = groupCompressedAllReduceCallback(&sc, group, &d, data, n, residual,
                                            nullptr, 0.f, nullptr, bucket);
  int waited = waitCollectivesCallback(&sc);
  return rc != OTC_STEP_OK ? rc : waited;
}

/// The two-stage exchange computed alone: every rank's compression (each
/// with its residual in `residuals`, updated), each owner's sum of its
/// shard's payloads compressed again, the owners' payloads decoded and
/// scaled by 1/W; the second compression's error goes back to the
/// residuals: each rank's own decoded values where the owner dropped them,
/// the owner's quantisation error where it kept them.
std::vector<float> reference(const otck_compress_config &cfg, int64_t n,
                             const std::vector<std::vector<float>> &buckets,
                             std::vector<std::vector<float>> *residuals) {
  const int w = int(buckets.size());
  const int64_t p = otck_compress_payload_bytes(&cfg, n);
  std::vector<std::vector<uint8_t>> payloads(
      static_cast<size_t>(w), std::vector<uint8_t>(static_cast<size_t>(p)));
  for (int r = 0; r < w; ++r)
    EXPECT_EQ(otck_compress_f32(&cfg, n, buckets[size_t(r)].data(),
                                residuals ? (*residuals)[size_t(r)].data()
                                          : nullptr,
                                payloads[size_t(r)].data()),
              0);
  std::vector<float> mean(static_cast<size_t>(n));
  for (int s = 0; s < w; ++s) {
    int64_t begin = 0;
    const int64_t m = otck_compress_shard(&cfg, n, w, s, &begin);
    const int64_t off = otck_compress_payload_bytes(&cfg, begin);
    const int64_t bytes = otck_compress_payload_bytes(&cfg, m);
    std::vector<uint8_t> mine(static_cast<size_t>(bytes * w));
    for (int r = 0; r < w && bytes > 0; ++r) // an empty shard copies nothing
      std::memcpy(mine.data() + r * bytes, payloads[size_t(r)].data() + off,
                  size_t(bytes));
    std::vector<float> sum(static_cast<size_t>(m)),
        err(static_cast<size_t>(m), 0.f);
    EXPECT_EQ(otck_decompress_sum_f32(&cfg, m, mine.data(), w, 1.0f,
                                      sum.data()),
              0);
    std::vector<uint8_t> again(static_cast<size_t>(bytes));
    EXPECT_EQ(otck_compress_f32(&cfg, m, sum.data(),
                                residuals ? err.data() : nullptr, again.data()),
              0);
    if (residuals) {
      // Zero where the owner kept an index, one where it dropped it.
      std::vector<float> dropped(static_cast<size_t>(m), 1.f);
      EXPECT_EQ(otck_compress_mask_sent_f32(&cfg, m, again.data(),
                                            dropped.data()),
                0);
      for (int r = 0; r < w; ++r) {
        std::vector<float> mineBack(static_cast<size_t>(m));
        EXPECT_EQ(otck_decompress_sum_f32(&cfg, m,
                                          payloads[size_t(r)].data() + off, 1,
                                          1.0f, mineBack.data()),
                  0);
        for (int64_t i = 0; i < m; ++i)
          if (dropped[size_t(i)] != 0.f)
            (*residuals)[size_t(r)][size_t(begin + i)] += mineBack[size_t(i)];
      }
      for (int64_t i = 0; i < m; ++i)
        if (dropped[size_t(i)] == 0.f)
          (*residuals)[size_t(s)][size_t(begin + i)] += err[size_t(i)];
    }
    EXPECT_EQ(otck_decompress_sum_f32(&cfg, m, again.data(), 1,
                                      1.0f / float(w), mean.data() + begin),
              0);
  }
  return mean;
}

TEST(Shards, CutWholeBlocksAsEvenAsTheyGo) {
  otck_compress_config cfg{OTCK_COMPRESS_TOPK_INT8, 64, 0.25f, 0};
  // 11 blocks (the last short) over 4 shards: 3, 3, 3, 2 blocks.
  const int64_t n = 10 * 64 + 17;
  int64_t begin = -1, next = 0;
  const int64_t want[4] = {192, 192, 192, 64 + 17};
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(otck_compress_shard(&cfg, n, 4, s, &begin), want[s]);
    EXPECT_EQ(begin, next);
    next = begin + want[s];
  }
  // Fewer blocks than shards: the last ones are empty, at the end.
  EXPECT_EQ(otck_compress_shard(&cfg, 100, 4, 1, &begin), 36);
  EXPECT_EQ(begin, 64);
  EXPECT_EQ(otck_compress_shard(&cfg, 100, 4, 3, &begin), 0);
  EXPECT_EQ(begin, 100);
  EXPECT_EQ(otck_compress_shard(&cfg, 100, 4, 4, &begin), -1);
  EXPECT_EQ(otck_compress_shard(&cfg, 100, 0, 0, &begin), -1);
  EXPECT_EQ(otck_compress_shard(&cfg, -1, 2, 0, &begin), -1);
  EXPECT_EQ(otck_compress_shard(&cfg, 100, 2, 0, nullptr), -1);
  // Every method's payload cuts at the shards' block boundaries.
  for (int m = OTCK_COMPRESS_NONE; m <= OTCK_COMPRESS_RANDOMK; ++m) {
    otck_compress_config c{otck_compress_method(m), 64, 0.25f, 0};
    Shards sh = cutShards(c, n, 4, 0);
    EXPECT_EQ(sh.offset[3] + sh.bytes[3],
              otck_compress_payload_bytes(&c, n))
        << "method " << m;
  }
}

/// Sizes that exercise uneven shards, a short last block and fewer blocks
/// than ranks.
const int64_t kSizes[] = {1000, 64 * 7 + 5, 40};

TEST(Exchange, ReduceScatterEqualsItsReferenceAndCarriesTheErrors) {
  for (int64_t n : kSizes) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const otc_compress_desc_t d = desc(OTCK_COMPRESS_TOPK_INT8, 0.1f, 64, true,
                                       OTC_EXCHANGE_REDUCE_SCATTER);
    const otck_compress_config cfg{OTCK_COMPRESS_TOPK_INT8, 64, 0.1f, 0};
    CompressState state;
    std::vector<std::vector<float>> refResiduals(
        size_t(gWorld), std::vector<float>(size_t(n), 0.f));
    std::vector<float> residual(size_t(n), 0.f);
    for (int step = 1; step <= 3; ++step) {
      std::vector<std::vector<float>> all;
      for (int r = 0; r < gWorld; ++r)
        all.push_back(bucketOf(r, step, n));
      std::vector<float> want = reference(cfg, n, all, &refResiduals);
      std::vector<float> data = all[size_t(gRank)];
      StepComm sc{gComm, &state, step, 3};
      ASSERT_EQ(reduce(sc, d, data.data(), n, residual.data()), OTC_STEP_OK);
      EXPECT_EQ(data, want) << "step " << step;
      EXPECT_EQ(residual, refResiduals[size_t(gRank)]) << "step " << step;
    }
  }
}

TEST(Exchange, LosslessReduceScatterEqualsTheAllGatherBitwise) {
  for (otck_compress_method m : {OTCK_COMPRESS_NONE, OTCK_COMPRESS_FP16}) {
    for (int64_t n : kSizes) {
      SCOPED_TRACE("method " + std::to_string(m) + ", n = " +
                   std::to_string(n));
      CompressState a, b;
      StepComm sa{gComm, &a, 1, 0}, sb{gComm, &b, 1, 0};
      std::vector<float> x = bucketOf(gRank, 1, n), y = x;
      // FP16: values exactly representable, so that the second stage's
      // sums of W of them stay exact and nothing is lost either.
      if (m == OTCK_COMPRESS_FP16)
        for (float &v : x)
          v = std::round(v * 64.f) / 64.f;
      y = x;
      ASSERT_EQ(reduce(sa, desc(m, 1.f, 64, false, OTC_EXCHANGE_ALL_GATHER),
                       x.data(), n, nullptr),
                OTC_STEP_OK);
      ASSERT_EQ(reduce(sb,
                       desc(m, 1.f, 64, false, OTC_EXCHANGE_REDUCE_SCATTER),
                       y.data(), n, nullptr),
                OTC_STEP_OK);
      EXPECT_EQ(0, std::memcmp(x.data(), y.data(), size_t(n) * 4));
    }
  }
}

TEST(Exchange, ReduceScatterCountsItsShardsAndBlocks) {
  const int64_t n = 64 * 11 + 9;
  const otck_compress_config cfg{OTCK_COMPRESS_TOPK_INT8, 64, 0.1f, 0};
  const int64_t p = otck_compress_payload_bytes(&cfg, n);
  Shards sh = cutShards(cfg, n, gWorld, 0);
  const int64_t mine = sh.bytes[size_t(gRank)];
  CompressState state;
  StepComm sc{gComm, &state, 1, 0};
  std::vector<float> data = bucketOf(gRank, 1, n),
                     residual(static_cast<size_t>(n));
  uint64_t before = sentBytes();
  ASSERT_EQ(reduce(sc,
                   desc(OTCK_COMPRESS_TOPK_INT8, 0.1f, 64, true,
                        OTC_EXCHANGE_REDUCE_SCATTER),
                   data.data(), n, residual.data()),
            OTC_STEP_OK);
  // The others' shards of this rank's payload, its block (flag and
  // payload) to each other rank, the finiteness flag.
  const uint64_t want = uint64_t(p - mine + (4 + mine) * (gWorld - 1) + 4);
  EXPECT_EQ(sentBytes() - before, want);
  // Fewer than the all-gather's P (W - 1) from three ranks on.
  if (gWorld >= 3) {
    EXPECT_LT(want, uint64_t(p * (gWorld - 1) + 4));
  }
}

TEST(Exchange, NonFiniteOnOneRankSkipsEverywhereAndRestores) {
  const int64_t n = 500;
  const otc_compress_desc_t d = desc(OTCK_COMPRESS_TOPK_INT8, 0.25f, 64, true,
                                     OTC_EXCHANGE_REDUCE_SCATTER);
  CompressState state;
  std::vector<float> residual(size_t(n), 0.f);
  StepComm sc{gComm, &state, 1, 0};
  std::vector<float> data = bucketOf(gRank, 1, n);
  ASSERT_EQ(reduce(sc, d, data.data(), n, residual.data()), OTC_STEP_OK);
  const std::vector<float> kept = residual;
  sc.step = 2;
  data = bucketOf(gRank, 2, n);
  if (gRank == gWorld - 1)
    data[3] = NAN;
  EXPECT_EQ(reduce(sc, d, data.data(), n, residual.data()),
            OTC_STEP_SKIPPED_NONFINITE);
  EXPECT_EQ(residual, kept);
}

TEST(Exchange, AnOwnersSumThatOverflowsSkipsEverywhereAndRestores) {
  // Finite on every rank, but shard 0's sum is not: its owner's flag
  // reaches every rank, and the session's undo restores each residual,
  // the owner's second-stage error included.
  const int64_t n = 64 * 4 * gWorld;
  const otc_compress_desc_t d = desc(OTCK_COMPRESS_INT8, 1.f, 64, true,
                                     OTC_EXCHANGE_REDUCE_SCATTER);
  CompressState state;
  std::vector<float> residual(size_t(n), 0.f);
  StepComm sc{gComm, &state, 1, 0};
  std::vector<float> data = bucketOf(gRank, 1, n);
  ASSERT_EQ(reduce(sc, d, data.data(), n, residual.data()), OTC_STEP_OK);
  const std::vector<float> kept = residual;
  sc.step = 2;
  state.touched.clear(); // a new step, as the session starts one
  data = bucketOf(gRank, 2, n);
  data[5] = 3e38f;
  int rc = reduce(sc, d, data.data(), n, residual.data());
  EXPECT_EQ(rc, OTC_STEP_SKIPPED_NONFINITE);
  if (rc == OTC_STEP_SKIPPED_NONFINITE)
    state.undoStep();
  EXPECT_EQ(residual, kept);
}

TEST(Exchange, OwnerGroupRunsTheReduceScatterAmongItsMembers) {
  // Group {1, ..., W-1}: rank 0 stays out; the members exchange as a world
  // of W - 1 ranks would.
  std::vector<std::vector<int64_t>> groups(1);
  for (int r = 1; r < gWorld; ++r)
    groups[0].push_back(r);
  splitGroups(gComm, groups);
  if (gRank == 0)
    return;
  const int members = gWorld - 1;
  const int64_t n = 777;
  const otck_compress_config cfg{OTCK_COMPRESS_TOPK_INT8, 64, 0.2f, 0};
  std::vector<std::vector<float>> all, residuals(
                                           size_t(members),
                                           std::vector<float>(size_t(n), 0.f));
  for (int r = 1; r < gWorld; ++r)
    all.push_back(bucketOf(r, 1, n));
  std::vector<float> want = reference(cfg, n, all, &residuals);
  CompressState state;
  StepComm sc{gComm, &state, 1, 0};
  sc.groups = &groups;
  std::vector<float> data = all[size_t(gRank - 1)], residual(size_t(n), 0.f);
  ASSERT_EQ(reduce(sc,
                   desc(OTCK_COMPRESS_TOPK_INT8, 0.2f, 64, true,
                        OTC_EXCHANGE_REDUCE_SCATTER),
                   data.data(), n, residual.data(), 0, 0),
            OTC_STEP_OK);
  EXPECT_FALSE(sc.pendingNonfinite);
  EXPECT_EQ(data, want);
  EXPECT_EQ(residual, residuals[size_t(gRank - 1)]);
}

/// PowerSGD of every rank's bucket computed alone (the mean in double),
/// each rank's residual updated: two matrices with a bias between them.
struct LowRank {
  static constexpr int64_t kN = 48 * 20 + 7 + 30 * 12 + 5;
  const int64_t matrices[6] = {0, 48, 20, 48 * 20 + 7, 30, 12};
  otc_compress_desc_t desc() const {
    otc_compress_desc_t d{};
    d.method = OTCK_COMPRESS_POWERSGD;
    d.error_feedback = 1;
    d.exchange = OTC_EXCHANGE_ALL_REDUCE;
    d.block_size = 256;
    d.powersgd_rank = 3;
    d.num_matrices = 2;
    d.matrices = matrices;
    return d;
  }
  std::vector<otck_powersgd_matrix> mats() const {
    return {{0, 48, 20}, {48 * 20 + 7, 30, 12}};
  }
};

std::vector<float> meanOver(const std::vector<std::vector<float>> &v) {
  std::vector<float> out(v[0].size());
  for (size_t i = 0; i < out.size(); ++i) {
    double s = 0;
    for (const auto &x : v)
      s += x[i];
    out[i] = float(s / double(v.size()));
  }
  return out;
}

TEST(Exchange, PowerSgdEqualsItsReferenceAndCarriesTheErrors) {
  LowRank lr;
  const otc_compress_desc_t d = lr.desc();
  const auto mats = lr.mats();
  const int64_t n = LowRank::kN;
  const int64_t pf = otck_powersgd_p_floats(mats.data(), 2, 3);
  const int64_t qf = otck_powersgd_q_floats(mats.data(), 2, 3);
  ASSERT_EQ(qf, compressStateFloats(d));
  CompressState state;
  std::vector<float> residual(size_t(n), 0.f), q(size_t(qf), 0.f);
  std::vector<std::vector<float>> refRes(size_t(gWorld),
                                         std::vector<float>(size_t(n), 0.f));
  std::vector<float> refQ(size_t(qf), 0.f);
  const uint64_t before = sentBytes();
  for (int step = 1; step <= 3; ++step) {
    std::vector<std::vector<float>> all, ms, ps, qs;
    for (int r = 0; r < gWorld; ++r)
      all.push_back(bucketOf(r, step, n));
    // The reference: M = g + e, P = mean(M Q), orthonormalised, Q =
    // mean(M^T P), g = P Q^T, e = M - g on the matrices; the rest averaged.
    ASSERT_GE(otck_powersgd_init_q_f32(mats.data(), 2, 3, 0, refQ.data()), 0);
    for (int r = 0; r < gWorld; ++r) {
      std::vector<float> m = refRes[size_t(r)];
      std::vector<float> p(static_cast<size_t>(pf));
      for (const auto &x : mats)
        for (int64_t i = x.offset; i < x.offset + x.rows * x.cols; ++i)
          m[size_t(i)] += all[size_t(r)][size_t(i)];
      ASSERT_EQ(otck_powersgd_project_f32(mats.data(), 2, 3, m.data(),
                                          refQ.data(), p.data()),
                0);
      ms.push_back(m);
      ps.push_back(p);
    }
    std::vector<float> p = meanOver(ps);
    ASSERT_EQ(otck_powersgd_orthonormalize_f32(mats.data(), 2, 3, p.data(),
                                               0.f),
              0);
    for (int r = 0; r < gWorld; ++r) {
      std::vector<float> qr(static_cast<size_t>(qf));
      ASSERT_EQ(otck_powersgd_back_project_f32(mats.data(), 2, 3,
                                               ms[size_t(r)].data(), p.data(),
                                               qr.data()),
                0);
      qs.push_back(qr);
    }
    refQ = meanOver(qs);
    std::vector<float> want = meanOver(all);
    for (int r = 0; r < gWorld; ++r) {
      std::vector<float> out = want;
      ASSERT_EQ(otck_powersgd_decompress_f32(mats.data(), 2, 3, p.data(),
                                             refQ.data(), 1.f, out.data(),
                                             ms[size_t(r)].data()),
                0);
      for (const auto &x : mats)
        for (int64_t i = x.offset; i < x.offset + x.rows * x.cols; ++i)
          refRes[size_t(r)][size_t(i)] = ms[size_t(r)][size_t(i)];
      if (r == gRank)
        want = out;
    }
    std::vector<float> data = all[size_t(gRank)];
    StepComm sc{gComm, &state, step, 9};
    int rc = groupCompressedAllReduceCallback(&sc, -1, &d, data.data(), n,
                                              residual.data(), nullptr, 0.f,
                                              q.data(), 0);
    ASSERT_EQ(rc != OTC_STEP_OK ? rc : waitCollectivesCallback(&sc),
              OTC_STEP_OK);
    double worst = 0, scale = 0;
    for (int64_t i = 0; i < n; ++i) {
      worst = std::max(worst, std::fabs(double(data[size_t(i)]) -
                                        want[size_t(i)]));
      worst = std::max(worst, std::fabs(double(residual[size_t(i)]) -
                                        refRes[size_t(gRank)][size_t(i)]));
      scale = std::max(scale, std::fabs(double(want[size_t(i)])));
    }
    EXPECT_LT(worst, 1e-4 * scale) << "step " << step;
    for (int64_t i = 0; i < qf; ++i)
      ASSERT_NEAR(q[size_t(i)], refQ[size_t(i)],
                  1e-4 * (1 + std::fabs(refQ[size_t(i)])))
          << "step " << step << ", Q " << i;
  }
  // Three mean all-reduces a step: the rest (12 floats), P and Q.
  const uint64_t each = allReduceBytes(12 * 4, gWorld) +
                        allReduceBytes(uint64_t(pf) * 4, gWorld) +
                        allReduceBytes(uint64_t(qf) * 4, gWorld);
  EXPECT_EQ(sentBytes() - before, 3 * each);
}

TEST(Exchange, PowerSgdSkipsANonFiniteStepEverywhereAndRestores) {
  LowRank lr;
  const otc_compress_desc_t d = lr.desc();
  const int64_t n = LowRank::kN, qf = compressStateFloats(d);
  CompressState state;
  std::vector<float> residual(size_t(n), 0.f), q(size_t(qf), 0.f);
  std::vector<float> data = bucketOf(gRank, 1, n);
  StepComm sc{gComm, &state, 1, 0};
  ASSERT_EQ(groupCompressedAllReduceCallback(&sc, -1, &d, data.data(), n,
                                             residual.data(), nullptr, 0.f,
                                             q.data(), 0),
            OTC_STEP_OK);
  ASSERT_EQ(waitCollectivesCallback(&sc), OTC_STEP_OK);
  const std::vector<float> keptR = residual, keptQ = q;
  state.touched.clear();
  sc.step = 2;
  data = bucketOf(gRank, 2, n);
  if (gRank == 1)
    data[40] = NAN; // inside the first matrix
  int rc = groupCompressedAllReduceCallback(&sc, -1, &d, data.data(), n,
                                            residual.data(), nullptr, 0.f,
                                            q.data(), 0);
  rc = rc != OTC_STEP_OK ? rc : waitCollectivesCallback(&sc);
  EXPECT_EQ(rc, OTC_STEP_SKIPPED_NONFINITE);
  if (rc == OTC_STEP_SKIPPED_NONFINITE)
    state.undoStep();
  EXPECT_EQ(residual, keptR);
  EXPECT_EQ(q, keptQ);
}

TEST(Exchange, PlainAllReduceIsForMethodNoneOnly) {
  CompressState state;
  StepComm sc{gComm, &state, 1, 0};
  std::vector<float> data(8, 1.f);
  otc_compress_desc_t d =
      desc(OTCK_COMPRESS_TOPK, 0.5f, 4, false, OTC_EXCHANGE_ALL_REDUCE);
  EXPECT_EQ(groupCompressedAllReduceCallback(&sc, -1, &d, data.data(), 8,
                                             nullptr, nullptr, 0.f, nullptr,
                                             0),
            OTC_STEP_ERR_COMM);
  d.exchange = 7;
  EXPECT_EQ(groupCompressedAllReduceCallback(&sc, -1, &d, data.data(), 8,
                                             nullptr, nullptr, 0.f, nullptr,
                                             0),
            OTC_STEP_ERR_COMM);
}

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (otc_status_t st = otc_comm_create_mpi(&gComm)) {
    std::fprintf(stderr, "cannot create the MPI communicator: %s\n",
                 otc_status_message(st));
    return 1;
  }
  gRank = otc_comm_rank(gComm);
  gWorld = otc_comm_size(gComm);
  int failed = RUN_ALL_TESTS() != 0;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  otc_comm_release(gComm);
  return failed;
}
