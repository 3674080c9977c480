//===- powersgd.cpp - PowerSGD's low-rank kernels -------------------------===//
//
// The PowerSGD kernels of otc/compress.h. The projections and the
// decompression (fused with the scaling, the residual and the finiteness
// check) are powersgd_kernels.h's loops, threaded over rows or column
// blocks, one matrix after the other; the Gram-Schmidt runs one matrix per
// thread, summing its norms and dot products in double (the CUDA twin sums in
// another order: in double both round to the same float but in rare near-ties);
// the initial Q is drawn by shared/random.h's counter-based normal generator,
// so neither result depends on the thread count.
//
//===----------------------------------------------------------------------===//

#include "otc/compress.h"

#include "compress_isa.h"
#include "parallel.h"
#include "powersgd_format.h"
#include "powersgd_kernels.h"
#include "random.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#if defined(OTCK_HAVE_X86_VARIANTS)
#define OTCK_DECLARE_POWERSGD_VARIANT(ns)                                      \
  namespace otc::kernels::powersgd::ns {                                       \
  void projectRows(int64_t begin, int64_t end, int64_t cols, int64_t r,        \
                   const float *m, const float *qt, float *p);                 \
  void projectFeedbackRows(int64_t begin, int64_t end, int64_t cols,           \
                           int64_t r, const float *g, float *residual,         \
                           float *saved, const float *qt, float *p);           \
  void backProjectColumns(int64_t c0, int64_t w, int64_t rows, int64_t cols,   \
                          int64_t r, const float *m, const float *p,           \
                          float *acc);                                         \
  bool decompressRows(int64_t begin, int64_t end, int64_t cols, int64_t r,     \
                      const float *p, const float *qt, float scale,            \
                      float *out, float *residual);                            \
  }
OTCK_DECLARE_POWERSGD_VARIANT(avx2)
OTCK_DECLARE_POWERSGD_VARIANT(avx512)
#undef OTCK_DECLARE_POWERSGD_VARIANT
#endif

using namespace otc::kernels;
using powersgd::Placed;

namespace {

void projectRows(int64_t begin, int64_t end, int64_t cols, int64_t r,
                 const float *m, const float *qt, float *p) {
  OTCK_ISA_DISPATCH(otc::kernels::powersgd, projectRows, begin, end, cols, r, m,
                    qt, p);
}

void projectFeedbackRows(int64_t begin, int64_t end, int64_t cols, int64_t r,
                         const float *g, float *residual, float *saved,
                         const float *qt, float *p) {
  OTCK_ISA_DISPATCH(otc::kernels::powersgd, projectFeedbackRows, begin, end,
                    cols, r, g, residual, saved, qt, p);
}

void backProjectColumns(int64_t c0, int64_t w, int64_t rows, int64_t cols,
                        int64_t r, const float *m, const float *p, float *acc) {
  OTCK_ISA_DISPATCH(otc::kernels::powersgd, backProjectColumns, c0, w, rows,
                    cols, r, m, p, acc);
}

/// For each matrix of `list`, one after the other: Q^T (r x cols,
/// row-major, the row kernels' operand) from q, then body(x, qt, begin, end)
/// over ranges of its rows, threaded; a row costs cols * (r + extra).
template <typename Body>
void forEachMatrixRows(const std::vector<Placed> &list, const float *q,
                       int64_t extra, Body body) {
  std::vector<float> qt;
  for (const Placed &x : list) {
    qt.resize(size_t(x.r * x.cols));
    const float *qm = q + x.q;
    for (int64_t j = 0; j < x.cols; ++j)
      for (int64_t k = 0; k < x.r; ++k)
        qt[size_t(k * x.cols + j)] = qm[j * x.r + k];
    const float *qtp = qt.data();
    parallelFor(
        x.rows, x.cols * (x.r + extra), kParallelGrain,
        [&](int64_t begin, int64_t end) { body(x, qtp, begin, end); }, 1);
  }
}

bool decompressRows(int64_t begin, int64_t end, int64_t cols, int64_t r,
                    const float *p, const float *qt, float scale, float *out,
                    float *residual) {
  OTCK_ISA_DISPATCH(otc::kernels::powersgd, decompressRows, begin, end, cols, r,
                    p, qt, scale, out, residual);
}

/// Modified Gram-Schmidt on the columns of one rows x r row-major P, as
/// otck_powersgd_orthonormalize_f32 states it. Column j's dot products with
/// every later column are summed in the same pass that normalises it, then
/// subtracted in one more pass; each dot sums over the rows in order.
void orthonormalize(float *p, int64_t rows, int64_t r, float eps) {
  std::vector<double> dots(static_cast<size_t>(r));
  std::vector<float> rounded(static_cast<size_t>(r));
  for (int64_t j = 0; j < r; ++j) {
    double squares = 0.0;
    for (int64_t i = 0; i < rows; ++i) {
      const double x = p[i * r + j];
      squares += x * x;
    }
    const float norm = float(std::sqrt(squares));
    if (norm == 0.0f)
      continue; // all +-0: it stays so, and takes nothing from the others
    const float divisor = norm + eps;
    std::fill(dots.begin(), dots.end(), 0.0);
    for (int64_t i = 0; i < rows; ++i) {
      float *row = p + i * r;
      const float c = row[j] / divisor;
      row[j] = c;
      for (int64_t k = j + 1; k < r; ++k)
        dots[size_t(k)] += double(c) * double(row[k]);
    }
    if (j + 1 == r)
      break;
    for (int64_t k = j + 1; k < r; ++k)
      rounded[size_t(k)] = float(dots[size_t(k)]);
    for (int64_t i = 0; i < rows; ++i) {
      float *row = p + i * r;
      const float c = row[j];
      for (int64_t k = j + 1; k < r; ++k) {
        const float along = rounded[size_t(k)] * c; // rounded: no FMA
        row[k] -= along;
      }
    }
  }
}

} // namespace

extern "C" int otck_powersgd_project_f32(const otck_powersgd_matrix *mats,
                                         int64_t num, int64_t rank,
                                         const float *m, const float *q,
                                         float *p) {
  std::vector<Placed> list;
  if (!powersgd::placeList(mats, num, rank, &list) ||
      (num > 0 && (!m || !q || !p)))
    return -1;
  // P (rows x r) = M (rows x cols) Q (cols x r)
  forEachMatrixRows(
      list, q, 0,
      [&](const Placed &x, const float *qt, int64_t begin, int64_t end) {
        projectRows(begin, end, x.cols, x.r, m + x.offset, qt, p + x.p);
      });
  return 0;
}

extern "C" int otck_powersgd_project_feedback_f32(
    const otck_powersgd_matrix *mats, int64_t num, int64_t rank, const float *g,
    float *residual, float *saved, const float *q, float *p) {
  std::vector<Placed> list;
  if (!powersgd::placeList(mats, num, rank, &list) ||
      (num > 0 && (!g || !residual || !q || !p)))
    return -1;
  forEachMatrixRows(
      list, q, 1,
      [&](const Placed &x, const float *qt, int64_t begin, int64_t end) {
        projectFeedbackRows(begin, end, x.cols, x.r, g + x.offset,
                            residual + x.offset,
                            saved ? saved + x.offset : nullptr, qt, p + x.p);
      });
  return 0;
}

extern "C" int
otck_powersgd_orthonormalize_f32(const otck_powersgd_matrix *mats, int64_t num,
                                 int64_t rank, float *p, float eps) {
  std::vector<Placed> list;
  if (!powersgd::placeList(mats, num, rank, &list) || (num > 0 && !p) ||
      !(eps >= 0.0f) || !std::isfinite(eps))
    return -1;
  int64_t work = 0;
  for (const Placed &x : list)
    work += x.rows * x.r * x.r;
  const int64_t count = int64_t(list.size());
  const bool threaded = count > 1 && shouldParallelize(work, kParallelGrain);
#pragma omp parallel for schedule(dynamic, 1) if (threaded)
  for (int64_t i = 0; i < count; ++i) {
    const Placed &x = list[size_t(i)];
    orthonormalize(p + x.p, x.rows, x.r, eps);
  }
  return 0;
}

extern "C" int otck_powersgd_back_project_f32(const otck_powersgd_matrix *mats,
                                              int64_t num, int64_t rank,
                                              const float *m, const float *p,
                                              float *q) {
  std::vector<Placed> list;
  if (!powersgd::placeList(mats, num, rank, &list) ||
      (num > 0 && (!m || !p || !q)))
    return -1;
  for (const Placed &x : list) { // Q (cols x r) = M^T P (rows x r)
    // Column blocks whose r sums fit in the first-level cache (16 KiB), a
    // multiple of 16 columns, and narrower when that leaves threads idle
    // (the split does not change a bit).
    const int64_t cached =
        std::max<int64_t>(16, (4096 / std::max<int64_t>(x.r, 1)) / 16 * 16);
    const int64_t threads = std::max(1, omp_get_max_threads());
    const int64_t perThread = ((x.cols + threads - 1) / threads + 15) / 16 * 16;
    const int64_t block = std::max<int64_t>(16, std::min(cached, perThread));
    const int64_t blocks = (x.cols + block - 1) / block;
    const float *mm = m + x.offset, *pm = p + x.p;
    float *qm = q + x.q;
    parallelFor(
        blocks, x.rows * block * x.r, kParallelGrain,
        [&](int64_t begin, int64_t end) {
          std::vector<float> acc(size_t(x.r * block));
          for (int64_t b = begin; b < end; ++b) {
            const int64_t c0 = b * block;
            const int64_t w = std::min(block, x.cols - c0);
            backProjectColumns(c0, w, x.rows, x.cols, x.r, mm, pm, acc.data());
            for (int64_t j = 0; j < w; ++j)
              for (int64_t k = 0; k < x.r; ++k)
                qm[(c0 + j) * x.r + k] = acc[size_t(k * w + j)];
          }
        },
        1);
  }
  return 0;
}

extern "C" int otck_powersgd_decompress_f32(const otck_powersgd_matrix *mats,
                                            int64_t num, int64_t rank,
                                            const float *p, const float *q,
                                            float scale, float *out,
                                            float *residual) {
  std::vector<Placed> list;
  if (!powersgd::placeList(mats, num, rank, &list) ||
      (num > 0 && (!p || !q || !out)))
    return -1;
  // out (rows x cols) = scale * P (rows x r) Q^T (r x cols), and the
  // residual, in one pass over the matrix: K = r is tiny, so the product
  // costs what writing out does, and a GEMM followed by a second pass would
  // stream the matrix through memory twice more.
  std::atomic<bool> finite{true};
  forEachMatrixRows(
      list, q, 1,
      [&](const Placed &x, const float *qt, int64_t begin, int64_t end) {
        if (!decompressRows(begin, end, x.cols, x.r, p + x.p, qt, scale,
                            out + x.offset,
                            residual ? residual + x.offset : nullptr))
          finite.store(false, std::memory_order_relaxed);
      });
  return finite.load() ? 0 : 1;
}

extern "C" int64_t otck_powersgd_init_q_f32(const otck_powersgd_matrix *mats,
                                            int64_t num, int64_t rank,
                                            uint64_t seed, float *q) {
  std::vector<Placed> list;
  if (!powersgd::placeList(mats, num, rank, &list) || (num > 0 && !q))
    return -1;
  int64_t filled = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    const Placed &x = list[i];
    float *qi = q + x.q;
    const int64_t n = x.cols * x.r;
    bool fresh = true;
    for (int64_t e = 0; e < n && fresh; ++e)
      fresh = qi[e] == 0.0f;
    if (!fresh)
      continue;
    const uint64_t key = powersgdKey(seed, uint64_t(i));
    parallelFor(n, 1, kParallelGrainHeavy, [&](int64_t begin, int64_t end) {
      for (int64_t e = begin; e < end; ++e)
        qi[e] = powersgdNormal(key, uint64_t(e));
    });
    ++filled;
  }
  return filled;
}
