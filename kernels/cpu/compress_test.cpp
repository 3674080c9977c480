//===- compress_test.cpp - Unit tests of the gradient compression kernels -===//
//
// Every method's payload is compared byte for byte with a brute-force
// reference written from the format description in otc/compress.h (top-k by
// a stable sort on |v|, int8 by std::nearbyint, fp16 by the compiler's
// _Float16, RANDOMK by Floyd's algorithm on a std::set), on random and
// adversarial data (zeros, spikes, denormals, ties, wide ranges, short last
// blocks, B = 1 .. 65536, k = 1 .. B). The properties DESIGN §8 relies on are
// checked on the kernel's own output: the error-feedback identity, the int8
// error bound, decompress-sum linearity, thread-count independence and the
// non-finite flag. The parameterised suite runs once per instruction-set
// variant of the kernels (compress_isa.h) this CPU supports; a variant it
// lacks is skipped, saying so.
//
//===----------------------------------------------------------------------===//

#include "otc/compress.h"

// Only for the conversion edge cases that cannot reach the ABI (inf, NaN).
#include "compress_format.h"
// Selects the variant the C API runs.
#include "compress_isa.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();
const float kDenormMin = std::numeric_limits<float>::denorm_min();

size_t sz(int64_t n) { return static_cast<size_t>(n); }

uint32_t bitsOf(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}
float fromBits(uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}

otck_compress_config makeConfig(otck_compress_method method, int64_t block,
                                float ratio = 1.0f, uint64_t seed = 0) {
  otck_compress_config c;
  c.method = method;
  c.block_size = block;
  c.ratio = ratio;
  c.seed = seed;
  return c;
}

const char *methodName(otck_compress_method m) {
  switch (m) {
  case OTCK_COMPRESS_NONE:
    return "none";
  case OTCK_COMPRESS_FP16:
    return "fp16";
  case OTCK_COMPRESS_BF16:
    return "bf16";
  case OTCK_COMPRESS_INT8:
    return "int8";
  case OTCK_COMPRESS_TOPK:
    return "topk";
  case OTCK_COMPRESS_TOPK_INT8:
    return "topk_int8";
  case OTCK_COMPRESS_RANDOMK:
    return "randomk";
  case OTCK_COMPRESS_POWERSGD:
    return "powersgd";
  }
  return "?";
}

bool isSparse(otck_compress_method m) {
  return m == OTCK_COMPRESS_TOPK || m == OTCK_COMPRESS_TOPK_INT8 ||
         m == OTCK_COMPRESS_RANDOMK;
}
bool isInt8(otck_compress_method m) {
  return m == OTCK_COMPRESS_INT8 || m == OTCK_COMPRESS_TOPK_INT8;
}

//===--- Reference, from the format description ---------------------------===//

int64_t refK(const otck_compress_config &c) {
  if (!isSparse(c.method))
    return c.block_size;
  double k = std::ceil((double(c.ratio) - std::ldexp(1.0, -24)) *
                       double(c.block_size));
  return std::clamp<int64_t>(int64_t(k), 1, c.block_size);
}

int64_t refBytes(const otck_compress_config &c, int64_t n) {
  const int64_t b = c.block_size, blocks = (n + b - 1) / b, k = refK(c);
  const int64_t idx = b > 256 ? 2 : 1;
  switch (c.method) {
  case OTCK_COMPRESS_NONE:
    return 4 * n;
  case OTCK_COMPRESS_FP16:
  case OTCK_COMPRESS_BF16:
    return 2 * n;
  case OTCK_COMPRESS_INT8:
    return blocks * (4 + b);
  case OTCK_COMPRESS_TOPK:
  case OTCK_COMPRESS_RANDOMK:
    return blocks * k * (idx + 4);
  case OTCK_COMPRESS_TOPK_INT8:
    return blocks * (4 + k * (idx + 1));
  case OTCK_COMPRESS_POWERSGD: // not a block codec
    return -1;
  }
  return -1;
}

uint16_t refHalf(float x) {
  _Float16 h = static_cast<_Float16>(x);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
float refHalfToFloat(uint16_t b) {
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return static_cast<float>(h);
}

/// Value of a bf16 pattern's magnitude, with infinity as 2^128 (the next
/// step after the largest finite value, which is what rounding sees).
double bf16Magnitude(uint32_t hi16) {
  uint32_t b = (hi16 & 0x7fffu) << 16;
  if (b == 0x7f800000u)
    return std::ldexp(1.0, 128);
  return double(fromBits(b));
}

uint16_t refBf16(float x) {
  const uint32_t b = bitsOf(x);
  if (std::isnan(x))
    return uint16_t((b >> 16) | 0x40u);
  const uint32_t lo = b >> 16;
  if ((b & 0xffffu) == 0 || std::isinf(x))
    return uint16_t(lo);
  const uint32_t hi = lo + 1; // next magnitude, same sign
  const double ax = std::fabs(double(x));
  const double dlo = ax - bf16Magnitude(lo), dhi = bf16Magnitude(hi) - ax;
  if (dlo < dhi)
    return uint16_t(lo);
  if (dhi < dlo)
    return uint16_t(hi);
  return uint16_t((lo & 1u) ? hi : lo);
}

float refScale(const float *v, const std::vector<int64_t> &idx) {
  float m = 0.0f;
  for (int64_t i : idx)
    m = std::max(m, std::fabs(v[i]));
  return m / 127.0f;
}

int8_t refQuant(float v, float scale) {
  if (!(scale > 0.0f))
    return 0;
  return int8_t(std::nearbyint(std::clamp(v / scale, -127.0f, 127.0f)));
}

uint64_t refSplitmix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Floyd's algorithm as the header states it.
std::vector<int64_t> refRandomK(uint64_t seed, int64_t block, int64_t m,
                                int64_t c) {
  const uint64_t key = refSplitmix(seed ^ refSplitmix(uint64_t(block)));
  std::set<int64_t> s;
  for (int64_t j = m - c, d = 0; j < m; ++j, ++d) {
    const uint64_t r = refSplitmix(key + uint64_t(d)) >> 32;
    const int64_t t = int64_t((r * uint64_t(j + 1)) >> 32);
    if (!s.insert(t).second)
      s.insert(j);
  }
  return std::vector<int64_t>(s.begin(), s.end());
}

/// The c largest |v| (ties to the lower index), ascending.
std::vector<int64_t> refTopK(const float *v, int64_t m, int64_t c) {
  std::vector<int64_t> order(sz(m));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return std::fabs(double(v[a])) > std::fabs(double(v[b]));
  });
  order.resize(sz(c));
  std::sort(order.begin(), order.end());
  return order;
}

struct Reference {
  std::vector<unsigned char> payload;
  std::vector<float> decoded;  ///< decompress of the payload
  std::vector<float> residual; ///< v - decoded
  std::vector<char> kept;      ///< sparse: element kept
  std::vector<float> scale;    ///< int8: per element, its block's scale
};

template <class T> void put(std::vector<unsigned char> &p, T x) {
  unsigned char b[sizeof(T)];
  std::memcpy(b, &x, sizeof(T));
  p.insert(p.end(), b, b + sizeof(T));
}

/// Compresses v (= g + r already) as the header describes.
Reference refCompress(const otck_compress_config &c,
                      const std::vector<float> &v) {
  const int64_t n = int64_t(v.size()), b = c.block_size, k = refK(c);
  Reference ref;
  ref.decoded.assign(sz(n), 0.0f);
  ref.kept.assign(sz(n), 1);
  ref.scale.assign(sz(n), 0.0f);
  auto &p = ref.payload;
  switch (c.method) {
  case OTCK_COMPRESS_NONE:
    for (int64_t i = 0; i < n; ++i) {
      put(p, v[sz(i)]);
      ref.decoded[sz(i)] = v[sz(i)];
    }
    break;
  case OTCK_COMPRESS_FP16:
    for (int64_t i = 0; i < n; ++i) {
      put(p, refHalf(v[sz(i)]));
      ref.decoded[sz(i)] = refHalfToFloat(refHalf(v[sz(i)]));
    }
    break;
  case OTCK_COMPRESS_BF16:
    for (int64_t i = 0; i < n; ++i) {
      put(p, refBf16(v[sz(i)]));
      ref.decoded[sz(i)] = fromBits(uint32_t(refBf16(v[sz(i)])) << 16);
    }
    break;
  default:
    for (int64_t begin = 0; begin < n; begin += b) {
      const int64_t m = std::min(b, n - begin);
      const float *vb = v.data() + begin;
      std::vector<int64_t> idx;
      if (c.method == OTCK_COMPRESS_INT8) {
        idx.resize(sz(m));
        std::iota(idx.begin(), idx.end(), 0);
      } else if (c.method == OTCK_COMPRESS_RANDOMK) {
        idx = refRandomK(c.seed, begin / b, m, std::min(k, m));
      } else {
        idx = refTopK(vb, m, std::min(k, m));
      }
      const int64_t slots = c.method == OTCK_COMPRESS_INT8 ? b : k;
      float scale = 0.0f;
      if (isInt8(c.method)) {
        scale = refScale(vb, idx);
        put(p, scale);
      }
      if (isSparse(c.method)) {
        for (int64_t j = 0; j < m; ++j)
          ref.kept[sz(begin + j)] = 0;
        for (int64_t j = 0; j < slots; ++j) {
          const int64_t i = j < int64_t(idx.size()) ? idx[sz(j)] : 0;
          if (b > 256)
            put(p, uint16_t(i));
          else
            put(p, uint8_t(i));
        }
      }
      for (int64_t j = 0; j < slots; ++j) {
        const bool used = j < int64_t(idx.size());
        const int64_t i = used ? begin + idx[sz(j)] : 0;
        if (isInt8(c.method)) {
          const int8_t q = used ? refQuant(v[sz(i)], scale) : 0;
          put(p, q);
          if (used)
            ref.decoded[sz(i)] = float(q) * scale;
        } else {
          const float x = used ? v[sz(i)] : 0.0f;
          put(p, x);
          if (used)
            ref.decoded[sz(i)] = x;
        }
        if (used) {
          ref.kept[sz(i)] = 1;
          ref.scale[sz(i)] = scale;
        }
      }
    }
  }
  ref.residual.resize(sz(n));
  for (int64_t i = 0; i < n; ++i)
    ref.residual[sz(i)] =
        ref.kept[sz(i)] ? v[sz(i)] - ref.decoded[sz(i)] : v[sz(i)];
  return ref;
}

//===--- Data -------------------------------------------------------------===//

enum class Data { Normal, Zeros, Spike, Denormal, Ties, WideRange, Signed };
const Data kAllData[] = {Data::Normal,   Data::Zeros, Data::Spike,
                         Data::Denormal, Data::Ties,  Data::WideRange,
                         Data::Signed};

const char *dataName(Data d) {
  switch (d) {
  case Data::Normal:
    return "normal";
  case Data::Zeros:
    return "zeros";
  case Data::Spike:
    return "spike";
  case Data::Denormal:
    return "denormal";
  case Data::Ties:
    return "ties";
  case Data::WideRange:
    return "wide-range";
  case Data::Signed:
    return "signed-zeros";
  }
  return "?";
}

std::vector<float> makeData(Data kind, int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> small(-2, 2);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> v(sz(n), 0.0f);
  switch (kind) {
  case Data::Normal:
    for (float &x : v)
      x = normal(gen) * 1e-3f;
    break;
  case Data::Zeros:
    break;
  case Data::Spike:
    if (n > 0)
      v[sz(int64_t(gen() % uint64_t(n)))] = -1e30f;
    break;
  case Data::Denormal:
    for (float &x : v)
      x = (gen() & 1 ? 1.0f : -1.0f) * float(gen() % 5000) * kDenormMin;
    break;
  case Data::Ties:
    for (float &x : v)
      x = float(small(gen)) * 0.25f;
    break;
  case Data::WideRange:
    for (float &x : v)
      x = (gen() & 1 ? 1.0f : -1.0f) *
          std::ldexp(1.0f + unit(gen), int(gen() % 200) - 100);
    break;
  case Data::Signed:
    for (float &x : v)
      x = gen() & 1 ? -0.0f : (gen() % 7 == 0 ? normal(gen) : 0.0f);
    break;
  }
  return v;
}

//===--- Checks -----------------------------------------------------------===//

std::string describe(const otck_compress_config &c, int64_t n, Data d,
                     bool ef) {
  return std::string(methodName(c.method)) +
         " B=" + std::to_string(c.block_size) +
         " ratio=" + std::to_string(c.ratio) + " n=" + std::to_string(n) +
         " data=" + dataName(d) + (ef ? " error-feedback" : "");
}

bool sameFloat(float a, float b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

constexpr unsigned char kCanary = 0xab;
constexpr size_t kGuard = 64;

/// Compresses g (+ r) with the kernel and checks it against the reference
/// and the properties; returns false after the first failure.
::testing::AssertionResult checkOne(const otck_compress_config &c,
                                    const std::vector<float> &g,
                                    const std::vector<float> *r0) {
  const int64_t n = int64_t(g.size());
  const int64_t bytes = otck_compress_payload_bytes(&c, n);
  if (bytes != refBytes(c, n))
    return ::testing::AssertionFailure()
           << "payload bytes " << bytes << " != " << refBytes(c, n);
  std::vector<unsigned char> payload(sz(bytes) + kGuard, kCanary);
  std::vector<float> r;
  std::vector<float> v = g;
  if (r0) {
    r = *r0;
    for (int64_t i = 0; i < n; ++i)
      v[sz(i)] = g[sz(i)] + r[sz(i)];
  }
  const int rc = otck_compress_f32(&c, n, g.data(), r0 ? r.data() : nullptr,
                                   payload.data());
  if (rc != 0)
    return ::testing::AssertionFailure() << "returned " << rc;
  for (size_t i = 0; i < kGuard; ++i)
    if (payload[sz(bytes) + i] != kCanary)
      return ::testing::AssertionFailure() << "wrote past the payload";

  if (r0) {
    // The saving variant writes the same bits and the residual as it was.
    std::vector<unsigned char> p2(sz(bytes));
    std::vector<float> r2 = *r0, saved(sz(n), kNaN);
    if (otck_compress_saving_f32(&c, n, g.data(), r2.data(), saved.data(),
                                 p2.data()) != 0)
      return ::testing::AssertionFailure() << "saving variant failed";
    if (std::memcmp(p2.data(), payload.data(), sz(bytes)) != 0 ||
        std::memcmp(r2.data(), r.data(), sz(n) * 4) != 0 ||
        std::memcmp(saved.data(), r0->data(), sz(n) * 4) != 0)
      return ::testing::AssertionFailure()
             << "saving variant: payload, residual or saved copy differs";
  }

  const Reference ref = refCompress(c, v);
  for (int64_t i = 0; i < bytes; ++i)
    if (payload[sz(i)] != ref.payload[sz(i)]) {
      const int64_t perBlock = refBytes(c, c.block_size);
      return ::testing::AssertionFailure()
             << "payload byte " << i << " (block "
             << (isSparse(c.method) || c.method == OTCK_COMPRESS_INT8
                     ? i / perBlock
                     : -1)
             << ") is " << int(payload[sz(i)]) << ", reference "
             << int(ref.payload[sz(i)]);
    }

  std::vector<float> out(sz(n), kNaN);
  otck_decompress_sum_f32(&c, n, payload.data(), 1, 1.0f, out.data());
  for (int64_t i = 0; i < n; ++i) {
    const float dec = out[sz(i)], x = v[sz(i)];
    if (!sameFloat(dec, ref.decoded[sz(i)]))
      return ::testing::AssertionFailure()
             << "decoded[" << i << "] = " << dec << ", reference "
             << ref.decoded[sz(i)];
    if (std::isnan(dec))
      return ::testing::AssertionFailure() << "NaN decoded at " << i;
    // int8: error of a kept element at most half a step (plus the rounding
    // of v / scale and of q * scale), when the scale is a normal float.
    const float s = ref.scale[sz(i)];
    if (isInt8(c.method) && ref.kept[sz(i)] &&
        s >= std::numeric_limits<float>::min()) {
      const double err = std::fabs(double(dec) - double(x));
      const double bound = 0.5 * double(s) * (1.0 + 1e-6) +
                           std::ldexp(std::fabs(double(x)), -23);
      if (err > bound)
        return ::testing::AssertionFailure()
               << "int8 error " << err << " > scale/2 = " << 0.5 * s << " at "
               << i;
    }
  }
  if (!r0)
    return ::testing::AssertionSuccess();

  for (int64_t i = 0; i < n; ++i) {
    if (bitsOf(r[sz(i)]) != bitsOf(ref.residual[sz(i)]))
      return ::testing::AssertionFailure()
             << "residual[" << i << "] = " << r[sz(i)] << ", reference "
             << ref.residual[sz(i)];
    // g + r_old == decompressed + r_new, to the two roundings of
    // v = g + r_old and r_new = v - decompressed. (An fp16 overflow decodes
    // to infinity; the residual then holds -infinity.)
    if (!std::isfinite(out[sz(i)]))
      continue;
    const double lhs = double(g[sz(i)]) + double((*r0)[sz(i)]);
    const double rhs = double(out[sz(i)]) + double(r[sz(i)]);
    const double tol =
        std::ldexp(std::fabs(double(v[sz(i)])) + std::fabs(double(r[sz(i)])),
                   -23) +
        double(kDenormMin);
    if (std::fabs(lhs - rhs) > tol)
      return ::testing::AssertionFailure()
             << "error feedback: g + r_old = " << lhs
             << " but decompressed + r_new = " << rhs << " at " << i;
  }
  return ::testing::AssertionSuccess();
}

const otck_compress_method kAllMethods[] = {
    OTCK_COMPRESS_NONE,   OTCK_COMPRESS_FP16, OTCK_COMPRESS_BF16,
    OTCK_COMPRESS_INT8,   OTCK_COMPRESS_TOPK, OTCK_COMPRESS_TOPK_INT8,
    OTCK_COMPRESS_RANDOMK};

using otc::kernels::compress::Isa;

} // namespace

namespace otc::kernels::compress {
// Readable test parameters in gtest's output.
void PrintTo(Isa isa, std::ostream *os) { *os << isaName(isa); }
} // namespace otc::kernels::compress

namespace {

const Isa kAllIsas[] = {Isa::Generic, Isa::Avx2, Isa::Avx512};

/// Parameters: a method, and the instruction-set variant that runs it.
class CompressMethod
    : public ::testing::TestWithParam<std::tuple<otck_compress_method, Isa>> {
protected:
  void SetUp() override {
    const Isa isa = std::get<1>(GetParam());
    if (!otc::kernels::compress::useIsa(isa))
      GTEST_SKIP() << "this CPU (or build) has no "
                   << otc::kernels::compress::isaName(isa) << " variant";
  }
  void TearDown() override {
    otc::kernels::compress::useIsa(otc::kernels::compress::bestIsa());
  }
  static otck_compress_method method() { return std::get<0>(GetParam()); }
};

std::string methodParamName(
    const ::testing::TestParamInfo<std::tuple<otck_compress_method, Isa>>
        &info) {
  return std::string(methodName(std::get<0>(info.param))) + "_" +
         otc::kernels::compress::isaName(std::get<1>(info.param));
}

//===--- Tests ------------------------------------------------------------===//

TEST(Compress, KeptPerBlock) {
  auto k = [](otck_compress_method m, int64_t b, float ratio) {
    otck_compress_config c = makeConfig(m, b, ratio);
    return otck_compress_k(&c);
  };
  EXPECT_EQ(k(OTCK_COMPRESS_TOPK_INT8, 256, 0.1f), 26);
  EXPECT_EQ(k(OTCK_COMPRESS_TOPK, 256, 1e-9f), 1); // ratio tiny: k = 1
  EXPECT_EQ(k(OTCK_COMPRESS_TOPK, 256, 1.0f), 256);
  EXPECT_EQ(k(OTCK_COMPRESS_TOPK, 1, 0.01f), 1);
  EXPECT_EQ(k(OTCK_COMPRESS_TOPK, 10, 0.3f), 3); // 0.3f * 10 = 3.0000001
  EXPECT_EQ(k(OTCK_COMPRESS_TOPK, 257, 0.5f), 129);
  EXPECT_EQ(k(OTCK_COMPRESS_RANDOMK, 65536, 0.01f), 656);
  EXPECT_EQ(k(OTCK_COMPRESS_INT8, 256, 0.1f), 256); // dense: B
  EXPECT_EQ(k(OTCK_COMPRESS_NONE, 7, 0.0f), 7);     // ratio unused
  // Invalid configs.
  EXPECT_EQ(k(OTCK_COMPRESS_TOPK, 0, 0.1f), -1);
  EXPECT_EQ(k(OTCK_COMPRESS_TOPK, 65537, 0.1f), -1);
  EXPECT_EQ(k(OTCK_COMPRESS_TOPK, 256, 0.0f), -1);
  EXPECT_EQ(k(OTCK_COMPRESS_TOPK, 256, 1.5f), -1);
  EXPECT_EQ(k(OTCK_COMPRESS_TOPK, 256, kNaN), -1);
  EXPECT_EQ(k(static_cast<otck_compress_method>(42), 256, 0.1f), -1);
  EXPECT_EQ(k(OTCK_COMPRESS_POWERSGD, 256, 0.1f), -1); // not a block codec
  EXPECT_EQ(otck_compress_k(nullptr), -1);
}

TEST(Compress, PayloadBytes) {
  // The default setting of DESIGN §8: 26 uint8 indices, 26 int8 values and
  // a scale per block of 256, at most 1/15 of the dense fp32 bytes.
  otck_compress_config c = makeConfig(OTCK_COMPRESS_TOPK_INT8, 256, 0.1f);
  EXPECT_EQ(otck_compress_payload_bytes(&c, 256), 56);
  const int64_t n = int64_t(1) << 20;
  const int64_t bytes = otck_compress_payload_bytes(&c, n);
  EXPECT_EQ(bytes, n / 256 * 56);
  EXPECT_LE(bytes * 15, n * 4);
  // Every method against the formula, including short last blocks.
  for (otck_compress_method m : kAllMethods)
    for (int64_t b : {1, 7, 255, 256, 257, 1024, 65536})
      for (float ratio : {1e-6f, 0.1f, 0.5f, 1.0f})
        for (int64_t len : {0, 1, 255, 256, 257, 1000, 70001}) {
          c = makeConfig(m, b, ratio);
          EXPECT_EQ(otck_compress_payload_bytes(&c, len), refBytes(c, len))
              << methodName(m) << " B=" << b << " ratio=" << ratio
              << " n=" << len;
        }
  c = makeConfig(OTCK_COMPRESS_TOPK, 256, 0.1f);
  EXPECT_EQ(otck_compress_payload_bytes(&c, -1), -1);
  c.ratio = 0.0f;
  EXPECT_EQ(otck_compress_payload_bytes(&c, 256), -1);
  float g = 1.0f;
  unsigned char p[8];
  EXPECT_EQ(otck_compress_f32(&c, 1, &g, nullptr, p), -1);
  // The saving variant needs somewhere to save a residual.
  c = makeConfig(OTCK_COMPRESS_TOPK_INT8, 256);
  float r = 0.0f;
  EXPECT_EQ(otck_compress_saving_f32(&c, 1, &g, &r, nullptr, p), -1);
}

TEST_P(CompressMethod, MatchesReference) {
  const otck_compress_method method = this->method();
  const std::vector<float> ratios =
      isSparse(method) ? std::vector<float>{1e-6f, 0.1f, 0.5f, 1.0f}
                       : std::vector<float>{1.0f};
  unsigned seed = 1;
  for (int64_t b : {1, 7, 255, 256, 257, 1024})
    for (float ratio : ratios)
      for (int64_t n : {int64_t(1), b - 1, b, 2 * b + 3, int64_t(3000)}) {
        if (n < 1)
          continue;
        for (Data d : kAllData)
          for (bool ef : {false, true}) {
            const otck_compress_config c =
                makeConfig(method, b, ratio, 0x5eed0000u + seed);
            const std::vector<float> g = makeData(d, n, ++seed);
            // A residual of the same kind keeps the data's character.
            const std::vector<float> r = makeData(d, n, ++seed);
            ASSERT_TRUE(checkOne(c, g, ef ? &r : nullptr))
                << describe(c, n, d, ef);
          }
      }
}

TEST_P(CompressMethod, LargeBlocks) {
  // uint16 indices above 255, B = 65536 and a short last block.
  const otck_compress_method method = this->method();
  for (int64_t b : {4096, 65536})
    for (float ratio : {0.01f, 0.3f}) {
      if (!isSparse(method) && ratio != 0.01f)
        continue;
      const otck_compress_config c = makeConfig(method, b, ratio, 77);
      const int64_t n = 2 * b + 1234;
      const std::vector<float> g = makeData(Data::Normal, n, 5);
      const std::vector<float> r = makeData(Data::WideRange, n, 6);
      ASSERT_TRUE(checkOne(c, g, &r)) << describe(c, n, Data::Normal, true);
    }
}

TEST_P(CompressMethod, DecompressSumIsTheSumOfDecompressions) {
  const otck_compress_method method = this->method();
  const otck_compress_config c = makeConfig(method, 257, 0.1f, 9);
  const int64_t n = 5000, w = 4;
  const int64_t bytes = otck_compress_payload_bytes(&c, n);
  std::vector<unsigned char> all(sz(bytes * w));
  std::vector<std::vector<float>> single(sz(w), std::vector<float>(sz(n)));
  for (int64_t i = 0; i < w; ++i) {
    const std::vector<float> g = makeData(Data::Normal, n, unsigned(100 + i));
    unsigned char *p = all.data() + i * bytes;
    ASSERT_EQ(otck_compress_f32(&c, n, g.data(), nullptr, p), 0);
    otck_decompress_sum_f32(&c, n, p, 1, 1.0f, single[sz(i)].data());
  }
  for (float scale : {1.0f, 0.25f, 1.0f / 3.0f}) {
    std::vector<float> out(sz(n), kNaN);
    otck_decompress_sum_f32(&c, n, all.data(), w, scale, out.data());
    for (int64_t e = 0; e < n; ++e) {
      float sum = single[0][sz(e)];
      for (int64_t i = 1; i < w; ++i)
        sum += single[sz(i)][sz(e)];
      ASSERT_EQ(out[sz(e)], sum * scale)
          << methodName(method) << " scale " << scale << " element " << e;
    }
  }
  // No payloads: +0.0, overwriting what was there, whatever the scale.
  for (float scale : {1.0f, -0.5f}) {
    std::vector<float> out(sz(n), kNaN);
    otck_decompress_sum_f32(&c, n, all.data(), 0, scale, out.data());
    for (float x : out)
      ASSERT_EQ(bitsOf(x), 0u) << "scale " << scale;
  }
}

TEST_P(CompressMethod, DecompressReportsANonFiniteMean) {
  // Finite gradients whose mean is not: fp16 and bf16 beyond their range,
  // and two payloads whose sum overflows float (a whole block of big values:
  // RANDOMK keeps some of them). -1 for an invalid config.
  const otck_compress_method method = this->method();
  const otck_compress_config c = makeConfig(method, 256, 0.1f, 3);
  const int64_t n = 1000, bytes = otck_compress_payload_bytes(&c, n);
  auto meanOf = [&](float big, int64_t count) {
    std::vector<float> g = makeData(Data::Normal, n, 5);
    std::fill(g.begin() + 512, g.begin() + 768, big);
    std::vector<unsigned char> all(sz(bytes * count));
    for (int64_t w = 0; w < count; ++w)
      EXPECT_EQ(
          otck_compress_f32(&c, n, g.data(), nullptr, all.data() + w * bytes),
          0);
    std::vector<float> out(sz(n));
    return otck_decompress_sum_f32(&c, n, all.data(), count,
                                   1.0f / float(count), out.data());
  };
  const bool half = method == OTCK_COMPRESS_FP16,
             narrow = half || method == OTCK_COMPRESS_BF16;
  EXPECT_EQ(meanOf(1.0f, 2), 0);
  EXPECT_EQ(meanOf(2e38f, 2), 1); // the sum overflows
  EXPECT_EQ(meanOf(2e38f, 1), half ? 1 : 0);
  EXPECT_EQ(meanOf(3.4e38f, 1), narrow ? 1 : 0); // beyond bf16's largest
  otck_compress_config bad = c;
  bad.block_size = 0;
  std::vector<float> out(sz(n));
  EXPECT_EQ(otck_decompress_sum_f32(&bad, n, nullptr, 1, 1.0f, out.data()), -1);
  EXPECT_EQ(otck_decompress_sum_f32(&c, 0, nullptr, 1, 1.0f, out.data()), 0);
}

TEST_P(CompressMethod, ThreadCountDoesNotChangeThePayload) {
  const otck_compress_method method = this->method();
  const otck_compress_config c = makeConfig(method, 256, 0.1f, 3);
  const int64_t n = (int64_t(1) << 20) + 77;
  const std::vector<float> g = makeData(Data::Normal, n, 11);
  const std::vector<float> r0 = makeData(Data::Normal, n, 12);
  const int64_t bytes = otck_compress_payload_bytes(&c, n);
  const int saved = omp_get_max_threads();
  std::vector<unsigned char> p[2];
  std::vector<float> r[2], out[2];
  for (int t = 0; t < 2; ++t) {
    omp_set_num_threads(t == 0 ? 1 : std::max(2, saved));
    p[t].assign(sz(bytes), 0);
    r[t] = r0;
    out[t].assign(sz(n), 0.0f);
    ASSERT_EQ(otck_compress_f32(&c, n, g.data(), r[t].data(), p[t].data()), 0);
    otck_decompress_sum_f32(&c, n, p[t].data(), 1, 0.5f, out[t].data());
  }
  omp_set_num_threads(saved);
  EXPECT_TRUE(p[0] == p[1]);
  EXPECT_EQ(std::memcmp(r[0].data(), r[1].data(), sz(n) * 4), 0);
  EXPECT_EQ(std::memcmp(out[0].data(), out[1].data(), sz(n) * 4), 0);
}

TEST_P(CompressMethod, NonFiniteReturnsOneAndKeepsTheResidual) {
  const otck_compress_method method = this->method();
  const otck_compress_config c = makeConfig(method, 256, 0.1f, 1);
  const int64_t n = 100000;
  std::vector<unsigned char> p(sz(otck_compress_payload_bytes(&c, n)));
  const std::vector<float> g0 = makeData(Data::Normal, n, 21);
  const std::vector<float> r0 = makeData(Data::Normal, n, 22);
  // NaN or infinity in g, in r, or g + r overflowing.
  struct Case {
    int64_t at;
    float g, r;
  };
  for (Case cs :
       {Case{0, kNaN, 0.0f}, Case{n - 1, -kInf, 0.0f}, Case{5000, 1.0f, kNaN},
        Case{77777, 1.0f, kInf}, Case{123, 3e38f, 3e38f}}) {
    std::vector<float> g = g0, r = r0;
    g[sz(cs.at)] = cs.g;
    r[sz(cs.at)] = cs.r;
    const std::vector<float> rBefore = r;
    EXPECT_EQ(otck_compress_f32(&c, n, g.data(), r.data(), p.data()), 1)
        << methodName(method) << " at " << cs.at;
    EXPECT_EQ(std::memcmp(r.data(), rBefore.data(), sz(n) * 4), 0)
        << "residual changed";
    // The saving variant finds it while compressing and puts back what it
    // had already compressed.
    std::vector<float> saved(sz(n));
    EXPECT_EQ(otck_compress_saving_f32(&c, n, g.data(), r.data(), saved.data(),
                                       p.data()),
              1)
        << methodName(method) << " at " << cs.at << " (saving)";
    EXPECT_EQ(std::memcmp(r.data(), rBefore.data(), sz(n) * 4), 0)
        << "residual changed (saving)";
    if (!std::isfinite(cs.g)) {
      EXPECT_EQ(otck_compress_f32(&c, n, g.data(), nullptr, p.data()), 1)
          << methodName(method) << " at " << cs.at << " without residual";
    }
  }
  // Blocks that keep every element (all of a short last one, or ratio 1)
  // are checked too.
  for (float ratio : {0.1f, 1.0f}) {
    const otck_compress_config all = makeConfig(method, 256, ratio, 1);
    const int64_t m = 256 + 10;
    std::vector<unsigned char> p2(sz(otck_compress_payload_bytes(&all, m)));
    std::vector<float> g(g0.begin(), g0.begin() + m);
    g[sz(m - 3)] = kNaN;
    EXPECT_EQ(otck_compress_f32(&all, m, g.data(), nullptr, p2.data()), 1)
        << methodName(method) << " ratio " << ratio;
    // With a residual too, which stays as it was.
    std::vector<float> r(r0.begin(), r0.begin() + m), saved(sz(m));
    const std::vector<float> rBefore = r;
    EXPECT_EQ(otck_compress_f32(&all, m, g.data(), r.data(), p2.data()), 1)
        << methodName(method) << " ratio " << ratio << " with residual";
    EXPECT_EQ(std::memcmp(r.data(), rBefore.data(), sz(m) * 4), 0);
    EXPECT_EQ(otck_compress_saving_f32(&all, m, g.data(), r.data(),
                                       saved.data(), p2.data()),
              1)
        << methodName(method) << " ratio " << ratio << " (saving)";
    EXPECT_EQ(std::memcmp(r.data(), rBefore.data(), sz(m) * 4), 0);
  }
  // Finite and large is fine.
  std::vector<float> g = g0;
  g[10] = std::numeric_limits<float>::max();
  EXPECT_EQ(otck_compress_f32(&c, n, g.data(), nullptr, p.data()), 0);
}

TEST_P(CompressMethod, BlocksOfChangingScale) {
  // Top-k starts each block's search from the thread's blocks before it:
  // blocks whose scale jumps by up to 2^30 either way, some of them all
  // ties, mostly zeros (fewer nonzeros than k), all zeros, denormal, or tied
  // at the 11-bit prefixes the search steps on, must not change what is
  // kept. One thread carries the hint across all of them.
  const otck_compress_method method = this->method();
  const int threads = omp_get_max_threads();
  for (int64_t b : {64, 256, 1024})
    for (float ratio : {0.02f, 0.1f, 0.3f}) {
      const otck_compress_config c = makeConfig(method, b, ratio, 5);
      const int64_t blocks = 40, n = blocks * b - 5;
      std::vector<float> g = makeData(Data::Normal, n, unsigned(b));
      std::mt19937 gen(unsigned(b) + 1);
      for (int64_t blk = 0; blk < blocks; ++blk) {
        // Normal blocks first, then any kind.
        const int kind = blk < 4 ? 7 : int(gen() % 12);
        const float scale = std::ldexp(1.0f, int(gen() % 61) - 30);
        const uint32_t prefix = bitsOf(scale) & ~0xfffffu;
        for (int64_t i = blk * b; i < std::min(n, (blk + 1) * b); ++i) {
          float &x = g[sz(i)];
          const float sign = gen() % 2 ? 1.0f : -1.0f;
          switch (kind) {
          case 0: // all ties
            x = 0.5f * scale;
            break;
          case 1: // mostly zeros
            x = gen() % 16 == 0 ? x * scale : 0.0f;
            break;
          case 2: // fewer nonzeros than k, most likely
            x = gen() % 128 == 0 ? x * scale : 0.0f;
            break;
          case 3: // all zeros, of either sign
            x = 0.0f * sign;
            break;
          case 4: // denormal
            x = fromBits(uint32_t(gen() % 5000)) * sign;
            break;
          case 5: { // ties on and just below a prefix
            const uint32_t at[4] = {prefix, prefix - 1, prefix + 0x100000u,
                                    prefix};
            x = fromBits(at[gen() % 4]) * sign;
            break;
          }
          case 6: // few values, many ties: 0, +-0.25, +-0.5 times the scale
            x = float(int(gen() % 5) - 2) * 0.25f * scale;
            break;
          default:
            x = x * scale;
          }
        }
      }
      const std::vector<float> r = makeData(Data::WideRange, n, 7);
      for (int t : {1, threads}) {
        omp_set_num_threads(t);
        const bool plain = checkOne(c, g, nullptr), fed = checkOne(c, g, &r);
        omp_set_num_threads(threads);
        ASSERT_TRUE(plain) << describe(c, n, Data::Normal, false) << ", " << t
                           << " thread(s)";
        ASSERT_TRUE(fed) << describe(c, n, Data::Normal, true) << ", " << t
                         << " thread(s)";
      }
    }
}

TEST_P(CompressMethod, MaskSentZeroesExactlyWhatThePayloadSends) {
  // DGC's momentum factor masking: the velocity is zeroed where this rank's
  // payload sends a value (every element for the dense methods), and kept
  // elsewhere; the padding of a short last block is not an index.
  const otck_compress_method method = this->method();
  const std::vector<float> ratios =
      isSparse(method) ? std::vector<float>{1e-6f, 0.1f, 0.5f, 1.0f}
                       : std::vector<float>{1.0f};
  unsigned seed = 100;
  for (int64_t b : {1, 7, 256, 257, 4096})
    for (float ratio : ratios)
      for (int64_t n : {int64_t(1), b - 1, b, 2 * b + 3}) {
        if (n < 1)
          continue;
        for (Data d : kAllData) {
          const otck_compress_config c =
              makeConfig(method, b, ratio, 0x5eed0000u + seed);
          const std::vector<float> g = makeData(d, n, ++seed);
          std::vector<unsigned char> payload(
              sz(otck_compress_payload_bytes(&c, n)));
          ASSERT_EQ(otck_compress_f32(&c, n, g.data(), nullptr, payload.data()),
                    0);
          const Reference ref = refCompress(c, g);
          std::vector<float> u(sz(n));
          for (int64_t i = 0; i < n; ++i)
            u[sz(i)] = 1.0f + float(i);
          // With the tail: the same mask, and tail * u out of the residual
          // where nothing was sent (rounded product, then difference).
          std::vector<float> ut = u, r = makeData(Data::Normal, n, seed + 1);
          const std::vector<float> rWas = r;
          ASSERT_EQ(
              otck_compress_mask_sent_f32(&c, n, payload.data(), u.data()), 0);
          ASSERT_EQ(otck_compress_mask_sent_tail_f32(&c, n, payload.data(),
                                                     2.5f, ut.data(), r.data()),
                    0);
          for (int64_t i = 0; i < n; ++i) {
            const float was = 1.0f + float(i);
            ASSERT_EQ(bitsOf(u[sz(i)]), bitsOf(ref.kept[sz(i)] ? 0.0f : was))
                << describe(c, n, d, false) << " at " << i;
            ASSERT_EQ(bitsOf(ut[sz(i)]), bitsOf(u[sz(i)]))
                << describe(c, n, d, false) << " at " << i;
            const float t = 2.5f * was;
            const float rWant = ref.kept[sz(i)] || !isSparse(method)
                                    ? rWas[sz(i)]
                                    : rWas[sz(i)] - t;
            ASSERT_EQ(bitsOf(r[sz(i)]), bitsOf(rWant))
                << describe(c, n, d, false) << " residual at " << i;
          }
        }
      }
}

INSTANTIATE_TEST_SUITE_P(AllMethods, CompressMethod,
                         ::testing::Combine(::testing::ValuesIn(kAllMethods),
                                            ::testing::ValuesIn(kAllIsas)),
                         methodParamName);

TEST(Compress, MaskSentRefusesBadArguments) {
  otck_compress_config c = makeConfig(OTCK_COMPRESS_TOPK_INT8, 256, 0.1f);
  std::vector<float> g = makeData(Data::Normal, 300, 3), u(300, 2.0f);
  std::vector<unsigned char> p(sz(otck_compress_payload_bytes(&c, 300)));
  ASSERT_EQ(otck_compress_f32(&c, 300, g.data(), nullptr, p.data()), 0);
  EXPECT_EQ(otck_compress_mask_sent_f32(&c, 300, nullptr, u.data()), -1);
  EXPECT_EQ(otck_compress_mask_sent_f32(&c, 300, p.data(), nullptr), -1);
  EXPECT_EQ(otck_compress_mask_sent_f32(&c, -1, p.data(), u.data()), -1);
  EXPECT_EQ(otck_compress_mask_sent_f32(nullptr, 300, p.data(), u.data()), -1);
  c.ratio = 0.0f;
  EXPECT_EQ(otck_compress_mask_sent_f32(&c, 300, p.data(), u.data()), -1);
  for (float x : u)
    ASSERT_EQ(x, 2.0f) << "a refused call wrote";
  c.ratio = 0.1f;
  EXPECT_EQ(otck_compress_mask_sent_f32(&c, 0, nullptr, nullptr), 0);
  // A dense method needs no payload to know that it sends everything.
  c = makeConfig(OTCK_COMPRESS_FP16, 256);
  EXPECT_EQ(otck_compress_mask_sent_f32(&c, 300, nullptr, u.data()), 0);
  for (float x : u)
    ASSERT_EQ(bitsOf(x), 0u);
  // The tail variant: the same checks; the residual may be NULL.
  c = makeConfig(OTCK_COMPRESS_TOPK_INT8, 256, 0.1f);
  std::vector<float> r(300, 3.0f);
  u.assign(300, 2.0f);
  EXPECT_EQ(otck_compress_mask_sent_tail_f32(&c, 300, nullptr, 1.f, u.data(),
                                             r.data()),
            -1);
  EXPECT_EQ(otck_compress_mask_sent_tail_f32(&c, 300, p.data(), 1.f, nullptr,
                                             r.data()),
            -1);
  EXPECT_EQ(otck_compress_mask_sent_tail_f32(nullptr, 300, p.data(), 1.f,
                                             u.data(), r.data()),
            -1);
  for (size_t i = 0; i < u.size(); ++i)
    ASSERT_TRUE(u[i] == 2.0f && r[i] == 3.0f) << "a refused call wrote";
  EXPECT_EQ(otck_compress_mask_sent_tail_f32(&c, 300, p.data(), 1.f, u.data(),
                                             nullptr),
            0);
  EXPECT_EQ(std::count(u.begin(), u.end(), 0.0f),
            2 * otck_compress_k(&c)); // blocks of 256 and 44: 26 kept each
}

TEST(Compress, AccumulateIsMomentumTimesVelocityPlusGradient) {
  const int64_t n = 1003;
  const std::vector<float> g = makeData(Data::WideRange, n, 7);
  const std::vector<float> u0 = makeData(Data::Normal, n, 8);
  for (float m : {0.0f, 0.9f, 1.0f}) {
    std::vector<float> u = u0, saved(sz(n), -1.0f);
    ASSERT_EQ(
        otck_compress_accumulate_f32(n, m, g.data(), u.data(), saved.data()),
        0);
    for (int64_t i = 0; i < n; ++i) {
      const float decayed = m * u0[sz(i)]; // two roundings, as the twin's
      ASSERT_EQ(bitsOf(u[sz(i)]), bitsOf(decayed + g[sz(i)])) << m << " " << i;
      ASSERT_EQ(bitsOf(saved[sz(i)]), bitsOf(u0[sz(i)]));
    }
    // Without a copy to keep.
    std::vector<float> v = u0;
    ASSERT_EQ(otck_compress_accumulate_f32(n, m, g.data(), v.data(), nullptr),
              0);
    EXPECT_EQ(std::memcmp(u.data(), v.data(), sz(n) * 4), 0);
  }
  std::vector<float> u = u0;
  EXPECT_EQ(otck_compress_accumulate_f32(-1, 0.9f, g.data(), u.data(), nullptr),
            -1);
  EXPECT_EQ(otck_compress_accumulate_f32(n, 0.9f, nullptr, u.data(), nullptr),
            -1);
  EXPECT_EQ(otck_compress_accumulate_f32(n, 0.9f, g.data(), nullptr, nullptr),
            -1);
  EXPECT_EQ(otck_compress_accumulate_f32(0, 0.9f, nullptr, nullptr, nullptr),
            0);
}

TEST(Compress, NoneRoundTripsBitwise) {
  const otck_compress_config c = makeConfig(OTCK_COMPRESS_NONE, 256);
  std::vector<float> g = makeData(Data::WideRange, 10007, 31);
  g[0] = -0.0f;
  g[1] = kDenormMin;
  g[2] = -std::numeric_limits<float>::max();
  std::vector<unsigned char> p(sz(otck_compress_payload_bytes(&c, 10007)));
  ASSERT_EQ(otck_compress_f32(&c, 10007, g.data(), nullptr, p.data()), 0);
  EXPECT_EQ(std::memcmp(p.data(), g.data(), p.size()), 0);
  std::vector<float> out(g.size());
  otck_decompress_sum_f32(&c, 10007, p.data(), 1, 1.0f, out.data());
  EXPECT_EQ(std::memcmp(out.data(), g.data(), p.size()), 0);
}

TEST(Compress, AllZeroBlockHasScaleZeroAndNoNaN) {
  for (otck_compress_method m : {OTCK_COMPRESS_INT8, OTCK_COMPRESS_TOPK_INT8}) {
    const otck_compress_config c = makeConfig(m, 256, 0.1f);
    std::vector<float> g(256, 0.0f), r(256, 0.0f);
    std::vector<unsigned char> p(sz(otck_compress_payload_bytes(&c, 256)));
    ASSERT_EQ(otck_compress_f32(&c, 256, g.data(), r.data(), p.data()), 0);
    float scale;
    std::memcpy(&scale, p.data(), 4);
    EXPECT_EQ(scale, 0.0f);
    if (m == OTCK_COMPRESS_TOPK_INT8) {
      for (int j = 0; j < 26; ++j) // ties: the lowest indices
        EXPECT_EQ(p[sz(4 + j)], j);
    }
    std::vector<float> out(256, kNaN);
    otck_decompress_sum_f32(&c, 256, p.data(), 1, 1.0f, out.data());
    for (int i = 0; i < 256; ++i) {
      EXPECT_EQ(out[sz(i)], 0.0f);
      EXPECT_EQ(r[sz(i)], 0.0f);
    }
  }
}

TEST(Compress, ScaleUnderflowDecodesToZero) {
  // absmax / 127 rounds to 0 for absmax below ~63.5 denorm_min: the block
  // is sent as zeros and stays in the residual.
  const otck_compress_config c = makeConfig(OTCK_COMPRESS_TOPK_INT8, 16, 0.5f);
  std::vector<float> g(16, 0.0f), r(16, 0.0f);
  for (int i = 0; i < 16; ++i)
    g[sz(i)] = float(i % 5) * kDenormMin;
  std::vector<unsigned char> p(sz(otck_compress_payload_bytes(&c, 16)));
  ASSERT_EQ(otck_compress_f32(&c, 16, g.data(), r.data(), p.data()), 0);
  std::vector<float> out(16, kNaN);
  otck_decompress_sum_f32(&c, 16, p.data(), 1, 1.0f, out.data());
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(out[sz(i)], 0.0f);
    EXPECT_EQ(r[sz(i)], g[sz(i)]);
  }
}

TEST(Compress, TopKKeepsTheSpikes) {
  const otck_compress_config c = makeConfig(OTCK_COMPRESS_TOPK, 256, 0.01f);
  ASSERT_EQ(otck_compress_k(&c), 3);
  std::vector<float> g(512, 1e-3f);
  g[17] = -5.0f;
  g[200] = 4.0f;
  g[255] = 3.0f;
  g[256 + 3] = 7.0f; // one spike; the rest of block 1 ties at 1e-3
  std::vector<unsigned char> p(sz(otck_compress_payload_bytes(&c, 512)));
  ASSERT_EQ(otck_compress_f32(&c, 512, g.data(), nullptr, p.data()), 0);
  // Block 0: indices 17, 200, 255; block 1: 0, 1, 3 (ties to lower index).
  const unsigned char want0[] = {17, 200, 255}, want1[] = {0, 1, 3};
  EXPECT_EQ(std::memcmp(p.data(), want0, 3), 0);
  EXPECT_EQ(std::memcmp(p.data() + 15, want1, 3), 0);
  float v0;
  std::memcpy(&v0, p.data() + 3, 4);
  EXPECT_EQ(v0, -5.0f);
}

TEST(Compress, RandomKIsSeededUniformAndValueBlind) {
  const int64_t b = 256, blocks = 4000, n = b * blocks;
  otck_compress_config c = makeConfig(OTCK_COMPRESS_RANDOMK, b, 0.1f, 1234);
  const int64_t k = otck_compress_k(&c), bytes = k * 5;
  std::vector<unsigned char> p1(sz(bytes * blocks)), p2(p1.size()),
      p3(p1.size());
  const std::vector<float> g1 = makeData(Data::Normal, n, 1);
  const std::vector<float> g2 = makeData(Data::Spike, n, 2);
  ASSERT_EQ(otck_compress_f32(&c, n, g1.data(), nullptr, p1.data()), 0);
  ASSERT_EQ(otck_compress_f32(&c, n, g2.data(), nullptr, p2.data()), 0);
  c.seed = 1235;
  ASSERT_EQ(otck_compress_f32(&c, n, g1.data(), nullptr, p3.data()), 0);
  std::vector<int64_t> hits(sz(b), 0);
  int64_t sameAsOtherSeed = 0;
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const unsigned char *i1 = p1.data() + blk * bytes;
    // Indices depend on (seed, block) only; strictly ascending.
    ASSERT_EQ(std::memcmp(i1, p2.data() + blk * bytes, sz(k)), 0);
    sameAsOtherSeed +=
        std::memcmp(i1, p3.data() + blk * bytes, sz(k)) == 0 ? 1 : 0;
    for (int64_t j = 0; j < k; ++j) {
      if (j > 0) {
        ASSERT_LT(i1[j - 1], i1[j]);
      }
      ++hits[i1[j]];
    }
  }
  EXPECT_EQ(sameAsOtherSeed, 0);
  // Chi-square over the 256 positions (255 degrees of freedom: mean 255,
  // sd 22.6); deterministic for this seed.
  const double expect = double(blocks * k) / double(b);
  double chi2 = 0.0;
  for (int64_t h : hits)
    chi2 += (double(h) - expect) * (double(h) - expect) / expect;
  EXPECT_LT(chi2, 400.0);
}

//===--- fp16 / bf16 conversion -------------------------------------------===//

namespace cf = otc::kernels::compress;

TEST(CompressConvert, HalfEdgeValues) {
  struct Case {
    float x;
    uint16_t h;
  };
  const Case cases[] = {
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {1.0f, 0x3c00},
      {-2.0f, 0xc000},
      {65504.0f, 0x7bff},                     // largest half
      {65519.99f, 0x7bff},                    // just below the tie
      {65520.0f, 0x7c00},                     // tie to even: overflows
      {1e6f, 0x7c00},                         // overflow
      {-1e6f, 0xfc00},                        //
      {kInf, 0x7c00},                         //
      {-kInf, 0xfc00},                        //
      {std::ldexp(1.0f, -14), 0x0400},        // smallest normal
      {std::ldexp(1.0f, -24), 0x0001},        // smallest subnormal
      {std::ldexp(1.0f, -25), 0x0000},        // tie to even: zero
      {std::ldexp(1.5f, -25), 0x0001},        // above the tie
      {std::ldexp(3.0f, -25), 0x0002},        // 1.5 steps: tie to even (2)
      {std::ldexp(5.0f, -25), 0x0002},        // 2.5 steps: tie to even (2)
      {std::ldexp(1023.0f, -24), 0x03ff},     // largest subnormal
      {std::ldexp(1023.5f, -24), 0x0400},     // rounds up into the normals
      {kDenormMin, 0x0000},                   // float denormal
      {-kDenormMin, 0x8000},                  //
      {1.0f + std::ldexp(1.0f, -11), 0x3c00}, // tie to even (down)
      {1.0f + std::ldexp(3.0f, -11), 0x3c02}, // tie to even (up)
      {2049.0f, 0x6800},                      // 2048: tie to even
  };
  for (const Case &c : cases) {
    EXPECT_EQ(cf::floatToHalf(c.x), c.h) << c.x;
    if (std::isfinite(c.x)) {
      EXPECT_EQ(refHalf(c.x), c.h) << "reference disagrees at " << c.x;
    }
  }
  // NaN stays a quiet NaN with its sign.
  EXPECT_EQ(cf::floatToHalf(kNaN) & 0x7e00u, 0x7e00u);
  EXPECT_EQ(cf::floatToHalf(fromBits(0x7f800001u)) & 0x7e00u, 0x7e00u);
  EXPECT_EQ(cf::floatToHalf(fromBits(0xffc00000u)) & 0xfe00u, 0xfe00u);
  // Every half decodes exactly and re-encodes to itself.
  for (uint32_t h = 0; h < 65536; ++h) {
    const float x = cf::halfToFloat(uint16_t(h));
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0) {
      ASSERT_TRUE(std::isnan(x)) << h;
      continue;
    }
    ASSERT_EQ(bitsOf(x), bitsOf(refHalfToFloat(uint16_t(h)))) << h;
    ASSERT_EQ(cf::floatToHalf(x), h) << h;
  }
}

TEST(CompressConvert, HalfMatchesTheCompilerOnAFloatSweep) {
  // Every 509th bit pattern (both signs, all exponents), skipping NaNs.
  for (uint64_t b = 0; b < (uint64_t(1) << 32); b += 509) {
    const float x = fromBits(uint32_t(b));
    if (std::isnan(x))
      continue;
    ASSERT_EQ(cf::floatToHalf(x), refHalf(x)) << std::hex << b;
  }
}

TEST(CompressConvert, Bf16EdgeValuesAndSweep) {
  struct Case {
    uint32_t x;
    uint16_t h;
  };
  const Case cases[] = {
      {0x00000000u, 0x0000}, {0x80000000u, 0x8000},
      {0x3f800000u, 0x3f80}, // 1
      {0x3f808000u, 0x3f80}, // tie, even stays
      {0x3f818000u, 0x3f82}, // tie, odd rounds up
      {0x3f808001u, 0x3f81}, // above the tie
      {0x7f7fffffu, 0x7f80}, // max float rounds to inf
      {0x7f7f7fffu, 0x7f7f}, // below the tie
      {0x7f800000u, 0x7f80}, {0xff800000u, 0xff80},
      {0x00000001u, 0x0000}, // denormals round like any pattern
      {0x00008000u, 0x0000}, {0x00018000u, 0x0002},
      {0x807fffffu, 0x8080}, // largest denormal up to the smallest normal
  };
  for (const Case &c : cases) {
    EXPECT_EQ(cf::floatToBf16(fromBits(c.x)), c.h) << std::hex << c.x;
    EXPECT_EQ(refBf16(fromBits(c.x)), c.h) << "reference, " << std::hex << c.x;
  }
  EXPECT_EQ(cf::floatToBf16(fromBits(0x7f800001u)), 0x7fc0); // NaN, not inf
  EXPECT_EQ(cf::floatToBf16(fromBits(0xffc00000u)), 0xffc0);
  for (uint64_t b = 0; b < (uint64_t(1) << 32); b += 509) {
    const float x = fromBits(uint32_t(b));
    if (std::isnan(x))
      continue;
    ASSERT_EQ(cf::floatToBf16(x), refBf16(x)) << std::hex << b;
    ASSERT_EQ(bitsOf(cf::bf16ToFloat(cf::floatToBf16(x))),
              uint32_t(cf::floatToBf16(x)) << 16);
  }
}

TEST(CompressConvert, Int8RoundsHalfToEven) {
  // scale 1: v / scale is exact, so the ties are real ties.
  EXPECT_EQ(cf::quantizeInt8(0.5f, 1.0f), 0);
  EXPECT_EQ(cf::quantizeInt8(1.5f, 1.0f), 2);
  EXPECT_EQ(cf::quantizeInt8(2.5f, 1.0f), 2);
  EXPECT_EQ(cf::quantizeInt8(-2.5f, 1.0f), -2);
  EXPECT_EQ(cf::quantizeInt8(126.5f, 1.0f), 126);
  EXPECT_EQ(cf::quantizeInt8(127.49f, 1.0f), 127);
  EXPECT_EQ(cf::quantizeInt8(1000.0f, 1.0f), 127); // clamped
  EXPECT_EQ(cf::quantizeInt8(-1000.0f, 1.0f), -127);
  EXPECT_EQ(cf::quantizeInt8(3.0f, kDenormMin), 127); // v / scale = inf
}

} // namespace
