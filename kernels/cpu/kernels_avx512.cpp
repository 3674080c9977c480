//===- kernels_avx512.cpp - Max pooling, unary ops, softmax for AVX-512
//-----===//
//
// pool_kernels.h, unary_kernels.h and softmax_kernels.h compiled with the
// flags CMake gives this file; pool.cpp, elementwise.cpp and softmax.cpp
// dispatch to them.
//
//===----------------------------------------------------------------------===//

#define OTCK_ISA avx512
#include "pool_kernels.h"
#include "softmax_kernels.h"
#include "unary_kernels.h"
