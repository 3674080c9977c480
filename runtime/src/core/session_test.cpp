//===- session_test.cpp - Sessions, checkpoints, export, the driver -------===//

#include "core/test_fixture.h"
#include "tooling/data.h"
#include "tooling/driver.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

using namespace otc;
using otc::testing::LinearProgram;

namespace {

using otc::testing::StatusText;
using otc::testing::take;

constexpr int64_t kD = 8, kC = 3;

// The SDP test program's calibrate_step: records the whole model's weight
// and input as it sees them (slot 1's layout).
int gCalibrations = 0;
std::vector<float> gCalibratedWeight, gCalibratedInput;
int recordCalibration(uint8_t *arena, const otc_step_context_t *) {
  const otc::testing::Layout &l = otc::testing::gLayouts[1];
  const float *w = reinterpret_cast<const float *>(arena + l.w);
  const float *x = reinterpret_cast<const float *>(arena + l.x);
  gCalibratedWeight.assign(w, w + l.C * l.D);
  gCalibratedInput.assign(x, x + l.B * l.D);
  ++gCalibrations;
  return OTC_STEP_OK;
}

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

class SessionTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = otc::testing::makeTempDir("otc-session-test");
    ASSERT_FALSE(dir.empty());
    modelPath = dir + "/linear.onnx";
    otc::testing::writeLinearModel(modelPath, kD, kC, 1);
    otc::testing::makeData(512, kD, kC, 2, x, y);
    ASSERT_OK(otc_comm_create_local(&comm));
  }
  void TearDown() override {
    otc_comm_release(comm);
    std::string cmd = "rm -rf '" + dir + "'";
    (void)std::system(cmd.c_str());
  }

  struct Handles {
    std::unique_ptr<LinearProgram> fixture;
    otc_program_t *program = nullptr;
    otc_session_t *session = nullptr;
    ~Handles() {
      otc_session_release(session);
      otc_program_release(program);
    }
  };

  std::unique_ptr<Handles> open(int slot, int64_t batch = 16, int world = 1,
                                int64_t d = kD,
                                const otc::testing::LinearOptions &more = {}) {
    auto h = std::make_unique<Handles>();
    h->fixture = std::make_unique<LinearProgram>(
        slot, modelPath, d, kC, batch, world, 0.1f, 0.9f, nullptr, more);
    StatusText t =
        take(otc_program_from_entry(&h->fixture->entry, &h->program));
    EXPECT_EQ(t.code, OTC_OK) << t.message;
    otc_session_options_t options;
    otc_session_options_initialize(&options);
    t = take(otc_session_create(h->program, comm, &options, &h->session));
    EXPECT_EQ(t.code, OTC_OK) << t.message;
    return h;
  }

  void trainSteps(otc_session_t *s, int64_t batch, int steps, int64_t from) {
    for (int i = 0; i < steps; ++i) {
      int64_t begin = ((from + i) * batch) % (512 - batch);
      ASSERT_OK(otc_session_bind_input(s, "x", &x[size_t(begin * kD)],
                                       size_t(batch * kD) * 4));
      ASSERT_OK(
          otc_session_bind_input(s, "y", &y[size_t(begin)], size_t(batch) * 8));
      float loss;
      ASSERT_OK(otc_session_train_step(s, &loss));
    }
  }

  std::vector<float> param(otc_session_t *s, const char *name, size_t n) {
    std::vector<float> v(n);
    StatusText t = take(otc_session_get_param(s, name, v.data(), n * 4));
    EXPECT_EQ(t.code, OTC_OK) << t.message;
    return v;
  }

  void writeDataFiles() {
    Array ax, ay;
    ax.dtype = DType::F32;
    ax.shape = {512, kD};
    ax.data.assign(reinterpret_cast<uint8_t *>(x.data()),
                   reinterpret_cast<uint8_t *>(x.data() + x.size()));
    ay.dtype = DType::I64;
    ay.shape = {512};
    ay.data.assign(reinterpret_cast<uint8_t *>(y.data()),
                   reinterpret_cast<uint8_t *>(y.data() + y.size()));
    writeNpy(dir + "/x.npy", ax);
    writeNpy(dir + "/y.npy", ay);
  }

  int drive(const otc_program_entry_t &entry, std::vector<std::string> args,
            std::string *err = nullptr) {
    args.insert(args.begin(), "train");
    std::vector<char *> argv;
    for (std::string &a : args)
      argv.push_back(a.data());
    ::testing::internal::CaptureStderr();
    int rc = driverMain(int(argv.size()), argv.data(), &entry, comm);
    std::string text = ::testing::internal::GetCapturedStderr();
    if (err)
      *err = text;
    return rc;
  }

  std::string dir, modelPath;
  std::vector<float> x;
  std::vector<int64_t> y;
  otc_comm_t *comm = nullptr;
};

TEST_F(SessionTest, LoadsInitialParametersFromTheModel) {
  auto h = open(0);
  onnx::ModelProto model;
  std::ifstream in(modelPath, std::ios::binary);
  ASSERT_TRUE(model.ParseFromIstream(&in));
  const auto &w = model.graph().initializer(0);
  std::vector<float> got = param(h->session, "fc.weight", kC * kD);
  for (int i = 0; i < kC * kD; ++i)
    EXPECT_EQ(got[size_t(i)], w.float_data(i));
  std::vector<float> bias = param(h->session, "fc.bias", kC);
  std::vector<float> expected(kC);
  std::memcpy(expected.data(), model.graph().initializer(1).raw_data().data(),
              kC * 4);
  EXPECT_EQ(bias, expected);
  EXPECT_EQ(otc_program_world_size(h->program), 1);
  EXPECT_NE(std::string(otc_program_manifest(h->program)).find("fc.weight"),
            std::string::npos);
  EXPECT_STREQ(otc_session_manifest(h->session),
               otc_program_manifest(h->program));
}

TEST_F(SessionTest, CreateErrors) {
  LinearProgram two(0, modelPath, kD, kC, 16, 2);
  otc_program_t *program = nullptr;
  ASSERT_OK(otc_program_from_entry(&two.entry, &program));
  otc_session_t *s = nullptr;
  StatusText t = take(otc_session_create(program, comm, nullptr, &s));
  EXPECT_EQ(t.code, OTC_FAILED_PRECONDITION);
  EXPECT_EQ(t.message, "this program was compiled for --world-size 2 but runs "
                       "on 1 rank; start it with `mpirun -np 2`");
  otc_program_release(program);

  LinearProgram missing(0, dir + "/nope.onnx", kD, kC, 16, 1);
  ASSERT_OK(otc_program_from_entry(&missing.entry, &program));
  t = take(otc_session_create(program, comm, nullptr, &s));
  EXPECT_EQ(t.code, OTC_NOT_FOUND);
  EXPECT_NE(t.message.find(dir + "/nope.onnx"), std::string::npos) << t.message;
  otc_program_release(program);

  otc::testing::writeLinearModel(dir + "/bad.onnx", kD, kC, 1, true);
  LinearProgram bad(0, dir + "/bad.onnx", kD, kC, 16, 1);
  ASSERT_OK(otc_program_from_entry(&bad.entry, &program));
  t = take(otc_session_create(program, comm, nullptr, &s));
  EXPECT_EQ(t.code, OTC_INVALID_ARGUMENT);
  EXPECT_NE(t.message.find("'fc.weight'"), std::string::npos) << t.message;
  EXPECT_NE(t.message.find("has shape [3, 9] but the program expects [3, 8]"),
            std::string::npos)
      << t.message;
  otc_program_release(program);
}

TEST_F(SessionTest, CudaProgramWithoutDeviceIsRefused) {
  LinearProgram cuda(0, modelPath, kD, kC, 16, 1);
  cuda.entry.device = OTC_DEVICE_CUDA;
  otc_program_t *program = nullptr;
  ASSERT_OK(otc_program_from_entry(&cuda.entry, &program));
  otc_session_t *s = nullptr;
  StatusText t = take(otc_session_create(program, comm, nullptr, &s));
  if (t.code == OTC_OK) {
    otc_session_release(s);
    otc_program_release(program);
    GTEST_SKIP() << "a CUDA device is visible (otc-runtime-device-test "
                    "runs CUDA sessions)";
  }
  // Built without CUDA: FAILED_PRECONDITION; with CUDA but no device:
  // UNAVAILABLE. Either way the message says what to do.
  EXPECT_TRUE(t.code == OTC_FAILED_PRECONDITION || t.code == OTC_UNAVAILABLE)
      << t.message;
  EXPECT_NE(t.message.find("compiled with --target cuda"), std::string::npos)
      << t.message;
  EXPECT_NE(t.message.find("--target cpu"), std::string::npos) << t.message;
  otc_program_release(program);

  LinearProgram unknown(0, modelPath, kD, kC, 16, 1);
  unknown.entry.device = 7;
  ASSERT_OK(otc_program_from_entry(&unknown.entry, &program));
  t = take(otc_session_create(program, comm, nullptr, &s));
  EXPECT_EQ(t.code, OTC_FAILED_PRECONDITION);
  EXPECT_NE(t.message.find("names device 7"), std::string::npos) << t.message;
  otc_program_release(program);
}

TEST_F(SessionTest, BindAndStepErrors) {
  auto h = open(0);
  StatusText t = take(otc_session_bind_input(h->session, "x", x.data(), 4));
  EXPECT_EQ(t.code, OTC_INVALID_ARGUMENT);
  EXPECT_NE(t.message.find("needs 512 bytes, got 4"), std::string::npos)
      << t.message;
  t = take(otc_session_bind_input(h->session, "nope", x.data(), 4));
  EXPECT_EQ(t.code, OTC_NOT_FOUND);
  std::vector<int64_t> badLabels(16, 7);
  ASSERT_OK(otc_session_bind_input(h->session, "y", badLabels.data(), 16 * 8));
  t = take(otc_session_train_step(h->session, nullptr));
  EXPECT_EQ(t.code, OTC_INVALID_ARGUMENT);
  EXPECT_NE(t.message.find("label"), std::string::npos);
  EXPECT_EQ(otc_session_step(h->session), 0);
}

TEST_F(SessionTest, TrainingReducesLoss) {
  auto h = open(0, 32);
  float first = 0, last = 0;
  for (int i = 0; i < 60; ++i) {
    int64_t begin = (i * 32) % 480;
    ASSERT_OK(otc_session_bind_input(h->session, "x", &x[size_t(begin * kD)],
                                     32 * kD * 4));
    ASSERT_OK(
        otc_session_bind_input(h->session, "y", &y[size_t(begin)], 32 * 8));
    ASSERT_OK(otc_session_train_step(h->session, &last));
    if (i == 0)
      first = last;
  }
  EXPECT_LT(last, first * 0.5f);
  EXPECT_EQ(otc_session_step(h->session), 60);
  std::vector<float> logits(32 * kC);
  ASSERT_OK(
      otc_session_eval_step(h->session, logits.data(), logits.size() * 4));
  float evalLoss;
  ASSERT_OK(otc_session_eval_loss(h->session, &evalLoss));
  EXPECT_GT(evalLoss, 0.f);
  StatusText t = take(otc_session_eval_step(h->session, logits.data(), 4));
  EXPECT_EQ(t.code, OTC_INVALID_ARGUMENT);
}

TEST_F(SessionTest, ProfilesTheStepsInBetween) {
  auto h = open(0, 32);
  std::string trace = dir + "/trace.json", summary = dir + "/summary.txt";
  StatusText t = take(
      otc_session_write_profile(h->session, trace.c_str(), summary.c_str()));
  EXPECT_EQ(t.code, OTC_FAILED_PRECONDITION) << t.message;
  trainSteps(h->session, 32, 2, 0); // not profiled
  ASSERT_OK(otc_session_set_profiling(h->session, 1));
  trainSteps(h->session, 32, 5, 2);
  ASSERT_OK(otc_session_set_profiling(h->session, 0));
  trainSteps(h->session, 32, 3, 7);   // not profiled: what was kept stays
  std::vector<float> logits(32 * kC); // nor are eval steps
  ASSERT_OK(
      otc_session_eval_step(h->session, logits.data(), logits.size() * 4));
  ASSERT_OK(
      otc_session_write_profile(h->session, trace.c_str(), summary.c_str()));
  auto j = nlohmann::json::parse(readFile(trace));
  std::vector<std::string> steps;
  for (const auto &ev : j["traceEvents"])
    if (ev["ph"] == "X" && ev["cat"] == "step")
      steps.push_back(ev["name"]);
  EXPECT_EQ(steps, (std::vector<std::string>{"step 3", "step 4", "step 5",
                                             "step 6", "step 7"}));
  EXPECT_NE(readFile(summary).find("profile (rank 0): 5 steps"),
            std::string::npos)
      << readFile(summary);
  t = take(otc_session_write_profile(
      h->session, (dir + "/no/such/folder/t.json").c_str(), nullptr));
  EXPECT_EQ(t.code, OTC_IO_ERROR) << t.message;
  EXPECT_NE(t.message.find("no/such/folder/t.json"), std::string::npos)
      << t.message;
}

TEST_F(SessionTest, CheckpointRoundTrip) {
  auto h = open(0);
  trainSteps(h->session, 16, 5, 0);
  std::vector<float> w5 = param(h->session, "fc.weight", kC * kD);
  std::string path = dir + "/a.otcc";
  const char extra[] = "loader position";
  ASSERT_OK(otc_session_save_checkpoint(h->session, path.c_str(), extra,
                                        sizeof extra));
  trainSteps(h->session, 16, 3, 5);
  EXPECT_NE(param(h->session, "fc.weight", kC * kD), w5);
  char back[64] = {0};
  size_t n = 0;
  ASSERT_OK(otc_session_load_checkpoint(h->session, path.c_str(), back,
                                        sizeof back, &n));
  EXPECT_EQ(n, sizeof extra);
  EXPECT_STREQ(back, extra);
  EXPECT_EQ(param(h->session, "fc.weight", kC * kD), w5);
  EXPECT_EQ(otc_session_step(h->session), 5);
  // The momentum came back too: the next steps match a run that never
  // stopped.
  auto g = open(1);
  trainSteps(g->session, 16, 8, 0);
  trainSteps(h->session, 16, 3, 5);
  EXPECT_EQ(param(h->session, "fc.weight", kC * kD),
            param(g->session, "fc.weight", kC * kD));
  EXPECT_FALSE(std::ifstream(path + ".tmp").good());
}

TEST_F(SessionTest, CorruptCheckpointLeavesSessionUntouched) {
  auto h = open(0);
  trainSteps(h->session, 16, 2, 0);
  std::string path = dir + "/c.otcc";
  ASSERT_OK(otc_session_save_checkpoint(h->session, path.c_str(), nullptr, 0));
  trainSteps(h->session, 16, 2, 2);
  std::vector<float> before = param(h->session, "fc.weight", kC * kD);
  std::string bytes = readFile(path);

  std::string flipped = bytes;
  flipped[100] = char(flipped[100] ^ 0x10);
  writeFile(path, flipped);
  StatusText t = take(otc_session_load_checkpoint(h->session, path.c_str(),
                                                  nullptr, 0, nullptr));
  EXPECT_EQ(t.code, OTC_DATA_LOSS);
  EXPECT_EQ(t.message,
            "checkpoint '" + path + "': checksum mismatch: file is corrupt");
  EXPECT_EQ(param(h->session, "fc.weight", kC * kD), before);
  EXPECT_EQ(otc_session_step(h->session), 4);

  writeFile(path, bytes.substr(0, bytes.size() - 10));
  t = take(otc_session_load_checkpoint(h->session, path.c_str(), nullptr, 0,
                                       nullptr));
  EXPECT_EQ(t.code, OTC_DATA_LOSS);
  EXPECT_NE(t.message.find("truncated: expected " +
                           std::to_string(bytes.size()) + " bytes, found " +
                           std::to_string(bytes.size() - 10)),
            std::string::npos)
      << t.message;
  EXPECT_EQ(param(h->session, "fc.weight", kC * kD), before);

  writeFile(path, "garbage");
  t = take(otc_session_load_checkpoint(h->session, path.c_str(), nullptr, 0,
                                       nullptr));
  EXPECT_EQ(t.code, OTC_DATA_LOSS);
  EXPECT_NE(t.message.find("bad magic"), std::string::npos);

  t = take(otc_session_load_checkpoint(h->session, (dir + "/none").c_str(),
                                       nullptr, 0, nullptr));
  EXPECT_EQ(t.code, OTC_NOT_FOUND);
}

TEST_F(SessionTest, CheckpointOfAnotherProgramIsRefused) {
  auto h = open(0);
  std::string path = dir + "/p.otcc";
  ASSERT_OK(otc_session_save_checkpoint(h->session, path.c_str(), nullptr, 0));
  otc::testing::writeLinearModel(modelPath, kD + 1, kC, 1);
  auto other = open(1, 16, 1, kD + 1);
  std::vector<float> before = param(other->session, "fc.bias", kC);
  StatusText t = take(otc_session_load_checkpoint(other->session, path.c_str(),
                                                  nullptr, 0, nullptr));
  EXPECT_EQ(t.code, OTC_FAILED_PRECONDITION);
  EXPECT_NE(t.message.find("compiled for a different program/world size"),
            std::string::npos)
      << t.message;
  EXPECT_EQ(param(other->session, "fc.bias", kC), before);
}

TEST_F(SessionTest, ExportRoundTrip) {
  auto h = open(0);
  trainSteps(h->session, 16, 4, 0);
  std::string out = dir + "/trained.onnx";
  ASSERT_OK(otc_session_export_onnx(h->session, out.c_str()));
  onnx::ModelProto model;
  std::ifstream in(out, std::ios::binary);
  ASSERT_TRUE(model.ParseFromIstream(&in));
  ASSERT_EQ(model.graph().node_size(), 1);
  EXPECT_EQ(model.graph().node(0).op_type(), "Gemm");
  for (const auto &init : model.graph().initializer()) {
    size_t n = init.name() == "fc.weight" ? kC * kD : kC;
    std::vector<float> trained = param(h->session, init.name().c_str(), n);
    ASSERT_EQ(init.raw_data().size(), n * 4);
    EXPECT_EQ(init.float_data_size(), 0);
    std::vector<float> exported(n);
    std::memcpy(exported.data(), init.raw_data().data(), n * 4);
    EXPECT_EQ(exported, trained) << init.name();
  }
  // The exported model is a valid source model for a new session.
  otc::testing::LinearProgram re(2, out, kD, kC, 16, 1);
  otc_program_t *program = nullptr;
  otc_session_t *s = nullptr;
  ASSERT_OK(otc_program_from_entry(&re.entry, &program));
  ASSERT_OK(otc_session_create(program, comm, nullptr, &s));
  EXPECT_EQ(param(s, "fc.weight", kC * kD),
            param(h->session, "fc.weight", kC * kD));
  otc_session_release(s);
  otc_program_release(program);
}

//--- The driver -----------------------------------------------------------

TEST_F(SessionTest, DriverFlagErrors) {
  LinearProgram p(0, modelPath, kD, kC, 16, 1);
  std::string err;
  EXPECT_EQ(drive(p.entry, {"--bogus"}, &err), 2);
  EXPECT_NE(err.find("unknown flag '--bogus'"), std::string::npos) << err;
  EXPECT_EQ(drive(p.entry, {"--steps", "abc"}, &err), 2);
  EXPECT_NE(err.find("invalid value 'abc' for --steps"), std::string::npos)
      << err;
  EXPECT_EQ(drive(p.entry, {"--steps", "-3"}, &err), 2);
  EXPECT_NE(err.find("must be >= 0"), std::string::npos) << err;
  EXPECT_EQ(drive(p.entry, {"--epochs"}, &err), 2);
  EXPECT_NE(err.find("missing value for --epochs"), std::string::npos) << err;
  EXPECT_EQ(drive(p.entry, {"--data", "x"}, &err), 2);
  EXPECT_NE(err.find("expected NAME=FILE"), std::string::npos) << err;
  EXPECT_EQ(drive(p.entry, {"--resume"}, &err), 2);
  EXPECT_NE(err.find("--resume needs --checkpoint-dir"), std::string::npos);
  EXPECT_EQ(drive(p.entry, {}, &err), 2);
  EXPECT_NE(err.find("no training data"), std::string::npos) << err;
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(drive(p.entry, {"--help"}), 0);
  EXPECT_NE(::testing::internal::GetCapturedStdout().find("--checkpoint-dir"),
            std::string::npos);
}

TEST_F(SessionTest, DriverDataErrors) {
  writeDataFiles();
  LinearProgram p(0, modelPath, kD, kC, 16, 1);
  std::string xs = "x=" + dir + "/x.npy", ys = "y=" + dir + "/y.npy";
  std::string err;
  EXPECT_EQ(
      drive(p.entry, {"--data", xs, "--data", "z=" + dir + "/y.npy"}, &err), 2);
  EXPECT_NE(err.find("the program has no input 'z' (inputs: x, y)"),
            std::string::npos)
      << err;
  EXPECT_EQ(
      drive(p.entry, {"--data", xs, "--data", "y=" + dir + "/no.npy"}, &err),
      2);
  EXPECT_NE(err.find(dir + "/no.npy"), std::string::npos) << err;
  EXPECT_EQ(
      drive(p.entry, {"--data", "x=" + dir + "/y.npy", "--data", ys}, &err), 2);
  EXPECT_NE(err.find("for input 'x' has shape [512] but the input's shape is "
                     "[16, 8]"),
            std::string::npos)
      << err;
  Array shortLabels;
  shortLabels.dtype = DType::I64;
  shortLabels.shape = {500};
  shortLabels.data.assign(500 * 8, 0);
  writeNpy(dir + "/y500.npy", shortLabels);
  EXPECT_EQ(
      drive(p.entry, {"--data", xs, "--data", "y=" + dir + "/y500.npy"}, &err),
      2);
  EXPECT_NE(err.find("has 500 samples but 'x'"), std::string::npos) << err;

  Array badLabels;
  badLabels.dtype = DType::I64;
  badLabels.shape = {512};
  badLabels.data.assign(512 * 8, 0);
  badLabels.data[8 * 7] = 20; // sample 7 has label 20
  writeNpy(dir + "/ybad.npy", badLabels);
  EXPECT_EQ(
      drive(p.entry, {"--data", xs, "--data", "y=" + dir + "/ybad.npy"}, &err),
      2);
  EXPECT_NE(err.find("ybad.npy': label 20 of sample 7 is outside [0, 3)"),
            std::string::npos)
      << err;

  LinearProgram two(1, modelPath, kD, kC, 16, 2);
  EXPECT_EQ(drive(two.entry, {"--data", xs, "--data", ys}, &err), 2);
  EXPECT_NE(err.find("compiled for --world-size 2 but runs on 1 rank; start "
                     "it with `mpirun -np 2`"),
            std::string::npos)
      << err;
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

// 100 steps straight == 50 steps, checkpoint, resume, 50 more: bitwise, over
// several epochs (512 samples / batch 16 = 32 steps per epoch).
TEST_F(SessionTest, DriverResumeIsBitwiseExact) {
  writeDataFiles();
  LinearProgram p(0, modelPath, kD, kC, 16, 1);
  std::vector<std::string> data = {"--data", "x=" + dir + "/x.npy",
                                   "--data", "y=" + dir + "/y.npy",
                                   "--seed", "5",
                                   "--quiet"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> all = data;
    all.insert(all.end(), more.begin(), more.end());
    return all;
  };
  std::string err;
  ASSERT_EQ(drive(p.entry,
                  with({"--steps", "100", "--export", dir + "/straight.onnx"}),
                  &err),
            0)
      << err;
  ASSERT_EQ(drive(p.entry,
                  with({"--steps", "50", "--checkpoint-dir", dir + "/ck",
                        "--checkpoint-every", "20"}),
                  &err),
            0)
      << err;
  // Checkpoints at 20, 40 and the final 50; the last two are kept.
  EXPECT_FALSE(std::ifstream(dir + "/ck/ckpt-20.otcc").good());
  EXPECT_TRUE(std::ifstream(dir + "/ck/ckpt-40.otcc").good());
  EXPECT_TRUE(std::ifstream(dir + "/ck/ckpt-50.otcc").good());
  ASSERT_EQ(drive(p.entry,
                  with({"--steps", "100", "--checkpoint-dir", dir + "/ck",
                        "--resume", "--export", dir + "/resumed.onnx"}),
                  &err),
            0)
      << err;
  std::vector<float> a = exportedWeights(dir + "/straight.onnx");
  std::vector<float> b = exportedWeights(dir + "/resumed.onnx");
  ASSERT_EQ(a.size(), size_t(kC * kD + kC));
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4));
  EXPECT_TRUE(std::ifstream(dir + "/ck/ckpt-100.otcc").good());

  // A corrupt newest checkpoint: reported, the previous good one named, no
  // silent fallback.
  std::string newest = dir + "/ck/ckpt-100.otcc";
  std::string bytes = readFile(newest);
  bytes[bytes.size() / 2] = char(bytes[bytes.size() / 2] ^ 1);
  writeFile(newest, bytes);
  EXPECT_EQ(drive(p.entry,
                  with({"--steps", "120", "--checkpoint-dir", dir + "/ck",
                        "--resume"}),
                  &err),
            1);
  EXPECT_NE(err.find("checksum mismatch: file is corrupt"), std::string::npos)
      << err;
  EXPECT_NE(err.find("--resume-from " + dir + "/ck/ckpt-50.otcc"),
            std::string::npos)
      << err;
}

TEST_F(SessionTest, DriverMetricsAndEval) {
  writeDataFiles();
  LinearProgram p(0, modelPath, kD, kC, 16, 1);
  std::string metrics = dir + "/m.jsonl";
  std::string err;
  ASSERT_EQ(drive(p.entry,
                  {"--data", "x=" + dir + "/x.npy", "--data",
                   "y=" + dir + "/y.npy", "--eval-data", "x=" + dir + "/x.npy",
                   "--eval-data", "y=" + dir + "/y.npy", "--epochs", "2",
                   "--log-every", "10", "--metrics", metrics},
                  &err),
            0)
      << err;
  EXPECT_NE(err.find("epoch 2/2 [####################] step 32/32 loss"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("eval: accuracy "), std::string::npos) << err;
  EXPECT_NE(err.find("/512) loss"), std::string::npos) << err;
  std::istringstream lines(readFile(metrics));
  std::string line;
  int steps = 0, evals = 0;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line);
    if (j.value("eval", false)) {
      ++evals;
      EXPECT_EQ(j["total"], 512);
      EXPECT_GT(j["accuracy"].get<double>(), 0.5);
    } else {
      ++steps;
      for (const char *key : {"step", "epoch", "loss", "samples_per_s",
                              "bytes_sent", "bytes_received", "time_s"})
        EXPECT_TRUE(j.contains(key)) << key << " in " << line;
    }
  }
  EXPECT_EQ(evals, 2); // after each epoch
  EXPECT_EQ(steps, 7); // steps 10..60 and the last, 64
}

TEST_F(SessionTest, DriverProfile) {
  writeDataFiles();
  LinearProgram p(0, modelPath, kD, kC, 16, 1);
  std::vector<std::string> data = {"--data",  "x=" + dir + "/x.npy",
                                   "--data",  "y=" + dir + "/y.npy",
                                   "--steps", "6"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), data.begin(), data.end());
    return more;
  };
  std::string err, trace = dir + "/p.json";
  ASSERT_EQ(drive(p.entry, with({"--profile", trace}), &err), 0) << err;
  auto j = nlohmann::json::parse(readFile(trace));
  int steps = 0;
  for (const auto &ev : j["traceEvents"])
    steps += ev["ph"] == "X" && ev["cat"] == "step";
  EXPECT_EQ(steps, 6);
  // An output the run cannot write, or the model itself, is refused before
  // any step.
  EXPECT_EQ(drive(p.entry, with({"--profile", dir + "/none/p.json"}), &err), 2);
  EXPECT_NE(err.find("--profile"), std::string::npos) << err;
  EXPECT_EQ(drive(p.entry, with({"--profile", modelPath}), &err), 2);
  EXPECT_NE(err.find("--profile"), std::string::npos) << err;
}

TEST_F(SessionTest, HyperparametersAreReadAtRunTime) {
  auto h = open(0);
  double v = 0;
  ASSERT_OK(otc_session_get_hyperparameter(h->session, "momentum", &v));
  EXPECT_FLOAT_EQ(float(v), 0.9f) << "the manifest's value";
  EXPECT_FLOAT_EQ(float(otc_session_get_lr(h->session)), 0.1f);
  StatusText t = take(otc_session_get_hyperparameter(h->session, "beta1", &v));
  EXPECT_EQ(t.code, OTC_INVALID_ARGUMENT);
  EXPECT_NE(t.message.find("optimizer momentum has no beta1"),
            std::string::npos)
      << t.message;
  t = take(otc_session_set_lr(h->session, -0.5));
  EXPECT_EQ(t.code, OTC_INVALID_ARGUMENT);
  EXPECT_NE(t.message.find("lr must be >= 0, got -0.5"), std::string::npos);
  t = take(otc_session_set_hyperparameter(h->session, "lr_max", 1));
  EXPECT_EQ(t.code, OTC_INVALID_ARGUMENT);
  // lr 0: the weights stay where they are; then lr 0.1 trains again.
  std::vector<float> w0 = param(h->session, "fc.weight", kC * kD);
  ASSERT_OK(otc_session_set_lr(h->session, 0.0));
  trainSteps(h->session, 16, 3, 0);
  EXPECT_EQ(param(h->session, "fc.weight", kC * kD), w0);
  ASSERT_OK(otc_session_set_lr(h->session, 0.1));
  trainSteps(h->session, 16, 1, 3);
  EXPECT_NE(param(h->session, "fc.weight", kC * kD), w0);
  // Momentum 0 vs 0.9 from the same start: different trajectories.
  auto a = open(1), b = open(2);
  ASSERT_OK(otc_session_set_hyperparameter(b->session, "momentum", 0.0));
  trainSteps(a->session, 16, 3, 0);
  trainSteps(b->session, 16, 3, 0);
  EXPECT_NE(param(a->session, "fc.weight", kC * kD),
            param(b->session, "fc.weight", kC * kD));
}

TEST_F(SessionTest, ScheduleSetsEveryStepAndResumesBitwise) {
  otc_lr_schedule_t sc;
  otc_lr_schedule_initialize(&sc);
  sc.kind = OTC_LR_COSINE;
  sc.base_lr = 0.2;
  sc.warmup_steps = 4;
  sc.warmup_start_factor = 0.25;
  sc.total_steps = 12;
  sc.lr_min = 0.02;
  auto straight = open(0);
  ASSERT_OK(otc_session_set_lr_schedule(straight->session, &sc));
  StatusText t = take(otc_session_set_lr(straight->session, 0.1));
  EXPECT_EQ(t.code, OTC_FAILED_PRECONDITION) << t.message;
  std::vector<double> lrs;
  for (int64_t step = 1; step <= 12; ++step) {
    double want = 0;
    ASSERT_OK(otc_lr_schedule_evaluate(&sc, step, &want, nullptr));
    EXPECT_EQ(otc_session_get_lr(straight->session), want) << step;
    lrs.push_back(want);
    trainSteps(straight->session, 16, 1, step - 1);
  }
  EXPECT_DOUBLE_EQ(lrs[0], 0.05);
  EXPECT_DOUBLE_EQ(lrs[4], 0.2);
  // Checkpoints in the warm-up (step 2) and in the decay (step 7); a new
  // session without a schedule of its own takes the checkpoint's.
  for (int at : {2, 7}) {
    auto first = open(1);
    ASSERT_OK(otc_session_set_lr_schedule(first->session, &sc));
    trainSteps(first->session, 16, at, 0);
    std::string path = dir + "/s" + std::to_string(at) + ".otcc";
    ASSERT_OK(
        otc_session_save_checkpoint(first->session, path.c_str(), nullptr, 0));
    auto resumed = open(2);
    EXPECT_EQ(otc_session_get_lr_schedule(resumed->session, nullptr), 0);
    ASSERT_OK(otc_session_load_checkpoint(resumed->session, path.c_str(),
                                          nullptr, 0, nullptr));
    otc_lr_schedule_t back;
    ASSERT_EQ(otc_session_get_lr_schedule(resumed->session, &back), 1);
    EXPECT_EQ(back.total_steps, 12);
    EXPECT_EQ(otc_session_get_lr(resumed->session), lrs[size_t(at)]);
    trainSteps(resumed->session, 16, 12 - at, at);
    std::vector<float> a = param(straight->session, "fc.weight", kC * kD);
    std::vector<float> b = param(resumed->session, "fc.weight", kC * kD);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4)) << at;
  }
  // Removing the schedule keeps the last lr.
  ASSERT_OK(otc_session_set_lr_schedule(straight->session, nullptr));
  EXPECT_EQ(otc_session_get_lr(straight->session), 0.02);
  ASSERT_OK(otc_session_set_lr(straight->session, 0.1));
}

TEST_F(SessionTest, DriverScheduleFlags) {
  writeDataFiles();
  LinearProgram p(0, modelPath, kD, kC, 16, 1);
  std::vector<std::string> data = {"--data", "x=" + dir + "/x.npy", "--data",
                                   "y=" + dir + "/y.npy"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> all = data;
    all.insert(all.end(), more.begin(), more.end());
    return all;
  };
  std::string err;
  EXPECT_EQ(drive(p.entry, with({"--lr-schedule", "exponential"}), &err), 2);
  EXPECT_NE(err.find("unknown --lr-schedule 'exponential'"), std::string::npos)
      << err;
  EXPECT_EQ(drive(p.entry, with({"--lr", "-0.1"}), &err), 2);
  EXPECT_NE(err.find("for --lr: must be > 0"), std::string::npos) << err;
  EXPECT_EQ(drive(p.entry, with({"--beta1", "0.9"}), &err), 2);
  EXPECT_NE(err.find("--beta1: the program's optimizer momentum has no beta1"),
            std::string::npos)
      << err;
  EXPECT_EQ(drive(p.entry,
                  with({"--lr-schedule", "cosine", "--warmup-steps", "40",
                        "--steps", "30"}),
                  &err),
            2);
  EXPECT_NE(err.find("the warm-up (40 steps) must be shorter than the "
                     "schedule (30 steps)"),
            std::string::npos)
      << err;
  EXPECT_EQ(drive(p.entry, with({"--gamma", "abc"}), &err), 2);
  EXPECT_NE(err.find("invalid value 'abc' for --gamma"), std::string::npos);
  // The lr of every logged step: a linear warm-up over the first 4 steps,
  // then a cosine to 0.01 at step 20 (--decay-steps; the run stops at 12).
  std::string metrics = dir + "/lr.jsonl";
  ASSERT_EQ(
      drive(p.entry,
            with({"--steps", "12", "--lr", "0.2", "--lr-schedule", "cosine",
                  "--warmup-steps", "4", "--decay-steps", "20", "--lr-min",
                  "0.01", "--log-every", "1", "--metrics", metrics}),
            &err),
      0)
      << err;
  EXPECT_NE(err.find(" lr 0.05 "), std::string::npos) << err;
  otc_lr_schedule_t sc;
  otc_lr_schedule_initialize(&sc);
  sc.kind = OTC_LR_COSINE;
  sc.base_lr = 0.2;
  sc.warmup_steps = 4;
  sc.total_steps = 20;
  sc.lr_min = 0.01;
  std::istringstream lines(readFile(metrics));
  std::string line;
  int64_t seen = 0;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line);
    double want = 0;
    ASSERT_OK(otc_lr_schedule_evaluate(&sc, j["step"].get<int64_t>(), &want,
                                       nullptr));
    EXPECT_EQ(j["lr"].get<double>(), want) << line;
    ++seen;
  }
  EXPECT_EQ(seen, 12);
}

TEST_F(SessionTest, DriverFashionMnist) {
  otc::testing::writeLinearModel(dir + "/fm.onnx", 784, 10, 3);
  LinearProgram p(0, dir + "/fm.onnx", 784, 10, 64, 1, 0.01f, 0.9f);
  std::string err;
  ASSERT_EQ(drive(p.entry,
                  {"--dataset", "fashion-mnist", "--steps", "300",
                   "--log-every", "100"},
                  &err),
            0)
      << err;
  EXPECT_NE(err.find("normalised with mean 0.2860 std 0.3530"),
            std::string::npos)
      << err;
  size_t at = err.find("eval: accuracy ");
  ASSERT_NE(at, std::string::npos) << err;
  double acc = std::atof(err.c_str() + at + 15);
  EXPECT_GT(acc, 0.7) << err;
  EXPECT_NE(err.find("/10000) loss"), std::string::npos) << err;
}

// A 1-rank SDP program: the whole model (slot 1) evaluates and calibrates,
// its one variant (slot 0, every parameter) trains.
struct SdpProgram {
  SdpProgram(const std::string &modelPath, int64_t batch)
      : variant(0, modelPath, kD, kC, batch, 1),
        whole(1, modelPath, kD, kC, batch, 1) {
    whole.manifest.insert(whole.manifest.size() - 1,
                          R"(,"sdp":{"mode":"block","masking":"forward",)"
                          R"("active":1,"rank_variant":[0],"components":[],)"
                          R"("groups":[]})");
    whole.entry.manifest_json = whole.manifest.c_str();
    whole.entry.num_variants = 1;
    whole.entry.variants = variants;
    whole.entry.rank_variant = rankVariant;
    whole.entry.calibrate_step = recordCalibration;
    variants[0] = &variant.entry;
  }
  LinearProgram variant, whole;
  const otc_program_entry_t *variants[1] = {};
  const int32_t rankVariant[1] = {0};
};

TEST_F(SessionTest, FullModelIsAssembledAndCalibrated) {
  const int64_t batch = 16;
  SdpProgram sdp(modelPath, batch);
  otc_program_t *program = nullptr;
  ASSERT_OK(otc_program_from_entry(&sdp.whole.entry, &program));
  std::unique_ptr<otc_program_t, void (*)(otc_program_t *)> programOwner(
      program, otc_program_release);
  EXPECT_EQ(otc_program_features(program),
            uint32_t(OTC_PROGRAM_SDP | OTC_PROGRAM_EVAL_STEP |
                     OTC_PROGRAM_EVAL_LOSS | OTC_PROGRAM_CALIBRATE_STEP |
                     OTC_PROGRAM_PER_RANK_STATE));
  otc_session_t *session = nullptr;
  ASSERT_OK(otc_session_create(program, comm, nullptr, &session));
  std::unique_ptr<otc_session_t, void (*)(otc_session_t *)> sessionOwner(
      session, otc_session_release);
  // The session's manifest is its rank's variant, not the whole model.
  EXPECT_STREQ(otc_session_manifest(session), sdp.variant.entry.manifest_json);
  EXPECT_STREQ(otc_session_manifest(nullptr), "");
  trainSteps(session, batch, 3, 0);
  std::vector<float> trained = param(session, "fc.weight", kC * kD);

  gCalibrations = 0;
  ASSERT_OK(otc_session_assemble_full_model(session));
  EXPECT_EQ(gCalibrations, 0); // assembling does not calibrate
  // Calibration runs the whole model on the batch bound to the variant.
  int64_t begin = 40;
  ASSERT_OK(otc_session_bind_input(session, "x", &x[size_t(begin * kD)],
                                   size_t(batch * kD) * 4));
  ASSERT_OK(otc_session_bind_input(session, "y", &y[size_t(begin)],
                                   size_t(batch) * 8));
  ASSERT_OK(otc_session_calibrate_full_model(session));
  EXPECT_EQ(gCalibrations, 1);
  EXPECT_EQ(gCalibratedWeight, trained);
  EXPECT_EQ(gCalibratedInput,
            std::vector<float>(x.begin() + begin * kD,
                               x.begin() + (begin + batch) * kD));
  // No buffers to average on one rank; the weights stay as trained.
  ASSERT_OK(otc_session_average_full_buffers(session));
  ASSERT_OK(otc_session_calibrate_full_model(session));
  EXPECT_EQ(gCalibrations, 2);
  EXPECT_EQ(gCalibratedWeight, trained);
}

TEST_F(SessionTest, FullModelCallsDoNothingWithoutSdp) {
  LinearProgram fixture(0, modelPath, kD, kC, 16, 1);
  fixture.entry.calibrate_step = recordCalibration;
  otc_program_t *program = nullptr;
  ASSERT_OK(otc_program_from_entry(&fixture.entry, &program));
  std::unique_ptr<otc_program_t, void (*)(otc_program_t *)> programOwner(
      program, otc_program_release);
  otc_session_t *session = nullptr;
  ASSERT_OK(otc_session_create(program, comm, nullptr, &session));
  std::unique_ptr<otc_session_t, void (*)(otc_session_t *)> sessionOwner(
      session, otc_session_release);
  trainSteps(session, 16, 2, 0);
  std::vector<float> before = param(session, "fc.weight", kC * kD);
  gCalibrations = 0;
  ASSERT_OK(otc_session_assemble_full_model(session));
  ASSERT_OK(otc_session_calibrate_full_model(session));
  ASSERT_OK(otc_session_average_full_buffers(session));
  EXPECT_EQ(gCalibrations, 0);
  EXPECT_EQ(param(session, "fc.weight", kC * kD), before);
  EXPECT_EQ(otc_session_step(session), 2);
  for (otc_status_t st : {otc_session_assemble_full_model(nullptr),
                          otc_session_calibrate_full_model(nullptr),
                          otc_session_average_full_buffers(nullptr)})
    EXPECT_EQ(take(st).code, OTC_INVALID_ARGUMENT);
}

//--- Weight EMA and the hyperparameters of the other optimizers -----------

otc::testing::LinearOptions withEma(double decay) {
  otc::testing::LinearOptions o;
  o.ema = decay;
  return o;
}

std::vector<float> emaParam(otc_session_t *s, const char *name, size_t n) {
  std::vector<float> v(n);
  StatusText t = take(otc_session_get_ema_param(s, name, v.data(), n * 4));
  EXPECT_EQ(t.code, OTC_OK) << t.message;
  return v;
}

TEST_F(SessionTest, EmaIsReadExportedAndCheckpointed) {
  const double decay = 0.75;
  auto h = open(0, 16, 1, kD, withEma(decay));
  EXPECT_NE(otc_program_features(h->program) & OTC_PROGRAM_EMA, 0u);
  const size_t n = kC * kD;
  // The EMA the state must hold, from the weights after every step.
  trainSteps(h->session, 16, 1, 0);
  std::vector<float> want = param(h->session, "fc.weight", n);
  EXPECT_EQ(emaParam(h->session, "fc.weight", n), want)
      << "the first step copies the weights";
  for (int step = 2; step <= 5; ++step) {
    trainSteps(h->session, 16, 1, step - 1);
    std::vector<float> w = param(h->session, "fc.weight", n);
    for (size_t i = 0; i < n; ++i)
      want[i] = float(decay * want[i] + (1 - decay) * double(w[i]));
  }
  std::vector<float> ema5 = emaParam(h->session, "fc.weight", n);
  EXPECT_EQ(ema5, want);
  EXPECT_NE(ema5, param(h->session, "fc.weight", n));
  StatusText t =
      take(otc_session_get_ema_param(h->session, "fc.weight", ema5.data(), 4));
  EXPECT_EQ(t.code, OTC_INVALID_ARGUMENT) << t.message;
  t = take(otc_session_get_ema_param(h->session, "nope", ema5.data(), 4));
  EXPECT_EQ(t.code, OTC_NOT_FOUND) << t.message;

  // Export: the EMA in place of every trained value; --export unchanged.
  std::string emaPath = dir + "/ema.onnx", rawPath = dir + "/raw.onnx";
  ASSERT_OK(otc_session_export_onnx_ema(h->session, emaPath.c_str()));
  ASSERT_OK(otc_session_export_onnx(h->session, rawPath.c_str()));
  std::vector<float> emaBias = emaParam(h->session, "fc.bias", kC);
  std::vector<float> expected = ema5;
  expected.insert(expected.end(), emaBias.begin(), emaBias.end());
  EXPECT_EQ(exportedWeights(emaPath), expected);
  std::vector<float> raw = param(h->session, "fc.weight", n);
  std::vector<float> rawBias = param(h->session, "fc.bias", kC);
  raw.insert(raw.end(), rawBias.begin(), rawBias.end());
  EXPECT_EQ(exportedWeights(rawPath), raw);

  // A checkpoint holds the EMA with the optimizer state: a resumed run
  // continues it bitwise as one that never stopped.
  std::string path = dir + "/ema.otcc";
  ASSERT_OK(otc_session_save_checkpoint(h->session, path.c_str(), nullptr, 0));
  trainSteps(h->session, 16, 3, 5);
  ASSERT_OK(otc_session_load_checkpoint(h->session, path.c_str(), nullptr, 0,
                                        nullptr));
  EXPECT_EQ(emaParam(h->session, "fc.weight", n), ema5);
  auto straight = open(1, 16, 1, kD, withEma(decay));
  trainSteps(straight->session, 16, 8, 0);
  trainSteps(h->session, 16, 3, 5);
  EXPECT_EQ(emaParam(h->session, "fc.weight", n),
            emaParam(straight->session, "fc.weight", n));
  EXPECT_EQ(emaParam(h->session, "fc.bias", kC),
            emaParam(straight->session, "fc.bias", kC));
}

TEST_F(SessionTest, ProgramWithoutEmaRefusesTheEmaCalls) {
  auto h = open(0);
  EXPECT_EQ(otc_program_features(h->program) & OTC_PROGRAM_EMA, 0u);
  std::string path = dir + "/ema.onnx";
  StatusText t = take(otc_session_export_onnx_ema(h->session, path.c_str()));
  EXPECT_EQ(t.code, OTC_FAILED_PRECONDITION);
  EXPECT_NE(t.message.find("keeps no EMA of its weights (compile with "
                           "otc-compile --ema DECAY)"),
            std::string::npos)
      << t.message;
  EXPECT_FALSE(std::ifstream(path).good());
  std::vector<float> v(kC * kD);
  t = take(otc_session_get_ema_param(h->session, "fc.weight", v.data(),
                                     v.size() * 4));
  EXPECT_EQ(t.code, OTC_FAILED_PRECONDITION) << t.message;
  t = take(otc_session_export_onnx_ema(nullptr, path.c_str()));
  EXPECT_EQ(t.code, OTC_INVALID_ARGUMENT);
}

TEST_F(SessionTest, ManifestEmaNeedsItsState) {
  otc::testing::LinearOptions o = withEma(0.5);
  o.emaState = false;
  LinearProgram p(0, modelPath, kD, kC, 16, 1, 0.1f, 0.9f, nullptr, o);
  otc_program_t *program = nullptr;
  StatusText t = take(otc_program_from_entry(&p.entry, &program));
  EXPECT_EQ(t.code, OTC_INVALID_ARGUMENT);
  EXPECT_NE(t.message.find("parameter 'fc.weight' has no state "
                           "'fc.weight.ema'"),
            std::string::npos)
      << t.message;
  otc_program_release(program);
  o.emaState = true;
  o.ema = 1.5;
  LinearProgram q(1, modelPath, kD, kC, 16, 1, 0.1f, 0.9f, nullptr, o);
  t = take(otc_program_from_entry(&q.entry, &program));
  EXPECT_NE(t.message.find("ema must be in [0, 1)"), std::string::npos)
      << t.message;
  otc_program_release(program);
}

TEST_F(SessionTest, DriverExportsTheEma) {
  writeDataFiles();
  std::vector<std::string> data = {"--data", "x=" + dir + "/x.npy", "--data",
                                   "y=" + dir + "/y.npy", "--quiet"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> all = data;
    all.insert(all.end(), more.begin(), more.end());
    return all;
  };
  std::string err;
  LinearProgram plain(0, modelPath, kD, kC, 16, 1);
  EXPECT_EQ(drive(plain.entry,
                  with({"--steps", "2", "--export-ema", dir + "/e.onnx"}),
                  &err),
            2);
  EXPECT_NE(err.find("--export-ema: the program keeps no EMA"),
            std::string::npos)
      << err;
  LinearProgram ema(1, modelPath, kD, kC, 16, 1, 0.1f, 0.9f, nullptr,
                    withEma(0.5));
  // One step: the EMA is the weights; three: it lags behind them.
  for (const char *steps : {"1", "3"}) {
    std::string e = dir + "/ema" + steps + ".onnx";
    std::string w = dir + "/w" + steps + ".onnx";
    ASSERT_EQ(drive(ema.entry,
                    with({"--steps", steps, "--export", w, "--export-ema", e}),
                    &err),
              0)
        << err;
    std::vector<float> a = exportedWeights(e), b = exportedWeights(w);
    ASSERT_EQ(a.size(), size_t(kC * kD + kC));
    if (std::string(steps) == "1")
      EXPECT_EQ(a, b);
    else
      EXPECT_NE(a, b);
  }
}

// The hyperparameters ABI 7 added go through the C API and the checkpoint's
// hyper section like the others.
TEST_F(SessionTest, NewHyperparametersRoundTripThroughCheckpoints) {
  otc::testing::LinearOptions rms;
  rms.optimizer = "rmsprop";
  rms.optimizerFields = ",\"alpha\":0.95,\"eps\":1e-07,"
                        "\"momentum_buffer\":true";
  auto a = open(0, 16, 1, kD, rms);
  double v = 0;
  ASSERT_OK(otc_session_get_hyperparameter(a->session, "alpha", &v));
  EXPECT_EQ(v, 0.95) << "the manifest's value";
  ASSERT_OK(otc_session_get_hyperparameter(a->session, "eps", &v));
  EXPECT_EQ(v, 1e-7);
  ASSERT_OK(otc_session_set_hyperparameter(a->session, "alpha", 0.9));
  ASSERT_OK(otc_session_set_hyperparameter(a->session, "eps", 1e-6));
  ASSERT_OK(otc_session_set_hyperparameter(a->session, "momentum", 0.25));
  StatusText t = take(otc_session_set_hyperparameter(a->session, "alpha", 1));
  EXPECT_EQ(t.code, OTC_INVALID_ARGUMENT) << t.message;
  t = take(otc_session_set_hyperparameter(a->session, "lr_decay", 0.1));
  EXPECT_NE(t.message.find("optimizer rmsprop has no lr_decay"),
            std::string::npos)
      << t.message;
  trainSteps(a->session, 16, 2, 0);
  std::string path = dir + "/rms.otcc";
  ASSERT_OK(otc_session_save_checkpoint(a->session, path.c_str(), nullptr, 0));
  auto b = open(1, 16, 1, kD, rms);
  ASSERT_OK(otc_session_load_checkpoint(b->session, path.c_str(), nullptr, 0,
                                        nullptr));
  for (auto [name, want] : {std::pair<const char *, double>{"alpha", 0.9},
                            {"eps", 1e-6},
                            {"momentum", 0.25}}) {
    ASSERT_OK(otc_session_get_hyperparameter(b->session, name, &v));
    EXPECT_EQ(v, want) << name;
  }
  // RMSprop without a momentum buffer has no momentum.
  rms.optimizerFields = "";
  auto c = open(2, 16, 1, kD, rms);
  t = take(otc_session_set_hyperparameter(c->session, "momentum", 0.5));
  EXPECT_NE(t.message.find("rmsprop has no momentum"), std::string::npos)
      << t.message;

  otc::testing::LinearOptions adagrad;
  adagrad.optimizer = "adagrad";
  adagrad.optimizerFields = ",\"lr_decay\":0.5";
  auto d = open(3, 16, 1, kD, adagrad);
  ASSERT_OK(otc_session_get_hyperparameter(d->session, "lr_decay", &v));
  EXPECT_EQ(v, 0.5);
  ASSERT_OK(otc_session_set_hyperparameter(d->session, "lr_decay", 0.125));
  path = dir + "/adagrad.otcc";
  ASSERT_OK(otc_session_save_checkpoint(d->session, path.c_str(), nullptr, 0));
  d.reset();
  auto e = open(3, 16, 1, kD, adagrad);
  ASSERT_OK(otc_session_load_checkpoint(e->session, path.c_str(), nullptr, 0,
                                        nullptr));
  ASSERT_OK(otc_session_get_hyperparameter(e->session, "lr_decay", &v));
  EXPECT_EQ(v, 0.125);
}

} // namespace
