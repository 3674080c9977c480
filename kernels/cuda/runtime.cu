//===- runtime.cu - Streams, status and constants of the CUDA twins -------===//
//
// Every otckd_ call enqueues on the calling thread's current stream and
// returns. Errors reach otckd_take_status two ways:
//  - a failed launch, CUDA runtime or cuBLAS call is recorded on the host in
//    a thread_local (the first one since the last otckd_take_status wins);
//  - a kernel that meets bad user data (a label out of range) writes its
//    OTCK_ERR_* code into the device's status word with atomicCAS from 0,
//    so the first code wins until otckd_take_status clears it. There is one
//    status word per device, shared by every stream and thread using it.
// Constants are copied once per (device, host pointer, size) and kept until
// the process exits (the driver frees them with the context).
//
//===----------------------------------------------------------------------===//

#include "cuda_common.h"

#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace otc::kernels::cuda {
namespace {

thread_local cudaStream_t tlStream = nullptr;

/// The first host-side failure since the last otckd_take_status.
struct HostError {
  bool pending = false;
  std::string message;
};
thread_local HostError tlError;

/// What otckd_status_message returns.
thread_local std::string tlMessage;

/// Per-device status words: the pending code, exchanged for 0 by
/// otckd_take_status.
struct StatusWords {
  std::mutex mutex;
  std::map<int, int *> words;
};

StatusWords &statusWords() {
  static StatusWords *s = new StatusWords(); // never destroyed: see file top
  return *s;
}

/// *out = word[0]; word[0] = 0, atomically with respect to recordStatus.
__global__ void takeStatusKernel(int *word, int *out) {
  *out = atomicExch(word, 0);
}

/// Where this thread's otckd_take_status receives the code on `device`: a
/// slot of its own, so no lock is held while the stream is waited for.
int *takenSlot(int device) {
  thread_local std::map<int, int *> slots;
  int *&slot = slots[device];
  if (!slot) {
    void *p = nullptr;
    cudaError_t err = cudaMalloc(&p, sizeof(int));
    if (err != cudaSuccess) {
      recordCuda(err, "allocating a status slot");
      return nullptr;
    }
    slot = static_cast<int *>(p);
  }
  return slot;
}

struct Constant {
  std::vector<uint8_t> host; ///< what was copied (compared on a hit)
  void *device;
};

struct Constants {
  std::mutex mutex;
  std::map<std::tuple<int, const void *, int64_t>, Constant> copies;
};

Constants &constants() {
  static Constants *c = new Constants(); // never destroyed: see file top
  return *c;
}

const char *statusName(int code) {
  switch (code) {
  case OTCK_ERR_LABEL_OUT_OF_RANGE:
    return "a label is outside [0, C) (OTCK_ERR_LABEL_OUT_OF_RANGE)";
  case OTCK_ERR_INDEX_OUT_OF_RANGE:
    return "an index is out of range (OTCK_ERR_INDEX_OUT_OF_RANGE)";
  case OTCK_ERR_DIVISION_BY_ZERO:
    return "integer division by zero (OTCK_ERR_DIVISION_BY_ZERO)";
  case OTCK_ERR_UNSUPPORTED:
    return "unsupported type code or rank (OTCK_ERR_UNSUPPORTED)";
  default:
    return "unknown kernel status code";
  }
}

} // namespace

cudaStream_t currentStream() { return tlStream; }

void recordFailure(const char *what, const char *message) {
  if (tlError.pending)
    return;
  tlError.pending = true;
  tlError.message = std::string(what) + ": " + message;
}

void recordCuda(cudaError_t err, const char *what) {
  if (err != cudaSuccess)
    recordFailure(what, cudaGetErrorString(err));
}

void checkLaunch(const char *what) { recordCuda(cudaGetLastError(), what); }

int *deviceStatusWord() {
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) {
    recordCuda(err, "cudaGetDevice");
    return nullptr;
  }
  // Cache of the last lookup: the map is only read under its mutex.
  thread_local int cachedDevice = -1;
  thread_local int *cachedWord = nullptr;
  if (device == cachedDevice)
    return cachedWord;
  StatusWords &s = statusWords();
  std::lock_guard<std::mutex> lock(s.mutex);
  int *&word = s.words[device];
  if (!word) {
    void *p = nullptr;
    err = cudaMalloc(&p, sizeof(int));
    // Zeroed before any stream uses it (they do not wait for the legacy
    // stream's memset): once per device.
    if (err == cudaSuccess)
      err = cudaMemset(p, 0, sizeof(int));
    if (err == cudaSuccess)
      err = cudaDeviceSynchronize();
    if (err != cudaSuccess) {
      recordCuda(err, "allocating the device status word");
      cudaFree(p);
      return nullptr;
    }
    word = static_cast<int *>(p);
  }
  cachedDevice = device;
  cachedWord = word;
  return word;
}

StreamScratch::StreamScratch(size_t bytes, cudaStream_t stream)
    : stream_(stream) {
  const cudaError_t err =
      cudaMallocAsync(&ptr_, bytes ? bytes : size_t(1), stream);
  if (err != cudaSuccess) {
    recordCuda(err, "cudaMallocAsync (kernel scratch)");
    ptr_ = nullptr;
  }
}

StreamScratch::~StreamScratch() {
  if (ptr_)
    recordCuda(cudaFreeAsync(ptr_, stream_), "cudaFreeAsync (kernel scratch)");
}

} // namespace otc::kernels::cuda

using namespace otc::kernels::cuda;

extern "C" void otckd_set_stream(void *stream) {
  tlStream = static_cast<cudaStream_t>(stream);
}

extern "C" int otckd_take_status(void) {
  cudaStream_t stream = tlStream;
  recordCuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  // The device's code, exchanged for 0 on the stream.
  int code = OTCK_OK;
  int device = 0;
  int *word = deviceStatusWord();
  int *slot = word && cudaGetDevice(&device) == cudaSuccess ? takenSlot(device)
                                                            : nullptr;
  if (slot) {
    takeStatusKernel<<<1, 1, 0, stream>>>(word, slot);
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess)
      err = cudaMemcpyAsync(&code, slot, sizeof(int), cudaMemcpyDeviceToHost,
                            stream);
    if (err == cudaSuccess)
      err = cudaStreamSynchronize(stream);
    if (err != cudaSuccess) {
      recordCuda(err, "reading the device status word");
      code = OTCK_OK;
    }
  }
  if (tlError.pending) {
    tlMessage = tlError.message;
    if (code != OTCK_OK)
      tlMessage += std::string("; a kernel also reported: ") + statusName(code);
    tlError = HostError();
    return OTCKD_ERR_CUDA;
  }
  if (code != OTCK_OK) {
    tlMessage = statusName(code);
    return code;
  }
  return OTCK_OK;
}

extern "C" const char *otckd_status_message(void) { return tlMessage.c_str(); }

extern "C" int otckd_read_f32(const float *device, float *host) {
  cudaStream_t s = otc::kernels::cuda::currentStream();
  cudaError_t err =
      cudaMemcpyAsync(host, device, sizeof(float), cudaMemcpyDeviceToHost, s);
  if (err == cudaSuccess)
    err = cudaStreamSynchronize(s);
  return err == cudaSuccess ? 0 : 1;
}

extern "C" const void *otckd_constant(const void *host, int64_t bytes) {
  if (!host || bytes < 0)
    return nullptr;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess)
    return nullptr;
  Constants &c = constants();
  std::lock_guard<std::mutex> lock(c.mutex);
  const auto key = std::make_tuple(device, host, bytes);
  auto it = c.copies.find(key);
  // A program loaded again may reuse the address of an unloaded one's
  // constants: a hit counts only if the bytes are the same.
  if (it != c.copies.end()) {
    if (std::memcmp(it->second.host.data(), host, size_t(bytes)) == 0)
      return it->second.device;
    cudaFree(it->second.device);
    c.copies.erase(it);
  }
  void *d = nullptr;
  if (cudaMalloc(&d, bytes ? size_t(bytes) : size_t(1)) != cudaSuccess) {
    cudaGetLastError(); // Not sticky: clear it for later launch checks.
    return nullptr;
  }
  // Complete before any stream reads it (the sessions' streams do not
  // wait for the legacy stream): once per constant.
  if (bytes && (cudaMemcpy(d, host, size_t(bytes), cudaMemcpyHostToDevice) !=
                    cudaSuccess ||
                cudaDeviceSynchronize() != cudaSuccess)) {
    cudaGetLastError();
    cudaFree(d);
    return nullptr;
  }
  const auto *h = static_cast<const uint8_t *>(host);
  c.copies.emplace(key, Constant{std::vector<uint8_t>(h, h + bytes), d});
  return d;
}
