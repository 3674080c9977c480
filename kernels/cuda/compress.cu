//===- compress.cu - Block-wise gradient compression on CUDA --------------===//
//
// The CUDA twin of cpu/compress.cpp. It shares the bit-level coding of
// cpu/compress_format.h and writes the same payload bit for bit:
//  - NONE, FP16, BF16: one thread per element;
//  - INT8 and the sparse methods: one thread block per compression block.
//    Top-k finds the k-th largest |v| bit pattern t by a 4-pass 8-bit radix
//    select over a shared histogram, then writes the kept elements in index
//    order through a block-wide prefix sum: those above t, and the first
//    `ties` equal to t, as the CPU keeps them. RANDOMK runs Floyd's
//    algorithm on one thread over a shared bitmap.
// Compiled with --fmad=false: the CPU rounds v - q * scale and the sums of
// decompression after every operation, and so must the GPU.
//
//===----------------------------------------------------------------------===//

#include "otc/compress_cuda.h"

#include "compress_format.h"

#include <limits.h>

namespace cf = otc::kernels::compress;
using cf::Layout;

namespace {

constexpr int kMaxThreads = 256;
constexpr unsigned kFullMask = 0xffffffffu;

//===--- Unaligned little-endian payload access ---------------------------===//

template <class T> __device__ void storeBytes(unsigned char *p, T x) {
  unsigned char b[sizeof(T)];
  memcpy(b, &x, sizeof(T));
#pragma unroll
  for (int i = 0; i < int(sizeof(T)); ++i)
    p[i] = b[i];
}

template <class T> __device__ T loadBytes(const unsigned char *p) {
  unsigned char b[sizeof(T)];
#pragma unroll
  for (int i = 0; i < int(sizeof(T)); ++i)
    b[i] = p[i];
  T x;
  memcpy(&x, b, sizeof(T));
  return x;
}

//===--- Value encodings (as cpu/compress.cpp) ----------------------------===//

struct EncodeF32 {
  using Stored = float;
  static constexpr bool kScaled = false;
  __device__ static Stored encode(float v, float) { return v; }
  __device__ static float decode(Stored q, float) { return q; }
};

struct EncodeF16 {
  using Stored = uint16_t;
  __device__ static Stored encode(float v, float) { return cf::floatToHalf(v); }
  __device__ static float decode(Stored q, float) { return cf::halfToFloat(q); }
};

struct EncodeBF16 {
  using Stored = uint16_t;
  __device__ static Stored encode(float v, float) { return cf::floatToBf16(v); }
  __device__ static float decode(Stored q, float) { return cf::bf16ToFloat(q); }
};

struct EncodeInt8 {
  using Stored = int8_t;
  static constexpr bool kScaled = true;
  __device__ static Stored encode(float v, float scale) {
    return scale > 0.0f ? cf::quantizeInt8(v, scale) : Stored(0);
  }
  __device__ static float decode(Stored q, float scale) {
    return cf::dequantizeInt8(q, scale);
  }
};

struct SelectAll {
  static constexpr bool kSparse = false, kRandom = false;
};
struct SelectTopK {
  static constexpr bool kSparse = true, kRandom = false;
};
struct SelectRandomK {
  static constexpr bool kSparse = true, kRandom = true;
};

//===--- Block-wide primitives (blockDim.x a multiple of 32, <= 256)
//-------===//

struct Shared {
  uint32_t hist[256];
  uint32_t warp[33];
  uint32_t digit, remaining;
};

__device__ uint32_t blockMax(uint32_t x, Shared &sh) {
  for (int o = 16; o > 0; o >>= 1)
    x = max(x, __shfl_xor_sync(kFullMask, x, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0)
    sh.warp[warp] = x;
  __syncthreads();
  if (warp == 0) {
    x = lane < int(blockDim.x >> 5) ? sh.warp[lane] : 0u;
    for (int o = 16; o > 0; o >>= 1)
      x = max(x, __shfl_xor_sync(kFullMask, x, o));
    if (lane == 0)
      sh.warp[32] = x;
  }
  __syncthreads();
  x = sh.warp[32];
  __syncthreads();
  return x;
}

/// Exclusive prefix sum over the block in thread order; `total` gets the sum.
__device__ uint32_t blockExclusiveSum(uint32_t x, uint32_t &total, Shared &sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint32_t incl = x;
  for (int o = 1; o < 32; o <<= 1) {
    const uint32_t y = __shfl_up_sync(kFullMask, incl, o);
    if (lane >= o)
      incl += y;
  }
  if (lane == 31)
    sh.warp[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    const uint32_t s = lane < int(blockDim.x >> 5) ? sh.warp[lane] : 0u;
    uint32_t si = s;
    for (int o = 1; o < 32; o <<= 1) {
      const uint32_t y = __shfl_up_sync(kFullMask, si, o);
      if (lane >= o)
        si += y;
    }
    sh.warp[lane] = si - s;
    if (lane == 31)
      sh.warp[32] = si;
  }
  __syncthreads();
  const uint32_t excl = sh.warp[warp] + incl - x;
  total = sh.warp[32];
  __syncthreads();
  return excl;
}

/// The k-th largest |v| pattern t of the block (k <= m) and how many of the
/// elements equal to t the top k take. Radix select, 8 bits a pass.
__device__ void radixSelect(const float *v, int m, int k, uint32_t &t,
                            int &ties, Shared &sh) {
  const int tid = threadIdx.x, nt = blockDim.x;
  uint32_t prefix = 0, mask = 0;
  int remaining = k;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int d = tid; d < 256; d += nt)
      sh.hist[d] = 0;
    __syncthreads();
    for (int i = tid; i < m; i += nt) {
      const uint32_t a = cf::absBits(v[i]);
      if ((a & mask) == prefix)
        atomicAdd(&sh.hist[(a >> shift) & 255u], 1u);
    }
    __syncthreads();
    if (tid < 32) {
      // Lane l sums digits 255 - 8l down to 248 - 8l; a prefix sum over the
      // lanes counts from the top digit down.
      const int lane = tid;
      uint32_t sum = 0;
      for (int j = 0; j < 8; ++j)
        sum += sh.hist[255 - 8 * lane - j];
      uint32_t incl = sum;
      for (int o = 1; o < 32; o <<= 1) {
        const uint32_t y = __shfl_up_sync(kFullMask, incl, o);
        if (lane >= o)
          incl += y;
      }
      const unsigned reach =
          __ballot_sync(kFullMask, incl >= uint32_t(remaining));
      if (lane == __ffs(reach) - 1) {
        uint32_t above = incl - sum;
        int d = 255 - 8 * lane;
        for (int j = 0; j < 8; ++j, --d) {
          const uint32_t h = sh.hist[d];
          if (above + h >= uint32_t(remaining))
            break;
          above += h;
        }
        sh.digit = uint32_t(d);
        sh.remaining = uint32_t(remaining) - above;
      }
    }
    __syncthreads();
    prefix |= sh.digit << shift;
    mask |= 255u << shift;
    remaining = int(sh.remaining);
    __syncthreads();
  }
  t = prefix;
  ties = remaining;
}

//===--- Compression ------------------------------------------------------===//

__global__ void nonFiniteKernel(int64_t n, const float *g, const float *r,
                                int *flag) {
  bool bad = false;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    bad |= cf::isNonFinite(r ? g[i] + r[i] : g[i]);
  if (__any_sync(kFullMask, bad) && (threadIdx.x & 31) == 0)
    *flag = 1;
}

__device__ bool skipped(const int *flag) {
  return *static_cast<const volatile int *>(flag) != 0;
}

template <class Enc>
__global__ void elementwiseCompress(int64_t n, const float *g, float *r,
                                    typename Enc::Stored *q, const int *flag) {
  if (skipped(flag))
    return;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const float v = r ? g[i] + r[i] : g[i];
    const typename Enc::Stored s = Enc::encode(v, 0.0f);
    q[i] = s;
    if (r)
      r[i] = v - Enc::decode(s, 0.0f);
  }
}

/// The sparse part of blockCompress: selection, then the kept elements.
template <class Sel, class Enc, class Idx>
__device__ void compressSparse(const Layout &l, int64_t block, int m,
                               const float *v, float *rb, unsigned char *idxOut,
                               float scale, uint64_t seed, Shared &sh,
                               uint32_t *bitmap) {
  using Stored = typename Enc::Stored;
  const int tid = threadIdx.x, nt = blockDim.x;
  unsigned char *valOut = idxOut + l.k * sizeof(Idx);
  const int k = int(l.k), c = min(k, m);
  uint32_t t = 0;
  int ties = m; // m <= k: every element is kept (all are >= 0 = t)
  if constexpr (Sel::kRandom) {
    const int words = (m + 31) / 32;
    for (int w = tid; w < words; w += nt)
      bitmap[w] = 0;
    __syncthreads();
    if (tid == 0)
      cf::sampleSubset(cf::randomKey(seed, block), uint32_t(m), uint32_t(c),
                       bitmap);
    __syncthreads();
  } else if (m > k) {
    radixSelect(v, m, k, t, ties, sh);
  }

  // Kept elements in index order: slot = (elements above t before i) +
  // min(elements equal to t before i, ties). Counts are packed in 16-bit
  // halves (a tile has at most 256 elements).
  uint32_t aboveRun = 0, equalRun = 0;
  for (int tile = 0; tile < m; tile += nt) {
    const int i = tile + tid;
    uint32_t above = 0, equal = 0;
    if (i < m) {
      if constexpr (Sel::kRandom) {
        above = (bitmap[i >> 5] >> (i & 31)) & 1u;
      } else {
        const uint32_t a = cf::absBits(v[i]);
        above = a > t;
        equal = a == t;
      }
    }
    uint32_t total;
    const uint32_t before = blockExclusiveSum(above | (equal << 16), total, sh);
    const uint32_t equalBefore = equalRun + (before >> 16);
    if (above || (equal && equalBefore < uint32_t(ties))) {
      const uint32_t slot =
          aboveRun + (before & 0xffffu) + min(equalBefore, uint32_t(ties));
      const Stored q = Enc::encode(v[i], scale);
      storeBytes(idxOut + slot * sizeof(Idx), Idx(i));
      storeBytes(valOut + slot * sizeof(Stored), q);
      if (rb)
        rb[i] = v[i] - Enc::decode(q, scale);
    }
    aboveRun += total & 0xffffu;
    equalRun += total >> 16;
  }
  // Padding slots of a short last block.
  for (int j = c + tid; j < k; j += nt) {
    storeBytes(idxOut + j * sizeof(Idx), Idx(0));
    storeBytes(valOut + j * sizeof(Stored), Stored(0));
  }
}

/// One thread block per compression block (INT8 and the sparse methods).
template <class Sel, class Enc, class Idx>
__global__ void __launch_bounds__(kMaxThreads)
    blockCompress(Layout l, int64_t n, const float *g, float *r,
                  unsigned char *payload, const int *flag, uint64_t seed) {
  using Stored = typename Enc::Stored;
  __shared__ Shared sh;
  __shared__ uint32_t bitmap[Sel::kRandom ? 65536 / 32 : 1];
  if (skipped(flag))
    return;
  const int tid = threadIdx.x, nt = blockDim.x;
  const int64_t block = blockIdx.x, begin = block * l.blockSize;
  const int m = int(n - begin < l.blockSize ? n - begin : l.blockSize);
  const float *v = g + begin;
  float *rb = r ? r + begin : nullptr;
  if (rb) {
    // The residual becomes g + r: right already for elements not kept.
    for (int i = tid; i < m; i += nt)
      rb[i] = v[i] + rb[i];
    __syncthreads();
    v = rb;
  }
  unsigned char *out = payload + block * l.blockBytes;

  // The int8 scale: absmax over the kept values, which always include the
  // block's largest |v|.
  float scale = 0.0f;
  if constexpr (Enc::kScaled) {
    uint32_t mx = 0;
    for (int i = tid; i < m; i += nt)
      mx = max(mx, cf::absBits(v[i]));
    scale = cf::int8Scale(cf::bitsOf<float>(blockMax(mx, sh)));
    if (tid == 0)
      storeBytes(out, scale);
  }
  unsigned char *idxOut = out + l.scaleBytes;

  if constexpr (!Sel::kSparse) {
    for (int i = tid; i < l.blockSize; i += nt) {
      Stored q = Stored(0);
      if (i < m) {
        q = Enc::encode(v[i], scale);
        if (rb)
          rb[i] = v[i] - Enc::decode(q, scale);
      }
      storeBytes(idxOut + i * sizeof(Stored), q);
    }
  } else {
    compressSparse<Sel, Enc, Idx>(l, block, m, v, rb, idxOut, scale, seed, sh,
                                  bitmap);
  }
}

//===--- Decompression ----------------------------------------------------===//

template <class Enc>
__global__ void elementwiseDecompress(int64_t n,
                                      const typename Enc::Stored *payloads,
                                      int64_t count, float scale, float *out) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    float acc = Enc::decode(payloads[i], 0.0f);
    for (int64_t w = 1; w < count; ++w)
      acc += Enc::decode(payloads[w * n + i], 0.0f);
    if (scale != 1.0f)
      acc *= scale;
    out[i] = acc;
  }
}

__global__ void int8Decompress(Layout l, int64_t n,
                               const unsigned char *payloads, int64_t bytes,
                               int64_t count, float scale, float *out) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const int64_t block = i / l.blockSize, j = i - block * l.blockSize;
    float acc = 0.0f;
    for (int64_t w = 0; w < count; ++w) {
      const unsigned char *p = payloads + w * bytes + block * l.blockBytes;
      const float d = EncodeInt8::decode(int8_t(p[4 + j]), loadBytes<float>(p));
      acc = w == 0 ? d : acc + d;
    }
    if (scale != 1.0f)
      acc *= scale;
    out[i] = acc;
  }
}

/// One thread block per compression block; payloads are added in order,
/// each into zeros where it keeps nothing, as on the CPU.
template <class Enc, class Idx>
__global__ void __launch_bounds__(kMaxThreads)
    sparseDecompress(Layout l, int64_t n, const unsigned char *payloads,
                     int64_t bytes, int64_t count, float scale, float *out) {
  using Stored = typename Enc::Stored;
  const int tid = threadIdx.x, nt = blockDim.x;
  const int64_t block = blockIdx.x, begin = block * l.blockSize;
  const int m = int(n - begin < l.blockSize ? n - begin : l.blockSize);
  const int c = int(l.used(m));
  float *o = out + begin;
  for (int i = tid; i < m; i += nt)
    o[i] = 0.0f;
  __syncthreads();
  for (int64_t w = 0; w < count; ++w) {
    const unsigned char *p = payloads + w * bytes + block * l.blockBytes;
    float s = 0.0f;
    if (Enc::kScaled)
      s = loadBytes<float>(p);
    const unsigned char *idx = p + l.scaleBytes;
    const unsigned char *val = idx + l.k * sizeof(Idx);
    for (int j = tid; j < c; j += nt) {
      const int i = int(loadBytes<Idx>(idx + j * sizeof(Idx)));
      if (i < m)
        o[i] += Enc::decode(loadBytes<Stored>(val + j * sizeof(Stored)), s);
    }
    __syncthreads();
  }
  if (scale != 1.0f)
    for (int i = tid; i < m; i += nt)
      o[i] *= scale;
}

//===--- Launch -----------------------------------------------------------===//

unsigned gridFor(int64_t n) {
  const int64_t blocks = (n + kMaxThreads - 1) / kMaxThreads;
  return unsigned(blocks < 8192 ? blocks : 8192);
}

/// Threads for a block of B elements: a warp at least, 256 at most.
int threadsFor(int64_t b) {
  return b <= 32 ? 32 : b <= 64 ? 64 : b <= 128 ? 128 : kMaxThreads;
}

template <class Sel, class Enc>
void launchBlockCompress(const Layout &l, int64_t n, const float *g, float *r,
                         void *payload, const int *flag, uint64_t seed,
                         cudaStream_t stream) {
  const unsigned blocks = unsigned(l.blocks(n));
  const int threads = threadsFor(l.blockSize);
  unsigned char *p = static_cast<unsigned char *>(payload);
  if (l.idxBytes == 2)
    blockCompress<Sel, Enc, uint16_t>
        <<<blocks, threads, 0, stream>>>(l, n, g, r, p, flag, seed);
  else
    blockCompress<Sel, Enc, uint8_t>
        <<<blocks, threads, 0, stream>>>(l, n, g, r, p, flag, seed);
}

template <class Enc>
void launchSparseDecompress(const Layout &l, int64_t n,
                            const unsigned char *payloads, int64_t count,
                            float scale, float *out, cudaStream_t stream) {
  const unsigned blocks = unsigned(l.blocks(n));
  const int threads = threadsFor(l.blockSize);
  const int64_t bytes = l.bytes(n);
  if (l.idxBytes == 2)
    sparseDecompress<Enc, uint16_t><<<blocks, threads, 0, stream>>>(
        l, n, payloads, bytes, count, scale, out);
  else
    sparseDecompress<Enc, uint8_t><<<blocks, threads, 0, stream>>>(
        l, n, payloads, bytes, count, scale, out);
}

} // namespace

extern "C" cudaError_t
otck_cuda_compress_f32(const otck_compress_config *config, int64_t n,
                       const float *d_g, float *d_residual, void *d_payload,
                       int *d_nonfinite, cudaStream_t stream) {
  Layout l;
  // One CUDA block per compression block (INT8, sparse): the grid's x
  // dimension bounds their count; element-wise methods stride instead.
  if (!cf::makeLayout(config, &l) || n < 0 || !d_nonfinite ||
      (!l.elementwise() && l.blocks(n) > INT_MAX))
    return cudaErrorInvalidValue;
  cudaError_t err = cudaMemsetAsync(d_nonfinite, 0, sizeof(int), stream);
  if (err != cudaSuccess || n == 0)
    return err;
  // Checked before anything is written: a skipped step keeps its residual.
  nonFiniteKernel<<<gridFor(n), kMaxThreads, 0, stream>>>(n, d_g, d_residual,
                                                          d_nonfinite);
  const unsigned grid = gridFor(n);
  switch (l.method) {
  case OTCK_COMPRESS_NONE:
    elementwiseCompress<EncodeF32><<<grid, kMaxThreads, 0, stream>>>(
        n, d_g, d_residual, static_cast<float *>(d_payload), d_nonfinite);
    break;
  case OTCK_COMPRESS_FP16:
    elementwiseCompress<EncodeF16><<<grid, kMaxThreads, 0, stream>>>(
        n, d_g, d_residual, static_cast<uint16_t *>(d_payload), d_nonfinite);
    break;
  case OTCK_COMPRESS_BF16:
    elementwiseCompress<EncodeBF16><<<grid, kMaxThreads, 0, stream>>>(
        n, d_g, d_residual, static_cast<uint16_t *>(d_payload), d_nonfinite);
    break;
  case OTCK_COMPRESS_INT8:
    launchBlockCompress<SelectAll, EncodeInt8>(
        l, n, d_g, d_residual, d_payload, d_nonfinite, config->seed, stream);
    break;
  case OTCK_COMPRESS_TOPK:
    launchBlockCompress<SelectTopK, EncodeF32>(
        l, n, d_g, d_residual, d_payload, d_nonfinite, config->seed, stream);
    break;
  case OTCK_COMPRESS_TOPK_INT8:
    launchBlockCompress<SelectTopK, EncodeInt8>(
        l, n, d_g, d_residual, d_payload, d_nonfinite, config->seed, stream);
    break;
  case OTCK_COMPRESS_RANDOMK:
    launchBlockCompress<SelectRandomK, EncodeF32>(
        l, n, d_g, d_residual, d_payload, d_nonfinite, config->seed, stream);
    break;
  }
  return cudaGetLastError();
}

namespace {

__global__ void sumSquaresKernel(int64_t n, const float *x, double *out) {
  double sum = 0;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    sum += double(x[i]) * double(x[i]);
  for (int offset = 16; offset > 0; offset /= 2)
    sum += __shfl_down_sync(kFullMask, sum, offset);
  if ((threadIdx.x & 31) == 0)
    atomicAdd(out, sum);
}

} // namespace

extern "C" cudaError_t otck_cuda_flag_nonfinite_f32(int64_t n, const float *d_x,
                                                    int *d_flag,
                                                    cudaStream_t stream) {
  if (n < 0 || !d_flag || (n > 0 && !d_x))
    return cudaErrorInvalidValue;
  if (n == 0)
    return cudaSuccess;
  nonFiniteKernel<<<gridFor(n), kMaxThreads, 0, stream>>>(n, d_x, nullptr,
                                                          d_flag);
  return cudaGetLastError();
}

extern "C" cudaError_t otck_cuda_sum_squares_f64(int64_t n, const float *d_x,
                                                 double *d_out,
                                                 cudaStream_t stream) {
  if (n < 0 || !d_out || (n > 0 && !d_x))
    return cudaErrorInvalidValue;
  cudaError_t err = cudaMemsetAsync(d_out, 0, sizeof(double), stream);
  if (err != cudaSuccess || n == 0)
    return err;
  sumSquaresKernel<<<gridFor(n), kMaxThreads, 0, stream>>>(n, d_x, d_out);
  return cudaGetLastError();
}

extern "C" cudaError_t
otck_cuda_decompress_sum_f32(const otck_compress_config *config, int64_t n,
                             const void *d_payloads, int64_t count, float scale,
                             float *d_out, cudaStream_t stream) {
  Layout l;
  if (!cf::makeLayout(config, &l) || n < 0 ||
      (!l.elementwise() && l.blocks(n) > INT_MAX))
    return cudaErrorInvalidValue;
  if (n == 0)
    return cudaSuccess;
  if (count <= 0)
    return cudaMemsetAsync(d_out, 0, size_t(n) * sizeof(float), stream);
  const unsigned char *p = static_cast<const unsigned char *>(d_payloads);
  const unsigned grid = gridFor(n);
  switch (l.method) {
  case OTCK_COMPRESS_NONE:
    elementwiseDecompress<EncodeF32><<<grid, kMaxThreads, 0, stream>>>(
        n, reinterpret_cast<const float *>(p), count, scale, d_out);
    break;
  case OTCK_COMPRESS_FP16:
    elementwiseDecompress<EncodeF16><<<grid, kMaxThreads, 0, stream>>>(
        n, reinterpret_cast<const uint16_t *>(p), count, scale, d_out);
    break;
  case OTCK_COMPRESS_BF16:
    elementwiseDecompress<EncodeBF16><<<grid, kMaxThreads, 0, stream>>>(
        n, reinterpret_cast<const uint16_t *>(p), count, scale, d_out);
    break;
  case OTCK_COMPRESS_INT8:
    int8Decompress<<<grid, kMaxThreads, 0, stream>>>(l, n, p, l.bytes(n), count,
                                                     scale, d_out);
    break;
  case OTCK_COMPRESS_TOPK:
  case OTCK_COMPRESS_RANDOMK:
    launchSparseDecompress<EncodeF32>(l, n, p, count, scale, d_out, stream);
    break;
  case OTCK_COMPRESS_TOPK_INT8:
    launchSparseDecompress<EncodeInt8>(l, n, p, count, scale, d_out, stream);
    break;
  }
  return cudaGetLastError();
}

namespace {

__global__ void accumulateKernel(int64_t n, float momentum, const float *g,
                                 float *velocity, float *saved) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const float u = velocity[i];
    if (saved)
      saved[i] = u;
    // Rounded twice, as the CPU (no fused multiply-add).
    velocity[i] = __fadd_rn(__fmul_rn(momentum, u), g[i]);
  }
}

/// One thread per kept slot of every block.
__global__ void maskSentKernel(Layout l, int64_t n, const unsigned char *p,
                               float *buf) {
  const int64_t slots = l.blocks(n) * l.k;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < slots;
       t += stride) {
    const int64_t b = t / l.k, j = t % l.k, begin = b * l.blockSize;
    const int64_t m = n - begin < l.blockSize ? n - begin : l.blockSize;
    if (j >= l.used(m))
      continue; // a short last block's padding
    const int64_t i = cf::keptIndex(l, p + b * l.blockBytes, j);
    if (i < m)
      buf[begin + i] = 0.0f;
  }
}

/// One CUDA block per compression block: its kept indices mark a bitmap in
/// shared memory, then every element is masked or has the tail taken back.
__global__ void maskSentTailKernel(Layout l, int64_t n, const unsigned char *p,
                                   float tail, float *velocity,
                                   float *residual) {
  extern __shared__ unsigned sentBits[];
  const int64_t b = blockIdx.x, begin = b * l.blockSize;
  const int64_t m = n - begin < l.blockSize ? n - begin : l.blockSize;
  const int64_t words = (m + 31) / 32;
  for (int64_t w = threadIdx.x; w < words; w += blockDim.x)
    sentBits[w] = 0;
  __syncthreads();
  const unsigned char *block = p + b * l.blockBytes;
  for (int64_t j = threadIdx.x, c = l.used(m); j < c; j += blockDim.x) {
    const int64_t i = cf::keptIndex(l, block, j);
    if (i < m)
      atomicOr(&sentBits[i / 32], 1u << (i % 32));
  }
  __syncthreads();
  float *u = velocity + begin, *r = residual + begin;
  for (int64_t i = threadIdx.x; i < m; i += blockDim.x) {
    if (sentBits[i / 32] >> (i % 32) & 1u)
      u[i] = 0.0f;
    else
      r[i] = __fsub_rn(r[i], __fmul_rn(tail, u[i])); // as the CPU: no FMA
  }
}

} // namespace

extern "C" cudaError_t
otck_cuda_compress_accumulate_f32(int64_t n, float momentum, const float *d_g,
                                  float *d_velocity, float *d_saved,
                                  cudaStream_t stream) {
  if (n < 0 || (n > 0 && (!d_g || !d_velocity)))
    return cudaErrorInvalidValue;
  if (n == 0)
    return cudaSuccess;
  accumulateKernel<<<gridFor(n), kMaxThreads, 0, stream>>>(n, momentum, d_g,
                                                           d_velocity, d_saved);
  return cudaGetLastError();
}

extern "C" cudaError_t
otck_cuda_compress_mask_sent_f32(const otck_compress_config *config, int64_t n,
                                 const void *d_payload, float *d_buf,
                                 cudaStream_t stream) {
  Layout l;
  if (!cf::makeLayout(config, &l) || n < 0 ||
      (n > 0 && (!d_buf || (l.sparse() && !d_payload))))
    return cudaErrorInvalidValue;
  if (n == 0)
    return cudaSuccess;
  if (!l.sparse()) // every element is sent
    return cudaMemsetAsync(d_buf, 0, size_t(n) * sizeof(float), stream);
  maskSentKernel<<<gridFor(l.blocks(n) * l.k), kMaxThreads, 0, stream>>>(
      l, n, static_cast<const unsigned char *>(d_payload), d_buf);
  return cudaGetLastError();
}

extern "C" cudaError_t otck_cuda_compress_mask_sent_tail_f32(
    const otck_compress_config *config, int64_t n, const void *d_payload,
    float tail, float *d_velocity, float *d_residual, cudaStream_t stream) {
  Layout l;
  if (!cf::makeLayout(config, &l) || n < 0 ||
      (n > 0 && (!d_velocity || (l.sparse() && !d_payload))))
    return cudaErrorInvalidValue;
  if (!d_residual || !l.sparse())
    return otck_cuda_compress_mask_sent_f32(config, n, d_payload, d_velocity,
                                            stream);
  if (n == 0)
    return cudaSuccess;
  const size_t bitmap = size_t((l.blockSize + 31) / 32) * sizeof(unsigned);
  maskSentTailKernel<<<unsigned(l.blocks(n)), threadsFor(l.blockSize), bitmap,
                       stream>>>(l, n,
                                 static_cast<const unsigned char *>(d_payload),
                                 tail, d_velocity, d_residual);
  return cudaGetLastError();
}
