//===- kernels_avx2.cpp - Max pooling, unary ops, softmax for AVX2
//----------===//
//
// pool_kernels.h, unary_kernels.h and softmax_kernels.h compiled with the
// flags CMake gives this file; pool.cpp, elementwise.cpp and softmax.cpp
// dispatch to them.
//
//===----------------------------------------------------------------------===//

#define OTCK_ISA avx2
#include "pool_kernels.h"
#include "softmax_kernels.h"
#include "unary_kernels.h"
