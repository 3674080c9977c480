//===- device_test.cpp - Sessions of CUDA programs ------------------------===//
//
// The runtime's side of --target cuda (device.h): a program whose arena is
// device memory. The program here is test_fixture.h's softmax regression
// made into a CUDA program: each step copies the device arena down, runs
// the CPU step on the copy (its collectives see device pointers, as a
// compiled CUDA program's do), and copies it back. Its results must equal
// the CPU program's bit for bit, through steps, compression with error
// feedback, parameter reads and writes, checkpoints and evaluation, with
// the collectives staged through the host and on NCCL. Needs a CUDA device;
// skips without one. Under mpirun (CTest runtime.device.mpi.2ranks) the
// ranks share the device and train on batches of their own through the
// staged collectives.
//
//===----------------------------------------------------------------------===//

#include "comm/compressed.h"
#include "core/test_fixture.h"

#include "otc/compress.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <limits>
#include <memory>

using otc::testing::gLayouts;
using otc::testing::LinearProgram;

namespace {

using otc::testing::StatusText;
using otc::testing::take;

constexpr int64_t kD = 8, kC = 3, kB = 16;

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

/// What the CPU step's collectives reach: the real step context and the
/// two copies of the arena.
struct Staging {
  const otc_step_context_t *ctx;
  uint8_t *device, *host;
  cudaStream_t stream;
  std::vector<std::pair<float *, int64_t>> pending; ///< host ranges
};

float *toDevice(Staging *s, float *host, int64_t n) {
  auto *d = reinterpret_cast<float *>(
      s->device + (reinterpret_cast<uint8_t *>(host) - s->host));
  cudaMemcpyAsync(d, host, size_t(n) * 4, cudaMemcpyHostToDevice, s->stream);
  s->pending.emplace_back(host, n);
  return d;
}

int allReduce(void *comm, float *data, int64_t n) {
  auto *s = static_cast<Staging *>(comm);
  return s->ctx->all_reduce_mean_f32(s->ctx->comm, toDevice(s, data, n), n);
}

int compressed(void *comm, const otc_compress_desc_t *desc, float *data,
               int64_t n, float *residual, float *velocity, float momentum,
               float *state, int64_t bucket) {
  auto *s = static_cast<Staging *>(comm);
  float *r = residual ? toDevice(s, residual, n) : nullptr;
  float *u = velocity ? toDevice(s, velocity, n) : nullptr;
  float *q = state ? toDevice(s, state, otc::compressStateFloats(*desc))
                   : nullptr;
  return s->ctx->compressed_all_reduce_mean_f32(
      s->ctx->comm, desc, toDevice(s, data, n), n, r, u, momentum, q, bucket);
}

int wait(void *comm) {
  auto *s = static_cast<Staging *>(comm);
  int rc = s->ctx->wait_collectives(s->ctx->comm);
  for (auto [host, n] : s->pending)
    cudaMemcpyAsync(host,
                    s->device + (reinterpret_cast<uint8_t *>(host) - s->host),
                    size_t(n) * 4, cudaMemcpyDeviceToHost, s->stream);
  s->pending.clear();
  cudaStreamSynchronize(s->stream);
  return rc;
}

template <int Slot, bool Train>
int cudaStep(uint8_t *arena, const otc_step_context_t *ctx) {
  const otc::testing::Layout &l = gLayouts[Slot];
  auto stream = static_cast<cudaStream_t>(ctx->stream);
  if (!stream)
    return OTC_STEP_ERR_DEVICE; // the runtime must hand a stream over
  std::vector<uint8_t> host(l.arena);
  if (cudaMemcpyAsync(host.data(), arena, l.arena, cudaMemcpyDeviceToHost,
                      stream) != cudaSuccess ||
      cudaStreamSynchronize(stream) != cudaSuccess)
    return OTC_STEP_ERR_DEVICE;
  Staging staging{ctx, arena, host.data(), stream, {}};
  otc_step_context_t mine = *ctx;
  mine.comm = &staging;
  mine.all_reduce_mean_f32 = allReduce;
  mine.compressed_all_reduce_mean_f32 = compressed;
  mine.wait_collectives = wait;
  int rc = Train ? otc::testing::fixtureTrainStep<Slot>(host.data(), &mine)
                 : otc::testing::fixtureEvalStep<Slot>(host.data(), &mine);
  if (cudaMemcpyAsync(arena, host.data(), l.arena, cudaMemcpyHostToDevice,
                      stream) != cudaSuccess ||
      cudaStreamSynchronize(stream) != cudaSuccess)
    return OTC_STEP_ERR_DEVICE;
  return rc;
}

/// A compressed all-reduce over blocks of 8 (the fixture's 27 gradients:
/// a short last block).
otc_compress_desc_t compressDesc(otck_compress_method method, int feedback,
                                 float ratio) {
  otc_compress_desc_t d{};
  d.method = method;
  d.error_feedback = feedback;
  d.block_size = 8;
  d.ratio = ratio;
  return d;
}

/// A CPU program (slot 0 or 2) and the same as a CUDA program (slot + 1).
struct Pair {
  std::unique_ptr<LinearProgram> cpu, cuda;
  otc_program_t *programs[2] = {nullptr, nullptr};
  otc_session_t *sessions[2] = {nullptr, nullptr};
  ~Pair() {
    for (int i = 0; i < 2; ++i) {
      otc_session_release(sessions[i]);
      otc_program_release(programs[i]);
    }
  }
};

/// Parameter: the collectives (OTC_CUDA_COLLECTIVES): host-staged, or
/// NCCL (one rank here: every call runs, nothing crosses a link).
class DeviceSessionTest : public ::testing::TestWithParam<const char *> {
protected:
  void SetUp() override {
#ifndef OTC_HAVE_NCCL
    if (std::string(GetParam()) == "nccl")
      GTEST_SKIP() << "the runtime was built without NCCL";
#endif
    setenv("OTC_CUDA_COLLECTIVES", GetParam(), 1);
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess || count == 0)
      GTEST_SKIP() << "no CUDA device visible: "
                   << (rc != cudaSuccess ? cudaGetErrorString(rc)
                                         : "0 devices");
    dir = otc::testing::makeTempDir("otc-device-test");
    ASSERT_FALSE(dir.empty());
    modelPath = dir + "/linear.onnx";
    otc::testing::writeLinearModel(modelPath, kD, kC, 1);
    otc::testing::makeData(512, kD, kC, 2, x, y);
    if (std::getenv("OMPI_COMM_WORLD_SIZE"))
      ASSERT_OK(otc_comm_create_mpi(&comm));
    else
      ASSERT_OK(otc_comm_create_local(&comm));
    world = otc_comm_size(comm);
    rank = otc_comm_rank(comm);
  }
  void TearDown() override {
    unsetenv("OTC_CUDA_COLLECTIVES");
    if (comm)
      otc_comm_release(comm);
    if (!dir.empty()) {
      std::string cmd = "rm -rf '" + dir + "'";
      (void)std::system(cmd.c_str());
    }
  }

  std::unique_ptr<Pair> open(const otc_compress_desc_t *desc = nullptr) {
    auto p = std::make_unique<Pair>();
    int slot = desc ? 2 : 0;
    p->cpu = std::make_unique<LinearProgram>(slot, modelPath, kD, kC, kB, world,
                                             0.1f, 0.9f, desc);
    p->cuda = std::make_unique<LinearProgram>(slot + 1, modelPath, kD, kC, kB,
                                              world, 0.1f, 0.9f, desc);
    p->cuda->entry.device = OTC_DEVICE_CUDA;
    p->cuda->entry.train_step = desc ? cudaStep<3, true> : cudaStep<1, true>;
    p->cuda->entry.eval_step = desc ? cudaStep<3, false> : cudaStep<1, false>;
    LinearProgram *fixtures[2] = {p->cpu.get(), p->cuda.get()};
    for (int i = 0; i < 2; ++i) {
      StatusText t =
          take(otc_program_from_entry(&fixtures[i]->entry, &p->programs[i]));
      EXPECT_EQ(t.code, OTC_OK) << t.message;
      t = take(
          otc_session_create(p->programs[i], comm, nullptr, &p->sessions[i]));
      EXPECT_EQ(t.code, OTC_OK) << t.message;
    }
    return p;
  }

  /// Runs `steps` steps from batch `from` on session `s`; their losses.
  std::vector<float> train(otc_session_t *s, int steps, int from) {
    std::vector<float> losses;
    for (int i = 0; i < steps; ++i) {
      int64_t begin = (((from + i) * world + rank) * kB) % (512 - kB);
      EXPECT_EQ(otc_status_code(otc_session_bind_input(
                    s, "x", &x[size_t(begin * kD)], size_t(kB * kD) * 4)),
                OTC_OK);
      EXPECT_EQ(otc_status_code(otc_session_bind_input(
                    s, "y", &y[size_t(begin)], size_t(kB) * 8)),
                OTC_OK);
      float loss = -1;
      StatusText t = take(otc_session_train_step(s, &loss));
      EXPECT_EQ(t.code, OTC_OK) << t.message;
      losses.push_back(loss);
    }
    return losses;
  }

  std::vector<float> param(otc_session_t *s, const char *name, size_t n) {
    std::vector<float> v(n);
    StatusText t = take(otc_session_get_param(s, name, v.data(), n * 4));
    EXPECT_EQ(t.code, OTC_OK) << t.message;
    return v;
  }

  void expectSameParams(Pair &p) {
    EXPECT_EQ(param(p.sessions[0], "fc.weight", kC * kD),
              param(p.sessions[1], "fc.weight", kC * kD));
    EXPECT_EQ(param(p.sessions[0], "fc.bias", kC),
              param(p.sessions[1], "fc.bias", kC));
  }

  std::string dir, modelPath;
  std::vector<float> x;
  std::vector<int64_t> y;
  otc_comm_t *comm = nullptr;
  int world = 1, rank = 0;
};

TEST_P(DeviceSessionTest, StepsEqualTheCpuProgram) {
  auto p = open();
  // Parameters read between steps come down from the device; the next
  // batch, bound after a read, is not overwritten by the previous one.
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(train(p->sessions[0], 2, 2 * round),
              train(p->sessions[1], 2, 2 * round));
    expectSameParams(*p);
  }
}

TEST_P(DeviceSessionTest, SetParamReachesTheDevice) {
  auto p = open();
  train(p->sessions[1], 1, 0);
  train(p->sessions[0], 1, 0);
  std::vector<float> bias = {0.5f, -0.25f, 1.f};
  for (otc_session_t *s : p->sessions)
    ASSERT_OK(otc_session_set_param(s, "fc.bias", bias.data(), 12));
  EXPECT_EQ(train(p->sessions[0], 3, 1), train(p->sessions[1], 3, 1));
  expectSameParams(*p);
}

TEST_P(DeviceSessionTest, CompressedWithErrorFeedbackEqualsTheCpuProgram) {
  const otc_compress_desc_t desc =
      compressDesc(OTCK_COMPRESS_TOPK_INT8, 1, 0.25f);
  auto p = open(&desc);
  EXPECT_EQ(train(p->sessions[0], 6, 0), train(p->sessions[1], 6, 0));
  expectSameParams(*p);
}

TEST_P(DeviceSessionTest, EveryCompressionBranchEqualsTheCpuProgram) {
  // The other branches of the compressed all-reduce: dense (NONE, and the
  // warm-up steps before compression starts), the dense encodings, sparse
  // selections with and without error feedback, the adaptive ratio (whose
  // norm the device computes), the reduce-scatter exchange (on more than
  // one rank).
  std::vector<std::pair<const char *, otc_compress_desc_t>> cases = {
      {"none", compressDesc(OTCK_COMPRESS_NONE, 0, 1.f)},
      {"fp16", compressDesc(OTCK_COMPRESS_FP16, 0, 1.f)},
      {"int8, error feedback", compressDesc(OTCK_COMPRESS_INT8, 1, 1.f)},
      {"topk, no error feedback", compressDesc(OTCK_COMPRESS_TOPK, 0, 0.25f)},
      {"randomk, error feedback",
       compressDesc(OTCK_COMPRESS_RANDOMK, 1, 0.25f)},
      {"topk-int8 after 2 dense steps",
       compressDesc(OTCK_COMPRESS_TOPK_INT8, 1, 0.25f)},
      {"adaptive topk-int8", compressDesc(OTCK_COMPRESS_TOPK_INT8, 1, 0.5f)},
      {"topk-int8, reduce-scatter exchange",
       compressDesc(OTCK_COMPRESS_TOPK_INT8, 1, 0.25f)},
  };
  cases[0].second.exchange = OTC_EXCHANGE_ALL_REDUCE;
  cases[5].second.warmup_steps = 2;
  cases[6].second.adaptive = 1;
  cases[6].second.ratio_min = 0.125f;
  cases[6].second.ratio_max = 0.5f;
  cases[7].second.exchange = OTC_EXCHANGE_REDUCE_SCATTER;
  for (const auto &[what, desc] : cases) {
    SCOPED_TRACE(what);
    auto p = open(&desc);
    EXPECT_EQ(train(p->sessions[0], 5, 0), train(p->sessions[1], 5, 0));
    expectSameParams(*p);
  }
}

TEST_P(DeviceSessionTest, NonFiniteBatchIsSkippedAsOnTheCpu) {
  // A NaN input makes every gradient NaN: the step is skipped on both, the
  // residual put back, and training goes on identically.
  const otc_compress_desc_t desc =
      compressDesc(OTCK_COMPRESS_TOPK_INT8, 1, 0.25f);
  auto p = open(&desc);
  EXPECT_EQ(train(p->sessions[0], 2, 0), train(p->sessions[1], 2, 0));
  std::vector<float> bad(x.begin(), x.begin() + kB * kD);
  bad[5] = std::numeric_limits<float>::quiet_NaN();
  for (otc_session_t *s : p->sessions) {
    ASSERT_OK(otc_session_bind_input(s, "x", bad.data(), bad.size() * 4));
    ASSERT_OK(otc_session_bind_input(s, "y", y.data(), size_t(kB) * 8));
    float loss = 0;
    StatusText t = take(otc_session_train_step(s, &loss));
    EXPECT_EQ(t.code, OTC_OK) << t.message;
    EXPECT_EQ(otc_session_last_step_skipped(s), 1);
    EXPECT_EQ(otc_session_skipped_steps(s), 1);
  }
  EXPECT_EQ(train(p->sessions[0], 3, 2), train(p->sessions[1], 3, 2));
  expectSameParams(*p);
}

TEST_P(DeviceSessionTest, CheckpointResumesOnTheDevice) {
  const otc_compress_desc_t desc =
      compressDesc(OTCK_COMPRESS_TOPK_INT8, 1, 0.25f);
  auto straight = open(&desc);
  std::vector<float> want = train(straight->sessions[1], 5, 0);

  auto first = open(&desc);
  train(first->sessions[1], 3, 0);
  std::string path = dir + "/ckpt" + std::to_string(rank);
  ASSERT_OK(otc_session_save_checkpoint(first->sessions[1], path.c_str(),
                                        nullptr, 0));
  auto resumed = open(&desc);
  ASSERT_OK(otc_session_load_checkpoint(resumed->sessions[1], path.c_str(),
                                        nullptr, 0, nullptr));
  std::vector<float> got = train(resumed->sessions[1], 2, 3);
  EXPECT_EQ(got, std::vector<float>(want.begin() + 3, want.end()));
  EXPECT_EQ(param(resumed->sessions[1], "fc.weight", kC * kD),
            param(straight->sessions[1], "fc.weight", kC * kD));
}

TEST_P(DeviceSessionTest, EvalEqualsTheCpuProgram) {
  auto p = open();
  train(p->sessions[0], 2, 0);
  train(p->sessions[1], 2, 0);
  std::vector<float> out[2];
  float loss[2];
  for (int i = 0; i < 2; ++i) {
    out[i].resize(kB * kC);
    ASSERT_OK(otc_session_eval_step(p->sessions[i], out[i].data(),
                                    out[i].size() * 4));
    ASSERT_OK(otc_session_eval_loss(p->sessions[i], &loss[i]));
  }
  EXPECT_EQ(out[0], out[1]);
  EXPECT_EQ(loss[0], loss[1]);
}

INSTANTIATE_TEST_SUITE_P(Collectives, DeviceSessionTest,
                         ::testing::Values("staged", "nccl"),
                         [](const ::testing::TestParamInfo<const char *> &i) {
                           return std::string(i.param);
                         });

} // namespace
