//===- threads.cpp - Thread count of the kernels and the BLAS -------------===//
//
// The kernels use OpenMP; GEMM uses OpenBLAS, which may run its own thread
// pool (pthread build) or OpenMP (openmp build). Both are set together.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include <omp.h>

// Exported by every OpenBLAS build; declared here rather than through
// <cblas.h> because the cblas.h alternative may be netlib's, which lacks it.
extern "C" void openblas_set_num_threads(int num_threads);

extern "C" void otck_set_num_threads(int n) {
  if (n <= 0)
    return;
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}
