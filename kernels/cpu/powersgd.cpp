//===- powersgd.cpp - PowerSGD's low-rank kernels -------------------------===//
//
// The PowerSGD kernels of otc/compress.h. The two projections go through
// otck_gemm_f32 (oneDNN, threaded inside), one matrix after the other; the
// decompression's P Q^T (inner dimension r) is a loop of its own, fused with
// the scaling and the residual; the Gram-Schmidt runs one matrix per thread,
// summing its norms and dot products in double (the CUDA twin sums in another
// order: in double both round to the same float but in rare near-ties); the
// initial Q is drawn by shared/random.h's counter-based normal generator, so
// neither result depends on the thread count.
//
//===----------------------------------------------------------------------===//

#include "otc/compress.h"
#include "otc/kernels.h"

#include "compress_isa.h"
#include "parallel.h"
#include "powersgd_format.h"
#include "powersgd_kernels.h"
#include "random.h"

#include <atomic>
#include <cmath>
#include <vector>

#if defined(OTCK_HAVE_X86_VARIANTS)
#define OTCK_DECLARE_POWERSGD_VARIANT(ns)                                      \
  namespace otc::kernels::powersgd::ns {                                       \
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
  for (const Placed &x : list) // P (rows x r) = M (rows x cols) Q (cols x r)
    otck_gemm_f32(0, 0, x.rows, x.r, x.cols, 1.0f, m + x.offset, q + x.q, 0.0f,
                  p + x.p);
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
  for (const Placed &x : list) // Q (cols x r) = M^T (cols x rows) P (rows x r)
    otck_gemm_f32(1, 0, x.cols, x.r, x.rows, 1.0f, m + x.offset, p + x.p, 0.0f,
                  q + x.q);
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
  std::vector<float> qt;
  std::atomic<bool> finite{true};
  for (const Placed &x : list) {
    // out (rows x cols) = scale * P (rows x r) Q^T (r x cols), and the
    // residual, in one pass over the matrix: K = r is tiny, so the product
    // costs what writing out does, and a GEMM followed by a second pass
    // would stream the matrix through memory twice more. Q^T is copied
    // once (r x cols, contiguous rows) for powersgd_kernels.h's rows.
    const int64_t rows = x.rows, cols = x.cols, r = x.r;
    qt.resize(size_t(r * cols));
    const float *qm = q + x.q;
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t k = 0; k < r; ++k)
        qt[size_t(k * cols + j)] = qm[j * r + k];
    const float *pm = p + x.p, *qtp = qt.data();
    float *o = out + x.offset;
    float *res = residual ? residual + x.offset : nullptr;
    parallelFor(
        rows, cols * (r + 1), kParallelGrain,
        [&](int64_t begin, int64_t end) {
          if (!decompressRows(begin, end, cols, r, pm, qtp, scale, o, res))
            finite.store(false, std::memory_order_relaxed);
        },
        1);
  }
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
