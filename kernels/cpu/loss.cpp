//===- loss.cpp - MSE loss (mean) -----------------------------------------===//
//
// The loss is accumulated in double over a fixed chunking (see
// deterministicSum), so its value does not depend on the thread count.
// Softmax cross-entropy lives with the softmax (softmax.cpp), built per
// instruction set.
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "parallel.h"

#include <cmath>

using namespace otc::kernels;

extern "C" void otck_mse_f32(int64_t n, const float *pred, const float *target,
                             float *loss) {
  double total =
      deterministicSum(n, 1, kParallelGrain, [&](int64_t begin, int64_t end) {
        constexpr int64_t kBlock = 1024;
        double acc = 0.0;
        for (int64_t b = begin; b < end; b += kBlock) {
          const int64_t e = std::min(end, b + kBlock);
          float s[kSumLanes] = {};
          forEachLane(b, e, [&](int64_t i, int64_t l) {
            float d = pred[i] - target[i];
            s[l] += d * d;
          });
          acc += laneTotal(s);
        }
        return acc;
      });
  loss[0] = float(total / double(n));
}

extern "C" void otck_mse_grad_f32(int64_t n, const float *pred,
                                  const float *target, const float *dloss,
                                  float *dpred) {
  if (n <= 0)
    return;
  const float scale = float(2.0 * double(dloss[0]) / double(n));
  parallelFor(n, 1, kParallelGrain, [&](int64_t begin, int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i)
      dpred[i] = scale * (pred[i] - target[i]);
  });
}
