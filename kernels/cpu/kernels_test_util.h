//===- kernels_test_util.h - Helpers shared by the kernel tests -*- C++ -*-===//
//
// Test-only helpers used by more than one of the CPU kernel unit tests
// (kernels_test.cpp, tensor_test.cpp, elementwise_test.cpp, nn_test.cpp):
// random data, shapes and strides, row-major index iteration, an approximate
// comparison, bitwise equality and running under a given OpenMP thread
// count. Helpers that only one test needs, or that a test needs to behave
// differently, stay in that test.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_CPU_KERNELS_TEST_UTIL_H
#define OTC_KERNELS_CPU_KERNELS_TEST_UTIL_H

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace otc::kernels::test {

using Shape = std::vector<int64_t>;

inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
inline constexpr float kInf = std::numeric_limits<float>::infinity();

/// int64_t element count to size_t.
inline size_t sz(int64_t n) { return static_cast<size_t>(n); }

/// n floats uniform in [lo, hi), the same sequence for the same seed.
inline std::vector<float> randomVec(int64_t n, float lo, float hi,
                                    unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(sz(std::max<int64_t>(n, 0)));
  for (float &x : v)
    x = dist(gen);
  return v;
}

inline std::vector<double> toDouble(const std::vector<float> &v) {
  return std::vector<double>(v.begin(), v.end());
}

inline int64_t numel(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

inline Shape contiguousStrides(const Shape &s) {
  Shape st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

/// Strides of `operand` (numpy right-aligned) broadcast to `out`: 0 where the
/// operand has no dimension or a size-1 dimension.
inline Shape broadcastStrides(const Shape &operand, const Shape &out) {
  Shape st(out.size(), 0);
  Shape own = contiguousStrides(operand);
  size_t off = out.size() - operand.size();
  for (size_t i = 0; i < operand.size(); ++i)
    st[off + i] = operand[i] == 1 ? 0 : own[i];
  return st;
}

inline std::string shapeStr(const Shape &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

/// Calls fn(flatIndex, multiIndex) for every element of shape, row-major.
inline void
forEachIndex(const Shape &shape,
             const std::function<void(int64_t, const Shape &)> &fn) {
  int64_t n = numel(shape);
  Shape idx(shape.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    fn(flat, idx);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
}

/// Offset of a multi-index under the given strides.
inline int64_t dot(const Shape &idx, const Shape &strides) {
  int64_t off = 0;
  for (size_t i = 0; i < idx.size(); ++i)
    off += idx[i] * strides[i];
  return off;
}

/// |got - want| <= rtol * scale + atol, where scale defaults to |want|; NaN
/// matches NaN and an infinity matches itself. Note that with rtol > 0 and the
/// default scale, an infinite want accepts any finite got (inf <= inf).
inline ::testing::AssertionResult near(double got, double want, double rtol,
                                       double atol = 0.0, double scale = -1.0) {
  if (std::isnan(want) && std::isnan(got))
    return ::testing::AssertionSuccess();
  if (std::isinf(want) && got == want)
    return ::testing::AssertionSuccess();
  double s = scale >= 0.0 ? scale : std::fabs(want);
  double err = std::fabs(got - want);
  if (err <= rtol * s + atol)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "got " << got << " want " << want << " (err " << err << ", allowed "
         << rtol * s + atol << ")";
}

/// Same size and the same bits (NaN payloads and signed zeros included).
inline bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         (a.empty() ||
          std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

/// Runs fn with `threads` OpenMP threads, then restores the previous count.
template <typename Fn> inline void withThreads(int threads, Fn fn) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  fn();
  omp_set_num_threads(before);
}

/// A workspace filled with NaN, with a guard after the requested bytes.
struct Workspace {
  static constexpr size_t kGuard = 64;
  std::vector<float> buf;
  size_t floats;
  explicit Workspace(int64_t bytes) : floats(sz((bytes + 3) / 4)) {
    buf.assign(floats + kGuard, kNaN);
    for (size_t i = floats; i < buf.size(); ++i)
      buf[i] = 12345.0f;
  }
  void *data() { return buf.data(); }
  bool guardIntact() const {
    for (size_t i = floats; i < buf.size(); ++i)
      if (buf[i] != 12345.0f)
        return false;
    return true;
  }
};

/// f rounded to bfloat16, nearest even (finite values).
inline float roundBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  std::memcpy(&f, &u, 4);
  return f;
}

/// Whether the CPU has bfloat16 dot products, on which oneDNN's bf16
/// kernels run (without them the bf16 kernels may compute in float).
inline bool cpuHasBf16() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

/// A product of otck_strided_gemm_f32 over a [2, 3] batch (the CPU kernel's
/// test and its CUDA twin's).
struct StridedGemmCase {
  int64_t batch[2], M, N, K;
  int64_t as[2], bs[2], cs[2], lda, ldb, ldc;
  int ta, tb;
  /// Elements an operand spans: its last matrix's start plus `rows` rows.
  int64_t extent(const int64_t *st, int64_t rows, int64_t ld) const {
    return (batch[0] - 1) * st[0] + (batch[1] - 1) * st[1] + rows * ld;
  }
  int64_t aExtent() const { return extent(as, ta ? K : M, lda); }
  int64_t bExtent() const { return extent(bs, tb ? N : K, ldb); }
  int64_t cExtent() const { return extent(cs, M, ldc); }
};

/// Attention's layouts: Q and K stored [B, T, H, D] read as [B, H, T, D]
/// (rows H * D apart) and K transposed, the result written as [B, T, H, N]
/// (rows H * N apart); then A broadcast over the outer batch dimension, A
/// transposed, a single-row product, products whose batch dimensions
/// serve as rows, and a batch along which neither input changes.
inline std::vector<StridedGemmCase> stridedGemmCases() {
  const int64_t B = 2, H = 3, T = 17, D = 5, N = 7;
  return {
      {{B, H},
       T,
       T,
       D,
       {T * H * D, D},
       {T * H * D, D},
       {H * T * T, T * T},
       H * D,
       H * D,
       T,
       0,
       1},
      {{B, H},
       T,
       N,
       T,
       {H * T * T, T * T},
       {T * H * N, N},
       {T * H * N, N},
       T,
       H * N,
       H * N,
       0,
       0},
      {{B, H},
       T,
       N,
       D,
       {0, D},
       {H * D * N, D * N},
       {T * H * N, N},
       H * D,
       N,
       H * N,
       0,
       0},
      {{B, H},
       D,
       T,
       T,
       {T * H * D, D},
       {T * H * T, T},
       {H * D * T, D * T},
       H * D,
       H * T,
       T,
       1,
       0},
      {{B, H},
       1,
       N,
       D,
       {H * D, D},
       {H * D * N, D * N},
       {H * N, N},
       D,
       N,
       N,
       0,
       0},
      // A Linear over tokens read through a transpose: X stored [B, M, T,
      // D] read as [B, T] products of M rows, C written [B, T, M, N]; the
      // T tokens, along which W (per B here) is shared, can be the rows.
      {{B, T},
       H,
       N,
       D,
       {H * T * D, D},
       {D * N, 0},
       {T * H * N, H * N},
       T * D,
       N,
       N,
       0,
       0},
      // X stored [M, B, T, D] and C [M, B, T, N], W [N, D] shared: the
      // products' rows in both, one run of M * B * T rows.
      {{B, T},
       H,
       N,
       D,
       {T * D, D},
       {0, 0},
       {T * N, N},
       B * T * D,
       D,
       B * T * N,
       0,
       1},
      // A and B both the same along the outer dimension: C's copies of
      // one product.
      {{B, H},
       T,
       N,
       D,
       {0, D},
       {0, D * N},
       {H * T * N, T * N},
       H * D,
       N,
       N,
       0,
       0},
  };
}

} // namespace otc::kernels::test

#endif // OTC_KERNELS_CPU_KERNELS_TEST_UTIL_H
