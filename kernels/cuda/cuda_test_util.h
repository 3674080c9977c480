//===- cuda_test_util.h - Helpers of the CUDA kernel tests ------*- C++ -*-===//
//
// Test-only helpers shared by the CUDA kernel tests (kernels_cuda_test.cpp,
// transformer_cuda_test.cpp, nn_cuda_test.cpp, compress_cuda_test.cpp):
// skipping without a visible device, a fixture for the otckd_ twins, shapes
// and strides, random data, a device array and comparisons that treat NaN
// and infinities exactly or bit for bit. Helpers that only one test needs
// stay in that test.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_CUDA_CUDA_TEST_UTIL_H
#define OTC_KERNELS_CUDA_CUDA_TEST_UTIL_H

#include "otc/kernels_cuda.h"

#include "../cpu/kernels_test_util.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

/// Skips the current test (GTEST_SKIP) when no CUDA device is visible.
#define REQUIRE_CUDA_DEVICE()                                                  \
  do {                                                                         \
    std::string why;                                                           \
    if (!::otc::kernels::cuda::test::deviceVisible(&why))                      \
      GTEST_SKIP() << "no CUDA device visible: " << why;                       \
  } while (0)

/// Fails the current test (ASSERT) unless expr returns cudaSuccess.
#define ASSERT_CUDA(expr)                                                      \
  do {                                                                         \
    const cudaError_t err_ = (expr);                                           \
    ASSERT_EQ(err_, cudaSuccess) << #expr << ": " << cudaGetErrorString(err_); \
  } while (0)

namespace otc::kernels::cuda::test {

/// Whether a CUDA device is visible; if not, *why says why.
inline bool deviceVisible(std::string *why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    *why = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(err);
    return false;
  }
  if (count == 0) {
    *why = "cudaGetDeviceCount returned 0";
    return false;
  }
  return true;
}

/// Every test: skipped without a device; afterwards no error may be pending.
class CudaKernelTest : public ::testing::Test {
protected:
  void SetUp() override {
    REQUIRE_CUDA_DEVICE();
    otckd_set_stream(nullptr);
    // A failure left by an earlier test must not be blamed on this one.
    (void)otckd_take_status();
  }
  void TearDown() override {
    if (IsSkipped())
      return;
    EXPECT_EQ(otckd_take_status(), OTCK_OK) << otckd_status_message();
    otckd_set_stream(nullptr);
  }
};

/// Default tolerances of expectClose: within float rounding.
inline constexpr double kRel = 1e-5, kAbs = 1e-6;

// The host-side basics are the CPU kernel tests'.
using otc::kernels::test::contiguousStrides;
using otc::kernels::test::kInf;
using otc::kernels::test::kNaN;
using otc::kernels::test::numel;
using otc::kernels::test::Shape;
using otc::kernels::test::StridedGemmCase;
using otc::kernels::test::stridedGemmCases;
using otc::kernels::test::sz;

/// Strides of an operand of shape `s` broadcast (numpy, right-aligned) to
/// a result of rank `rank`: 0 on missing and size-1 dimensions.
inline Shape broadcastStrides(const Shape &s, size_t rank) {
  const Shape own = contiguousStrides(s);
  Shape st(rank, 0);
  for (size_t i = 0; i < s.size(); ++i) {
    const size_t d = rank - s.size() + i;
    st[d] = s[i] == 1 ? 0 : own[i];
  }
  return st;
}

inline std::string shapeName(const Shape &s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i)
    os << (i ? "," : "") << s[i];
  os << "]";
  return os.str();
}

/// n floats uniform in [lo, hi), the same sequence for the same seed.
inline std::vector<float> uniform(int64_t n, float lo, float hi,
                                  unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(sz(n));
  for (float &x : v)
    x = dist(rng);
  return v;
}

inline std::vector<uint8_t> randomBytes(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(sz(n));
  for (uint8_t &x : v)
    x = static_cast<uint8_t>(rng());
  return v;
}

/// A device array of n elements of T (at least one byte allocated).
template <class T> class Dev {
public:
  explicit Dev(size_t n) : n_(n) {
    EXPECT_EQ(cudaMalloc(&p_, std::max<size_t>(n * sizeof(T), 1)), cudaSuccess);
  }
  explicit Dev(const std::vector<T> &h) : Dev(h.size()) { put(h); }
  ~Dev() { cudaFree(p_); }
  Dev(const Dev &) = delete;
  Dev &operator=(const Dev &) = delete;

  T *get() const { return static_cast<T *>(p_); }
  /// The allocation viewed as U (for untyped byte buffers).
  template <class U> U *as() const { return static_cast<U *>(p_); }
  /// Bytes of the n elements (without the one byte allocated for n = 0).
  size_t bytes() const { return n_ * sizeof(T); }

  void put(const std::vector<T> &h) {
    ASSERT_EQ(h.size(), n_);
    if (n_) {
      EXPECT_EQ(
          cudaMemcpy(p_, h.data(), n_ * sizeof(T), cudaMemcpyHostToDevice),
          cudaSuccess);
    }
  }
  /// The contents, after the current stream's work (cudaMemcpy waits for
  /// the legacy default stream, which the tests use unless they say).
  std::vector<T> host() const {
    std::vector<T> h(n_);
    if (n_) {
      EXPECT_EQ(
          cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost),
          cudaSuccess);
    }
    return h;
  }

private:
  void *p_ = nullptr;
  size_t n_;
};

/// got within tol of want; NaN matches NaN, an infinity only itself.
inline bool close(float want, float got, double tol) {
  if (std::isnan(want) || std::isnan(got))
    return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || std::isinf(got))
    return want == got;
  return std::fabs(double(got) - double(want)) <= tol;
}

/// got[i] within abs + rel |want[i]| of want[i] (NaN matches NaN, an
/// infinity only itself); reports the first few differences.
inline void expectClose(const std::vector<float> &want,
                        const std::vector<float> &got, double rel, double abs,
                        const std::string &what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (close(want[i], got[i], abs + rel * std::fabs(double(want[i]))))
      continue;
    if (bad < 5)
      ADD_FAILURE() << what << ": element " << i << " want "
                    << std::setprecision(9) << want[i] << " got " << got[i];
    ++bad;
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << want.size()
                     << " elements differ";
}

/// expectClose within kRel relative plus kAbs absolute.
inline void expectClose(const std::vector<float> &want,
                        const std::vector<float> &got,
                        const std::string &what) {
  expectClose(want, got, kRel, kAbs, what);
}

/// Bitwise equality of two arrays (NaN payloads and -0 included), reporting
/// the first differing byte.
template <class T>
void expectSameBits(const std::vector<T> &want, const std::vector<T> &got,
                    const std::string &what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  const size_t bytes = want.size() * sizeof(T);
  const auto *a = reinterpret_cast<const unsigned char *>(want.data());
  const auto *b = reinterpret_cast<const unsigned char *>(got.data());
  for (size_t i = 0; i < bytes; ++i)
    if (a[i] != b[i]) {
      ADD_FAILURE() << what << ": byte " << i << " of " << bytes
                    << " differs (want " << int(a[i]) << ", got " << int(b[i])
                    << ")";
      return;
    }
}

/// got[i] within tol[i] of want[i] (NaN matches NaN, an infinity only
/// itself); reports the first few differences.
template <class Tol>
void expectWithin(const std::vector<float> &want, const std::vector<float> &got,
                  const std::vector<Tol> &tol, const std::string &what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  ASSERT_EQ(want.size(), tol.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (close(want[i], got[i], double(tol[i])))
      continue;
    if (bad < 5)
      ADD_FAILURE() << what << ": element " << i << " want "
                    << std::setprecision(9) << want[i] << " got " << got[i]
                    << " (tolerance " << tol[i] << ")";
    ++bad;
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << want.size()
                     << " elements differ";
}

} // namespace otc::kernels::cuda::test

#endif // OTC_KERNELS_CUDA_CUDA_TEST_UTIL_H
