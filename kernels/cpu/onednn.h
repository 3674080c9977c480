//===- onednn.h - oneDNN's engine and thread count for the kernels -*- C++
//-*-===//
//
// Internal to the kernel library (conv_onednn.cpp, gemm_bf16.cpp). oneDNN's
// threaded kernels cut their work by the OpenMP thread count, and results
// must not depend on it, so these kernels run primitives on one thread each
// over work cut by the shape alone.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_CPU_ONEDNN_H
#define OTC_KERNELS_CPU_ONEDNN_H

#include <oneapi/dnnl/dnnl.hpp>

#include <omp.h>

namespace otc::kernels {

/// The CPU engine. It and the primitives cached on it live as long as the
/// process (never destroyed: a primitive must not outlive its engine at
/// exit).
inline dnnl::engine &cpuEngine() {
  static auto *engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

/// Sets the calling thread's OpenMP thread count for its lifetime (inside a
/// parallel region too: oneDNN reads it there to cut its work, and runs the
/// pieces one after the other).
class OmpThreads {
  int saved;

public:
  explicit OmpThreads(int n) : saved(omp_get_max_threads()) {
    omp_set_num_threads(n);
  }
  ~OmpThreads() { omp_set_num_threads(saved); }
  OmpThreads(const OmpThreads &) = delete;
  OmpThreads &operator=(const OmpThreads &) = delete;
};

} // namespace otc::kernels

#endif // OTC_KERNELS_CPU_ONEDNN_H
