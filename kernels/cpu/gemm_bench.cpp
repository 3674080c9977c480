//===- gemm_bench.cpp - SGEMM timings for the MLP shapes ------------------===//
//
// Times OpenBLAS's cblas_sgemm and otck_gemm_f32 (oneDNN) on the GEMMs of a
// 784-256-128-10 MLP with batch 64: forward (C = X W), input gradient
// (dX = dY W^T) and weight gradient (dW = X^T dY), in the same run, and
// prints the ratio: the measurement behind the kernels' choice of oneDNN.
//
// Usage: otc-gemm-bench [threads] (default: OMP_NUM_THREADS / all cores).
//        otc-gemm-bench --threads T MxNxK [MxNxK ...]: oneDNN alone on the
//        given shapes (C[M,N] = A[M,K] B[K,N]), one JSON line each with the
//        median microseconds and GFLOP/s: the sgemm ceiling that
//        test/bench/bench_peers.py holds a model's achieved rate against.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

struct Shape {
  const char *name;
  int transA, transB;
  int64_t M, N, K;
};

using Gemm = void (*)(const Shape &, const float *, const float *, float *);

void runOpenBlas(const Shape &s, const float *a, const float *b, float *c) {
  cblas_sgemm(CblasRowMajor, s.transA ? CblasTrans : CblasNoTrans,
              s.transB ? CblasTrans : CblasNoTrans, int(s.M), int(s.N),
              int(s.K), 1.0f, a, int(s.transA ? s.M : s.K), b,
              int(s.transB ? s.K : s.N), 0.0f, c, int(s.N));
}

void runDnnl(const Shape &s, const float *a, const float *b, float *c) {
  otck_gemm_f32(s.transA, s.transB, s.M, s.N, s.K, 1.0f, a, b, 0.0f, c);
}

/// Median microseconds per call over 7 timed batches of ~20 ms each.
double timeGemm(Gemm gemm, const Shape &s, const float *a, const float *b,
                float *c) {
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < 5; ++i)
    gemm(s, a, b, c);
  auto t0 = Clock::now();
  gemm(s, a, b, c);
  double once = std::chrono::duration<double>(Clock::now() - t0).count();
  int reps = std::max(1, int(0.02 / std::max(once, 1e-7)));
  std::vector<double> batches;
  for (int r = 0; r < 7; ++r) {
    t0 = Clock::now();
    for (int i = 0; i < reps; ++i)
      gemm(s, a, b, c);
    batches.push_back(
        std::chrono::duration<double, std::micro>(Clock::now() - t0).count() /
        reps);
  }
  std::sort(batches.begin(), batches.end());
  return batches[batches.size() / 2];
}

/// The --threads mode: each "MxNxK" argument timed with oneDNN.
int ceilingMode(int argc, char **argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: otc-gemm-bench --threads T MxNxK [...]\n");
    return 2;
  }
  int threads = std::atoi(argv[2]);
  if (threads < 1) {
    std::fprintf(stderr, "otc-gemm-bench: bad thread count '%s'\n", argv[2]);
    return 2;
  }
  otck_set_num_threads(threads);
  std::mt19937 gen(0);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int i = 3; i < argc; ++i) {
    long long m = 0, n = 0, k = 0;
    char tail = 0;
    if (std::sscanf(argv[i], "%lldx%lldx%lld%c", &m, &n, &k, &tail) != 3 ||
        m < 1 || n < 1 || k < 1 || m * k > (1LL << 30) || k * n > (1LL << 30) ||
        m * n > (1LL << 30)) {
      std::fprintf(stderr,
                   "otc-gemm-bench: bad shape '%s' (want MxNxK, each "
                   "operand at most 2^30 elements)\n",
                   argv[i]);
      return 2;
    }
    Shape s{argv[i], 0, 0, m, n, k};
    std::vector<float> a(size_t(m * k)), b(size_t(k * n)), c(size_t(m * n));
    for (float &x : a)
      x = dist(gen);
    for (float &x : b)
      x = dist(gen);
    double us = timeGemm(runDnnl, s, a.data(), b.data(), c.data());
    double flops = 2.0 * double(m) * double(n) * double(k);
    std::printf("{\"m\": %lld, \"n\": %lld, \"k\": %lld, \"threads\": %d, "
                "\"us\": %.3f, \"gflops\": %.3f}\n",
                m, n, k, threads, us, flops / us * 1e-3);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 1 && std::string(argv[1]) == "--threads")
    return ceilingMode(argc, argv);
  if (argc > 1)
    otck_set_num_threads(std::atoi(argv[1]));

  // Layer (in -> out) with batch 64: X [64,in], W [in,out], Y [64,out].
  const Shape shapes[] = {
      {"fwd   64x784 * 784x256", 0, 0, 64, 256, 784},
      {"fwd   64x256 * 256x128", 0, 0, 64, 128, 256},
      {"fwd   64x128 * 128x10 ", 0, 0, 64, 10, 128},
      {"dX    64x256 * (784x256)^T", 0, 1, 64, 784, 256},
      {"dX    64x128 * (256x128)^T", 0, 1, 64, 256, 128},
      {"dX    64x10  * (128x10)^T ", 0, 1, 64, 128, 10},
      {"dW    (64x784)^T * 64x256", 1, 0, 784, 256, 64},
      {"dW    (64x256)^T * 64x128", 1, 0, 256, 128, 64},
      {"dW    (64x128)^T * 64x10 ", 1, 0, 128, 10, 64},
  };

  std::printf("%-30s %12s %9s", "gemm (M x K * K x N)", "openblas us",
              "GFLOP/s");
  std::printf(" %12s %9s %14s", "onednn us", "GFLOP/s", "openblas/dnnl");
  std::printf("\n");

  std::mt19937 gen(0);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  double totalBlas = 0.0, totalDnnl = 0.0;
  for (const Shape &s : shapes) {
    std::vector<float> a(size_t(s.M * s.K)), b(size_t(s.K * s.N));
    std::vector<float> c(size_t(s.M * s.N));
    for (float &x : a)
      x = dist(gen);
    for (float &x : b)
      x = dist(gen);
    const double flops = 2.0 * double(s.M) * double(s.N) * double(s.K);
    double us = timeGemm(runOpenBlas, s, a.data(), b.data(), c.data());
    totalBlas += us;
    std::printf("%-30s %12.2f %9.2f", s.name, us, flops / us * 1e-3);
    std::vector<float> ref = c;
    double dus = timeGemm(runDnnl, s, a.data(), b.data(), c.data());
    totalDnnl += dus;
    float maxDiff = 0.0f;
    for (size_t i = 0; i < c.size(); ++i)
      maxDiff = std::max(maxDiff, std::fabs(c[i] - ref[i]));
    std::printf(" %12.2f %9.2f %14.2f", dus, flops / dus * 1e-3, us / dus);
    if (maxDiff > 1e-3f)
      std::printf("  (results differ by %g!)", double(maxDiff));
    std::printf("\n");
  }
  std::printf("%-30s %12.2f", "total (one training step)", totalBlas);
  std::printf(" %9s %12.2f %9s %14.2f", "", totalDnnl, "",
              totalBlas / totalDnnl);
  std::printf("\n");
  return 0;
}
