//===- cublas_load_test.cpp - cuBLAS is opened on first use, not at load --===//
//
// Needs no device: a process that loads otc_kernels_cuda (every program of
// the runtime does) must not map cuBLAS until a product asks for it, and
// then must find the library the build was made against.
//
//===----------------------------------------------------------------------===//

#include "cublas_gemm.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace {

bool mapped(const char *name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(name) != std::string::npos)
      return true;
  return false;
}

TEST(CublasLoad, OpensOnFirstUseOnly) {
  ASSERT_FALSE(mapped("libcublas"))
      << "cuBLAS was mapped before any product asked for it";
  const char *error = otc::kernels::cuda::cublasLoadError();
  EXPECT_EQ(error, nullptr) << error;
  EXPECT_TRUE(mapped("libcublas.so"));
  // The answer is kept: asking again neither reloads nor changes it.
  EXPECT_EQ(otc::kernels::cuda::cublasLoadError(), error);
}

} // namespace
