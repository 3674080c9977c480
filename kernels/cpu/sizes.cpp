//===- sizes.cpp - The sizes the compiler asks of the kernel library ------===//
//
// Pure functions of a descriptor, built into the kernel library and into
// the small OTCKernelSizes library the compiler links (it needs no oneDNN,
// no OpenMP runtime and no kernel to plan memory).
//
//===----------------------------------------------------------------------===//

#include "otc/compress.h"
#include "otc/kernels.h"

#include "compress_format.h"
#include "conv_plan.h"

using namespace otc::kernels;
using namespace otc::kernels::conv;

extern "C" int64_t otck_conv_workspace_bytes(const otck_conv_desc *d) {
  ConvGeom g;
  if (!makeGeom(d, g))
    return 0;
  return std::max({planForward(g).bytes(), planGradInput(g).bytes(),
                   planGradWeight(g).bytes()});
}

extern "C" int64_t otck_compress_k(const otck_compress_config *config) {
  compress::Layout l;
  return compress::makeLayout(config, &l) ? l.k : -1;
}

extern "C" int64_t
otck_compress_payload_bytes(const otck_compress_config *config, int64_t n) {
  compress::Layout l;
  if (!compress::makeLayout(config, &l) || n < 0)
    return -1;
  return l.bytes(n);
}
