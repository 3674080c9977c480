//===- program_test.cpp - What the C API tells of a program ---------------===//

#include "core/test_fixture.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <climits>

#include <string>
#include <vector>

namespace {

using otc::testing::LinearProgram;
using otc::testing::StatusText;
using otc::testing::take;

int noStep(uint8_t *, const otc_step_context_t *) { return OTC_STEP_OK; }

std::vector<int64_t> shapeOf(const otc_tensor_info_t &t) {
  return std::vector<int64_t>(t.shape, t.shape + t.rank);
}

/// A program over a hand-written manifest, with steps that do nothing.
struct ManifestProgram {
  explicit ManifestProgram(std::string json, uint64_t arenaBytes)
      : manifest(std::move(json)) {
    entry.abi_version = OTC_PROGRAM_ABI_VERSION;
    entry.manifest_json = manifest.c_str();
    entry.arena_bytes = arenaBytes;
    entry.train_step = noStep;
  }
  std::string manifest;
  otc_program_entry_t entry{};
};

class ProgramTest : public ::testing::Test {
protected:
  void TearDown() override { otc_program_release(program); }
  void load(const otc_program_entry_t &entry) {
    ASSERT_OK(otc_program_from_entry(&entry, &program));
  }
  otc_program_t *program = nullptr;
};

TEST_F(ProgramTest, InputsAndEvalOutputAsTheManifestDeclares) {
  // x f32 [16, 8] (data), y i64 [16] (label), logits f32 [16, 3].
  LinearProgram fixture(0, "unused.onnx", 8, 3, 16, 2);
  load(fixture.entry);
  EXPECT_EQ(otc_program_world_size(program), 2);
  EXPECT_EQ(otc_program_batch(program), 16);
  EXPECT_EQ(otc_program_seed(program), 0u);
  EXPECT_STREQ(otc_program_loss(program), "cross-entropy");

  ASSERT_EQ(otc_program_input_count(program), 2);
  otc_tensor_info_t in;
  ASSERT_OK(otc_program_input(program, 0, &in));
  EXPECT_STREQ(in.name, "x");
  EXPECT_STREQ(in.role, "data");
  EXPECT_EQ(in.dtype, OTC_DTYPE_F32);
  EXPECT_EQ(shapeOf(in), (std::vector<int64_t>{16, 8}));
  ASSERT_OK(otc_program_input(program, 1, &in));
  EXPECT_STREQ(in.name, "y");
  EXPECT_STREQ(in.role, "label");
  EXPECT_EQ(in.dtype, OTC_DTYPE_I64);
  EXPECT_EQ(shapeOf(in), (std::vector<int64_t>{16}));
  for (int64_t bad : {int64_t(2), int64_t(-1)}) {
    StatusText t = take(otc_program_input(program, bad, &in));
    EXPECT_EQ(t.code, OTC_INVALID_ARGUMENT);
    EXPECT_EQ(t.message,
              "input index " + std::to_string(bad) + " is outside [0, 2)");
  }

  otc_tensor_info_t out;
  ASSERT_OK(otc_program_eval_output(program, &out));
  EXPECT_STREQ(out.name, "logits");
  EXPECT_STREQ(out.role, "");
  EXPECT_EQ(out.dtype, OTC_DTYPE_F32);
  EXPECT_EQ(shapeOf(out), (std::vector<int64_t>{16, 3}));

  EXPECT_EQ(otc_program_features(program),
            uint32_t(OTC_PROGRAM_EVAL_STEP | OTC_PROGRAM_EVAL_LOSS));
}

TEST_F(ProgramTest, WorldSizeCheckNamesTheLaunch) {
  LinearProgram fixture(0, "unused.onnx", 8, 3, 16, 2);
  load(fixture.entry);
  ASSERT_OK(otc_program_check_world_size(program, 2));
  StatusText t = take(otc_program_check_world_size(program, 1));
  EXPECT_EQ(t.code, OTC_FAILED_PRECONDITION);
  EXPECT_EQ(t.message, "this program was compiled for --world-size 2 but runs "
                       "on 1 rank; start it with `mpirun -np 2`");
  t = take(otc_program_check_world_size(program, 4));
  EXPECT_EQ(t.message, "this program was compiled for --world-size 2 but runs "
                       "on 4 ranks; start it with `mpirun -np 2`");
}

TEST_F(ProgramTest, NoEvalOutputAndPerRankState) {
  ManifestProgram p(
      R"({"otc_manifest_version":1,"world_size":1,"batch":4,"seed":42,
      "loss":"mse","arena_bytes":64,
      "inputs":[{"name":"pixels","dtype":"u8","shape":[4,3,2],"offset":0}],
      "state":[{"name":"bucket0.residual","dtype":"f32","shape":[2],
                "offset":32,"param":"bucket0","role":"residual"}]})",
      64);
  load(p.entry);
  EXPECT_EQ(otc_program_seed(program), 42u);
  EXPECT_STREQ(otc_program_loss(program), "mse");
  ASSERT_EQ(otc_program_input_count(program), 1);
  otc_tensor_info_t in;
  ASSERT_OK(otc_program_input(program, 0, &in));
  EXPECT_STREQ(in.name, "pixels");
  EXPECT_STREQ(in.role, "");
  EXPECT_EQ(in.dtype, OTC_DTYPE_U8);
  EXPECT_EQ(shapeOf(in), (std::vector<int64_t>{4, 3, 2}));
  StatusText t = take(otc_program_eval_output(program, &in));
  EXPECT_EQ(t.code, OTC_NOT_FOUND);
  // Error-feedback residuals differ between ranks; no eval step or loss.
  EXPECT_EQ(otc_program_features(program),
            uint32_t(OTC_PROGRAM_PER_RANK_STATE));
}

TEST_F(ProgramTest, SdpFeatures) {
  const char *json =
      R"({"otc_manifest_version":1,"world_size":1,"batch":4,"arena_bytes":64,
      "inputs":[{"name":"x","dtype":"f32","shape":[4,2],"offset":0}],
      "sdp":{"mode":"block","masking":"forward","active":1,
             "rank_variant":[0],"components":[],"groups":[[0]]}})";
  ManifestProgram variant(json, 64), whole(json, 64);
  const otc_program_entry_t *variants[] = {&variant.entry};
  const int32_t rankVariant[] = {0};
  whole.entry.train_step = nullptr;
  whole.entry.eval_step = noStep;
  whole.entry.num_variants = 1;
  whole.entry.variants = variants;
  whole.entry.rank_variant = rankVariant;
  load(whole.entry);
  // An SDP plan means per-rank state: each rank trains its own subnetwork.
  uint32_t expected =
      OTC_PROGRAM_SDP | OTC_PROGRAM_EVAL_STEP | OTC_PROGRAM_PER_RANK_STATE;
  EXPECT_EQ(otc_program_features(program), expected);
  otc_program_release(program);
  program = nullptr;
  whole.entry.calibrate_step = noStep; // BatchNorm's re-estimation
  load(whole.entry);
  EXPECT_EQ(otc_program_features(program),
            expected | uint32_t(OTC_PROGRAM_CALIBRATE_STEP));
}

TEST_F(ProgramTest, RelativeModelPathIsBesideTheProgram) {
  // An entry table in this executable's data: a relative model path is the
  // file of that name in the executable's folder.
  LinearProgram relative(0, "copy.model.onnx", 8, 3, 16, 1);
  static otc_program_entry_t inData;
  inData = relative.entry;
  load(inData);
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  ASSERT_GT(n, 0);
  exe[n] = '\0';
  std::string folder(exe);
  folder.resize(folder.rfind('/'));
  EXPECT_EQ(std::string(otc_program_model_path(program)),
            folder + "/copy.model.onnx");
  otc_program_release(program);
  program = nullptr;
  // One built at run time (here on the stack) lies in no file: relative to
  // the working folder, as given.
  load(relative.entry);
  EXPECT_STREQ(otc_program_model_path(program), "copy.model.onnx");
  otc_program_release(program);
  program = nullptr;
  LinearProgram absolute(1, "/elsewhere/m.onnx", 8, 3, 16, 1);
  inData = absolute.entry;
  load(inData);
  EXPECT_STREQ(otc_program_model_path(program), "/elsewhere/m.onnx");
}

TEST(Program, NullIsSafe) {
  EXPECT_STREQ(otc_program_model_path(nullptr), "");
  EXPECT_EQ(otc_program_batch(nullptr), 0);
  EXPECT_EQ(otc_program_seed(nullptr), 0u);
  EXPECT_STREQ(otc_program_loss(nullptr), "none");
  EXPECT_EQ(otc_program_features(nullptr), 0u);
  EXPECT_EQ(otc_program_input_count(nullptr), 0);
  otc_tensor_info_t info;
  EXPECT_EQ(take(otc_program_input(nullptr, 0, &info)).code,
            OTC_INVALID_ARGUMENT);
  EXPECT_EQ(take(otc_program_eval_output(nullptr, &info)).code,
            OTC_INVALID_ARGUMENT);
  EXPECT_EQ(take(otc_program_check_world_size(nullptr, 1)).code,
            OTC_INVALID_ARGUMENT);
}

TEST(DType, NamesAndSizes) {
  struct Row {
    otc_dtype_t dtype;
    const char *name;
    size_t size;
  };
  for (Row r : {Row{OTC_DTYPE_F32, "f32", 4}, Row{OTC_DTYPE_F64, "f64", 8},
                Row{OTC_DTYPE_I64, "i64", 8}, Row{OTC_DTYPE_I32, "i32", 4},
                Row{OTC_DTYPE_U8, "u8", 1}, Row{OTC_DTYPE_BOOL, "bool", 1},
                Row{OTC_DTYPE_I8, "i8", 1}, Row{OTC_DTYPE_I16, "i16", 2},
                Row{OTC_DTYPE_U16, "u16", 2}, Row{OTC_DTYPE_U32, "u32", 4},
                Row{OTC_DTYPE_U64, "u64", 8}, Row{OTC_DTYPE_F16, "f16", 2},
                Row{OTC_DTYPE_BF16, "bf16", 2}}) {
    EXPECT_STREQ(otc_dtype_name(r.dtype), r.name);
    EXPECT_EQ(otc_dtype_size(r.dtype), r.size) << r.name;
  }
  EXPECT_STREQ(otc_dtype_name(otc_dtype_t(99)), "");
  EXPECT_EQ(otc_dtype_size(otc_dtype_t(99)), 0u);
}

TEST(LocalComm, SumIsIdentityAndAbortReturns) {
  otc_comm_t *comm = nullptr;
  ASSERT_OK(otc_comm_create_local(&comm));
  double v[3] = {1.5, -2.0, 1e300};
  ASSERT_OK(otc_comm_all_reduce_sum_f64(comm, v, 3));
  EXPECT_EQ(v[0], 1.5);
  EXPECT_EQ(v[1], -2.0);
  EXPECT_EQ(v[2], 1e300);
  otc_comm_abort(comm, 1); // one rank: nothing to end
  uint64_t sent = 1, received = 1;
  otc_comm_bytes(comm, &sent, &received);
  EXPECT_EQ(sent, 0u);
  EXPECT_EQ(received, 0u);
  EXPECT_EQ(take(otc_comm_all_reduce_sum_f64(comm, nullptr, 1)).code,
            OTC_INVALID_ARGUMENT);
  EXPECT_EQ(take(otc_comm_all_reduce_sum_f64(nullptr, v, 1)).code,
            OTC_INVALID_ARGUMENT);
  otc_comm_release(comm);
}

} // namespace
