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
#include "powersgd_format.h"

#include <algorithm>

using namespace otc::kernels;
using namespace otc::kernels::conv;

extern "C" int64_t otck_conv_workspace_bytes(const otck_conv_desc *d) {
  return workspaceBytes(d);
}

extern "C" int64_t otck_gemm_bf16_workspace_bytes(int64_t a_elements,
                                                  int64_t b_elements) {
  return bf16CopyBytes(a_elements) + bf16CopyBytes(b_elements);
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

extern "C" int64_t otck_compress_shard(const otck_compress_config *config,
                                       int64_t n, int64_t shards, int64_t s,
                                       int64_t *begin) {
  compress::Layout l;
  if (!compress::makeLayout(config, &l) || n < 0 || shards < 1 || s < 0 ||
      s >= shards || !begin)
    return -1;
  const int64_t block = config->block_size;
  const int64_t blocks = (n + block - 1) / block;
  const int64_t each = blocks / shards, extra = blocks % shards;
  const int64_t first = s * each + std::min(s, extra);
  const int64_t last = first + each + (s < extra ? 1 : 0);
  *begin = std::min(n, first * block);
  return std::min(n, last * block) - *begin;
}

extern "C" int64_t otck_powersgd_p_floats(const otck_powersgd_matrix *mats,
                                          int64_t num, int64_t rank) {
  int64_t p, q;
  return powersgd::checkList(mats, num, rank, &p, &q) ? p : -1;
}

extern "C" int64_t otck_powersgd_q_floats(const otck_powersgd_matrix *mats,
                                          int64_t num, int64_t rank) {
  int64_t p, q;
  return powersgd::checkList(mats, num, rank, &p, &q) ? q : -1;
}
