//===- threads.cpp - Thread count of the kernels --------------------------===//
//
// The kernels and oneDNN's GEMM (its OpenMP build) share OpenMP's threads:
// one setting covers both.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include <omp.h>

extern "C" void otck_set_num_threads(int n) {
  if (n <= 0)
    return;
  omp_set_num_threads(n);
}

extern "C" int otck_get_num_threads(void) { return omp_get_max_threads(); }
