//===- norm.cu - Batch normalization on CUDA ------------------------------===//
//
// The CUDA twins of the BatchNorm kernels of cpu/norm.cpp, x viewed as
// [N, C, S]. Training and backward run one block per channel: the block
// sums the channel's N * S elements (per-thread doubles, then a fixed-order
// block sum), derives the statistics exactly as the CPU does (double mean,
// float mean for the deviations, biased variance of the deviations,
// invstd = 1 / sqrt(var + eps) in double, the momentum update in double),
// then normalizes the channel. Results therefore do not vary from run to
// run and match the CPU's to float rounding (the sums' order differs).
// Speed: C blocks in all, so a layer with few channels and a large batch
// leaves most of a large GPU idle.
//
//===----------------------------------------------------------------------===//

#include "cuda_common.h"

namespace otc::kernels::cuda {
namespace {

/// Blocks for a loop with one block per channel.
unsigned blocksFor(int64_t items) {
  return unsigned(items < 1 ? 1 : items < 65536 ? items : 65536);
}

__global__ void batchNormTrainKernel(int64_t N, int64_t C, int64_t S,
                                     const float *x, const float *scale,
                                     const float *bias, float eps,
                                     float momentum, bool unbiased, float *y,
                                     float *savedMean, float *savedInvstd,
                                     float *runningMean, float *runningVar) {
  __shared__ double shared[kWarps];
  const int64_t count = N * S;
  const double countD = double(N) * double(S);
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    double acc = 0.0;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x)
      acc += x[((j / S) * C + c) * S + j % S];
    const double mean = blockSum(acc, shared) / countD;
    const float meanF = float(mean);
    acc = 0.0;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const float d = x[((j / S) * C + c) * S + j % S] - meanF;
      acc += d * d;
    }
    const double var = blockSum(acc, shared) / countD;
    const double invstd = 1.0 / sqrt(var + double(eps));
    const float a = float(double(scale[c]) * invstd);
    const float b = bias[c];
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const int64_t at = ((j / S) * C + c) * S + j % S;
      y[at] = (x[at] - meanF) * a + b;
    }
    if (threadIdx.x == 0) {
      if (savedMean)
        savedMean[c] = meanF;
      if (savedInvstd)
        savedInvstd[c] = float(invstd);
      const double mom = double(momentum);
      if (runningMean)
        runningMean[c] =
            float(double(runningMean[c]) * mom + mean * (1.0 - mom));
      if (runningVar) {
        // n / (n - 1) is inf for n == 1: NaN, as PyTorch's 0 / 0.
        const double v = unbiased ? var * (countD / (countD - 1.0)) : var;
        runningVar[c] = float(double(runningVar[c]) * mom + v * (1.0 - mom));
      }
    }
  }
}

__global__ void batchNormInferKernel(int64_t N, int64_t C, int64_t S,
                                     const float *x, const float *scale,
                                     const float *bias, const float *mean,
                                     const float *var, float eps, float *y) {
  const int64_t total = N * C * S;
  for (int64_t i = globalThread(); i < total; i += gridThreads()) {
    const int64_t c = (i / S) % C;
    const double a =
        double(scale[c]) * (1.0 / sqrt(double(var[c]) + double(eps)));
    y[i] = (x[i] - mean[c]) * float(a) + bias[c];
  }
}

__global__ void batchNormGradKernel(int64_t N, int64_t C, int64_t S,
                                    const float *dy, const float *x,
                                    const float *scale, const float *savedMean,
                                    const float *savedInvstd, float *dx,
                                    float *dscale, float *dbias) {
  __shared__ double shared[kWarps];
  const int64_t count = N * S;
  const double countD = double(N) * double(S);
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    const float mean = savedMean[c];
    double sa = 0.0, sb = 0.0;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const int64_t at = ((j / S) * C + c) * S + j % S;
      sa += dy[at];
      sb += dy[at] * (x[at] - mean);
    }
    sa = blockSum(sa, shared);
    sb = blockSum(sb, shared);
    // dx = (dy - mean(dy) - (x - mean) * mean(dy * (x - mean)) * invstd^2)
    //      * invstd * scale.
    const double invstd = savedInvstd[c];
    const float gm = float(sa / countD);
    const float k = float(sb / countD * invstd * invstd);
    const float f = float(invstd * double(scale[c]));
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const int64_t at = ((j / S) * C + c) * S + j % S;
      dx[at] = ((dy[at] - gm) - (x[at] - mean) * k) * f;
    }
    if (threadIdx.x == 0) {
      if (dscale)
        dscale[c] = float(sb * invstd);
      if (dbias)
        dbias[c] = float(sa);
    }
  }
}

} // namespace
} // namespace otc::kernels::cuda

using namespace otc::kernels::cuda;

extern "C" void
otckd_batch_norm_train_f32(int64_t N, int64_t C, int64_t S, const float *x,
                           const float *scale, const float *bias, float eps,
                           float momentum, int unbiased_running_var, float *y,
                           float *saved_mean, float *saved_invstd,
                           float *running_mean, float *running_var) {
  if (N <= 0 || C <= 0 || S <= 0)
    return;
  batchNormTrainKernel<<<blocksFor(C), kThreads, 0, currentStream()>>>(
      N, C, S, x, scale, bias, eps, momentum, unbiased_running_var != 0, y,
      saved_mean, saved_invstd, running_mean, running_var);
  checkLaunch("otckd_batch_norm_train_f32");
}

extern "C" void otckd_batch_norm_infer_f32(int64_t N, int64_t C, int64_t S,
                                           const float *x, const float *scale,
                                           const float *bias, const float *mean,
                                           const float *var, float eps,
                                           float *y) {
  if (N <= 0 || C <= 0 || S <= 0)
    return;
  const int64_t total = N * C * S;
  batchNormInferKernel<<<gridFor(total), kThreads, 0, currentStream()>>>(
      N, C, S, x, scale, bias, mean, var, eps, y);
  checkLaunch("otckd_batch_norm_infer_f32");
}

extern "C" void otckd_batch_norm_grad_f32(int64_t N, int64_t C, int64_t S,
                                          const float *dy, const float *x,
                                          const float *scale,
                                          const float *saved_mean,
                                          const float *saved_invstd, float *dx,
                                          float *dscale, float *dbias) {
  if (C <= 0)
    return;
  if (N <= 0 || S <= 0) {
    cudaStream_t stream = currentStream();
    if (dscale)
      recordCuda(cudaMemsetAsync(dscale, 0, size_t(C) * sizeof(float), stream),
                 "otckd_batch_norm_grad_f32: cudaMemsetAsync");
    if (dbias)
      recordCuda(cudaMemsetAsync(dbias, 0, size_t(C) * sizeof(float), stream),
                 "otckd_batch_norm_grad_f32: cudaMemsetAsync");
    return;
  }
  batchNormGradKernel<<<blocksFor(C), kThreads, 0, currentStream()>>>(
      N, C, S, dy, x, scale, saved_mean, saved_invstd, dx, dscale, dbias);
  checkLaunch("otckd_batch_norm_grad_f32");
}
