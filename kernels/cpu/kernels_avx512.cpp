//===- kernels_avx512.cpp - Kernels built for AVX-512 ---------------------===//
//
// binary_kernels.h, norm_kernels.h, pool_kernels.h, powersgd_kernels.h,
// unary_kernels.h and softmax_kernels.h compiled with the flags CMake gives
// this file; norm.cpp, pool.cpp, powersgd.cpp, elementwise.cpp and
// softmax.cpp dispatch to them.
//
//===----------------------------------------------------------------------===//

#define OTCK_ISA avx512
#include "binary_kernels.h"
#include "norm_kernels.h"
#include "pool_kernels.h"
#include "powersgd_kernels.h"
#include "softmax_kernels.h"
#include "unary_kernels.h"
