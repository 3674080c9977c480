//===- compress_bench.cpp - Gradient compression throughput ---------------===//
//
// Times the default compressed all-reduce kernels (topk-int8, ratio 0.1,
// block 256) on one core over a 64 MiB bucket of Gaussian values: with
// error feedback, saving the residual for undo as the runtime does; with
// error feedback and no copy, as the reduce-scatter exchange's second stage
// runs it; without a residual; and decompression. A memcpy of the same 64
// MiB gives the scale: the ratio says how many memcpys of the bucket one
// compress + decompress costs.
// Each repetition runs memcpy and every kernel in turn and each keeps its
// best time, so that a shared machine's slow spells reach all of them.
// Compression alone is also timed on sparse data and on data with many
// ties, which take other paths of the top-k search, and on a 256 KiB bucket
// that stays in cache: its time per element is the kernels' own cost,
// without memory's. The float buffers start on 64-byte lines, as the
// runtime's do.
//
// Usage: otc-compress-bench [MiB] [threads]   (defaults: 64, 1)
//
//===----------------------------------------------------------------------===//

#include "otc/compress.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

/// count floats on 64-byte lines, as the runtime's buffers: vector storage
/// padded to the first line.
class Floats {
public:
  explicit Floats(size_t count, float x = 0.0f)
      : store(count + 15, x), n(count) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(store.data());
    p = store.data() + (64 - at % 64) % 64 / sizeof(float);
  }
  Floats(const Floats &) = delete;
  Floats &operator=(const Floats &other) {
    std::copy(other.begin(), other.end(), p);
    return *this;
  }
  float *data() { return p; }
  float *begin() { return p; }
  float *end() { return p + n; }
  const float *begin() const { return p; }
  const float *end() const { return p + n; }

private:
  std::vector<float> store;
  size_t n;
  float *p;
};

double seconds() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

/// Best of `reps` runs of f, in seconds.
template <class F> double best(int reps, F f) {
  double t = 1e30;
  for (int i = 0; i < reps; ++i) {
    const double t0 = seconds();
    f();
    t = std::min(t, seconds() - t0);
  }
  return t;
}

} // namespace

int main(int argc, char **argv) {
  const int64_t mib = argc > 1 ? std::atoll(argv[1]) : 64;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  if (mib <= 0 || threads <= 0) {
    std::fprintf(stderr, "usage: otc-compress-bench [MiB] [threads]\n");
    return 2;
  }
  omp_set_num_threads(threads);
  const int64_t n = mib * (int64_t(1) << 20) / 4;
  const size_t bytes = size_t(n) * 4;

  const size_t count = size_t(n);
  Floats g(count), r(count, 0.0f), out(count);
  std::mt19937 gen(42);
  std::normal_distribution<float> dist(0.0f, 1e-3f);
  for (float &x : g)
    x = dist(gen);
  std::vector<char> src(bytes, 1), dst(bytes, 0);

  otck_compress_config c;
  c.method = OTCK_COMPRESS_TOPK_INT8;
  c.block_size = 256;
  c.ratio = 0.1f;
  c.seed = 0;
  const int64_t pbytes = otck_compress_payload_bytes(&c, n);
  std::vector<unsigned char> payload(static_cast<size_t>(pbytes));
  const int reps = 10;

  // Touch everything once so that page faults are not timed.
  std::memcpy(dst.data(), src.data(), bytes);
  otck_compress_f32(&c, n, g.data(), nullptr, payload.data());
  otck_decompress_sum_f32(&c, n, payload.data(), 1, 1.0f, out.data());

  // Error feedback as the runtime runs it: saving the residual for undo.
  // Every run starts from the same residual, that of an earlier step (an
  // independent draw less what it sent): compressing the same g onto an
  // ever-growing residual would flatten the blocks' tops, which no training
  // run does.
  Floats saved(count), r0(count, 0.0f);
  {
    std::vector<float> earlier(count);
    for (float &x : earlier)
      x = dist(gen);
    otck_compress_f32(&c, n, earlier.data(), r0.data(), payload.data());
  }
  double tCopy = 1e30, tEf = 1e30, tEfChecked = 1e30, tNoEf = 1e30, tDec = 1e30;
  for (int i = 0; i < reps; ++i) {
    r = r0; // then memcpy's 128 MiB push it out of the caches
    tCopy = std::min(
        tCopy, best(1, [&] { std::memcpy(dst.data(), src.data(), bytes); }));
    tEf = std::min(tEf, best(1, [&] {
                     otck_compress_saving_f32(&c, n, g.data(), r.data(),
                                              saved.data(), payload.data());
                   }));
    // Without the undo copy (the reduce-scatter exchange's second
    // compression): the sums are checked in a pass before any is written.
    r = r0;
    tEfChecked =
        std::min(tEfChecked, best(1, [&] {
                   otck_compress_f32(&c, n, g.data(), r.data(), payload.data());
                 }));
    tNoEf =
        std::min(tNoEf, best(1, [&] {
                   otck_compress_f32(&c, n, g.data(), nullptr, payload.data());
                 }));
    tDec = std::min(tDec, best(1, [&] {
                      otck_decompress_sum_f32(&c, n, payload.data(), 1, 1.0f,
                                              out.data());
                    }));
  }

  const double gb = double(bytes) / 1e9;
  std::printf("bucket %lld MiB (%lld floats), %d thread(s); topk-int8 ratio "
              "%.2f block %lld: k = %lld, payload %lld bytes (1/%.1f)\n",
              (long long)mib, (long long)n, threads, double(c.ratio),
              (long long)c.block_size, (long long)otck_compress_k(&c),
              (long long)pbytes, double(bytes) / double(pbytes));
  std::printf("  memcpy                      %8.2f ms  %6.2f GB/s\n",
              tCopy * 1e3, gb / tCopy);
  std::printf("  compress (error feedback)   %8.2f ms  %6.2f GB/s\n", tEf * 1e3,
              gb / tEf);
  std::printf("  compress (EF, no undo copy) %8.2f ms  %6.2f GB/s\n",
              tEfChecked * 1e3, gb / tEfChecked);
  std::printf("  compress (no residual)      %8.2f ms  %6.2f GB/s\n",
              tNoEf * 1e3, gb / tNoEf);
  std::printf("  decompress-sum (1 payload)  %8.2f ms  %6.2f GB/s\n",
              tDec * 1e3, gb / tDec);
  std::printf("  compress+decompress / memcpy = %.2f (error feedback), "
              "%.2f (no residual)\n",
              (tEf + tDec) / tCopy, (tNoEf + tDec) / tCopy);
  // Data the Gaussian case does not exercise, no residual: 3 % nonzeros
  // (fewer than k a block), and few values with many ties (0, +-1, +-2
  // times 1e-3).
  std::vector<float> other(count);
  for (int kind = 0; kind < 2; ++kind) {
    for (float &x : other)
      x = kind == 0 ? (gen() % 100 < 3 ? dist(gen) : 0.0f)
                    : float(int(gen() % 5) - 2) * 1e-3f;
    otck_compress_f32(&c, n, other.data(), nullptr, payload.data());
    const double t = best(reps, [&] {
      otck_compress_f32(&c, n, other.data(), nullptr, payload.data());
    });
    std::printf("  %-27s %8.2f ms  %6.2f GB/s\n",
                kind == 0 ? "compress (sparse, no res.)"
                          : "compress (ties, no res.)",
                t * 1e3, gb / t);
  }
  // The kernels' own cost: a bucket that stays in the 1 MiB L2 with its
  // payload and output, compressed many times.
  {
    const int64_t small = std::min<int64_t>(n, 64 << 10); // 256 KiB
    const int rounds = int(std::max<int64_t>(1, n / small));
    const double t = best(reps, [&] {
      for (int i = 0; i < rounds; ++i)
        otck_compress_f32(&c, small, g.data(), nullptr, payload.data());
    });
    const double tMem = tNoEf / double(n);
    const double tCache = t / double(rounds * small);
    std::printf("  ns/element: compress (no res.) %.3f in cache (256 KiB), "
                "%.3f from memory; memcpy %.3f\n",
                tCache * 1e9, tMem * 1e9, tCopy / double(n) * 1e9);
  }
  // The throughput of compress + decompress as a fraction of memcpy's,
  // against the targets (error feedback's byte-traffic bound is 0.4: 20
  // bytes an element against memcpy's 8).
  const double fEf = tCopy / (tEf + tDec), fNoEf = tCopy / (tNoEf + tDec);
  std::printf("  throughput vs memcpy: %.2f (error feedback, target >= "
              "0.35: %s), %.2f (no residual, target >= 0.6: %s)\n",
              fEf, fEf >= 0.35 ? "met" : "NOT MET", fNoEf,
              fNoEf >= 0.6 ? "met" : "NOT MET");
  return 0;
}
