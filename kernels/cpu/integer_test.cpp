//===- integer_test.cpp - otck_binary_int and otck_compare ----------------===//
//
// The integer binary kernel over every integer type and op (the shifts
// included) against a reference computed in 64-bit arithmetic and wrapped
// to the type, under broadcasting; the edges where signed and unsigned
// types differ (UINT_MAX divisors, values above INT64_MAX, wrap-around of
// narrow products); and the typed comparisons, unsigned and NaN included.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "kernels_test_util.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

namespace {

using namespace otc::kernels::test;

template <typename T> constexpr int dtypeOf() {
  if constexpr (std::is_same_v<T, int8_t>)
    return OTCK_DT_INT8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return OTCK_DT_INT16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return OTCK_DT_INT32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return OTCK_DT_INT64;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return OTCK_DT_UINT8;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return OTCK_DT_UINT16;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return OTCK_DT_UINT32;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return OTCK_DT_UINT64;
  else if constexpr (std::is_same_v<T, float>)
    return OTCK_DT_FLOAT;
  else
    return OTCK_DT_DOUBLE;
}

/// T's value of the 64-bit pattern v (modulo 2^bits).
template <typename T> T wrap(uint64_t v) {
  using U = std::make_unsigned_t<T>;
  return T(U(v));
}

/// a op b as ONNX (numpy) defines it on T, in 64-bit arithmetic; `zero`
/// when the kernel must report a division by zero (the result is then 0).
template <typename T> T reference(otck_binary_op op, T a, T b, bool &zero) {
  constexpr bool kSigned = std::is_signed_v<T>;
  constexpr int kBits = int(sizeof(T)) * 8;
  const int64_t sa = int64_t(a), sb = int64_t(b); // exact for signed T
  const uint64_t ua = uint64_t(a), ub = uint64_t(b);
  const T mn = std::numeric_limits<T>::min();
  switch (op) {
  case OTCK_ADD:
    return wrap<T>(ua + ub);
  case OTCK_SUB:
    return wrap<T>(ua - ub);
  case OTCK_MUL:
    return wrap<T>(ua * ub);
  case OTCK_DIV:
  case OTCK_FMOD:
  case OTCK_MOD: {
    if (b == 0) {
      zero = true;
      return 0;
    }
    if constexpr (kSigned) {
      if (a == mn && sb == -1)
        return op == OTCK_DIV ? mn : T(0);
      const int64_t q = sa / sb, r = sa % sb;
      if (op == OTCK_DIV)
        return T(q);
      if (op == OTCK_FMOD)
        return T(r);
      return T(r != 0 && ((r < 0) != (sb < 0)) ? r + sb : r);
    } else {
      return op == OTCK_DIV ? T(ua / ub) : T(ua % ub);
    }
  }
  case OTCK_POW: {
    if (kSigned && sb < 0) {
      if (a == 0)
        zero = true;
      return sa == 1 ? T(1) : sa == -1 ? T((sb & 1) ? -1 : 1) : T(0);
    }
    uint64_t r = 1;
    for (uint64_t e = 0; e < std::min<uint64_t>(ub, 200); ++e)
      r *= ua;
    if (ub > 200) // a^b mod 2^64 by squaring, independently of the kernel
    {
      r = 1;
      uint64_t base = ua;
      for (uint64_t e = ub; e; e >>= 1) {
        if (e & 1)
          r *= base;
        base *= base;
      }
    }
    return wrap<T>(r);
  }
  case OTCK_MAX:
    return a > b ? a : b;
  case OTCK_MIN:
    return a < b ? a : b;
  case OTCK_PRELU:
    return kSigned && sa < 0 ? wrap<T>(ub * ua) : a;
  case OTCK_SHIFT_LEFT:
    if ((kSigned && sb < 0) || ub >= uint64_t(kBits))
      return 0;
    return wrap<T>(ua << ub);
  case OTCK_SHIFT_RIGHT:
    if ((kSigned && sb < 0) || ub >= uint64_t(kBits))
      return kSigned && sa < 0 ? T(-1) : T(0);
    if constexpr (kSigned)
      return T(sa >> sb);
    else
      return T(ua >> ub);
  }
  return 0;
}

template <typename T> std::vector<T> randomInts(int64_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(sz(n));
  for (size_t i = 0; i < v.size(); ++i) {
    uint64_t r = rng();
    // Small values (shift amounts, exponents, divisors) a third of the time.
    v[i] = i % 3 == 0 ? wrap<T>(r % 80) : wrap<T>(r);
    if (i % 7 == 0 && std::is_signed_v<T>)
      v[i] = T(-T(r % 9));
  }
  return v;
}

const otck_binary_op kOps[] = {OTCK_ADD,   OTCK_SUB,        OTCK_MUL,
                               OTCK_DIV,   OTCK_POW,        OTCK_MAX,
                               OTCK_MIN,   OTCK_MOD,        OTCK_FMOD,
                               OTCK_PRELU, OTCK_SHIFT_LEFT, OTCK_SHIFT_RIGHT};

template <typename T> class BinaryIntTyped : public ::testing::Test {};
using IntTypes = ::testing::Types<int8_t, int16_t, int32_t, int64_t, uint8_t,
                                  uint16_t, uint32_t, uint64_t>;
TYPED_TEST_SUITE(BinaryIntTyped, IntTypes);

TYPED_TEST(BinaryIntTyped, EveryOpMatchesTheReferenceUnderBroadcasting) {
  using T = TypeParam;
  const Shape out = {3, 5, 7}, as = {3, 1, 7}, bs = {5, 1};
  const Shape ast = broadcastStrides(as, out), bst = broadcastStrides(bs, out);
  unsigned seed = 1;
  for (otck_binary_op op : kOps) {
    const std::vector<T> a = randomInts<T>(numel(as), seed++);
    const std::vector<T> b = randomInts<T>(numel(bs), seed++);
    std::vector<T> y(sz(numel(out)), T(77));
    bool zero = false;
    std::vector<T> want(y.size());
    forEachIndex(out, [&](int64_t flat, const Shape &idx) {
      want[sz(flat)] =
          reference<T>(op, a[sz(dot(idx, ast))], b[sz(dot(idx, bst))], zero);
    });
    const int rc = otck_binary_int(op, dtypeOf<T>(), 3, out.data(), a.data(),
                                   ast.data(), b.data(), bst.data(), y.data());
    EXPECT_EQ(rc, zero ? OTCK_ERR_DIVISION_BY_ZERO : OTCK_OK) << "op " << op;
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_EQ(y[i], want[i]) << "op " << op << " at " << i;
  }
}

TYPED_TEST(BinaryIntTyped, DivisionByZeroIsReportedAndWritesZero) {
  using T = TypeParam;
  const int64_t n = 40000, st = 1;
  std::vector<T> a(sz(n), T(9)), b(sz(n), T(2)), y(sz(n), T(5));
  b[123] = 0;
  for (otck_binary_op op : {OTCK_DIV, OTCK_MOD, OTCK_FMOD}) {
    EXPECT_EQ(OTCK_ERR_DIVISION_BY_ZERO,
              otck_binary_int(op, dtypeOf<T>(), 1, &n, a.data(), &st, b.data(),
                              &st, y.data()));
    EXPECT_EQ(y[123], T(0));
    bool zero = false;
    EXPECT_EQ(y[0], reference<T>(op, T(9), T(2), zero));
  }
}

TEST(BinaryInt, UnsignedEdges) {
  const int64_t one = 1, st = 0;
  auto run = [&](auto a, auto b, otck_binary_op op) {
    using T = decltype(a);
    T y = 0;
    EXPECT_EQ(OTCK_OK,
              otck_binary_int(op, dtypeOf<T>(), 1, &one, &a, &st, &b, &st, &y));
    return y;
  };
  EXPECT_EQ(run(uint8_t(200), uint8_t(100), OTCK_ADD), 44);
  EXPECT_EQ(run(uint8_t(3), uint8_t(5), OTCK_SUB), 254);
  EXPECT_EQ(run(uint8_t(16), uint8_t(17), OTCK_MUL), 16);
  EXPECT_EQ(run(uint16_t(65535), uint16_t(65535), OTCK_MUL), 1);
  // A divisor with every bit set is not -1.
  EXPECT_EQ(run(uint32_t(5), uint32_t(0xffffffffu), OTCK_DIV), 0u);
  EXPECT_EQ(run(uint32_t(5), uint32_t(0xffffffffu), OTCK_MOD), 5u);
  const uint64_t big = uint64_t(1) << 63;
  EXPECT_EQ(run(big, uint64_t(1), OTCK_MAX), big);
  EXPECT_EQ(run(big, uint64_t(1), OTCK_MIN), 1u);
  EXPECT_EQ(run(uint8_t(1), uint8_t(7), OTCK_SHIFT_LEFT), 128);
  EXPECT_EQ(run(uint8_t(1), uint8_t(8), OTCK_SHIFT_LEFT), 0);
  EXPECT_EQ(run(uint16_t(0xffff), uint16_t(15), OTCK_SHIFT_RIGHT), 1);
  EXPECT_EQ(run(uint64_t(1), uint64_t(63), OTCK_SHIFT_LEFT), big);
  EXPECT_EQ(run(int8_t(-128), int8_t(-1), OTCK_DIV), -128);
  EXPECT_EQ(run(int8_t(-16), int8_t(2), OTCK_SHIFT_RIGHT), -4);
  EXPECT_EQ(run(int8_t(-16), int8_t(9), OTCK_SHIFT_RIGHT), -1);
}

TEST(BinaryInt, UnsupportedTypesOpsAndRanks) {
  const int64_t one = 1, st = 0;
  int64_t a = 1, y = 0;
  for (int dtype :
       {int(OTCK_DT_FLOAT), int(OTCK_DT_BOOL), int(OTCK_DT_FLOAT16), 0})
    EXPECT_EQ(OTCK_ERR_UNSUPPORTED,
              otck_binary_int(OTCK_ADD, dtype, 1, &one, &a, &st, &a, &st, &y));
  EXPECT_EQ(OTCK_ERR_UNSUPPORTED,
            otck_binary_int(99, OTCK_DT_INT64, 1, &one, &a, &st, &a, &st, &y));
  const int64_t shape[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, st9[9] = {};
  EXPECT_EQ(OTCK_ERR_UNSUPPORTED, otck_binary_int(OTCK_ADD, OTCK_DT_INT64, 9,
                                                  shape, &a, st9, &a, st9, &y));
  // The existing entries agree with the typed one.
  int64_t b = 5, y2 = 0;
  ASSERT_EQ(OTCK_OK, otck_binary_i64(OTCK_SUB, 1, &one, &a, &st, &b, &st, &y2));
  ASSERT_EQ(OTCK_OK, otck_binary_int(OTCK_SUB, OTCK_DT_INT64, 1, &one, &a, &st,
                                     &b, &st, &y));
  EXPECT_EQ(y, y2);
}

template <typename T> class CompareTyped : public ::testing::Test {};
using CompareTypes =
    ::testing::Types<int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t,
                     uint32_t, uint64_t, float, double>;
TYPED_TEST_SUITE(CompareTyped, CompareTypes);

TYPED_TEST(CompareTyped, EveryPredicateUnderBroadcasting) {
  using T = TypeParam;
  const Shape out = {4, 6}, as = {4, 1}, bs = {6};
  const Shape ast = broadcastStrides(as, out), bst = broadcastStrides(bs, out);
  std::vector<T> a, b;
  const T mx = std::numeric_limits<T>::max(),
          lo = std::numeric_limits<T>::lowest();
  a = {T(0), mx, lo, T(3)};
  b = {T(3), T(0), mx, lo, T(1), T(3)};
  if constexpr (std::is_floating_point_v<T>)
    b[4] = std::numeric_limits<T>::quiet_NaN();
  for (int op = OTCK_CMP_EQUAL; op <= OTCK_CMP_GREATER_OR_EQUAL; ++op) {
    std::vector<uint8_t> y(sz(numel(out)), 7);
    ASSERT_EQ(OTCK_OK, otck_compare(otck_compare_op(op), dtypeOf<T>(), 2,
                                    out.data(), a.data(), ast.data(), b.data(),
                                    bst.data(), y.data()));
    forEachIndex(out, [&](int64_t flat, const Shape &idx) {
      const T x = a[sz(dot(idx, ast))], z = b[sz(dot(idx, bst))];
      const bool want = op == OTCK_CMP_EQUAL           ? x == z
                        : op == OTCK_CMP_LESS          ? x < z
                        : op == OTCK_CMP_LESS_OR_EQUAL ? x <= z
                        : op == OTCK_CMP_GREATER       ? x > z
                                                       : x >= z;
      ASSERT_EQ(y[sz(flat)], uint8_t(want)) << "op " << op << " at " << flat;
    });
  }
}

TEST(Compare, BoolAndUnsupportedTypes) {
  const int64_t n = 4, st = 1;
  const uint8_t a[] = {0, 1, 0, 1}, b[] = {0, 0, 1, 1};
  uint8_t y[4] = {9, 9, 9, 9};
  ASSERT_EQ(OTCK_OK, otck_compare(OTCK_CMP_LESS, OTCK_DT_BOOL, 1, &n, a, &st, b,
                                  &st, y));
  EXPECT_EQ(std::vector<uint8_t>(y, y + 4), (std::vector<uint8_t>{0, 0, 1, 0}));
  uint8_t before[4];
  std::memcpy(before, y, 4);
  EXPECT_EQ(OTCK_ERR_UNSUPPORTED, otck_compare(OTCK_CMP_EQUAL, OTCK_DT_FLOAT16,
                                               1, &n, a, &st, b, &st, y));
  EXPECT_EQ(0, std::memcmp(before, y, 4)) << "untouched";
}

} // namespace
