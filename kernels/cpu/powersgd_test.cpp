//===- powersgd_test.cpp - Unit tests of PowerSGD's low-rank kernels ------===//
//
// The products and the decompression are compared with a naive
// double-precision reference within float GEMM's error bound
// ((K + 2) 2^-23 sum |a b|), on lists with several matrices, ranks clipped
// to min(rows, cols), wide, tall, 1 x n and n x 1 matrices, and gaps between
// them whose elements (and the guards past every buffer) must keep their
// bits. Gram-Schmidt is checked against a double reference and for
// P^T P = I, with all-zero columns, on P and (through the list with rows and
// cols swapped) on Q; the initial Q against values computed here from the
// formula of otc/compress.h with the C library's log and cos (a few also
// written out), its statistics and the Q's it must leave alone. Every entry
// point refuses every kind of bad list and NULL buffer writing nothing, and
// one PowerSGD step reproduces a matrix of exact rank r.
//
//===----------------------------------------------------------------------===//

#include "otc/compress.h"

#include "compress_isa.h"
#include "kernels_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using otc::kernels::test::kNaN;
using otc::kernels::test::sameBits;
using otc::kernels::test::sz;
using otc::kernels::test::withThreads;

using Mats = std::vector<otck_powersgd_matrix>;

/// Extra floats past every buffer, which no kernel may touch.
constexpr int64_t kGuard = 7;
constexpr float kSentinel = -12345.5f;

uint32_t bitsOf(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

int64_t rankOf(const otck_powersgd_matrix &m, int64_t rank) {
  return std::min({rank, m.rows, m.cols});
}

/// A list of matrices and the PowerSGD rank it is run at.
struct Case {
  std::string name;
  Mats mats;
  int64_t rank;

  /// Floats of the bucket: past the last matrix, with a gap of 3.
  int64_t bucket() const {
    const otck_powersgd_matrix &m = mats.back();
    return m.offset + m.rows * m.cols + 3;
  }
  int64_t pFloats() const {
    int64_t n = 0;
    for (const auto &m : mats)
      n += m.rows * rankOf(m, rank);
    return n;
  }
  int64_t qFloats() const {
    int64_t n = 0;
    for (const auto &m : mats)
      n += m.cols * rankOf(m, rank);
    return n;
  }
  /// First float of each P_i and Q_i, from the layout of otc/compress.h.
  std::vector<int64_t> pStarts() const {
    std::vector<int64_t> s;
    int64_t at = 0;
    for (const auto &m : mats) {
      s.push_back(at);
      at += m.rows * rankOf(m, rank);
    }
    return s;
  }
  std::vector<int64_t> qStarts() const {
    std::vector<int64_t> s;
    int64_t at = 0;
    for (const auto &m : mats) {
      s.push_back(at);
      at += m.cols * rankOf(m, rank);
    }
    return s;
  }
  /// Whether bucket element e belongs to no matrix.
  bool inGap(int64_t e) const {
    for (const auto &m : mats)
      if (e >= m.offset && e < m.offset + m.rows * m.cols)
        return false;
    return true;
  }
};

std::vector<Case> cases() {
  return {
      // Gaps before, between and after; contiguous 6 x 6 after the 1 x 9;
      // r clipped by rows (1 x 9, 8 x 3 by cols, 9 x 1) and by rank.
      {"mixed",
       {{3, 5, 7},
        {40, 8, 3},
        {70, 1, 9},
        {79, 6, 6},
        {120, 9, 1},
        {130, 16, 12}},
       4},
      {"rank1", {{0, 12, 5}, {60, 5, 12}, {200, 1, 1}}, 1},
      // Rank above every dimension: full rank, r = min(rows, cols).
      {"full", {{2, 7, 4}, {40, 3, 11}}, 100},
      // r = 6: a second group of columns of P past the first four.
      {"rank6", {{1, 10, 37}, {400, 23, 9}}, 6},
      // Large enough to thread the products (rows; column blocks of Q).
      {"large", {{5, 300, 170}, {51005, 64, 700}, {96000, 700, 64}}, 8},
  };
}

std::vector<float> normals(int64_t n, unsigned seed, float sigma = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v(sz(n));
  for (float &x : v)
    x = d(gen);
  return v;
}

/// A bucket with random matrices and sentinels in its gaps, plus guards.
std::vector<float> makeBucket(const Case &c, unsigned seed) {
  std::vector<float> b = normals(c.bucket() + kGuard, seed);
  for (int64_t e = 0; e < c.bucket() + kGuard; ++e)
    if (e >= c.bucket() || c.inGap(e))
      b[sz(e)] = kSentinel;
  return b;
}

/// n floats of data and kGuard sentinels after them.
std::vector<float> guarded(int64_t n, unsigned seed) {
  std::vector<float> v = normals(n + kGuard, seed);
  std::fill(v.end() - kGuard, v.end(), kSentinel);
  return v;
}

void expectGuards(const std::vector<float> &v, int64_t n,
                  const std::string &what) {
  for (int64_t e = n; e < int64_t(v.size()); ++e)
    ASSERT_EQ(bitsOf(v[sz(e)]), bitsOf(kSentinel))
        << what << ": wrote past the end at " << e;
}

void expectGapsKept(const Case &c, const std::vector<float> &before,
                    const std::vector<float> &after, const std::string &what) {
  ASSERT_EQ(before.size(), after.size());
  for (int64_t e = 0; e < int64_t(after.size()); ++e)
    if (e >= c.bucket() || c.inGap(e)) {
      ASSERT_EQ(bitsOf(after[sz(e)]), bitsOf(before[sz(e)]))
          << what << ": element " << e << " belongs to no matrix";
    }
}

/// got within (K + 2) 2^-23 sum|a b| of the double reference: float GEMM's
/// error bound for dot products of length K, whatever their order.
void expectProduct(double got, double want, double absSum, int64_t K,
                   const std::string &what) {
  const double tol = double(K + 2) * std::ldexp(1.0, -23) * absSum + 1e-30;
  ASSERT_LE(std::fabs(got - want), tol)
      << what << ": got " << got << " want " << want;
}

//===--- Reference products -----------------------------------------------===//

/// A row-major rows x cols view at `base` (float or double).
template <class T> struct View {
  T *base;
  int64_t rows, cols;
  T &at(int64_t i, int64_t j) const { return base[i * cols + j]; }
};

//===--- Tests ------------------------------------------------------------===//

TEST(PowerSgd, FactorSizes) {
  for (const Case &c : cases()) {
    const int64_t num = int64_t(c.mats.size());
    EXPECT_EQ(otck_powersgd_p_floats(c.mats.data(), num, c.rank), c.pFloats())
        << c.name;
    EXPECT_EQ(otck_powersgd_q_floats(c.mats.data(), num, c.rank), c.qFloats())
        << c.name;
  }
  // The "mixed" list by hand: r = 4, 3, 1, 4, 1, 4.
  const Mats m = cases()[0].mats;
  EXPECT_EQ(otck_powersgd_p_floats(m.data(), 6, 4),
            5 * 4 + 8 * 3 + 1 + 6 * 4 + 9 + 16 * 4);
  EXPECT_EQ(otck_powersgd_q_floats(m.data(), 6, 4),
            7 * 4 + 3 * 3 + 9 + 6 * 4 + 1 + 12 * 4);
  EXPECT_EQ(otck_powersgd_p_floats(nullptr, 0, 4), 0);
  EXPECT_EQ(otck_powersgd_q_floats(nullptr, 0, 1), 0);
}

TEST(PowerSgd, ProjectAndBackProjectMatchADoubleReference) {
  unsigned seed = 1;
  for (const Case &c : cases()) {
    SCOPED_TRACE(c.name);
    const int64_t num = int64_t(c.mats.size());
    const std::vector<float> m = makeBucket(c, seed++);
    const std::vector<float> q = guarded(c.qFloats(), seed++);
    std::vector<float> p = guarded(c.pFloats(), seed++);
    ASSERT_EQ(otck_powersgd_project_f32(c.mats.data(), num, c.rank, m.data(),
                                        q.data(), p.data()),
              0);
    expectGuards(p, c.pFloats(), "P");
    const std::vector<int64_t> ps = c.pStarts(), qs = c.qStarts();
    for (size_t i = 0; i < c.mats.size(); ++i) {
      const otck_powersgd_matrix &x = c.mats[i];
      const int64_t r = rankOf(x, c.rank);
      View<const float> M{m.data() + x.offset, x.rows, x.cols};
      View<const float> Q{q.data() + qs[i], x.cols, r};
      View<const float> P{p.data() + ps[i], x.rows, r};
      for (int64_t a = 0; a < x.rows; ++a)
        for (int64_t b = 0; b < r; ++b) {
          double want = 0, absSum = 0;
          for (int64_t k = 0; k < x.cols; ++k) {
            want += double(M.at(a, k)) * double(Q.at(k, b));
            absSum += std::fabs(double(M.at(a, k)) * double(Q.at(k, b)));
          }
          expectProduct(P.at(a, b), want, absSum, x.cols,
                        "P_" + std::to_string(i));
        }
    }
    // Q = M^T P, from the P just computed.
    std::vector<float> q2 = guarded(c.qFloats(), seed++);
    ASSERT_EQ(otck_powersgd_back_project_f32(c.mats.data(), num, c.rank,
                                             m.data(), p.data(), q2.data()),
              0);
    expectGuards(q2, c.qFloats(), "Q");
    for (size_t i = 0; i < c.mats.size(); ++i) {
      const otck_powersgd_matrix &x = c.mats[i];
      const int64_t r = rankOf(x, c.rank);
      View<const float> M{m.data() + x.offset, x.rows, x.cols};
      View<const float> P{p.data() + ps[i], x.rows, r};
      View<const float> Q{q2.data() + qs[i], x.cols, r};
      for (int64_t a = 0; a < x.cols; ++a)
        for (int64_t b = 0; b < r; ++b) {
          double want = 0, absSum = 0;
          for (int64_t k = 0; k < x.rows; ++k) {
            want += double(M.at(k, a)) * double(P.at(k, b));
            absSum += std::fabs(double(M.at(k, a)) * double(P.at(k, b)));
          }
          expectProduct(Q.at(a, b), want, absSum, x.rows,
                        "Q_" + std::to_string(i));
        }
    }
  }
}

TEST(PowerSgd, DecompressMatchesADoubleReferenceWithAndWithoutResidual) {
  unsigned seed = 100;
  for (const Case &c : cases())
    for (float scale : {1.0f, 0.25f, -1.0f / 3.0f}) {
      SCOPED_TRACE(c.name + " scale " + std::to_string(scale));
      const int64_t num = int64_t(c.mats.size());
      const std::vector<float> p = guarded(c.pFloats(), seed++);
      const std::vector<float> q = guarded(c.qFloats(), seed++);
      const std::vector<float> out0 = makeBucket(c, seed++);
      const std::vector<float> res0 = makeBucket(c, seed++);
      std::vector<float> out = out0, res = res0;
      ASSERT_EQ(otck_powersgd_decompress_f32(c.mats.data(), num, c.rank,
                                             p.data(), q.data(), scale,
                                             out.data(), res.data()),
                0);
      expectGapsKept(c, out0, out, "out");
      expectGapsKept(c, res0, res, "residual");
      const std::vector<int64_t> ps = c.pStarts(), qs = c.qStarts();
      for (size_t i = 0; i < c.mats.size(); ++i) {
        const otck_powersgd_matrix &x = c.mats[i];
        const int64_t r = rankOf(x, c.rank);
        View<const float> P{p.data() + ps[i], x.rows, r};
        View<const float> Q{q.data() + qs[i], x.cols, r};
        for (int64_t a = 0; a < x.rows; ++a)
          for (int64_t b = 0; b < x.cols; ++b) {
            double want = 0, absSum = 0;
            for (int64_t k = 0; k < r; ++k) {
              want += double(P.at(a, k)) * double(Q.at(b, k));
              absSum += std::fabs(double(P.at(a, k)) * double(Q.at(b, k)));
            }
            const size_t e = sz(x.offset + a * x.cols + b);
            // The product within GEMM's bound, then one rounding more.
            const float o = out[e];
            expectProduct(double(o) / double(scale), want, absSum, r + 1,
                          "out_" + std::to_string(i));
            // The residual is exactly its old value minus out, rounded.
            ASSERT_EQ(bitsOf(res[e]), bitsOf(res0[e] - o)) << "residual " << e;
          }
      }
      // Without a residual: the same out, bit for bit.
      std::vector<float> out2 = out0;
      ASSERT_EQ(otck_powersgd_decompress_f32(c.mats.data(), num, c.rank,
                                             p.data(), q.data(), scale,
                                             out2.data(), nullptr),
                0);
      EXPECT_TRUE(sameBits(out, out2));
    }
}

namespace isa = otc::kernels::compress;

/// Runs fn with each instruction-set variant this CPU and build have
/// (the baseline first), then goes back to the best one.
template <typename Fn> void forEachIsa(Fn fn) {
  for (isa::Isa v : {isa::Isa::Generic, isa::Isa::Avx2, isa::Isa::Avx512})
    if (isa::useIsa(v)) {
      SCOPED_TRACE(isa::isaName(v));
      fn(v);
    }
  isa::useIsa(isa::bestIsa());
}

TEST(PowerSgd, DecompressWritesTheSameBitsOnEveryIsaAndThreadCount) {
  // Beside the mixed cases: 16 rows of 1000 columns with r = 4 (the vector
  // loops' bodies and tails, rows split between threads).
  std::vector<Case> all = cases();
  all.push_back({"wide", Mats{{2, 16, 1000}}, 4});
  unsigned seed = 300;
  for (const Case &c : all) {
    SCOPED_TRACE(c.name);
    const int64_t num = int64_t(c.mats.size());
    const std::vector<float> p = guarded(c.pFloats(), seed++);
    const std::vector<float> q = guarded(c.qFloats(), seed++);
    const std::vector<float> out0 = makeBucket(c, seed++);
    const std::vector<float> res0 = makeBucket(c, seed++);
    for (bool withResidual : {true, false}) {
      SCOPED_TRACE(withResidual ? "with a residual" : "without a residual");
      std::vector<float> outBase, resBase;
      bool first = true;
      forEachIsa([&](isa::Isa) {
        for (int threads : {1, 3}) {
          std::vector<float> out = out0, res = res0;
          int rc = -2;
          withThreads(threads, [&] {
            rc = otck_powersgd_decompress_f32(
                c.mats.data(), num, c.rank, p.data(), q.data(), 0.5f,
                out.data(), withResidual ? res.data() : nullptr);
          });
          EXPECT_EQ(rc, 0) << threads << " threads";
          if (first) {
            outBase = out;
            resBase = res;
            first = false;
            continue;
          }
          EXPECT_TRUE(sameBits(out, outBase)) << threads << " threads";
          EXPECT_TRUE(sameBits(res, resBase)) << threads << " threads";
        }
      });
    }
  }
}

TEST(PowerSgd, ProjectionsWriteTheSameBitsOnEveryIsaAndThreadCount) {
  // Beside the mixed cases: 16 x 1000 at r = 4 (the dot products' vector
  // bodies and tails) and 37 x 3000 at r = 3 (rows beyond the blocks of
  // four, Q^T's column blocks of 1360 with a partial last one, split
  // between threads).
  std::vector<Case> all = cases();
  all.push_back({"wide", Mats{{2, 16, 1000}}, 4});
  all.push_back({"blocks", Mats{{0, 37, 3000}}, 3});
  unsigned seed = 200;
  for (const Case &c : all) {
    SCOPED_TRACE(c.name);
    const int64_t num = int64_t(c.mats.size());
    const std::vector<float> m = makeBucket(c, seed++);
    const std::vector<float> q0 = guarded(c.qFloats(), seed++);
    std::vector<float> pBase, qBase;
    bool first = true;
    forEachIsa([&](isa::Isa) {
      for (int threads : {1, 3}) {
        std::vector<float> p = guarded(c.pFloats(), seed),
                           q = guarded(c.qFloats(), seed + 1);
        withThreads(threads, [&] {
          ASSERT_EQ(otck_powersgd_project_f32(c.mats.data(), num, c.rank,
                                              m.data(), q0.data(), p.data()),
                    0);
          ASSERT_EQ(otck_powersgd_back_project_f32(c.mats.data(), num, c.rank,
                                                   m.data(), p.data(),
                                                   q.data()),
                    0);
        });
        if (first) {
          pBase = p;
          qBase = q;
          first = false;
          continue;
        }
        EXPECT_TRUE(sameBits(p, pBase)) << threads << " threads";
        EXPECT_TRUE(sameBits(q, qBase)) << threads << " threads";
      }
    });
    seed += 2;
  }
}

TEST(PowerSgd, ProjectFeedbackIsTheAccumulationThenTheProjection) {
  // On every case (plus 16 x 1000 and 37 x 3000), every ISA, 1 and 3
  // threads, with and without the saved copy: the residual's bits are
  // otck_compress_accumulate_f32's with momentum 1 on each matrix, the
  // saved copy is the old residual, P's bits are otck_powersgd_project_f32's
  // on the new residual, and nothing between or after the matrices moves.
  std::vector<Case> all = cases();
  all.push_back({"wide", Mats{{2, 16, 1000}}, 4});
  all.push_back({"blocks", Mats{{0, 37, 3000}}, 3});
  unsigned seed = 500;
  for (const Case &c : all) {
    SCOPED_TRACE(c.name);
    const int64_t num = int64_t(c.mats.size());
    const std::vector<float> g = makeBucket(c, seed++);
    const std::vector<float> res0 = makeBucket(c, seed++);
    const std::vector<float> saved0 = makeBucket(c, seed++);
    const std::vector<float> q = guarded(c.qFloats(), seed++);
    // The reference: the two kernels it replaces.
    std::vector<float> wantRes = res0, wantSaved = saved0;
    std::vector<float> wantP = guarded(c.pFloats(), seed);
    for (const otck_powersgd_matrix &x : c.mats)
      ASSERT_EQ(otck_compress_accumulate_f32(
                    x.rows * x.cols, 1.0f, g.data() + x.offset,
                    wantRes.data() + x.offset, wantSaved.data() + x.offset),
                0);
    ASSERT_EQ(otck_powersgd_project_f32(c.mats.data(), num, c.rank,
                                        wantRes.data(), q.data(), wantP.data()),
              0);
    forEachIsa([&](isa::Isa) {
      for (int threads : {1, 3})
        for (bool withSaved : {true, false}) {
          SCOPED_TRACE(std::to_string(threads) + " threads" +
                       (withSaved ? ", saving" : ""));
          std::vector<float> res = res0, saved = saved0;
          std::vector<float> p = guarded(c.pFloats(), seed + 1);
          withThreads(threads, [&] {
            ASSERT_EQ(otck_powersgd_project_feedback_f32(
                          c.mats.data(), num, c.rank, g.data(), res.data(),
                          withSaved ? saved.data() : nullptr, q.data(),
                          p.data()),
                      0);
          });
          EXPECT_TRUE(sameBits(res, wantRes));
          EXPECT_TRUE(sameBits(saved, withSaved ? wantSaved : saved0));
          EXPECT_TRUE(sameBits(p, wantP));
          expectGuards(p, c.pFloats(), "P");
        }
    });
    seed += 2;
  }
}

TEST(PowerSgd, DecompressReportsWhatIsNotFinite) {
  // Two matrices of 40 x 300 (r = 2; P's rows all 1, Q's all 1: out = 2
  // everywhere), then one element of P made large or not finite, in the
  // first row, a middle one or the last row of the second matrix; with a
  // scale that makes 1e30 * 2 overflow.
  const Mats g{{0, 40, 300}, {12000, 40, 300}};
  const int64_t r = 2, n = 24000;
  for (float a : {1e30f, std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::infinity(), 3.0f})
    for (int64_t row : {0, 17, 39})
      forEachIsa([&](isa::Isa) {
        SCOPED_TRACE("value " + std::to_string(a) + " in row " +
                     std::to_string(row));
        std::vector<float> p(size_t(2 * 40 * r), 1.0f),
            q(size_t(2 * 300 * r), 1.0f);
        p[size_t(40 * r + row * r + 1)] = a; // the second matrix's P
        const float scale = 1e10f;
        const int want = std::isfinite((a + 1.0f) * scale) ? 0 : 1;
        for (int threads : {1, 3})
          for (bool withResidual : {true, false}) {
            std::vector<float> out(size_t(n), 0.0f), res(size_t(n), 0.0f);
            int rc = -2;
            withThreads(threads, [&] {
              rc = otck_powersgd_decompress_f32(
                  g.data(), 2, r, p.data(), q.data(), scale, out.data(),
                  withResidual ? res.data() : nullptr);
            });
            EXPECT_EQ(rc, want) << threads << " threads";
            // The first matrix's rows are written as usual.
            EXPECT_EQ(out[0], 2e10f);
            EXPECT_EQ(out[11999], 2e10f);
          }
      });
}

/// Modified Gram-Schmidt in double, as otc/compress.h states it.
std::vector<double> refOrthonormalize(std::vector<double> p, int64_t rows,
                                      int64_t r, double eps) {
  View<double> P{p.data(), rows, r};
  for (int64_t j = 0; j < r; ++j) {
    double norm = 0;
    for (int64_t i = 0; i < rows; ++i)
      norm += P.at(i, j) * P.at(i, j);
    norm = std::sqrt(norm);
    if (norm == 0)
      continue;
    for (int64_t i = 0; i < rows; ++i)
      P.at(i, j) /= norm + eps;
    for (int64_t k = j + 1; k < r; ++k) {
      double dot = 0;
      for (int64_t i = 0; i < rows; ++i)
        dot += P.at(i, j) * P.at(i, k);
      for (int64_t i = 0; i < rows; ++i)
        P.at(i, k) -= dot * P.at(i, j);
    }
  }
  return p;
}

/// max |P^T P - I| over the columns of P (rows x r) not all zero.
double orthonormalityError(const float *p, int64_t rows, int64_t r) {
  double worst = 0;
  for (int64_t a = 0; a < r; ++a)
    for (int64_t b = 0; b < r; ++b) {
      double dot = 0, na = 0, nb = 0;
      for (int64_t i = 0; i < rows; ++i) {
        dot += double(p[i * r + a]) * double(p[i * r + b]);
        na += double(p[i * r + a]) * double(p[i * r + a]);
        nb += double(p[i * r + b]) * double(p[i * r + b]);
      }
      if (na == 0 || nb == 0)
        continue;
      worst = std::max(worst, std::fabs(dot - (a == b ? 1.0 : 0.0)));
    }
  return worst;
}

TEST(PowerSgd, OrthonormalizeMatchesADoubleReferenceAndIsOrthonormal) {
  unsigned seed = 200;
  for (const Case &c : cases())
    for (float eps : {0.0f, 1e-8f, 1e-3f}) {
      SCOPED_TRACE(c.name + " eps " + std::to_string(eps));
      const int64_t num = int64_t(c.mats.size());
      const std::vector<float> p0 = guarded(c.pFloats(), seed++);
      std::vector<float> p = p0;
      ASSERT_EQ(otck_powersgd_orthonormalize_f32(c.mats.data(), num, c.rank,
                                                 p.data(), eps),
                0);
      expectGuards(p, c.pFloats(), "P");
      const std::vector<int64_t> ps = c.pStarts();
      for (size_t i = 0; i < c.mats.size(); ++i) {
        const otck_powersgd_matrix &x = c.mats[i];
        const int64_t r = rankOf(x, c.rank), n = x.rows * r;
        const std::vector<double> want = refOrthonormalize(
            std::vector<double>(p0.begin() + ps[i], p0.begin() + ps[i] + n),
            x.rows, r, double(eps));
        for (int64_t e = 0; e < n; ++e)
          ASSERT_NEAR(p[sz(ps[i] + e)], want[sz(e)], 2e-5)
              << "P_" << i << " element " << e;
        if (eps == 0.0f) {
          EXPECT_LE(orthonormalityError(p.data() + ps[i], x.rows, r), 1e-5)
              << "P_" << i;
        }
      }
      // One matrix per thread: the thread count changes nothing.
      std::vector<float> p1 = p0;
      withThreads(1, [&] {
        ASSERT_EQ(otck_powersgd_orthonormalize_f32(c.mats.data(), num, c.rank,
                                                   p1.data(), eps),
                  0);
      });
      EXPECT_TRUE(sameBits(p, p1));
    }
}

TEST(PowerSgd, OrthonormalizeLeavesAZeroColumnZero) {
  // One 6 x 3 P whose middle column is +-0, one all-zero 4 x 2 P.
  const Mats mats = {{0, 6, 5}, {30, 4, 2}};
  for (float eps : {0.0f, 1e-8f}) {
    std::vector<float> p = normals(6 * 3 + 4 * 2, 7);
    for (int64_t i = 0; i < 6; ++i)
      p[sz(i * 3 + 1)] = i % 2 ? -0.0f : 0.0f;
    std::fill(p.begin() + 18, p.end(), 0.0f);
    const std::vector<float> p0 = p;
    ASSERT_EQ(
        otck_powersgd_orthonormalize_f32(mats.data(), 2, 3, p.data(), eps), 0);
    for (float x : p)
      ASSERT_FALSE(std::isnan(x)) << "eps " << eps;
    // Zeros (their signs may flip as the columns before subtract 0).
    for (int64_t i = 0; i < 6; ++i)
      EXPECT_EQ(p[sz(i * 3 + 1)], 0.0f);
    for (size_t e = 18; e < p.size(); ++e)
      EXPECT_EQ(bitsOf(p[e]), 0u); // no column before it: untouched
    // The other two columns: orthonormal, as if the zero one were absent.
    EXPECT_LE(orthonormalityError(p.data(), 6, 3), 1e-5);
    std::vector<double> two(12);
    for (int64_t i = 0; i < 6; ++i) {
      two[sz(i * 2)] = p0[sz(i * 3)];
      two[sz(i * 2 + 1)] = p0[sz(i * 3 + 2)];
    }
    const std::vector<double> want = refOrthonormalize(two, 6, 2, eps);
    for (int64_t i = 0; i < 6; ++i) {
      EXPECT_NEAR(p[sz(i * 3)], want[sz(i * 2)], 1e-6);
      EXPECT_NEAR(p[sz(i * 3 + 2)], want[sz(i * 2 + 1)], 1e-6);
    }
  }
}

TEST(PowerSgd, TheSwappedListOrthonormalizesQ) {
  // With rows and cols swapped, the P layout is the list's Q layout.
  unsigned seed = 250;
  for (const Case &c : cases()) {
    SCOPED_TRACE(c.name);
    Case swapped = c;
    for (auto &m : swapped.mats)
      std::swap(m.rows, m.cols);
    const int64_t num = int64_t(c.mats.size());
    ASSERT_EQ(otck_powersgd_p_floats(swapped.mats.data(), num, c.rank),
              c.qFloats());
    const std::vector<float> q0 = guarded(c.qFloats(), seed++);
    std::vector<float> q = q0;
    ASSERT_EQ(otck_powersgd_orthonormalize_f32(swapped.mats.data(), num, c.rank,
                                               q.data(), 0.0f),
              0);
    expectGuards(q, c.qFloats(), "Q");
    const std::vector<int64_t> qs = c.qStarts();
    for (size_t i = 0; i < c.mats.size(); ++i) {
      const otck_powersgd_matrix &x = c.mats[i];
      const int64_t r = rankOf(x, c.rank), n = x.cols * r;
      const std::vector<double> want = refOrthonormalize(
          std::vector<double>(q0.begin() + qs[i], q0.begin() + qs[i] + n),
          x.cols, r, 0.0);
      for (int64_t e = 0; e < n; ++e)
        ASSERT_NEAR(q[sz(qs[i] + e)], want[sz(e)], 2e-5)
            << "Q_" << i << " element " << e;
      EXPECT_LE(orthonormalityError(q.data() + qs[i], x.cols, r), 1e-5)
          << "Q_" << i;
    }
  }
}

//===--- The initial Q ----------------------------------------------------===//

uint64_t splitmix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Element j of Q_i by the formula of otc/compress.h, with the C library's
/// log and cos.
float formulaNormal(uint64_t seed, uint64_t i, uint64_t j) {
  const uint64_t a = splitmix(seed ^ splitmix(i));
  const uint64_t b1 = splitmix(a + 2 * j), b2 = splitmix(a + 2 * j + 1);
  const double u1 = double((b1 >> 40) + 1) * std::ldexp(1.0, -24);
  const double u2 = double(b2 >> 40) * std::ldexp(1.0, -24);
  const double pi = 3.14159265358979323846;
  return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * pi * u2));
}

TEST(PowerSgd, InitQDrawsTheDocumentedNormals) {
  const Case c = cases()[0];
  const int64_t num = int64_t(c.mats.size());
  const uint64_t seed = 0x5eed;
  std::vector<float> q(sz(c.qFloats() + kGuard), 0.0f);
  std::fill(q.end() - kGuard, q.end(), kSentinel);
  EXPECT_EQ(
      otck_powersgd_init_q_f32(c.mats.data(), num, c.rank, seed, q.data()),
      num);
  expectGuards(q, c.qFloats(), "Q");
  // Every value as the formula gives it with libm's log and cos: equal, or
  // (the kernels' own log and cos are a few double ulps off libm's) one
  // float ulp away where the double falls on a rounding boundary.
  const std::vector<int64_t> qs = c.qStarts();
  int exact = 0, total = 0;
  for (size_t i = 0; i < c.mats.size(); ++i)
    for (int64_t j = 0; j < c.mats[i].cols * rankOf(c.mats[i], c.rank); ++j) {
      const float got = q[sz(qs[i] + j)], want = formulaNormal(seed, i, j);
      ASSERT_LE(std::fabs(double(got) - double(want)),
                std::fabs(double(want)) * 0x1p-23)
          << "Q_" << i << " element " << j;
      exact += bitsOf(got) == bitsOf(want);
      ++total;
    }
  EXPECT_GE(exact, total - 1);
  // A few, written out (Python's math.log and math.cos give them too): a
  // change of formula shows here even if the test's copy changes with it.
  EXPECT_EQ(q[0], 0x1.7bba16p-1f);
  EXPECT_EQ(q[sz(qs[1]) + 2], -0x1.706adap-2f);
  EXPECT_EQ(q[sz(qs[5]) + 47], 0x1.166ef8p+0f);
  // Same seed, same Q; another seed, another Q; the thread count changes
  // nothing.
  std::vector<float> again(q.size(), 0.0f), other(q.size(), 0.0f);
  withThreads(1, [&] {
    otck_powersgd_init_q_f32(c.mats.data(), num, c.rank, seed, again.data());
  });
  otck_powersgd_init_q_f32(c.mats.data(), num, c.rank, seed + 1, other.data());
  for (int64_t e = 0; e < c.qFloats(); ++e) {
    ASSERT_EQ(bitsOf(again[sz(e)]), bitsOf(q[sz(e)]));
    ASSERT_NE(bitsOf(other[sz(e)]), bitsOf(q[sz(e)])) << e;
  }
}

TEST(PowerSgd, InitQFillsOnlyFreshFactors) {
  const Case c = cases()[0]; // 6 matrices
  const int64_t num = int64_t(c.mats.size());
  const std::vector<int64_t> qs = c.qStarts();
  std::vector<float> q(sz(c.qFloats()), 0.0f);
  q[sz(qs[1])] = -0.0f;      // still fresh: +-0 only
  q[sz(qs[2])] = 1e-30f;     // one tiny value: kept
  q[sz(qs[3]) + 5] = kNaN;   // a NaN: kept
  q[sz(qs[5] + 47)] = -2.0f; // the last element of the last one: kept
  const std::vector<float> q0 = q;
  EXPECT_EQ(otck_powersgd_init_q_f32(c.mats.data(), num, c.rank, 9, q.data()),
            3);
  // The fresh ones get what they get when every Q_i is fresh.
  std::vector<float> all(q.size(), 0.0f);
  EXPECT_EQ(otck_powersgd_init_q_f32(c.mats.data(), num, c.rank, 9, all.data()),
            num);
  for (size_t i = 0; i < c.mats.size(); ++i) {
    const int64_t n = c.mats[i].cols * rankOf(c.mats[i], c.rank);
    const bool fresh = i == 0 || i == 1 || i == 4;
    for (int64_t j = 0; j < n; ++j) {
      const size_t e = sz(qs[i] + j);
      ASSERT_EQ(bitsOf(q[e]), bitsOf(fresh ? all[e] : q0[e])) << i << " " << j;
    }
  }
  // Now every Q_i holds values: nothing to fill.
  EXPECT_EQ(otck_powersgd_init_q_f32(c.mats.data(), num, c.rank, 9, q.data()),
            0);
}

TEST(PowerSgd, InitQIsStandardNormal) {
  // 64 x 4096 at rank 64: Q is 4096 x 64, 262144 draws.
  const Mats mats = {{0, 64, 4096}};
  const int64_t n = 4096 * 64;
  std::vector<float> q(sz(n), 0.0f);
  ASSERT_EQ(otck_powersgd_init_q_f32(mats.data(), 1, 64, 2024, q.data()), 1);
  double sum = 0, squares = 0, fourth = 0;
  int64_t beyond3 = 0;
  for (float z : q) {
    ASSERT_TRUE(std::isfinite(z));
    sum += z;
    squares += double(z) * z;
    fourth += double(z) * z * z * z;
    beyond3 += std::fabs(z) > 3.0f;
  }
  const double mean = sum / n, var = squares / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01); // 5 standard errors
  EXPECT_NEAR(var, 1.0, 0.015); // 5 standard errors
  EXPECT_NEAR(fourth / n, 3.0, 0.1);
  EXPECT_NEAR(double(beyond3) / n, 0.0027, 0.0006);
}

//===--- Argument checks --------------------------------------------------===//

TEST(PowerSgd, InvalidListsAndBuffersAreRefusedWritingNothing) {
  const Mats good = {{2, 4, 3}, {20, 3, 5}};
  std::vector<Mats> badLists = {
      {{-1, 4, 3}},            // negative offset
      {{0, 0, 3}},             // no rows
      {{0, 4, 0}},             // no columns
      {{0, -4, 3}},            // negative rows
      {{20, 3, 5}, {2, 4, 3}}, // descending
      {{2, 4, 3}, {13, 3, 5}}, // overlapping (the first ends at 14)
      {{0, 1, 1}, {0, 1, 1}},  // the same place twice
      {{0, int64_t(1) << 32, int64_t(1) << 32}},         // size past int64
      {{std::numeric_limits<int64_t>::max() - 5, 2, 3}}, // end past int64
  };
  std::vector<float> m(64, 1.0f), p(64, kSentinel), q(64, kSentinel),
      out(64, kSentinel), res(64, kSentinel);
  auto untouched = [&] {
    for (const auto *v : {&p, &q, &out, &res})
      for (float x : *v)
        if (bitsOf(x) != bitsOf(kSentinel))
          return false;
    return true;
  };
  auto allRefused = [&](const otck_powersgd_matrix *mats, int64_t num,
                        int64_t rank, const std::string &what) {
    SCOPED_TRACE(what);
    EXPECT_EQ(otck_powersgd_p_floats(mats, num, rank), -1);
    EXPECT_EQ(otck_powersgd_q_floats(mats, num, rank), -1);
    EXPECT_EQ(otck_powersgd_project_f32(mats, num, rank, m.data(), q.data(),
                                        p.data()),
              -1);
    EXPECT_EQ(otck_powersgd_project_feedback_f32(mats, num, rank, m.data(),
                                                 res.data(), out.data(),
                                                 q.data(), p.data()),
              -1);
    EXPECT_EQ(otck_powersgd_orthonormalize_f32(mats, num, rank, p.data(), 0.0f),
              -1);
    EXPECT_EQ(otck_powersgd_back_project_f32(mats, num, rank, m.data(),
                                             p.data(), q.data()),
              -1);
    EXPECT_EQ(otck_powersgd_decompress_f32(mats, num, rank, p.data(), q.data(),
                                           1.0f, out.data(), res.data()),
              -1);
    EXPECT_EQ(otck_powersgd_init_q_f32(mats, num, rank, 1, q.data()), -1);
    EXPECT_TRUE(untouched());
  };
  for (size_t b = 0; b < badLists.size(); ++b)
    allRefused(badLists[b].data(), int64_t(badLists[b].size()), 2,
               "bad list " + std::to_string(b));
  allRefused(good.data(), 2, 0, "rank 0");
  allRefused(good.data(), 2, -3, "rank -3");
  allRefused(good.data(), -1, 2, "num -1");
  allRefused(nullptr, 2, 2, "no list");
  allRefused(nullptr, 0, 0, "empty list, rank 0");

  // A good list with a NULL buffer, and bad epsilons.
  const otck_powersgd_matrix *g = good.data();
  float *P = p.data(), *Q = q.data(), *O = out.data();
  const float *M = m.data();
  EXPECT_EQ(otck_powersgd_project_f32(g, 2, 2, nullptr, Q, P), -1);
  EXPECT_EQ(otck_powersgd_project_f32(g, 2, 2, M, nullptr, P), -1);
  EXPECT_EQ(otck_powersgd_project_f32(g, 2, 2, M, Q, nullptr), -1);
  float *R = res.data();
  EXPECT_EQ(otck_powersgd_project_feedback_f32(g, 2, 2, nullptr, R, O, Q, P),
            -1);
  EXPECT_EQ(otck_powersgd_project_feedback_f32(g, 2, 2, M, nullptr, O, Q, P),
            -1);
  EXPECT_EQ(otck_powersgd_project_feedback_f32(g, 2, 2, M, R, O, nullptr, P),
            -1);
  EXPECT_EQ(otck_powersgd_project_feedback_f32(g, 2, 2, M, R, O, Q, nullptr),
            -1);
  EXPECT_EQ(otck_powersgd_back_project_f32(g, 2, 2, nullptr, P, Q), -1);
  EXPECT_EQ(otck_powersgd_back_project_f32(g, 2, 2, M, nullptr, Q), -1);
  EXPECT_EQ(otck_powersgd_back_project_f32(g, 2, 2, M, P, nullptr), -1);
  EXPECT_EQ(otck_powersgd_orthonormalize_f32(g, 2, 2, nullptr, 0.0f), -1);
  for (float eps : {-1e-8f, kNaN, std::numeric_limits<float>::infinity()})
    EXPECT_EQ(otck_powersgd_orthonormalize_f32(g, 2, 2, P, eps), -1) << eps;
  EXPECT_EQ(otck_powersgd_decompress_f32(g, 2, 2, nullptr, Q, 1, O, nullptr),
            -1);
  EXPECT_EQ(otck_powersgd_decompress_f32(g, 2, 2, P, nullptr, 1, O, nullptr),
            -1);
  EXPECT_EQ(otck_powersgd_decompress_f32(g, 2, 2, P, Q, 1, nullptr, nullptr),
            -1);
  EXPECT_EQ(otck_powersgd_init_q_f32(g, 2, 2, 1, nullptr), -1);
  EXPECT_TRUE(untouched());

  // An empty list has nothing to do: NULL buffers are fine.
  EXPECT_EQ(otck_powersgd_project_f32(nullptr, 0, 2, nullptr, nullptr, nullptr),
            0);
  EXPECT_EQ(otck_powersgd_project_feedback_f32(nullptr, 0, 2, nullptr, nullptr,
                                               nullptr, nullptr, nullptr),
            0);
  EXPECT_EQ(otck_powersgd_orthonormalize_f32(nullptr, 0, 2, nullptr, 0.0f), 0);
  EXPECT_EQ(
      otck_powersgd_back_project_f32(nullptr, 0, 2, nullptr, nullptr, nullptr),
      0);
  EXPECT_EQ(otck_powersgd_decompress_f32(nullptr, 0, 2, nullptr, nullptr, 1,
                                         nullptr, nullptr),
            0);
  EXPECT_EQ(otck_powersgd_init_q_f32(nullptr, 0, 2, 1, nullptr), 0);
}

//===--- PowerSGD ---------------------------------------------------------===//

TEST(PowerSgd, OneStepReproducesAMatrixOfExactRank) {
  // M_i = A_i B_i^T of rank r_i (A_i rows x r_i, B_i cols x r_i): P = M Q
  // spans M's column space, so P Q^T = P P^T M = M.
  struct Low {
    otck_powersgd_matrix m;
    int64_t t; // the true rank, r_i
  };
  const std::vector<Low> lows = {{{0, 40, 25}, 4},    {{1003, 25, 40}, 4},
                                 {{2100, 1, 30}, 1},  {{2140, 30, 1}, 1},
                                 {{2200, 3, 64}, 3},  {{2500, 64, 64}, 4},
                                 {{7000, 200, 90}, 4}};
  const int64_t rank = 4;
  Mats mats;
  for (const Low &l : lows)
    mats.push_back(l.m);
  const Case c{"low", mats, rank};
  const int64_t num = int64_t(mats.size());
  std::vector<float> m(sz(c.bucket()), 0.0f);
  unsigned seed = 300;
  double most = 0;
  for (const Low &l : lows) {
    const std::vector<float> a = normals(l.m.rows * l.t, seed++);
    const std::vector<float> b = normals(l.m.cols * l.t, seed++);
    for (int64_t i = 0; i < l.m.rows; ++i)
      for (int64_t j = 0; j < l.m.cols; ++j) {
        double s = 0;
        for (int64_t k = 0; k < l.t; ++k)
          s += double(a[sz(i * l.t + k)]) * double(b[sz(j * l.t + k)]);
        m[sz(l.m.offset + i * l.m.cols + j)] = float(s);
        most = std::max(most, std::fabs(s));
      }
  }
  std::vector<float> p(sz(c.pFloats())), q(sz(c.qFloats()), 0.0f);
  ASSERT_EQ(otck_powersgd_init_q_f32(mats.data(), num, rank, 77, q.data()),
            num);
  Mats swapped = mats; // Q orthonormalised first, as torch's hook does
  for (auto &x : swapped)
    std::swap(x.rows, x.cols);
  ASSERT_EQ(otck_powersgd_orthonormalize_f32(swapped.data(), num, rank,
                                             q.data(), 0.0f),
            0);
  ASSERT_EQ(otck_powersgd_project_f32(mats.data(), num, rank, m.data(),
                                      q.data(), p.data()),
            0);
  ASSERT_EQ(
      otck_powersgd_orthonormalize_f32(mats.data(), num, rank, p.data(), 0.0f),
      0);
  ASSERT_EQ(otck_powersgd_back_project_f32(mats.data(), num, rank, m.data(),
                                           p.data(), q.data()),
            0);
  std::vector<float> out(m.size(), kSentinel), res = m;
  ASSERT_EQ(otck_powersgd_decompress_f32(mats.data(), num, rank, p.data(),
                                         q.data(), 1.0f, out.data(),
                                         res.data()),
            0);
  const double tol = 1e-4 * std::max(1.0, most);
  for (int64_t e = 0; e < c.bucket(); ++e) {
    if (c.inGap(e)) {
      ASSERT_EQ(bitsOf(out[sz(e)]), bitsOf(kSentinel)) << e;
      continue;
    }
    ASSERT_NEAR(out[sz(e)], m[sz(e)], tol) << "element " << e;
    ASSERT_NEAR(res[sz(e)], 0.0f, tol) << "element " << e;
  }
}

} // namespace
