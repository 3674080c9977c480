//===- compressed_test.cpp - The compressed all-reduce on one rank --------===//
//
// Through the runtime path: a hand-written program reduces two gradient
// buckets with compressed_all_reduce_mean_f32, checked against a reference
// topk-int8 written from otc/compress.h's description; plus the driver on
// the compressed linear fixture (skips, metrics, checkpoints, export).
//
//===----------------------------------------------------------------------===//

#include "comm/compressed.h"
#include "core/checkpoint.h"
#include "core/session.h"
#include "core/test_fixture.h"
#include "tooling/data.h"
#include "tooling/driver.h"

#include <otc/compress.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>

using namespace otc;

namespace {

using otc::testing::StatusText;
using otc::testing::take;

std::string readFile(const std::string &p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFile(const std::string &p, const std::string &bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

otc_compress_desc_t topkInt8(float ratio, int64_t block, bool feedback) {
  otc_compress_desc_t d{};
  d.method = OTCK_COMPRESS_TOPK_INT8;
  d.error_feedback = feedback;
  d.block_size = block;
  d.ratio = ratio;
  d.ratio_min = ratio;
  d.ratio_max = ratio;
  return d;
}

/// topk-int8 as otc/compress.h describes it, compressed and decompressed:
/// per block the k = ceil(ratio * B) largest |v|, quantised to int8 with
/// scale absmax / 127 (round to nearest); everything else 0.
std::vector<float> refTopkInt8(const std::vector<float> &v, int64_t block,
                               float ratio) {
  int64_t k = std::clamp<int64_t>(
      int64_t(std::ceil(double(ratio) * double(block))), 1, block);
  std::vector<float> out(v.size(), 0.f);
  for (size_t b0 = 0; b0 < v.size(); b0 += size_t(block)) {
    size_t len = std::min(size_t(block), v.size() - b0);
    std::vector<size_t> idx(len);
    std::iota(idx.begin(), idx.end(), b0);
    size_t kk = std::min(size_t(k), len);
    std::partial_sort(
        idx.begin(), idx.begin() + long(kk), idx.end(),
        [&](size_t a, size_t b) { return std::fabs(v[a]) > std::fabs(v[b]); });
    float absmax = 0;
    for (size_t i = 0; i < kk; ++i)
      absmax = std::max(absmax, std::fabs(v[idx[i]]));
    float scale = absmax / 127.f;
    if (scale == 0)
      continue;
    for (size_t i = 0; i < kk; ++i) {
      float q = std::clamp(std::nearbyint(v[idx[i]] / scale), -127.f, 127.f);
      out[idx[i]] = q * scale;
    }
  }
  return out;
}

void expectNear(const std::vector<float> &got, const std::vector<float> &want,
                const char *what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-6f * (1.f + std::fabs(want[i])))
        << what << " element " << i;
}

//--- A two-bucket program ---------------------------------------------------

// train_step copies input x into the two gradient buckets and reduces them
// (bucket 0 first), returning the first non-zero code as compiled programs
// do. Globals: entry points carry no state.
struct BucketLayout {
  int64_t n0 = 0, n1 = 0;
  otc_compress_desc_t desc{};
  uint64_t x = 0, g0 = 0, g1 = 0, r0 = 0, r1 = 0, arena = 0;
  std::vector<int64_t> stepsSeen;
} gB;

int bucketTrainStep(uint8_t *arena, const otc_step_context_t *ctx) {
  gB.stepsSeen.push_back(ctx->step);
  std::memcpy(arena + gB.g0, arena + gB.x, size_t(gB.n0) * 4);
  std::memcpy(arena + gB.g1, arena + gB.x + gB.n0 * 4, size_t(gB.n1) * 4);
  bool ef = gB.desc.error_feedback != 0;
  if (int rc = ctx->compressed_all_reduce_mean_f32(
          ctx->comm, &gB.desc, reinterpret_cast<float *>(arena + gB.g0), gB.n0,
          ef ? reinterpret_cast<float *>(arena + gB.r0) : nullptr, nullptr, 0.f,
          nullptr, 0))
    return rc;
  if (int rc = ctx->compressed_all_reduce_mean_f32(
          ctx->comm, &gB.desc, reinterpret_cast<float *>(arena + gB.g1), gB.n1,
          ef ? reinterpret_cast<float *>(arena + gB.r1) : nullptr, nullptr, 0.f,
          nullptr, 1))
    return rc;
  return ctx->wait_collectives(ctx->comm);
}

class CompressedTest : public ::testing::Test {
protected:
  void SetUp() override { ASSERT_OK(otc_comm_create_local(&comm)); }
  void TearDown() override {
    otc_session_release(session);
    otc_session_release(other);
    otc_program_release(program);
    otc_comm_release(comm);
  }

  void open(const otc_compress_desc_t &desc, int64_t n0 = 1000,
            int64_t n1 = 64) {
    gB = BucketLayout();
    gB.n0 = n0, gB.n1 = n1, gB.desc = desc;
    uint64_t at = 0;
    auto place = [&](int64_t floats) {
      uint64_t o = at;
      at += (uint64_t(floats) * 4 + 63) / 64 * 64;
      return o;
    };
    gB.x = place(n0 + n1);
    gB.g0 = place(n0);
    gB.g1 = place(n1);
    gB.r0 = place(n0);
    gB.r1 = place(n1);
    gB.arena = at;
    auto tensor = [](const char *name, int64_t n, uint64_t off,
                     const char *more) {
      return std::string("{\"name\":\"") + name +
             "\",\"dtype\":\"f32\",\"shape\":[" + more + std::to_string(n) +
             "],\"offset\":" + std::to_string(off) + "}";
    };
    manifest = "{\"otc_manifest_version\":1,\"world_size\":1,\"batch\":1,"
               "\"arena_bytes\":" +
               std::to_string(gB.arena) + ",\"params\":[],\"state\":[" +
               tensor("bucket0.residual", n0, gB.r0, "") + "," +
               tensor("bucket1.residual", n1, gB.r1, "") + "],\"inputs\":[" +
               tensor("x", n0 + n1, gB.x, "1,") + "]}";
    entry = otc_program_entry_t{};
    entry.abi_version = OTC_PROGRAM_ABI_VERSION;
    entry.manifest_json = manifest.c_str();
    entry.arena_bytes = gB.arena;
    entry.train_step = bucketTrainStep;
    ASSERT_OK(otc_program_from_entry(&entry, &program));
    ASSERT_OK(otc_session_create(program, comm, nullptr, &session));
  }

  std::vector<float> input(uint64_t seed, float scale = 1.f) {
    std::mt19937_64 rng(seed);
    // Magnitudes in [0.5, 1): distinct, and no kept value quantises to 0.
    std::uniform_real_distribution<float> mag(0.5f, 1.f);
    std::vector<float> x(size_t(gB.n0 + gB.n1));
    for (float &v : x)
      v = (rng() & 1 ? 1.f : -1.f) * mag(rng) * scale;
    return x;
  }

  void step(otc_session_t *s, const std::vector<float> &x) {
    ASSERT_OK(otc_session_bind_input(s, "x", x.data(), x.size() * 4));
    ASSERT_OK(otc_session_train_step(s, nullptr));
  }

  static std::vector<float> read(otc_session_t *s, uint64_t off, int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    std::memcpy(v.data(), s->arena.get() + off, size_t(n) * 4);
    return v;
  }
  std::vector<float> g0(otc_session_t *s = nullptr) {
    return read(s ? s : session, gB.g0, gB.n0);
  }
  std::vector<float> g1(otc_session_t *s = nullptr) {
    return read(s ? s : session, gB.g1, gB.n1);
  }
  std::vector<float> r0(otc_session_t *s = nullptr) {
    return read(s ? s : session, gB.r0, gB.n0);
  }
  std::vector<float> r1(otc_session_t *s = nullptr) {
    return read(s ? s : session, gB.r1, gB.n1);
  }
  std::vector<float> part(const std::vector<float> &x, int bucket) {
    return bucket == 0 ? std::vector<float>(x.begin(), x.begin() + gB.n0)
                       : std::vector<float>(x.begin() + gB.n0, x.end());
  }

  otc_comm_t *comm = nullptr;
  std::string manifest;
  otc_program_entry_t entry{};
  otc_program_t *program = nullptr;
  otc_session_t *session = nullptr, *other = nullptr;
};

TEST(AdaptiveRatio, FormulaIsMonotoneAndBounded) {
  // ratio = clamp(ratio_max * norm / norm0, ratio_min, ratio_max)
  EXPECT_FLOAT_EQ(adaptiveRatio(2.0, 4.0, 0.01f, 0.5f), 0.25f);
  EXPECT_FLOAT_EQ(adaptiveRatio(4.0, 4.0, 0.01f, 0.5f), 0.5f);
  EXPECT_FLOAT_EQ(adaptiveRatio(9.0, 4.0, 0.01f, 0.5f), 0.5f);
  EXPECT_FLOAT_EQ(adaptiveRatio(0.01, 4.0, 0.01f, 0.5f), 0.01f);
  EXPECT_FLOAT_EQ(adaptiveRatio(0.0, 4.0, 0.01f, 0.5f), 0.01f);
  EXPECT_FLOAT_EQ(adaptiveRatio(1.0, 0.0, 0.01f, 0.5f), 0.5f); // unset
  float prev = 0;
  for (double norm = 0; norm < 10; norm += 0.01) {
    float r = adaptiveRatio(norm, 3.0, 0.05f, 0.8f);
    EXPECT_GE(r, prev) << norm;
    EXPECT_GE(r, 0.05f);
    EXPECT_LE(r, 0.8f);
    prev = r;
  }
}

TEST_F(CompressedTest, TopkInt8MatchesTheReference) {
  open(topkInt8(0.25f, 64, false)); // 1000 = 15 blocks + a short one of 40
  std::vector<float> x = input(1);
  step(session, x);
  expectNear(g0(), refTopkInt8(part(x, 0), 64, 0.25f), "bucket 0");
  expectNear(g1(), refTopkInt8(part(x, 1), 64, 0.25f), "bucket 1");
  EXPECT_EQ(r0(), std::vector<float>(1000, 0.f)); // no error feedback
  EXPECT_EQ(otc_session_compress_buckets(session), 2);
  EXPECT_FLOAT_EQ(otc_session_compress_ratio(session, 0), 0.25f);
  uint64_t sent = 1, received = 1;
  otc_session_step_bytes(session, &sent, &received);
  EXPECT_EQ(sent, 0u); // one rank: no collective runs
  EXPECT_EQ(received, 0u);
  // The payload is what DESIGN §8 promises: k * 2 + 4 bytes per block.
  otck_compress_config cfg{OTCK_COMPRESS_TOPK_INT8, 64, 0.25f, 0};
  EXPECT_EQ(otck_compress_payload_bytes(&cfg, 1000), 16 * (16 * 2 + 4));
}

TEST_F(CompressedTest, ErrorFeedbackMatchesTheReference) {
  open(topkInt8(0.125f, 64, true));
  std::vector<float> rref[2] = {std::vector<float>(size_t(gB.n0), 0.f),
                                std::vector<float>(size_t(gB.n1), 0.f)};
  for (int s = 0; s < 4; ++s) {
    std::vector<float> x = input(10 + uint64_t(s));
    std::vector<float> rOld[2] = {r0(), r1()};
    step(session, x);
    std::vector<float> out[2] = {g0(), g1()}, rNew[2] = {r0(), r1()};
    for (int b = 0; b < 2; ++b) {
      std::vector<float> g = part(x, b), acc(g.size());
      for (size_t i = 0; i < g.size(); ++i)
        acc[i] = g[i] + rref[b][i];
      std::vector<float> want = refTopkInt8(acc, 64, 0.125f);
      for (size_t i = 0; i < g.size(); ++i)
        rref[b][i] = acc[i] - want[i];
      expectNear(out[b], want, "output");
      expectNear(rNew[b], rref[b], "residual");
      // g + r_old == decompressed + r_new, up to float rounding.
      for (size_t i = 0; i < g.size(); ++i)
        ASSERT_NEAR(g[i] + rOld[b][i], out[b][i] + rNew[b][i], 1e-6f)
            << "step " << s << " bucket " << b << " element " << i;
    }
  }
  EXPECT_EQ(otc_session_step(session), 4);
}

TEST_F(CompressedTest, NonFiniteSkipsAndLeavesNoTrace) {
  otc_compress_desc_t d = topkInt8(0.25f, 64, true);
  d.adaptive = 1, d.ratio_min = 0.05f, d.ratio_max = 0.5f;
  open(d);
  step(session, input(1));
  ASSERT_EQ(otc_session_step(session), 1);
  std::vector<float> r0Before = r0(), r1Before = r1();
  double norm0 = session->compress.buckets[0].norm0;
  ASSERT_GT(norm0, 0);

  // A NaN in bucket 1: bucket 0 is reduced (its residual updated), then
  // bucket 1 skips and the session undoes bucket 0 too.
  std::vector<float> x = input(2);
  x[size_t(gB.n0 + 3)] = NAN;
  step(session, x);
  EXPECT_EQ(otc_session_last_step_skipped(session), 1);
  EXPECT_EQ(otc_session_skipped_steps(session), 1);
  EXPECT_EQ(otc_session_step(session), 1);
  EXPECT_EQ(r0(), r0Before);
  EXPECT_EQ(r1(), r1Before);
  EXPECT_EQ(session->compress.buckets[0].norm0, norm0);
  EXPECT_EQ(session->compress.buckets[0].steps, 1);

  // An infinity in bucket 0 (with error feedback: g + r overflows too).
  x = input(3);
  x[5] = INFINITY;
  step(session, x);
  EXPECT_EQ(otc_session_last_step_skipped(session), 1);
  EXPECT_EQ(r0(), r0Before);
  EXPECT_EQ(r1(), r1Before);

  // The next good batch runs optimizer step 2: the skipped ones did not
  // advance ctx->step.
  step(session, input(4));
  EXPECT_EQ(otc_session_last_step_skipped(session), 0);
  EXPECT_EQ(otc_session_step(session), 2);
  EXPECT_EQ(gB.stepsSeen, (std::vector<int64_t>{1, 2, 2, 2}));
  EXPECT_NE(r0(), r0Before);
}

// Without the adaptive norm the compression kernel is what detects it.
TEST_F(CompressedTest, NonFiniteFoundByCompressRestoresTheResidual) {
  open(topkInt8(0.25f, 64, true));
  step(session, input(1));
  std::vector<float> r0Before = r0(), r1Before = r1();
  for (size_t at : {size_t(7), size_t(gB.n0 + 1)}) {
    std::vector<float> x = input(2);
    x[at] = -INFINITY;
    step(session, x);
    EXPECT_EQ(otc_session_last_step_skipped(session), 1) << at;
    EXPECT_EQ(r0(), r0Before) << at;
    EXPECT_EQ(r1(), r1Before) << at;
  }
  EXPECT_EQ(otc_session_skipped_steps(session), 2);
  EXPECT_EQ(otc_session_step(session), 1);
}

// fp16 and bf16 turn a finite |g| beyond their range into infinity: the step
// is skipped and reported rather than handing the optimizer an infinite
// gradient, and the residuals are as before.
TEST_F(CompressedTest, HalfPrecisionOverflowSkipsTheStep) {
  struct Case {
    otck_compress_method method;
    float beyond, within;
  };
  for (Case c : {Case{OTCK_COMPRESS_FP16, 1e5f, 6e4f},
                 Case{OTCK_COMPRESS_BF16, 3.4e38f, 3e38f}}) {
    SCOPED_TRACE(c.method);
    otc_compress_desc_t d{};
    d.method = c.method;
    d.error_feedback = 1;
    d.block_size = 256;
    otc_session_release(session);
    otc_program_release(program);
    session = nullptr, program = nullptr;
    open(d);
    step(session, input(1));
    ASSERT_EQ(otc_session_last_step_skipped(session), 0);
    std::vector<float> r0Before = r0(), r1Before = r1();
    std::vector<float> x = input(2);
    x[3] = c.beyond;
    step(session, x);
    EXPECT_EQ(otc_session_last_step_skipped(session), 1);
    EXPECT_EQ(otc_session_step(session), 1);
    EXPECT_EQ(r0(), r0Before);
    EXPECT_EQ(r1(), r1Before);
    // Within range it trains.
    x[3] = c.within;
    step(session, x);
    EXPECT_EQ(otc_session_last_step_skipped(session), 0);
    EXPECT_EQ(otc_session_step(session), 2);
  }
}

/// One rank's exchange called directly (no program): a local communicator
/// and the step's compression state, at step 1.
class OneRankExchange : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_OK(otc_comm_create_local(&comm));
    sc.comm = comm;
  }
  void TearDown() override { otc_comm_release(comm); }

  otc_comm_t *comm = nullptr;
  CompressState state;
  StepComm sc{nullptr, &state, 1, 0};
};

// An owner group that does not hold this rank: a hand-written program's
// mistake, refused before anything is compressed (the compiler names each
// rank's own groups only).
TEST_F(OneRankExchange, BucketOfAGroupWithoutThisRankIsRefused) {
  const std::vector<std::vector<int64_t>> groups = {{1}};
  sc.groups = &groups;
  otc_compress_desc_t d = topkInt8(0.25f, 64, false);
  std::vector<float> data(4096, 1.f);
  EXPECT_EQ(groupCompressedAllReduceCallback(&sc, 0, &d, data.data(), 4096,
                                             nullptr, nullptr, 0.f, nullptr, 0),
            OTC_STEP_ERR_COMM);
  const std::string why = takeCommError(comm);
  EXPECT_NE(why.find("does not hold rank 0"), std::string::npos) << why;
  EXPECT_EQ(data, std::vector<float>(4096, 1.f));
}

// Nesterov's momentum correction on one rank: g + m/(1-m) u is sent (the
// look-ahead m u + g and its tail), u is zeroed where sent, and where not
// the residual holds residual + look-ahead, as DGC's Nesterov masking would;
// a dense warm-up step sends the look-ahead whole and keeps u.
TEST_F(OneRankExchange, NesterovSendsTheLookAheadWithItsTail) {
  const int64_t n = 300;
  const float m = 0.75f; // m/(1-m) = 3
  otc_compress_desc_t d = topkInt8(0.25f, 64, true);
  d.nesterov = 1;
  std::mt19937 rng(9);
  std::normal_distribution<float> normal;
  std::vector<float> g(static_cast<size_t>(n)), u(g.size()), r(g.size());
  for (size_t i = 0; i < g.size(); ++i)
    g[i] = normal(rng), u[i] = normal(rng), r[i] = normal(rng);
  std::vector<float> uNew(g.size()), data = g;
  for (size_t i = 0; i < g.size(); ++i)
    uNew[i] = m * u[i] + g[i];
  const std::vector<float> rWas = r;
  ASSERT_EQ(compressedAllReduceCallback(&sc, &d, data.data(), n, r.data(),
                                        u.data(), m, nullptr, 0),
            OTC_STEP_OK);
  ASSERT_EQ(waitCollectivesCallback(&sc), OTC_STEP_OK);
  EXPECT_EQ(std::count(u.begin(), u.end(), 0.f), 5 * 16);
  for (size_t i = 0; i < u.size(); ++i) {
    const float lookAhead = m * uNew[i] + g[i];
    if (u[i] == 0.f) {
      EXPECT_NEAR(data[i], rWas[i] + g[i] + 3.f * uNew[i], 0.1f) << i;
    } else {
      EXPECT_EQ(u[i], uNew[i]) << i;
      EXPECT_EQ(data[i], 0.f) << i;
      EXPECT_NEAR(r[i], rWas[i] + lookAhead, 1e-4f) << i;
    }
  }
  // Dense warm-up: the look-ahead of the new u, sent whole; u kept.
  d.warmup_steps = 5;
  sc.step = 2;
  const std::vector<float> uBefore = u, rBefore = r;
  data = g;
  ASSERT_EQ(compressedAllReduceCallback(&sc, &d, data.data(), n, r.data(),
                                        u.data(), m, nullptr, 0),
            OTC_STEP_OK);
  ASSERT_EQ(waitCollectivesCallback(&sc), OTC_STEP_OK);
  for (size_t i = 0; i < u.size(); ++i) {
    const float decayed = m * uBefore[i];
    const float uNow = decayed + g[i];
    const float ahead = m * uNow;
    EXPECT_EQ(u[i], uNow) << i;
    EXPECT_EQ(data[i], ahead + g[i]) << i;
  }
  EXPECT_EQ(r, rBefore);
}

// Momentum correction with factor masking on one rank: the velocity takes
// the gradient, is what gets compressed (the mean is its decompression),
// and is zeroed where the payload sends; a skipped step restores every
// bucket's velocity and residual: the bad bucket's at once, the buckets
// before it through the session's undo, an adaptive bucket whose norm is
// not finite before anything is compressed.
TEST_F(OneRankExchange, MaskedAndRestoredOnASkippedStep) {
  const int64_t n = 300;
  otc_compress_desc_t d = topkInt8(0.25f, 64, true);
  std::mt19937 rng(4);
  std::normal_distribution<float> normal;
  auto randoms = [&] {
    std::vector<float> v(static_cast<size_t>(n));
    for (float &x : v)
      x = normal(rng);
    return v;
  };
  std::vector<float> g0 = randoms(), g1 = randoms(), u0 = randoms(),
                     u1 = randoms(), r0 = randoms(), r1 = randoms();
  const std::vector<float> u0Was = u0, u1Was = u1, r0Was = r0, r1Was = r1;

  // Bucket 0, what the kernels compute: the velocity with its tail
  // (momentum 0.75: w = u + 3 u) is compressed.
  const float m = 0.75f;
  otck_compress_config cfg{OTCK_COMPRESS_TOPK_INT8, 64, 0.25f, 0};
  std::vector<float> wantU = u0, wantR = r0, wantMean(static_cast<size_t>(n));
  std::vector<float> w(wantU.size());
  for (size_t i = 0; i < wantU.size(); ++i) {
    const float decayed = m * wantU[i];
    wantU[i] = decayed + g0[i];
    const float tail = 3.f * wantU[i];
    w[i] = tail + wantU[i];
  }
  const std::vector<float> uNew = wantU;
  std::vector<uint8_t> payload(size_t(otck_compress_payload_bytes(&cfg, n)));
  ASSERT_EQ(otck_compress_f32(&cfg, n, w.data(), wantR.data(), payload.data()),
            0);
  ASSERT_EQ(
      otck_decompress_sum_f32(&cfg, n, payload.data(), 1, 1.f, wantMean.data()),
      0);
  ASSERT_EQ(otck_compress_mask_sent_tail_f32(&cfg, n, payload.data(), 3.f,
                                             wantU.data(), wantR.data()),
            0);
  std::vector<float> data = g0;
  ASSERT_EQ(compressedAllReduceCallback(&sc, &d, data.data(), n, r0.data(),
                                        u0.data(), m, nullptr, 0),
            OTC_STEP_OK);
  ASSERT_EQ(waitCollectivesCallback(&sc), OTC_STEP_OK);
  EXPECT_EQ(data, wantMean);
  EXPECT_EQ(r0, wantR);
  EXPECT_EQ(u0, wantU);
  EXPECT_EQ(std::count(u0.begin(), u0.end(), 0.f), 5 * 16);
  // What that means: a sent index carried its residual and 4x its velocity
  // (within int8's rounding of the block's largest); an unsent one keeps
  // its velocity and holds residual + velocity, as plain masking would.
  for (size_t i = 0; i < u0.size(); ++i) {
    const float carried = r0Was[i] + 4.f * uNew[i];
    if (u0[i] == 0.f) {
      EXPECT_NEAR(data[i], carried, 0.1f) << i;
    } else {
      EXPECT_EQ(u0[i], uNew[i]) << i;
      EXPECT_EQ(data[i], 0.f) << i;
      EXPECT_NEAR(r0[i], r0Was[i] + uNew[i], 1e-4f) << i;
    }
  }

  // Bucket 1 is not finite: the step is skipped.
  g1[123] = NAN;
  int rc = compressedAllReduceCallback(&sc, &d, g1.data(), n, r1.data(),
                                       u1.data(), 0.5f, nullptr, 1);
  int waited = waitCollectivesCallback(&sc);
  EXPECT_EQ(rc != OTC_STEP_OK ? rc : waited, OTC_STEP_SKIPPED_NONFINITE);
  EXPECT_EQ(u1, u1Was);
  EXPECT_EQ(r1, r1Was);
  state.undoStep();
  EXPECT_EQ(u0, u0Was);
  EXPECT_EQ(r0, r0Was);

  // Adaptive: the norm of the velocity is not finite.
  d.adaptive = 1;
  d.ratio_min = 0.1f;
  d.ratio_max = 0.5f;
  rc = compressedAllReduceCallback(&sc, &d, g1.data(), n, r1.data(), u1.data(),
                                   0.5f, nullptr, 2);
  waited = waitCollectivesCallback(&sc);
  EXPECT_EQ(rc != OTC_STEP_OK ? rc : waited, OTC_STEP_SKIPPED_NONFINITE);
  EXPECT_EQ(u1, u1Was);
  EXPECT_EQ(r1, r1Was);

  // A momentum outside [0, 1) is refused (its tail is not finite).
  for (float bad : {NAN, 1.f, 1.5f, -0.1f, INFINITY}) {
    EXPECT_EQ(compressedAllReduceCallback(&sc, &d, g0.data(), n, r0.data(),
                                          u0.data(), bad, nullptr, 0),
              OTC_STEP_ERR_COMM);
    const std::string why = takeCommError(comm);
    EXPECT_NE(why.find("needs a momentum in [0, 1)"), std::string::npos) << why;
  }
}

TEST_F(CompressedTest, NonFiniteOnTheFirstStepLeavesTheNormUnset) {
  otc_compress_desc_t d = topkInt8(0.25f, 64, true);
  d.adaptive = 1, d.ratio_min = 0.05f, d.ratio_max = 0.5f;
  open(d);
  std::vector<float> x = input(1);
  x[size_t(gB.n0)] = NAN; // bucket 1: bucket 0 latched ‖g‖₀, then undone
  step(session, x);
  EXPECT_EQ(otc_session_last_step_skipped(session), 1);
  EXPECT_EQ(session->compress.buckets[0].norm0, 0);
  EXPECT_EQ(otc_session_compress_ratio(session, 0), 0.f);
}

TEST_F(CompressedTest, WarmupStepsAreDense) {
  otc_compress_desc_t d = topkInt8(0.25f, 64, true);
  d.warmup_steps = 2;
  open(d);
  for (int s = 0; s < 2; ++s) {
    std::vector<float> x = input(uint64_t(s));
    step(session, x);
    EXPECT_EQ(g0(), part(x, 0)); // a 1-rank mean: the gradient itself
    EXPECT_EQ(g1(), part(x, 1));
    EXPECT_EQ(r0(), std::vector<float>(size_t(gB.n0), 0.f));
    EXPECT_EQ(otc_session_compress_ratio(session, 0), 0.f);
  }
  // Non-finite during warm-up skips too.
  std::vector<float> bad = input(7);
  bad[0] = NAN;
  step(session, bad);
  EXPECT_EQ(otc_session_last_step_skipped(session), 1);
  EXPECT_EQ(otc_session_step(session), 2);

  std::vector<float> x = input(9);
  step(session, x);
  expectNear(g0(), refTopkInt8(part(x, 0), 64, 0.25f), "step 3");
  EXPECT_EQ(otc_session_compress_ratio(session, 0), 0.25f);
}

TEST_F(CompressedTest, AdaptiveRatioFollowsTheNorm) {
  otc_compress_desc_t d = topkInt8(0.3f, 64, false);
  d.adaptive = 1, d.ratio_min = 0.05f, d.ratio_max = 0.5f;
  open(d);
  std::vector<float> x = input(1);
  auto norm = [](const std::vector<float> &v) {
    double s = 0;
    for (float f : v)
      s += double(f) * f;
    return std::sqrt(s);
  };
  // Nonzeros per full block of bucket 0: the k the ratio asked for.
  auto keptPerBlock = [&](float ratio) {
    std::vector<float> g = g0();
    otck_compress_config cfg{OTCK_COMPRESS_TOPK_INT8, 64, ratio, 0};
    int64_t k = otck_compress_k(&cfg);
    for (size_t b = 0; b + 64 <= g.size(); b += 64)
      EXPECT_EQ(std::count_if(g.begin() + long(b), g.begin() + long(b + 64),
                              [](float v) { return v != 0; }),
                k);
    return k;
  };
  step(session, x);
  EXPECT_DOUBLE_EQ(session->compress.buckets[0].norm0, norm(part(x, 0)));
  EXPECT_FLOAT_EQ(otc_session_compress_ratio(session, 0), 0.5f);
  EXPECT_EQ(keptPerBlock(0.5f), 32);

  std::vector<float> half = x;
  for (float &v : half)
    v *= 0.5f;
  step(session, half);
  EXPECT_FLOAT_EQ(otc_session_compress_ratio(session, 0), 0.25f);
  EXPECT_FLOAT_EQ(otc_session_compress_ratio(session, 1), 0.25f);
  EXPECT_EQ(keptPerBlock(0.25f), 16);
  expectNear(g0(), refTopkInt8(part(half, 0), 64, 0.25f), "half norm");

  std::vector<float> tiny = x;
  for (float &v : tiny)
    v *= 0.01f;
  step(session, tiny);
  EXPECT_FLOAT_EQ(otc_session_compress_ratio(session, 0), 0.05f);
  keptPerBlock(0.05f);

  std::vector<float> big = x;
  for (float &v : big)
    v *= 3.f;
  step(session, big);
  EXPECT_FLOAT_EQ(otc_session_compress_ratio(session, 0), 0.5f);
  // ‖g‖₀ follows the largest norm: back at x's norm the ratio is a third.
  EXPECT_DOUBLE_EQ(session->compress.buckets[0].norm0, norm(part(big, 0)));
  step(session, x);
  EXPECT_FLOAT_EQ(otc_session_compress_ratio(session, 0), 0.5f / 3.f);
}

TEST_F(CompressedTest, BadDescriptorIsAnError) {
  otc_compress_desc_t d = topkInt8(0.f, 64, false);
  open(d);
  std::vector<float> x = input(1);
  ASSERT_OK(otc_session_bind_input(session, "x", x.data(), x.size() * 4));
  StatusText t = take(otc_session_train_step(session, nullptr));
  EXPECT_EQ(t.code, OTC_UNAVAILABLE);
  EXPECT_NE(t.message.find("bucket 0: ratio 0.000000 is not within (0, 1]"),
            std::string::npos)
      << t.message;
  EXPECT_EQ(otc_session_step(session), 0);
}

TEST_F(CompressedTest, CheckpointHoldsResidualsAndAdaptiveState) {
  std::string dir = otc::testing::makeTempDir("otc-compressed-test");
  ASSERT_FALSE(dir.empty());
  std::string path = dir + "/c.otcc";
  otc_compress_desc_t d = topkInt8(0.25f, 64, true);
  d.adaptive = 1, d.ratio_min = 0.05f, d.ratio_max = 0.5f;
  d.warmup_steps = 1;
  open(d);
  step(session, input(1));
  step(session, input(2, 2.f));
  std::vector<float> bad = input(3);
  bad[0] = NAN;
  step(session, bad);
  step(session, input(4, 0.5f));
  ASSERT_OK(otc_session_save_checkpoint(session, path.c_str(), nullptr, 0));
  std::vector<float> after[4];
  step(session, input(5, 0.7f));
  step(session, input(6, 0.3f));
  after[0] = g0(), after[1] = g1(), after[2] = r0(), after[3] = r1();

  // A fresh session resumes bit for bit: residuals, ‖g‖₀ and the counts.
  ASSERT_OK(otc_session_create(program, comm, nullptr, &other));
  ASSERT_OK(
      otc_session_load_checkpoint(other, path.c_str(), nullptr, 0, nullptr));
  EXPECT_EQ(otc_session_step(other), 3);
  EXPECT_EQ(otc_session_skipped_steps(other), 1);
  ASSERT_EQ(otc_session_compress_buckets(other), 2);
  EXPECT_GT(other->compress.buckets[0].norm0, 0);
  CheckpointData data = readCheckpoint(path, program->manifest);
  EXPECT_EQ(data.state.count("bucket0.residual"), 1u);
  ASSERT_EQ(data.buckets.size(), 2u);
  EXPECT_EQ(data.buckets[1].steps, 2);
  step(other, input(5, 0.7f));
  step(other, input(6, 0.3f));
  EXPECT_EQ(g0(other), after[0]);
  EXPECT_EQ(g1(other), after[1]);
  EXPECT_EQ(r0(other), after[2]);
  EXPECT_EQ(r1(other), after[3]);
  EXPECT_EQ(otc_session_compress_ratio(other, 1),
            otc_session_compress_ratio(session, 1));

  // A version-1 checkpoint (checksum fixed up) is refused, clearly.
  std::string bytes = readFile(path);
  uint32_t one = 1;
  std::memcpy(&bytes[8], &one, 4);
  uint32_t crc = uint32_t(crc32(
      0, reinterpret_cast<const Bytef *>(bytes.data()), bytes.size() - 4));
  std::memcpy(&bytes[bytes.size() - 4], &crc, 4);
  writeFile(path, bytes);
  StatusText t = take(
      otc_session_load_checkpoint(other, path.c_str(), nullptr, 0, nullptr));
  EXPECT_EQ(t.code, OTC_FAILED_PRECONDITION);
  EXPECT_NE(t.message.find("format version 1 was written by an older runtime"),
            std::string::npos)
      << t.message;
  std::string cmd = "rm -rf '" + dir + "'";
  (void)std::system(cmd.c_str());
}

//--- The driver on the compressed linear fixture ------------------------------

class CompressedDriverTest : public ::testing::Test {
protected:
  static constexpr int64_t kD = 8, kC = 3, kN = 512;

  void SetUp() override {
    dir = otc::testing::makeTempDir("otc-compressed-driver");
    ASSERT_FALSE(dir.empty());
    model = dir + "/linear.onnx";
    otc::testing::writeLinearModel(model, kD, kC, 1);
    otc::testing::makeData(kN, kD, kC, 2, x, y);
    ASSERT_OK(otc_comm_create_local(&comm));
  }
  void TearDown() override {
    otc_comm_release(comm);
    std::string cmd = "rm -rf '" + dir + "'";
    (void)std::system(cmd.c_str());
  }

  void writeData(const std::vector<float> &xs) {
    Array ax, ay;
    ax.dtype = DType::F32;
    ax.shape = {kN, kD};
    ax.data.assign(reinterpret_cast<const uint8_t *>(xs.data()),
                   reinterpret_cast<const uint8_t *>(xs.data() + xs.size()));
    ay.dtype = DType::I64;
    ay.shape = {kN};
    ay.data.assign(reinterpret_cast<uint8_t *>(y.data()),
                   reinterpret_cast<uint8_t *>(y.data() + y.size()));
    writeNpy(dir + "/x.npy", ax);
    writeNpy(dir + "/y.npy", ay);
  }

  int drive(const otc_program_entry_t &entry, std::vector<std::string> args,
            std::string &err) {
    std::vector<std::string> all = {"train",
                                    "--data",
                                    "x=" + dir + "/x.npy",
                                    "--data",
                                    "y=" + dir + "/y.npy",
                                    "--seed",
                                    "3"};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char *> argv;
    for (std::string &a : all)
      argv.push_back(a.data());
    ::testing::internal::CaptureStderr();
    int rc = driverMain(int(argv.size()), argv.data(), &entry, comm);
    err = ::testing::internal::GetCapturedStderr();
    return rc;
  }

  std::string dir, model;
  std::vector<float> x;
  std::vector<int64_t> y;
  otc_comm_t *comm = nullptr;
};

TEST_F(CompressedDriverTest, SkippedStepIsReportedAndNotCounted) {
  std::vector<float> xs = x;
  xs[40 * kD + 2] = NAN; // sample 40: the third batch of 16, unshuffled
  writeData(xs);
  otc_compress_desc_t d = topkInt8(0.5f, 8, true);
  otc::testing::LinearProgram p(0, model, kD, kC, 16, 1, 0.1f, 0.9f, &d);
  std::string metrics = dir + "/m.jsonl", err;
  ASSERT_EQ(drive(p.entry,
                  {"--no-shuffle", "--epochs", "1", "--log-every", "8",
                   "--metrics", metrics, "--checkpoint-dir", dir + "/ck",
                   "--export", dir + "/out.onnx"},
                  err),
            0)
      << err;
  EXPECT_NE(err.find("step 3 skipped: non-finite gradient on some rank"),
            std::string::npos)
      << err;
  // 32 batches, one skipped: 31 optimizer steps, then the epoch ends.
  EXPECT_TRUE(std::ifstream(dir + "/ck/ckpt-31.otcc").good());
  std::istringstream lines(readFile(metrics));
  std::string line;
  int skips = 0;
  std::vector<int64_t> logged;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line);
    if (j.value("skipped", false)) {
      ++skips;
      EXPECT_EQ(j["step"], 3);
      EXPECT_EQ(j["reason"], "non-finite gradient");
    } else {
      logged.push_back(j["step"].get<int64_t>());
      ASSERT_TRUE(j.contains("compress_ratio")) << line;
      EXPECT_FLOAT_EQ(j["compress_ratio"][0].get<float>(), 0.5f);
    }
  }
  EXPECT_EQ(skips, 1);
  EXPECT_EQ(logged, (std::vector<int64_t>{8, 16, 24, 31}));

  // The checkpoint holds the residual; export leaves it out.
  otc_program_t *program = nullptr;
  ASSERT_OK(otc_program_from_entry(&p.entry, &program));
  CheckpointData data =
      readCheckpoint(dir + "/ck/ckpt-31.otcc", program->manifest);
  otc_program_release(program);
  ASSERT_EQ(data.state.count("bucket0.residual"), 1u);
  const std::vector<uint8_t> &r = data.state["bucket0.residual"];
  EXPECT_NE(std::count(r.begin(), r.end(), uint8_t(0)), long(r.size()));
  EXPECT_EQ(data.skippedSteps, 1);
  onnx::ModelProto out;
  std::ifstream in(dir + "/out.onnx", std::ios::binary);
  ASSERT_TRUE(out.ParseFromIstream(&in));
  ASSERT_EQ(out.graph().initializer_size(), 2);
  for (const auto &init : out.graph().initializer())
    EXPECT_TRUE(init.name() == "fc.weight" || init.name() == "fc.bias");
}

std::vector<float> exportedWeights(const std::string &path) {
  onnx::ModelProto model;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(model.ParseFromIstream(&in)) << path;
  std::vector<float> all;
  for (const auto &init : model.graph().initializer()) {
    size_t n = init.raw_data().size() / 4;
    size_t at = all.size();
    all.resize(at + n);
    std::memcpy(all.data() + at, init.raw_data().data(), n * 4);
  }
  return all;
}

// Error feedback and the adaptive ratio resume exactly.
TEST_F(CompressedDriverTest, ResumeIsBitwiseExact) {
  writeData(x);
  otc_compress_desc_t d = topkInt8(0.25f, 8, true);
  d.adaptive = 1, d.ratio_min = 0.1f, d.ratio_max = 0.5f, d.warmup_steps = 3;
  otc::testing::LinearProgram p(0, model, kD, kC, 16, 1, 0.1f, 0.9f, &d);
  std::string err;
  ASSERT_EQ(
      drive(p.entry,
            {"--quiet", "--steps", "60", "--export", dir + "/straight.onnx"},
            err),
      0)
      << err;
  ASSERT_EQ(drive(p.entry,
                  {"--quiet", "--steps", "25", "--checkpoint-dir", dir + "/ck"},
                  err),
            0)
      << err;
  ASSERT_EQ(drive(p.entry,
                  {"--quiet", "--steps", "60", "--checkpoint-dir", dir + "/ck",
                   "--resume", "--export", dir + "/resumed.onnx"},
                  err),
            0)
      << err;
  std::vector<float> a = exportedWeights(dir + "/straight.onnx");
  std::vector<float> b = exportedWeights(dir + "/resumed.onnx");
  ASSERT_EQ(a.size(), size_t(kC * kD + kC));
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4));
}

} // namespace
