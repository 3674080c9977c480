//===- integer_cuda_test.cpp - Integer binary and comparison twins --------===//
//
// otckd_binary_int and otckd_compare (cuda/integer.cu) against their CPU
// twins on random data (fixed seeds), bit for bit, for every integer type
// and op and every comparison type, under broadcasting; a division by zero
// must record OTCK_ERR_DIVISION_BY_ZERO for otckd_take_status. Every test
// is skipped when no CUDA device is visible.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"
#include "otc/kernels_cuda.h"

#include "cuda_test_util.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace otc::kernels::cuda::test;

class IntegerCuda : public otc::kernels::cuda::test::CudaKernelTest {};

struct TypeCase {
  int dtype;
  int64_t size;
  const char *name;
};
const TypeCase kIntTypes[] = {
    {OTCK_DT_INT8, 1, "i8"},    {OTCK_DT_INT16, 2, "i16"},
    {OTCK_DT_INT32, 4, "i32"},  {OTCK_DT_INT64, 8, "i64"},
    {OTCK_DT_UINT8, 1, "u8"},   {OTCK_DT_UINT16, 2, "u16"},
    {OTCK_DT_UINT32, 4, "u32"}, {OTCK_DT_UINT64, 8, "u64"},
};

struct ShapeCase {
  Shape out, a, b;
};
const ShapeCase kShapes[] = {
    {{}, {}, {}},
    {{1031}, {1031}, {1031}},
    {{3, 4, 5}, {3, 1, 5}, {1, 4, 5}},
    {{2, 33, 65}, {33, 65}, {2, 1, 1}},
};

/// Random bytes where every element's low byte is small a third of the time
/// (shift amounts, exponents) and no divisor is zero.
std::vector<uint8_t> operandBytes(int64_t n, int64_t size, unsigned seed) {
  std::vector<uint8_t> v = randomBytes(n * size, seed);
  for (int64_t i = 0; i < n; ++i) {
    uint8_t *e = v.data() + i * size;
    if (i % 3 == 0) {
      std::memset(e, 0, size_t(size));
      e[0] = uint8_t(1 + v[size_t(i * size)] % 70);
    }
    bool allZero = true;
    for (int64_t k = 0; k < size; ++k)
      allZero &= e[k] == 0;
    if (allZero)
      e[0] = 1;
  }
  return v;
}

TEST_F(IntegerCuda, BinaryIntMatchesCpuExactly) {
  unsigned seed = 900;
  for (const TypeCase &t : kIntTypes)
    for (const ShapeCase &c : kShapes)
      for (int op = OTCK_ADD; op <= OTCK_SHIFT_RIGHT; ++op) {
        const size_t rank = c.out.size();
        const Shape as = broadcastStrides(c.a, rank);
        const Shape bs = broadcastStrides(c.b, rank);
        const auto a = operandBytes(numel(c.a), t.size, seed++);
        const auto b = operandBytes(numel(c.b), t.size, seed++);
        std::vector<uint8_t> want(sz(numel(c.out) * t.size), 0xAB);
        ASSERT_EQ(OTCK_OK,
                  otck_binary_int(otck_binary_op(op), t.dtype, int(rank),
                                  c.out.data(), a.data(), as.data(), b.data(),
                                  bs.data(), want.data()));
        Dev<uint8_t> da(a), db(b),
            dout(std::vector<uint8_t>(want.size(), 0xCD));
        EXPECT_EQ(0, otckd_binary_int(otck_binary_op(op), t.dtype, int(rank),
                                      c.out.data(), da.get(), as.data(),
                                      db.get(), bs.data(), dout.get()));
        EXPECT_EQ(want, dout.host())
            << t.name << " op " << op << " " << shapeName(c.out);
      }
}

TEST_F(IntegerCuda, DivisionByZeroIsRecorded) {
  const int64_t n = 1000, st = 1;
  std::vector<int32_t> a(sz(n), 7), b(sz(n), 2);
  b[517] = 0;
  Dev<int32_t> da(a), db(b), dy(sz(n));
  otckd_binary_int(OTCK_DIV, OTCK_DT_INT32, 1, &n, da.get(), &st, db.get(), &st,
                   dy.get());
  EXPECT_EQ(otckd_take_status(), OTCK_ERR_DIVISION_BY_ZERO);
  const std::vector<int32_t> y = dy.host();
  EXPECT_EQ(y[517], 0);
  EXPECT_EQ(y[0], 3);
}

TEST_F(IntegerCuda, CompareMatchesCpuExactly) {
  std::vector<TypeCase> types(std::begin(kIntTypes), std::end(kIntTypes));
  types.push_back({OTCK_DT_FLOAT, 4, "f32"});
  types.push_back({OTCK_DT_DOUBLE, 8, "f64"});
  types.push_back({OTCK_DT_BOOL, 1, "bool"});
  unsigned seed = 1900;
  for (const TypeCase &t : types)
    for (const ShapeCase &c : kShapes)
      for (int op = OTCK_CMP_EQUAL; op <= OTCK_CMP_GREATER_OR_EQUAL; ++op) {
        const size_t rank = c.out.size();
        const Shape as = broadcastStrides(c.a, rank);
        const Shape bs = broadcastStrides(c.b, rank);
        // Few distinct values, so that equality happens; bools are 0 or 1.
        auto a = operandBytes(numel(c.a), t.size, seed++);
        auto b = operandBytes(numel(c.b), t.size, seed++);
        if (t.dtype == OTCK_DT_BOOL)
          for (auto *v : {&a, &b})
            for (uint8_t &x : *v)
              x &= 1;
        std::vector<uint8_t> want(sz(numel(c.out)), 0xAB);
        ASSERT_EQ(OTCK_OK, otck_compare(otck_compare_op(op), t.dtype, int(rank),
                                        c.out.data(), a.data(), as.data(),
                                        b.data(), bs.data(), want.data()));
        Dev<uint8_t> da(a), db(b),
            dout(std::vector<uint8_t>(want.size(), 0xCD));
        EXPECT_EQ(0, otckd_compare(otck_compare_op(op), t.dtype, int(rank),
                                   c.out.data(), da.get(), as.data(), db.get(),
                                   bs.data(), dout.get()));
        EXPECT_EQ(want, dout.host())
            << t.name << " predicate " << op << " " << shapeName(c.out);
      }
}

} // namespace

TEST_F(IntegerCuda, LogicAndNotMatchCpuExactly) {
  unsigned seed = 2900;
  for (const ShapeCase &c : kShapes)
    for (int op = OTCK_LOGIC_AND; op <= OTCK_LOGIC_XOR; ++op) {
      const size_t rank = c.out.size();
      const Shape as = broadcastStrides(c.a, rank);
      const Shape bs = broadcastStrides(c.b, rank);
      // Any byte is a bool (non-zero is true).
      const auto a = randomBytes(numel(c.a), seed++);
      const auto b = randomBytes(numel(c.b), seed++);
      std::vector<uint8_t> want(sz(numel(c.out)), 0xAB);
      otck_logic(otck_logic_op(op), int(rank), c.out.data(), a.data(),
                 as.data(), b.data(), bs.data(), want.data());
      Dev<uint8_t> da(a), db(b), dout(std::vector<uint8_t>(want.size(), 0xCD));
      otckd_logic(otck_logic_op(op), int(rank), c.out.data(), da.get(),
                  as.data(), db.get(), bs.data(), dout.get());
      EXPECT_EQ(want, dout.host()) << "op " << op << " " << shapeName(c.out);
    }
  const auto x = randomBytes(1031, seed);
  std::vector<uint8_t> want(x.size());
  otck_not(int64_t(x.size()), x.data(), want.data());
  Dev<uint8_t> dx(x), dy(std::vector<uint8_t>(x.size(), 7));
  otckd_not(int64_t(x.size()), dx.get(), dy.get());
  EXPECT_EQ(want, dy.host());
}

TEST_F(IntegerCuda, CastMatchesCpuBitForBit) {
  // Every pair of the 13 types; random bits, so NaN, infinities, values out
  // of the target's range and subnormals all occur.
  const TypeCase types[] = {
      {OTCK_DT_FLOAT, 4, "f32"},   {OTCK_DT_DOUBLE, 8, "f64"},
      {OTCK_DT_FLOAT16, 2, "f16"}, {OTCK_DT_BFLOAT16, 2, "bf16"},
      {OTCK_DT_BOOL, 1, "bool"},   {OTCK_DT_INT8, 1, "i8"},
      {OTCK_DT_INT16, 2, "i16"},   {OTCK_DT_INT32, 4, "i32"},
      {OTCK_DT_INT64, 8, "i64"},   {OTCK_DT_UINT8, 1, "u8"},
      {OTCK_DT_UINT16, 2, "u16"},  {OTCK_DT_UINT32, 4, "u32"},
      {OTCK_DT_UINT64, 8, "u64"},
  };
  const int64_t n = 4099;
  unsigned seed = 3900;
  for (const TypeCase &from : types)
    for (const TypeCase &to : types) {
      auto x = randomBytes(n * from.size, seed++);
      if (from.dtype == OTCK_DT_BOOL)
        for (uint8_t &v : x)
          v &= 1;
      std::vector<uint8_t> want(sz(n * to.size), 0xAB);
      ASSERT_EQ(OTCK_OK,
                otck_cast(n, from.dtype, x.data(), to.dtype, want.data()));
      Dev<uint8_t> dx(x), dy(std::vector<uint8_t>(want.size(), 0xCD));
      EXPECT_EQ(OTCK_OK,
                otckd_cast(n, from.dtype, dx.get(), to.dtype, dy.get()));
      EXPECT_EQ(want, dy.host()) << from.name << " -> " << to.name;
    }
  Dev<uint8_t> d(std::vector<uint8_t>(8, 1));
  EXPECT_EQ(OTCK_ERR_UNSUPPORTED, otckd_cast(1, 99, d.get(), 1, d.get()));
}
