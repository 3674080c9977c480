//===- mpi_test.cpp - Runtime checks under `mpirun -np 2` -----------------===//
//
// Every rank runs every test; the tests call collectives in the same order on
// all ranks. The CTest entry bounds the run with a timeout in case a rank
// fails half-way and leaves the other one in a collective.
//
//===----------------------------------------------------------------------===//

#include "comm/compressed.h"
#include "core/test_fixture.h"
#include "tooling/data.h"
#include "tooling/driver.h"
#include "tooling/loader.h"

#include <otc/compress.h>

#include <gtest/gtest.h>
#include <mpi.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

using namespace otc;

namespace {

otc_comm_t *gComm = nullptr;
std::string gDir;

std::string text(otc_status_t s) {
  std::string m = otc_status_message(s);
  otc_status_free(s);
  return m;
}

/// A compressed all-reduce as a program sees it: started, then waited for
/// (with overlap the collectives thread runs it in between).
int compressedReduce(StepComm &sc, const otc_compress_desc_t &d, float *data,
                     int64_t n, float *residual, int64_t bucket,
                     float *velocity = nullptr, float momentum = 0.f) {
  int rc = compressedAllReduceCallback(&sc, &d, data, n, residual, velocity,
                                       momentum, nullptr, bucket);
  int waited = waitCollectivesCallback(&sc);
  return rc != OTC_STEP_OK ? rc : waited;
}

TEST(Mpi, WorldIsTwoRanks) {
  EXPECT_EQ(otc_comm_size(gComm), 2);
  EXPECT_GE(otc_comm_rank(gComm), 0);
}

TEST(Mpi, AllReduceAverages) {
  int r = otc_comm_rank(gComm);
  std::vector<float> v = {float(r + 1), float(10 * (r + 1)), -float(r)};
  uint64_t sent0 = 0, sent1 = 0;
  otc_comm_bytes(gComm, &sent0, nullptr);
  ASSERT_EQ(otc_comm_all_reduce_mean_f32(gComm, v.data(), 3), nullptr);
  otc_comm_bytes(gComm, &sent1, nullptr);
  EXPECT_FLOAT_EQ(v[0], 1.5f);
  EXPECT_FLOAT_EQ(v[1], 15.f);
  EXPECT_FLOAT_EQ(v[2], -0.5f);
  EXPECT_EQ(sent1 - sent0, 12u);
}

TEST(Mpi, AllReduceSumF64IsUncounted) {
  int r = otc_comm_rank(gComm);
  double v[3] = {double(r + 1), 0.25 * r, -1e-300};
  uint64_t sent0 = 0, received0 = 0, sent1 = 0, received1 = 0;
  otc_comm_bytes(gComm, &sent0, &received0);
  ASSERT_EQ(otc_comm_all_reduce_sum_f64(gComm, v, 3), nullptr);
  otc_comm_bytes(gComm, &sent1, &received1);
  EXPECT_EQ(v[0], 3.0);
  EXPECT_EQ(v[1], 0.25);
  EXPECT_EQ(v[2], -2e-300);
  // Bookkeeping, not a program's gradient traffic.
  EXPECT_EQ(sent1, sent0);
  EXPECT_EQ(received1, received0);
}

// A rank that arrives after the collective timeout: its peer fails, naming
// the collective and the late rank, and its communicator stays broken.
TEST(Mpi, CollectiveTimeoutNamesTheMissingRank) {
  otc_comm_t *c = nullptr;
  ASSERT_EQ(otc_comm_create_mpi(&c), nullptr);
  const int r = otc_comm_rank(c);
  otc_status_t refused = otc_comm_set_timeout(c, -1);
  EXPECT_EQ(otc_status_code(refused), OTC_INVALID_ARGUMENT);
  otc_status_free(refused);
  ASSERT_EQ(otc_comm_set_timeout(c, r == 0 ? 0.3 : 60), nullptr);
  float v[4] = {1, 2, 3, 4};
  if (r == 1)
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  otc_status_t st = otc_comm_all_reduce_mean_f32(c, v, 4);
  if (r == 0) {
    ASSERT_EQ(otc_status_code(st), OTC_UNAVAILABLE);
    std::string m = text(st);
    EXPECT_EQ(m.rfind("collective timeout: rank 0 waited ", 0), 0u) << m;
    EXPECT_NE(m.find("(the collective timeout is 0.3 s) in collective 1 "
                     "before the first step (all-reduce of 4 floats); did "
                     "not arrive: rank 1 (pid "),
              std::string::npos)
        << m;
    EXPECT_NE(m.find(": running, not in a collective)"), std::string::npos)
        << m;
    st = otc_comm_barrier(c);
    EXPECT_EQ(otc_status_code(st), OTC_UNAVAILABLE);
    EXPECT_EQ(text(st).rfind("the communicator failed before: collective "
                             "timeout: rank 0 waited",
                             0),
              0u);
  } else {
    // Rank 0's part was posted: the all-reduce completes once it calls
    // MPI again (the barrier below).
    EXPECT_EQ(st, nullptr);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  otc_comm_release(c);
}

TEST(Mpi, WorldSizeRefusal) {
  std::string model = gDir + "/linear.onnx";
  otc::testing::LinearProgram three(0, model, 4, 3, 8, 3);
  otc_program_t *program = nullptr;
  ASSERT_EQ(otc_program_from_entry(&three.entry, &program), nullptr);
  otc_session_t *s = nullptr;
  otc_status_t st = otc_session_create(program, gComm, nullptr, &s);
  EXPECT_EQ(otc_status_code(st), OTC_FAILED_PRECONDITION);
  EXPECT_EQ(text(st), "this program was compiled for --world-size 3 but runs "
                      "on 2 ranks; start it with `mpirun -np 3`");
  otc_program_release(program);

  // The driver refuses on every rank with exit code 2.
  std::string arg0 = "train";
  char *argv[] = {arg0.data()};
  ::testing::internal::CaptureStderr();
  int rc = driverMain(1, argv, &three.entry, gComm);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, 2);
  if (otc_comm_rank(gComm) == 0) {
    EXPECT_NE(err.find("compiled for --world-size 3 but runs on 2 ranks; "
                       "start it with `mpirun -np 3`"),
              std::string::npos)
        << err;
  }
}

// 2 ranks x batch 16 train the same weights as 1 rank x batch 32.
TEST(Mpi, DataParallelEqualsBigBatch) {
  const int64_t D = 4, C = 3, N = 256;
  std::string model = gDir + "/linear.onnx";
  std::vector<float> x;
  std::vector<int64_t> y;
  otc::testing::makeData(N, D, C, 11, x, y);
  int rank = otc_comm_rank(gComm);

  auto train = [&](otc::testing::LinearProgram &fixture, otc_comm_t *comm,
                   int world, int r, int64_t batch) {
    otc_program_t *program = nullptr;
    otc_session_t *s = nullptr;
    EXPECT_EQ(otc_program_from_entry(&fixture.entry, &program), nullptr);
    otc_status_t st = otc_session_create(program, comm, nullptr, &s);
    EXPECT_EQ(st, nullptr) << otc_status_message(st);
    Loader loader(N, world, r, batch, 4, true);
    std::vector<float> bx(static_cast<size_t>(batch * D));
    std::vector<int64_t> by(static_cast<size_t>(batch));
    for (int step = 0; step < 20; ++step) {
      std::vector<int64_t> idx = loader.next();
      for (size_t i = 0; i < idx.size(); ++i) {
        std::copy_n(&x[size_t(idx[i] * D)], D, &bx[i * D]);
        by[i] = y[size_t(idx[i])];
      }
      EXPECT_EQ(otc_session_bind_input(s, "x", bx.data(), bx.size() * 4),
                nullptr);
      EXPECT_EQ(otc_session_bind_input(s, "y", by.data(), by.size() * 8),
                nullptr);
      EXPECT_EQ(otc_session_train_step(s, nullptr), nullptr);
    }
    std::vector<float> w(static_cast<size_t>(C * D));
    EXPECT_EQ(otc_session_get_param(s, "fc.weight", w.data(), w.size() * 4),
              nullptr);
    otc_session_release(s);
    otc_program_release(program);
    return w;
  };

  otc::testing::LinearProgram ddp(0, model, D, C, 16, 2);
  std::vector<float> wDdp = train(ddp, gComm, 2, rank, 16);
  otc_comm_t *local = nullptr;
  ASSERT_EQ(otc_comm_create_local(&local), nullptr);
  otc::testing::LinearProgram big(1, model, D, C, 32, 1);
  std::vector<float> wBig = train(big, local, 1, 0, 32);
  otc_comm_release(local);
  for (size_t i = 0; i < wDdp.size(); ++i)
    EXPECT_NEAR(wDdp[i], wBig[i], 1e-5f) << "weight " << i;
}

// The driver end to end on 2 ranks: data, checkpoints, metrics, export.
TEST(Mpi, DriverTrainsOnTwoRanks) {
  const int64_t D = 4, C = 3, N = 256;
  std::string model = gDir + "/linear.onnx";
  if (otc_comm_rank(gComm) == 0) {
    std::vector<float> x;
    std::vector<int64_t> y;
    otc::testing::makeData(N, D, C, 12, x, y);
    Array ax, ay;
    ax.dtype = DType::F32;
    ax.shape = {N, D};
    ax.data.assign(reinterpret_cast<uint8_t *>(x.data()),
                   reinterpret_cast<uint8_t *>(x.data() + x.size()));
    ay.dtype = DType::I64;
    ay.shape = {N};
    ay.data.assign(reinterpret_cast<uint8_t *>(y.data()),
                   reinterpret_cast<uint8_t *>(y.data() + y.size()));
    writeNpy(gDir + "/x.npy", ax);
    writeNpy(gDir + "/y.npy", ay);
  }
  ASSERT_EQ(otc_comm_barrier(gComm), nullptr);
  otc::testing::LinearProgram p(0, model, D, C, 16, 2);
  std::vector<std::string> args = {"train",
                                   "--data",
                                   "x=" + gDir + "/x.npy",
                                   "--data",
                                   "y=" + gDir + "/y.npy",
                                   "--eval-data",
                                   "x=" + gDir + "/x.npy",
                                   "--eval-data",
                                   "y=" + gDir + "/y.npy",
                                   "--epochs",
                                   "2",
                                   "--log-every",
                                   "4",
                                   "--checkpoint-dir",
                                   gDir + "/ck",
                                   "--metrics",
                                   gDir + "/m.jsonl",
                                   "--export",
                                   gDir + "/out.onnx"};
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  ::testing::internal::CaptureStderr();
  int rc = driverMain(int(argv.size()), argv.data(), &p.entry, gComm);
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(rc, 0) << err;
  if (otc_comm_rank(gComm) != 0) {
    EXPECT_EQ(err, ""); // only rank 0 reports
    return;
  }
  EXPECT_NE(err.find("eval: accuracy"), std::string::npos) << err;
  EXPECT_NE(err.find("/256) loss"), std::string::npos) << err;
  EXPECT_TRUE(std::ifstream(gDir + "/ck/ckpt-16.otcc").good());
  EXPECT_TRUE(std::ifstream(gDir + "/out.onnx").good());
  std::ifstream m(gDir + "/m.jsonl");
  std::string line;
  bool sawBytes = false;
  while (std::getline(m, line))
    if (line.find("\"bytes_sent\":60") != std::string::npos)
      sawBytes = true; // (3*4 + 3) floats per step
  EXPECT_TRUE(sawBytes);
}

//--- The compressed all-reduce ------------------------------------------------

otc_compress_desc_t topkInt8Desc(float ratio, int64_t block, bool feedback) {
  otc_compress_desc_t d{};
  d.method = OTCK_COMPRESS_TOPK_INT8;
  d.error_feedback = feedback;
  d.block_size = block;
  d.ratio = d.ratio_min = d.ratio_max = ratio;
  return d;
}

/// Rank r's bucket at a step: the same on every rank for (r, step).
std::vector<float> bucketOf(int r, int step, int64_t n, float scale = 1.f) {
  std::mt19937_64 rng(uint64_t(1000 * step + r));
  std::normal_distribution<float> normal;
  std::vector<float> g(static_cast<size_t>(n));
  for (float &v : g)
    v = normal(rng) * scale;
  return g;
}

uint64_t sentBytes() {
  uint64_t s = 0;
  otc_comm_bytes(gComm, &s, nullptr);
  return s;
}

/// The reference of a compressed mean of both ranks' buckets at `step`:
/// each compressed alone (with its own residual, updated), each payload
/// decompressed alone, the two averaged.
std::vector<float> referenceMean(const otck_compress_config &cfg, int64_t n,
                                 int step,
                                 std::vector<std::vector<float>> &residuals) {
  std::vector<uint8_t> payload(
      static_cast<size_t>(otck_compress_payload_bytes(&cfg, n)));
  std::vector<float> want(static_cast<size_t>(n), 0.f);
  for (int r = 0; r < 2; ++r) {
    std::vector<float> g = bucketOf(r, step, n), dec(g.size());
    EXPECT_EQ(otck_compress_f32(&cfg, n, g.data(), residuals[size_t(r)].data(),
                                payload.data()),
              0);
    otck_decompress_sum_f32(&cfg, n, payload.data(), 1, 1.f, dec.data());
    for (size_t i = 0; i < want.size(); ++i)
      want[i] += dec[i];
  }
  for (float &v : want)
    v *= 0.5f;
  return want;
}

/// A topk-int8 bucket of n elements with error feedback, its payload bytes,
/// and the residuals of the session and of referenceMean.
struct ReferenceBucket {
  ReferenceBucket(int64_t n, float ratio, int64_t block)
      : n(n), d(topkInt8Desc(ratio, block, true)), cfg{OTCK_COMPRESS_TOPK_INT8,
                                                       block, ratio, 0},
        p(otck_compress_payload_bytes(&cfg, n)),
        residual(static_cast<size_t>(n), 0.f),
        refResidual(2, std::vector<float>(static_cast<size_t>(n), 0.f)) {}
  const int64_t n;
  const int rank = otc_comm_rank(gComm);
  otc_compress_desc_t d;
  otck_compress_config cfg;
  const int64_t p;
  CompressState state;
  std::vector<float> residual;
  std::vector<std::vector<float>> refResidual;
};

// Reference: compress every rank's bucket (with its own residual), decompress
// each payload alone, average. Every rank checks the mean and its residual.
TEST(Mpi, CompressedMeanEqualsReference) {
  ReferenceBucket b(1000, 0.2f, 64);
  for (int step = 1; step <= 3; ++step) {
    StepComm sc{gComm, &b.state, step, 77};
    std::vector<float> want = referenceMean(b.cfg, b.n, step, b.refResidual);
    std::vector<float> data = bucketOf(b.rank, step, b.n);
    uint64_t before = sentBytes();
    ASSERT_EQ(compressedReduce(sc, b.d, data.data(), b.n, b.residual.data(), 0),
              OTC_STEP_OK);
    // P * (W - 1) for the all-gather, 4 for the finiteness flag.
    EXPECT_EQ(sentBytes() - before, uint64_t(b.p) * 1 + 4);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(data[i], want[i], 1e-6f * (1.f + std::fabs(want[i])))
          << "step " << step << " element " << i;
      ASSERT_NEAR(b.residual[i], b.refResidual[size_t(b.rank)][i], 1e-6f)
          << "step " << step << " element " << i;
    }
  }
}

// A bucket of more than 2^20 elements goes in pieces (compressed.cpp): the
// same mean, residual and bytes as one compression of the whole bucket, bit
// for bit. The size leaves a short last piece with a short last block.
constexpr int64_t kPiecesBucket = (int64_t(5) << 19) + 77;

TEST(Mpi, BucketInPiecesEqualsWholeReference) {
  ReferenceBucket b(kPiecesBucket, 0.1f, 256);
  for (int step = 1; step <= 2; ++step) {
    StepComm sc{gComm, &b.state, step, 3};
    std::vector<float> want = referenceMean(b.cfg, b.n, step, b.refResidual);
    std::vector<float> data = bucketOf(b.rank, step, b.n);
    uint64_t before = sentBytes();
    ASSERT_EQ(compressedReduce(sc, b.d, data.data(), b.n, b.residual.data(), 0),
              OTC_STEP_OK);
    EXPECT_EQ(sentBytes() - before, uint64_t(b.p) + 4);
    EXPECT_EQ(data, want) << "step " << step;
    EXPECT_EQ(b.residual, b.refResidual[size_t(b.rank)]) << "step " << step;
    EXPECT_EQ(b.state.buckets[0].steps, step);
  }

  // A NaN in the second piece on one rank: both skip after the last piece,
  // with every piece gathered, and the whole residual is restored.
  std::vector<float> kept = b.residual;
  StepComm sc{gComm, &b.state, 3, 3};
  std::vector<float> data = bucketOf(b.rank, 3, b.n);
  if (b.rank == 1)
    data[size_t(3) << 19] = NAN;
  uint64_t before = sentBytes();
  EXPECT_EQ(compressedReduce(sc, b.d, data.data(), b.n, b.residual.data(), 0),
            OTC_STEP_SKIPPED_NONFINITE);
  EXPECT_EQ(sentBytes() - before, uint64_t(b.p) + 4);
  EXPECT_EQ(b.residual, kept);
  EXPECT_EQ(b.state.buckets[0].steps, 2);
}

// The same in pieces over an SDP owner group (both ranks): the group's
// exchange, no flag; a bad piece is remembered for agree_finite and the
// step goes on.
TEST(Mpi, GroupBucketInPiecesEqualsWholeReference) {
  ReferenceBucket b(kPiecesBucket, 0.1f, 256);
  const std::vector<std::vector<int64_t>> groups = {{0, 1}};
  splitGroups(gComm, groups);
  StepComm sc{gComm, &b.state, 1, 3};
  sc.groups = &groups;
  std::vector<float> want = referenceMean(b.cfg, b.n, 1, b.refResidual);
  std::vector<float> data = bucketOf(b.rank, 1, b.n);
  uint64_t before = sentBytes();
  ASSERT_EQ(groupCompressedAllReduceCallback(&sc, 0, &b.d, data.data(), b.n,
                                             b.residual.data(), nullptr, 0.f,
                                             nullptr, 0),
            OTC_STEP_OK);
  ASSERT_EQ(waitCollectivesCallback(&sc), OTC_STEP_OK);
  EXPECT_EQ(sentBytes() - before, uint64_t(b.p));
  EXPECT_EQ(data, want);
  EXPECT_EQ(b.residual, b.refResidual[size_t(b.rank)]);
  EXPECT_FALSE(sc.pendingNonfinite);

  sc.step = 2;
  data = bucketOf(b.rank, 2, b.n);
  if (b.rank == 1)
    data[size_t(3) << 19] = NAN;
  ASSERT_EQ(groupCompressedAllReduceCallback(&sc, 0, &b.d, data.data(), b.n,
                                             b.residual.data(), nullptr, 0.f,
                                             nullptr, 0),
            OTC_STEP_OK);
  ASSERT_EQ(waitCollectivesCallback(&sc), OTC_STEP_OK);
  EXPECT_EQ(sc.pendingNonfinite, b.rank == 1); // agree_finite tells the other
}

/// The reference of a compressed mean with momentum correction and factor
/// masking at `step`: each rank's velocity takes its bucket (u = m u + g),
/// is compressed with its tail (w = u + m/(1-m) u) and its residual, and is
/// zeroed where its payload sends; elsewhere the tail leaves the residual.
std::vector<float>
referenceMaskedMean(const otck_compress_config &cfg, int64_t n, int step,
                    float momentum, std::vector<std::vector<float>> &residuals,
                    std::vector<std::vector<float>> &velocities) {
  std::vector<uint8_t> payload(
      static_cast<size_t>(otck_compress_payload_bytes(&cfg, n)));
  std::vector<float> want(static_cast<size_t>(n), 0.f);
  for (int r = 0; r < 2; ++r) {
    std::vector<float> g = bucketOf(r, step, n), dec(g.size());
    std::vector<float> &u = velocities[size_t(r)];
    const float ahead = float(double(momentum) / (1.0 - double(momentum)));
    std::vector<float> w(u.size());
    for (size_t i = 0; i < u.size(); ++i) {
      const float decayed = momentum * u[i];
      u[i] = decayed + g[i];
      const float tail = ahead * u[i];
      w[i] = tail + u[i];
    }
    EXPECT_EQ(otck_compress_f32(&cfg, n, w.data(), residuals[size_t(r)].data(),
                                payload.data()),
              0);
    EXPECT_EQ(otck_compress_mask_sent_tail_f32(&cfg, n, payload.data(), ahead,
                                               u.data(),
                                               residuals[size_t(r)].data()),
              0);
    otck_decompress_sum_f32(&cfg, n, payload.data(), 1, 1.f, dec.data());
    for (size_t i = 0; i < want.size(); ++i)
      want[i] += dec[i];
  }
  for (float &v : want)
    v *= 0.5f;
  return want;
}

// Momentum correction with factor masking, whole and in pieces: the
// mean, the residual and the velocity of the reference bit for bit over 3
// steps; the velocity holds exactly k zeros per block (what was sent: the
// data has no zeros of its own) and carries the rest to the next step.
TEST(Mpi, FactorMaskingEqualsReference) {
  for (int64_t n : {int64_t(1000), kPiecesBucket}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    ReferenceBucket b(n, 0.1f, 64);
    const int64_t k = otck_compress_k(&b.cfg);
    std::vector<float> velocity(size_t(n), 0.f);
    std::vector<std::vector<float>> refVelocity(
        2, std::vector<float>(size_t(n), 0.f));
    for (int step = 1; step <= 3; ++step) {
      StepComm sc{gComm, &b.state, step, 77};
      std::vector<float> want =
          referenceMaskedMean(b.cfg, n, step, 0.9f, b.refResidual, refVelocity);
      std::vector<float> data = bucketOf(b.rank, step, n);
      uint64_t before = sentBytes();
      ASSERT_EQ(compressedReduce(sc, b.d, data.data(), n, b.residual.data(), 0,
                                 velocity.data(), 0.9f),
                OTC_STEP_OK);
      EXPECT_EQ(sentBytes() - before, uint64_t(b.p) + 4); // as without
      ASSERT_EQ(data, want) << "step " << step;
      ASSERT_EQ(b.residual, b.refResidual[size_t(b.rank)]) << "step " << step;
      ASSERT_EQ(velocity, refVelocity[size_t(b.rank)]) << "step " << step;
      for (int64_t begin = 0; begin + 64 <= n; begin += 64)
        ASSERT_EQ(std::count(velocity.begin() + begin,
                             velocity.begin() + begin + 64, 0.f),
                  k)
            << "step " << step << " block at " << begin;
    }
  }
}

TEST(Mpi, AdaptiveRatioAgreesOnAllRanks) {
  const int64_t n = 512;
  const int rank = otc_comm_rank(gComm);
  otc_compress_desc_t d = topkInt8Desc(0.3f, 64, false);
  d.adaptive = 1, d.ratio_min = 0.02f, d.ratio_max = 0.5f;
  CompressState state;
  auto globalNorm = [&](int step, float scale) {
    double s = 0;
    for (int r = 0; r < 2; ++r)
      for (float v : bucketOf(r, step, n, scale))
        s += double(v) * v;
    return std::sqrt(s / 2);
  };
  double norm0 = globalNorm(1, 1.f);
  float ratios[3] = {};
  const float scales[3] = {1.f, 0.4f, 0.01f};
  for (int step = 1; step <= 3; ++step) {
    StepComm sc{gComm, &state, step, 5};
    std::vector<float> data = bucketOf(rank, step, n, scales[step - 1]);
    uint64_t before = sentBytes();
    ASSERT_EQ(compressedReduce(sc, d, data.data(), n, nullptr, 0), OTC_STEP_OK);
    ratios[step - 1] = state.buckets[0].ratio;
    float want =
        adaptiveRatio(globalNorm(step, scales[step - 1]), norm0, 0.02f, 0.5f);
    EXPECT_FLOAT_EQ(ratios[step - 1], want) << "step " << step;
    otck_compress_config cfg{OTCK_COMPRESS_TOPK_INT8, 64, want, 0};
    // + 8 for the norm's all-reduce.
    EXPECT_EQ(sentBytes() - before,
              uint64_t(otck_compress_payload_bytes(&cfg, n)) + 4 + 8);
  }
  EXPECT_FLOAT_EQ(ratios[0], 0.5f);
  EXPECT_LT(ratios[1], ratios[0]);
  EXPECT_FLOAT_EQ(ratios[2], 0.02f);
  EXPECT_DOUBLE_EQ(state.buckets[0].norm0, norm0);
  // Every rank computed the same ratios.
  float other[3];
  MPI_Allreduce(ratios, other, 3, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(other[i], ratios[i]);
}

/// Rank r's step-1 bucket of 300 elements, topk-int8 0.25 / 64 with error
/// feedback, with fresh compression state.
class MpiBucket : public ::testing::Test {
protected:
  const int64_t n = 300;
  const int rank = otc_comm_rank(gComm);
  otc_compress_desc_t d = topkInt8Desc(0.25f, 64, true);
  CompressState state;
  std::vector<float> residual = std::vector<float>(size_t(n), 0.f);
  StepComm sc{gComm, &state, 1, 0};
  std::vector<float> data = bucketOf(rank, 1, n);
};

TEST_F(MpiBucket, NonFiniteOnOneRankSkipsOnBoth) {
  ASSERT_EQ(compressedReduce(sc, d, data.data(), n, residual.data(), 0),
            OTC_STEP_OK);
  std::vector<float> kept = residual;
  sc.step = 2;
  data = bucketOf(rank, 2, n);
  if (rank == 1)
    data[17] = NAN;
  uint64_t before = sentBytes();
  EXPECT_EQ(compressedReduce(sc, d, data.data(), n, residual.data(), 0),
            OTC_STEP_SKIPPED_NONFINITE);
  EXPECT_EQ(sentBytes() - before, 4u); // the flag only: nothing gathered
  EXPECT_EQ(residual, kept);           // rank 0 compressed, then restored
  EXPECT_EQ(state.buckets[0].steps, 1);

  // Dense warm-up steps: a plain mean, n * 4 bytes, residual untouched.
  d.warmup_steps = 5;
  sc.step = 3;
  data = bucketOf(rank, 3, n);
  std::vector<float> a = bucketOf(0, 3, n), b = bucketOf(1, 3, n);
  before = sentBytes();
  ASSERT_EQ(compressedReduce(sc, d, data.data(), n, residual.data(), 0),
            OTC_STEP_OK);
  EXPECT_EQ(sentBytes() - before, uint64_t(n) * 4);
  for (size_t i = 0; i < data.size(); ++i)
    EXPECT_FLOAT_EQ(data[i], (a[i] + b[i]) / 2);
  EXPECT_EQ(residual, kept);
  // A non-finite dense mean skips on both ranks as well.
  data = bucketOf(rank, 4, n);
  if (rank == 0)
    data[0] = INFINITY;
  EXPECT_EQ(compressedReduce(sc, d, data.data(), n, residual.data(), 0),
            OTC_STEP_SKIPPED_NONFINITE);
}

// Factor masking and skipped steps: a bucket that is not finite on one rank
// leaves every rank's velocity as it was (rank 0 had accumulated and masked
// it); a dense step sends the whole velocity and keeps it (momentum SGD),
// and when that mean is not finite the session's undo
// (CompressState::undoStep) brings back the velocity from before the step.
TEST_F(MpiBucket, FactorMaskingSkipRestoresTheVelocity) {
  std::vector<float> velocity(size_t(n), 0.f);
  ASSERT_EQ(compressedReduce(sc, d, data.data(), n, residual.data(), 0,
                             velocity.data(), 0.9f),
            OTC_STEP_OK);
  const std::vector<float> kept = residual, keptVelocity = velocity;
  EXPECT_EQ(std::count(velocity.begin(), velocity.end(), 0.f),
            (n / 64) * 16 + 16) // k = 16 per block, the short one too
      << "the sent elements are zero";
  sc.step = 2;
  data = bucketOf(rank, 2, n);
  if (rank == 1)
    data[17] = NAN;
  state.touched.clear();
  EXPECT_EQ(compressedReduce(sc, d, data.data(), n, residual.data(), 0,
                             velocity.data(), 0.9f),
            OTC_STEP_SKIPPED_NONFINITE);
  EXPECT_EQ(residual, kept);
  EXPECT_EQ(velocity, keptVelocity);
  EXPECT_TRUE(state.touched.empty());

  // Dense warm-up: the mean of the ranks' velocities; all of it is sent,
  // none of it masked.
  d.warmup_steps = 5;
  sc.step = 3;
  data = bucketOf(rank, 3, n);
  std::vector<float> mine = velocity, other(static_cast<size_t>(n));
  for (size_t i = 0; i < mine.size(); ++i) {
    const float decayed = 0.9f * mine[i];
    mine[i] = decayed + data[i];
  }
  MPI_Allreduce(mine.data(), other.data(), int(n), MPI_FLOAT, MPI_SUM,
                MPI_COMM_WORLD);
  state.touched.clear();
  ASSERT_EQ(compressedReduce(sc, d, data.data(), n, residual.data(), 0,
                             velocity.data(), 0.9f),
            OTC_STEP_OK);
  for (size_t i = 0; i < data.size(); ++i)
    EXPECT_FLOAT_EQ(data[i], other[i] / 2);
  EXPECT_EQ(velocity, mine);
  EXPECT_EQ(residual, kept);
  // A non-finite dense mean: skipped, and the undo restores the velocity.
  const std::vector<float> before = velocity;
  data = bucketOf(rank, 4, n);
  if (rank == 0)
    data[0] = INFINITY;
  state.touched.clear();
  EXPECT_EQ(compressedReduce(sc, d, data.data(), n, residual.data(), 0,
                             velocity.data(), 0.9f),
            OTC_STEP_SKIPPED_NONFINITE);
  EXPECT_NE(velocity, before); // it took the step's gradient
  state.undoStep();
  EXPECT_EQ(velocity, before);
  EXPECT_EQ(residual, kept);
}

// Overlap: the call returns at once and the step's result, here a skip both
// ranks agree on, comes from the wait; without overlap, from the call.
TEST_F(MpiBucket, OverlapDefersTheResultToTheWait) {
  if (rank == 1)
    data[5] = NAN;
  int rc = compressedAllReduceCallback(&sc, &d, data.data(), n, residual.data(),
                                       nullptr, 0.f, nullptr, 0);
  if (rc == OTC_STEP_SKIPPED_NONFINITE)
    GTEST_SKIP() << "MPI does not provide MPI_THREAD_SERIALIZED: no overlap";
  EXPECT_EQ(rc, OTC_STEP_OK);
  EXPECT_EQ(waitCollectivesCallback(&sc), OTC_STEP_SKIPPED_NONFINITE);
  EXPECT_EQ(waitCollectivesCallback(&sc), OTC_STEP_OK); // reset

  otc_comm_set_overlap(gComm, 0);
  data = bucketOf(rank, 1, n);
  if (rank == 0)
    data[7] = INFINITY;
  EXPECT_EQ(compressedAllReduceCallback(&sc, &d, data.data(), n,
                                        residual.data(), nullptr, 0.f, nullptr,
                                        0),
            OTC_STEP_SKIPPED_NONFINITE);
  EXPECT_EQ(waitCollectivesCallback(&sc), OTC_STEP_OK);
  otc_comm_set_overlap(gComm, 1);
}

// The driver with the compressed fixture on 2 ranks: one rank's shard holds
// a NaN sample, both skip that step together; bytes_sent is the formula.
// Finite gradients whose sum over the ranks overflows float: every rank
// decodes the same infinite mean and skips, whole or in pieces; undoing the
// step (as the session does) restores the residual.
TEST(Mpi, OverflowingMeanSkipsTheStepOnEveryRank) {
  for (int64_t n : {int64_t(4096), (int64_t(1) << 20) + 4096}) {
    SCOPED_TRACE(n);
    CompressState state;
    otc_compress_desc_t d = topkInt8Desc(1.0f, 64, true);
    d.method = OTCK_COMPRESS_TOPK; // fp32 values: the sum itself overflows
    StepComm sc{gComm, &state, 1, 0};
    std::vector<float> data(static_cast<size_t>(n), 1.f);
    std::vector<float> residual(static_cast<size_t>(n), 0.25f);
    data[static_cast<size_t>(n - 3)] = 2e38f;
    residual[static_cast<size_t>(n - 3)] = 0.f;
    const std::vector<float> before = residual;
    EXPECT_EQ(compressedReduce(sc, d, data.data(), n, residual.data(), 0),
              OTC_STEP_SKIPPED_NONFINITE);
    EXPECT_EQ(state.buckets[0].steps, 0);
    state.undoStep();
    EXPECT_EQ(residual, before);
  }
}

TEST(Mpi, DriverCompressedOnTwoRanks) {
  const int64_t D = 4, C = 3, N = 256;
  std::string model = gDir + "/linear.onnx";
  if (otc_comm_rank(gComm) == 0) {
    std::vector<float> x;
    std::vector<int64_t> y;
    otc::testing::makeData(N, D, C, 12, x, y);
    x[size_t(70 * D)] = NAN; // global batch 2 (32 samples), rank 0's half
    Array ax, ay;
    ax.dtype = DType::F32;
    ax.shape = {N, D};
    ax.data.assign(reinterpret_cast<uint8_t *>(x.data()),
                   reinterpret_cast<uint8_t *>(x.data() + x.size()));
    ay.dtype = DType::I64;
    ay.shape = {N};
    ay.data.assign(reinterpret_cast<uint8_t *>(y.data()),
                   reinterpret_cast<uint8_t *>(y.data() + y.size()));
    writeNpy(gDir + "/xc.npy", ax);
    writeNpy(gDir + "/yc.npy", ay);
  }
  ASSERT_EQ(otc_comm_barrier(gComm), nullptr);
  otc_compress_desc_t d = topkInt8Desc(0.5f, 8, true);
  otc::testing::LinearProgram p(0, model, D, C, 16, 2, 0.1f, 0.9f, &d);
  std::vector<std::string> args = {"train",
                                   "--data",
                                   "x=" + gDir + "/xc.npy",
                                   "--data",
                                   "y=" + gDir + "/yc.npy",
                                   "--no-shuffle",
                                   "--epochs",
                                   "1",
                                   "--log-every",
                                   "2",
                                   "--metrics",
                                   gDir + "/mc.jsonl"};
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  ::testing::internal::CaptureStderr();
  int rc = driverMain(int(argv.size()), argv.data(), &p.entry, gComm);
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(rc, 0) << err;
  if (otc_comm_rank(gComm) != 0)
    return;
  EXPECT_NE(err.find("step 3 skipped: non-finite gradient on some rank"),
            std::string::npos)
      << err;
  // 15 floats in blocks of 8: 2 blocks x (4 + 4 x (1 + 1)) = 24 bytes.
  otck_compress_config cfg{OTCK_COMPRESS_TOPK_INT8, 8, 0.5f, 0};
  ASSERT_EQ(otck_compress_payload_bytes(&cfg, 15), 24);
  std::ifstream m(gDir + "/mc.jsonl");
  std::string line;
  int steps = 0, skips = 0;
  int64_t lastStep = 0;
  while (std::getline(m, line)) {
    auto j = nlohmann::json::parse(line);
    if (j.value("skipped", false)) {
      ++skips;
      EXPECT_EQ(j["step"], 3);
      EXPECT_EQ(j["bytes_sent"], 4); // the flag
    } else {
      ++steps;
      EXPECT_EQ(j["bytes_sent"], 24 * 1 + 4) << line;
      EXPECT_EQ(j["bytes_received"], 24 * 1 + 4) << line;
      lastStep = j["step"];
    }
  }
  EXPECT_EQ(skips, 1);
  EXPECT_EQ(lastStep, 7); // 8 global batches, one skipped
  EXPECT_EQ(steps, 4);    // 2, 4, 6 and the last, 7
}

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (otc_status_t st = otc_comm_create_mpi(&gComm)) {
    std::fprintf(stderr, "cannot create the MPI communicator: %s\n",
                 otc_status_message(st));
    return 1;
  }
  // One shared folder, named by rank 0 (empty name: it could not make one,
  // and every rank gives up together).
  char dir[4096] = {0};
  if (otc_comm_rank(gComm) == 0) {
    std::string made = otc::testing::makeTempDir("otc-mpi-test");
    if (!made.empty() && made.size() < sizeof dir) {
      std::strcpy(dir, made.c_str());
      otc::testing::writeLinearModel(made + "/linear.onnx", 4, 3, 1);
    }
  }
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (dir[0] == 0) {
    otc_comm_release(gComm);
    return 1;
  }
  gDir = dir;
  int failed = RUN_ALL_TESTS() != 0;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  int rank = otc_comm_rank(gComm);
  otc_comm_release(gComm);
  if (rank == 0) {
    std::string cmd = "rm -rf '" + gDir + "'";
    (void)std::system(cmd.c_str());
  }
  return failed;
}
