//===- norm.cu - Batch and instance normalization on CUDA -----------------===//
//
// The CUDA twins of the BatchNorm and InstanceNorm kernels of cpu/norm.cpp,
// x viewed as [N, C, S]. BatchNorm training and backward run one block per
// channel: the block sums the channel's N * S elements (per-thread doubles,
// then a fixed-order block sum), derives the statistics exactly as the CPU
// does (double mean, float mean for the deviations, biased variance of the
// deviations, invstd = 1 / sqrt(var + eps) in double, the momentum update in
// double), then normalizes the channel. Results therefore do not vary from
// run to run and match the CPU's to float rounding (the sums' order
// differs). Speed: C blocks in all, so a layer with few channels and a large
// batch leaves most of a large GPU idle.
//
// InstanceNorm repeats the CPU's order and so matches it bit for bit: one
// block per (n, c) row, whose threads each hold one float lane of one
// kSumBlock block of the row (shared/sums.h: lane l adds the block's
// elements l, l + kSumLanes, ... in increasing order), after which one
// thread adds the lanes into the row's double as the CPU does (mean: each
// lane; deviations and gradients: the lanes' float total per block). The
// gradient's dscale/dbias add the rows' sums per channel in
// deterministicSum's chunks, one thread per channel. Speed: N * C blocks,
// each walking its row twice with one serial add per lane block.
//
//===----------------------------------------------------------------------===//

#include "cuda_common.h"
#include "sums.h"

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

//===----------------------------------------------------------------------===//
// InstanceNorm
//===----------------------------------------------------------------------===//

/// kSumBlock blocks of a row that one pass of a block's threads covers,
/// one float lane per thread.
constexpr int64_t kLaneBlocks = kThreads / kSumLanes;
static_assert(kThreads % kSumLanes == 0, "a thread per lane");

/// The calling thread's lane of a pass over row[0, S): the sum, in float
/// from 0 and in increasing i, of term(i) over the i of block `blk` (a
/// kSumBlock block) with (i - blk * kSumBlock) % kSumLanes == lane.
template <class Term>
__device__ float laneSum(int64_t S, int64_t blk, int64_t lane, Term term) {
  float s = 0.0f;
  const int64_t b = blk * kSumBlock;
  if (b < S) {
    const int64_t e = b + kSumBlock < S ? b + kSumBlock : S;
    for (int64_t i = b + lane; i < e; i += kSumLanes)
      s += term(i);
  }
  return s;
}

/// The CPU's double sum over a row of S elements of its float lanes:
/// `eachLane` adds every lane to the double (sumContiguous), otherwise each
/// block's lanes are first added in float in lane order (laneTotal). Thread
/// 0 gets the result; `lanes` holds kThreads floats per term.
template <int Terms, class Fn>
__device__ void rowLaneSums(int64_t S, bool eachLane, float *lanes,
                            double (&acc)[Terms], Fn terms) {
  const int64_t lane = threadIdx.x % kSumLanes;
  const int64_t blkInPass = threadIdx.x / kSumLanes;
  for (int t = 0; t < Terms; ++t)
    acc[t] = 0.0;
  for (int64_t pass = 0; pass * kLaneBlocks * kSumBlock < S; ++pass) {
    const int64_t blk = pass * kLaneBlocks + blkInPass;
    float s[Terms];
    terms(blk, lane, s);
    for (int t = 0; t < Terms; ++t)
      lanes[t * kThreads + threadIdx.x] = s[t];
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int64_t k = 0; k < kLaneBlocks; ++k) {
        if ((pass * kLaneBlocks + k) * kSumBlock >= S)
          break;
        for (int t = 0; t < Terms; ++t) {
          const float *l = lanes + t * kThreads + k * kSumLanes;
          if (eachLane) {
            for (int64_t j = 0; j < kSumLanes; ++j)
              acc[t] += double(l[j]);
          } else {
            float total = l[0];
            for (int64_t j = 1; j < kSumLanes; ++j)
              total += l[j];
            acc[t] += double(total);
          }
        }
      }
    }
    __syncthreads();
  }
}

/// One block per row r = n * C + c: the CPU's rowStats (mean from
/// sumContiguous, biased variance of the float deviations, invstd in
/// double), then y = (x - mean) * (invstd * scale) + bias.
__global__ void instanceNormKernel(int64_t N, int64_t C, int64_t S,
                                   const float *x, const float *scale,
                                   const float *bias, float eps, float *y,
                                   float *mean, float *invstd) {
  __shared__ float lanes[kThreads];
  __shared__ float stats[2];
  for (int64_t r = blockIdx.x; r < N * C; r += gridDim.x) {
    const float *xr = x + r * S;
    double acc[1];
    rowLaneSums<1>(
        S, true, lanes, acc, [&](int64_t blk, int64_t lane, float *s) {
          s[0] = laneSum(S, blk, lane, [&](int64_t i) { return xr[i]; });
        });
    if (threadIdx.x == 0)
      stats[0] = float(acc[0] / double(S));
    __syncthreads();
    const float m = stats[0];
    rowLaneSums<1>(S, false, lanes, acc,
                   [&](int64_t blk, int64_t lane, float *s) {
                     s[0] = laneSum(S, blk, lane, [&](int64_t i) {
                       const float d = xr[i] - m;
                       return d * d;
                     });
                   });
    if (threadIdx.x == 0)
      stats[1] = float(1.0 / sqrt(acc[0] / double(S) + double(eps)));
    __syncthreads();
    const float is = stats[1];
    const int64_t c = r % C;
    const float a = is * scale[c], b = bias[c];
    for (int64_t i = threadIdx.x; i < S; i += blockDim.x)
      y[r * S + i] = (xr[i] - m) * a + b;
    if (threadIdx.x == 0) {
      if (mean)
        mean[r] = m;
      if (invstd)
        invstd[r] = is;
    }
    __syncthreads();
  }
}

/// One block per row r = n * C + c: the CPU's sumGrad over the row (without
/// a scale), then dx; rowSums (nullable) receives {sum dy, sum dy * (x -
/// mean) * invstd} of the row for the channel sums.
__global__ void instanceNormGradKernel(int64_t N, int64_t C, int64_t S,
                                       const float *dy, const float *x,
                                       const float *scale, const float *mean,
                                       const float *invstd, float *dx,
                                       double *rowSums) {
  __shared__ float lanes[2 * kThreads];
  __shared__ float coef[2];
  __shared__ double sums[2];
  for (int64_t r = blockIdx.x; r < N * C; r += gridDim.x) {
    const float *g = dy + r * S, *xr = x + r * S;
    const float m = mean[r], is = invstd[r];
    double acc[2];
    rowLaneSums<2>(S, false, lanes, acc,
                   [&](int64_t blk, int64_t lane, float *s) {
                     // Both lanes in one walk, as the CPU's loop.
                     float sa = 0.0f, sb = 0.0f;
                     const int64_t b = blk * kSumBlock;
                     if (b < S) {
                       const int64_t e = b + kSumBlock < S ? b + kSumBlock : S;
                       for (int64_t i = b + lane; i < e; i += kSumLanes) {
                         sa += g[i];
                         sb += g[i] * (xr[i] - m);
                       }
                     }
                     s[0] = sa;
                     s[1] = sb;
                   });
    if (threadIdx.x == 0) {
      // As BatchNorm's over one row.
      coef[0] = float(acc[0] / double(S));
      coef[1] = float(acc[1] / double(S) * double(is) * double(is));
      sums[0] = acc[0];
      sums[1] = acc[1] * double(is);
    }
    __syncthreads();
    const float gm = coef[0], k = coef[1];
    const float f = is * scale[r % C];
    for (int64_t i = threadIdx.x; i < S; i += blockDim.x)
      dx[r * S + i] = ((g[i] - gm) - (xr[i] - m) * k) * f;
    if (threadIdx.x == 0 && rowSums) {
      rowSums[2 * r] = sums[0];
      rowSums[2 * r + 1] = sums[1];
    }
    __syncthreads();
  }
}

/// One thread per channel: the rows' sums added as the CPU's
/// deterministicSum2 over n (in kSumChunks chunks when it uses them).
__global__ void instanceNormChannelSumsKernel(int64_t N, int64_t C, int64_t S,
                                              const double *rowSums,
                                              float *dscale, float *dbias) {
  for (int64_t c = globalThread(); c < C; c += gridThreads()) {
    auto rows = [&](int64_t b, int64_t e, double &sa, double &sb) {
      sa = sb = 0.0;
      for (int64_t n = b; n < e; ++n) {
        sa += rowSums[2 * (n * C + c)];
        sb += rowSums[2 * (n * C + c) + 1];
      }
    };
    double sa, sb;
    if (!sumsInChunks(N, S, kParallelGrain)) {
      rows(0, N, sa, sb);
    } else {
      sa = sb = 0.0;
      for (int ch = 0; ch < kSumChunks; ++ch) {
        double pa, pb;
        rows(sumChunkBegin(N, ch), sumChunkBegin(N, ch + 1), pa, pb);
        sa += pa;
        sb += pb;
      }
    }
    if (dscale)
      dscale[c] = float(sb);
    if (dbias)
      dbias[c] = float(sa);
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

extern "C" void otckd_instance_norm_f32(int64_t N, int64_t C, int64_t S,
                                        const float *x, const float *scale,
                                        const float *bias, float eps, float *y,
                                        float *mean, float *invstd) {
  if (N <= 0 || C <= 0 || S <= 0)
    return;
  instanceNormKernel<<<blocksFor(N * C), kThreads, 0, currentStream()>>>(
      N, C, S, x, scale, bias, eps, y, mean, invstd);
  checkLaunch("otckd_instance_norm_f32");
}

extern "C" void otckd_instance_norm_grad_f32(int64_t N, int64_t C, int64_t S,
                                             const float *dy, const float *x,
                                             const float *scale,
                                             const float *mean,
                                             const float *invstd, float *dx,
                                             float *dscale, float *dbias) {
  if (C <= 0)
    return;
  cudaStream_t stream = currentStream();
  if (N <= 0 || S <= 0) {
    if (dscale)
      recordCuda(cudaMemsetAsync(dscale, 0, size_t(C) * sizeof(float), stream),
                 "otckd_instance_norm_grad_f32: cudaMemsetAsync");
    if (dbias)
      recordCuda(cudaMemsetAsync(dbias, 0, size_t(C) * sizeof(float), stream),
                 "otckd_instance_norm_grad_f32: cudaMemsetAsync");
    return;
  }
  const bool sums = dscale || dbias;
  StreamScratch rowSums(sums ? size_t(2 * N * C) * sizeof(double) : 1, stream);
  if (!rowSums.ok())
    return;
  instanceNormGradKernel<<<blocksFor(N * C), kThreads, 0, stream>>>(
      N, C, S, dy, x, scale, mean, invstd, dx,
      sums ? rowSums.as<double>() : nullptr);
  checkLaunch("otckd_instance_norm_grad_f32");
  if (!sums)
    return;
  instanceNormChannelSumsKernel<<<gridFor(C), kThreads, 0, stream>>>(
      N, C, S, rowSums.as<double>(), dscale, dbias);
  checkLaunch("otckd_instance_norm_grad_f32");
}
