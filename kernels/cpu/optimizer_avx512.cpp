//===- optimizer_avx512.cpp - Optimizer updates for AVX-512
//----------------===//
//
// optimizer_kernels.h compiled with the flags CMake gives this file; see
// optimizer.cpp.
//
//===----------------------------------------------------------------------===//

#define OTCK_ISA avx512
#include "optimizer_kernels.h"
