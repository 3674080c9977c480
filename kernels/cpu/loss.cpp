//===- loss.cpp - Softmax cross-entropy and MSE losses (mean) -------------===//
//
// Losses are accumulated in double over a fixed chunking (see
// deterministicSum), so a loss value does not depend on the thread count.
// Cross-entropy uses log-sum-exp on max-shifted logits, never log(probs).
//
//===----------------------------------------------------------------------===//

#include "otc/kernels.h"

#include "parallel.h"
#include "vmath.h"

#include <cmath>

using namespace otc::kernels;

namespace {

/// Writes softmax(x) to p and returns -log softmax(x)[label]. p may alias x.
double softmaxCrossEntropyRow(const float *x, float *p, int64_t c,
                              int64_t label) {
  const float xLabel = x[label];
  const float m = rowMax(x, c);
  // The loss's sum in double: a confident row's s is 1 + a little, which a
  // float holds only to 1.2e-7, the size of the loss itself near 0.
  float s[kSumLanes] = {};
  double sd[kSumLanes] = {};
  forEachLane(0, c, [&](int64_t i, int64_t l) {
    float e = vexp(x[i] - m);
    p[i] = e;
    s[l] += e;
    sd[l] += double(e);
  });
  const float inv = 1.0f / laneTotal(s);
#pragma omp simd
  for (int64_t i = 0; i < c; ++i)
    p[i] *= inv;
  // -log(e^(x_l - m) / s) = log(s) - (x_l - m).
  return std::log(laneTotal(sd)) - (double(xLabel) - double(m));
}

} // namespace

extern "C" int otck_softmax_ce_f32(int64_t N, int64_t C, const float *logits,
                                   const int64_t *labels, float *probs,
                                   float *loss) {
  for (int64_t i = 0; i < N; ++i)
    if (labels[i] < 0 || labels[i] >= C)
      return OTCK_ERR_LABEL_OUT_OF_RANGE;
  double total = deterministicSum(
      N, C, kParallelGrainHeavy, [&](int64_t begin, int64_t end) {
        double s = 0.0;
        for (int64_t i = begin; i < end; ++i)
          s += softmaxCrossEntropyRow(logits + i * C, probs + i * C, C,
                                      labels[i]);
        return s;
      });
  // N == 0 gives NaN, as torch's mean over an empty batch.
  loss[0] = float(total / double(N));
  return OTCK_OK;
}

extern "C" void otck_softmax_ce_grad_f32(int64_t N, int64_t C,
                                         const float *probs,
                                         const int64_t *labels,
                                         const float *dloss, float *dlogits) {
  if (N <= 0 || C <= 0)
    return;
  const float scale = float(double(dloss[0]) / double(N));
  parallelFor(
      N, C, kParallelGrain,
      [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const float *p = probs + i * C;
          float *d = dlogits + i * C;
          // (p - 1) is exact for p in [0.5, 1]: no cancellation at p ~ 1.
          // Read before the row is written: dlogits may alias probs.
          const int64_t l = labels[i];
          const bool valid = l >= 0 && l < C;
          const float dl = valid ? (p[l] - 1.0f) * scale : 0.0f;
#pragma omp simd
          for (int64_t j = 0; j < C; ++j)
            d[j] = p[j] * scale;
          if (valid)
            d[l] = dl;
        }
      },
      1);
}

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
