//===- mpi_test.cpp - Runtime checks under `mpirun -np 2` -----------------===//
//
// Every rank runs every test; the tests call collectives in the same order on
// all ranks. The CTest entry bounds the run with a timeout in case a rank
// fails half-way and leaves the other one in a collective.
//
//===----------------------------------------------------------------------===//

#include "data.h"
#include "driver.h"
#include "loader.h"
#include "test_fixture.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

using namespace otc;

namespace {

otc_comm_t *gComm = nullptr;
std::string gDir;

std::string text(otc_status_t s) {
  std::string m = otc_status_message(s);
  otc_status_free(s);
  return m;
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

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (otc_status_t st = otc_comm_create_mpi(&gComm)) {
    std::fprintf(stderr, "cannot create the MPI communicator: %s\n",
                 otc_status_message(st));
    return 1;
  }
  // One shared folder, named by rank 0.
  char dir[64] = {0};
  if (otc_comm_rank(gComm) == 0) {
    std::strcpy(dir, "/tmp/otc-mpi-test-XXXXXX");
    if (!mkdtemp(dir))
      return 1;
    otc::testing::writeLinearModel(std::string(dir) + "/linear.onnx", 4, 3, 1);
  }
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
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
