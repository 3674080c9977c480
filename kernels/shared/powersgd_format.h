//===- powersgd_format.h - PowerSGD's matrix lists and factors --*- C++ -*-===//
//
// Internal to the kernel library. What the CPU PowerSGD kernels
// (cpu/powersgd.cpp), their CUDA twins (cuda/powersgd.cu) and the sizes the
// compiler asks (cpu/sizes.cpp) must read the same way: which matrix lists
// are valid, each matrix's rank r and where its factors P_i and Q_i lie.
// Host code.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_SHARED_POWERSGD_FORMAT_H
#define OTC_KERNELS_SHARED_POWERSGD_FORMAT_H

#include "otc/compress.h"

#include "isa.h"

#include <stdint.h>

#include <vector>

namespace otc::kernels::powersgd {
inline namespace OTCK_ISA {

/// One matrix of a valid list with its rank and its factors' places.
struct Placed {
  int64_t offset, rows, cols; ///< as in otck_powersgd_matrix
  int64_t r;                  ///< min(rank, rows, cols)
  int64_t p;                  ///< first float of P_i (rows x r) in p
  int64_t q;                  ///< first float of Q_i (cols x r) in q
};

inline int64_t rankOf(int64_t rows, int64_t cols, int64_t rank) {
  const int64_t r = rows < cols ? rows : cols;
  return rank < r ? rank : r;
}

/// Whether the list is valid (otc/compress.h: rank >= 1, num >= 0, `mats`
/// not NULL when num > 0, each matrix at least 1 x 1 at an offset >= 0
/// past the end of the one before, no size or end beyond int64); if so,
/// *pFloats and *qFloats get the floats of all P_i and of all Q_i.
inline bool checkList(const otck_powersgd_matrix *mats, int64_t num,
                      int64_t rank, int64_t *pFloats, int64_t *qFloats) {
  if (rank < 1 || num < 0 || (num > 0 && !mats))
    return false;
  int64_t end = 0, p = 0, q = 0;
  for (int64_t i = 0; i < num; ++i) {
    const otck_powersgd_matrix &m = mats[i];
    if (m.offset < end || m.rows < 1 || m.cols < 1 ||
        m.rows > INT64_MAX / m.cols || m.offset > INT64_MAX - m.rows * m.cols)
      return false;
    end = m.offset + m.rows * m.cols;
    // Disjoint matrices of sizes >= rows * r and cols * r within int64:
    // neither sum can overflow.
    const int64_t r = rankOf(m.rows, m.cols, rank);
    p += m.rows * r;
    q += m.cols * r;
  }
  *pFloats = p;
  *qFloats = q;
  return true;
}

/// The matrices of a list with their ranks and factors, in list order; false
/// (and `out` empty) for an invalid list.
inline bool placeList(const otck_powersgd_matrix *mats, int64_t num,
                      int64_t rank, std::vector<Placed> *out) {
  out->clear();
  int64_t pFloats, qFloats;
  if (!checkList(mats, num, rank, &pFloats, &qFloats))
    return false;
  out->reserve(size_t(num));
  int64_t p = 0, q = 0;
  for (int64_t i = 0; i < num; ++i) {
    const otck_powersgd_matrix &m = mats[i];
    const int64_t r = rankOf(m.rows, m.cols, rank);
    out->push_back({m.offset, m.rows, m.cols, r, p, q});
    p += m.rows * r;
    q += m.cols * r;
  }
  return true;
}

} // namespace OTCK_ISA
} // namespace otc::kernels::powersgd

#endif // OTC_KERNELS_SHARED_POWERSGD_FORMAT_H
