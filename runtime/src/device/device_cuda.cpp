//===- device_cuda.cpp - Arenas of CUDA programs, with CUDA ---------------===//

#include "core/status.h"
#include "device/device.h"

#include "otc/kernels_cuda.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace otc {

namespace {

void check(cudaError_t rc, const char *what) {
  if (rc != cudaSuccess)
    throw Error(OTC_UNAVAILABLE, std::string(what) +
                                     " failed: " + cudaGetErrorName(rc) + ": " +
                                     cudaGetErrorString(rc));
}

/// This process's rank on its node, from the launcher (Open MPI, MPICH,
/// Slurm); 0 when not launched by one.
int localRank() {
  for (const char *name :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char *v = std::getenv(name))
      return std::max(0, std::atoi(v));
  return 0;
}

} // namespace

std::unique_ptr<DeviceArena> DeviceArena::create(uint8_t *host,
                                                 uint64_t bytes) {
  int count = 0;
  cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess || count == 0)
    throw Error(OTC_UNAVAILABLE,
                std::string("this program was compiled with --target cuda "
                            "but no CUDA device is visible") +
                    (rc != cudaSuccess
                         ? std::string(" (") + cudaGetErrorString(rc) + ")"
                         : std::string()) +
                    "; recompile it with --target cpu to run it here");
  // Ranks of a node take the devices in turn; more ranks than devices
  // share them (the collectives are staged through host memory).
  std::unique_ptr<DeviceArena> a(new DeviceArena());
  a->ordinal = localRank() % count;
  check(cudaSetDevice(a->ordinal), "cudaSetDevice");
  a->host = host;
  a->size = std::max<uint64_t>(bytes, 1);
  void *p = nullptr;
  rc = cudaMalloc(&p, a->size);
  if (rc != cudaSuccess)
    throw Error(OTC_UNAVAILABLE, "cannot allocate the program's arena of " +
                                     std::to_string(bytes) + " bytes on " +
                                     a->describe() + ": " +
                                     cudaGetErrorString(rc));
  a->dev = static_cast<uint8_t *>(p);
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
        "cudaStreamCreateWithFlags");
  a->stream_ = s;
  return a;
}

DeviceArena::~DeviceArena() {
  if (stream_)
    cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
  if (dev)
    cudaFree(dev);
}

void DeviceArena::copyUp(uint64_t offset, uint64_t bytes) {
  if (bytes == 0)
    return;
  if (offset > size || bytes > size - offset)
    throw Error(OTC_INTERNAL, "a copy to the device leaves the arena");
  check(cudaMemcpyAsync(dev + offset, host + offset, bytes,
                        cudaMemcpyHostToDevice,
                        static_cast<cudaStream_t>(stream_)),
        "cudaMemcpyAsync to the device");
}

void DeviceArena::beforeStep() {
  check(cudaSetDevice(ordinal), "cudaSetDevice");
  staged.clear(); // a failed or skipped step may have left some
  if (hostAhead) {
    copyUp(0, size);
    hostAhead = false;
  }
}

void DeviceArena::download(uint64_t offset, uint64_t bytes) {
  if (bytes == 0)
    return;
  if (offset > size || bytes > size - offset)
    throw Error(OTC_INTERNAL, "a copy from the device leaves the arena");
  auto s = static_cast<cudaStream_t>(stream_);
  check(cudaMemcpyAsync(host + offset, dev + offset, bytes,
                        cudaMemcpyDeviceToHost, s),
        "cudaMemcpyAsync from the device");
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

void synchronizeStream(void *stream) {
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)),
        "cudaStreamSynchronize");
}

void DeviceArena::pull() {
  if (!deviceAhead)
    return;
  download(0, size);
  deviceAhead = false;
}

float *DeviceArena::stage(float *devicePointer, int64_t count) {
  if (count == 0)
    return nullptr; // nothing to move; the collectives accept (NULL, 0)
  auto *p = reinterpret_cast<uint8_t *>(devicePointer);
  uint64_t bytes = uint64_t(count) * sizeof(float);
  if (p < dev || uint64_t(p - dev) > size || bytes > size - uint64_t(p - dev))
    throw Error(OTC_INTERNAL, "a collective's buffer is not in the arena");
  uint64_t offset = uint64_t(p - dev);
  download(offset, bytes);
  staged.emplace_back(offset, bytes);
  return reinterpret_cast<float *>(host + offset);
}

void DeviceArena::pushStaged() {
  for (auto [offset, bytes] : staged)
    copyUp(offset, bytes);
  staged.clear();
}

void DeviceArena::pushHostRange(const void *hostPointer, uint64_t bytes) {
  auto *p = static_cast<const uint8_t *>(hostPointer);
  if (p < host || uint64_t(p - host) > size)
    throw Error(OTC_INTERNAL, "a host range is not in the arena's mirror");
  copyUp(uint64_t(p - host), bytes);
}

std::string DeviceArena::describe() const {
  cudaDeviceProp prop{};
  std::string name = cudaGetDeviceProperties(&prop, ordinal) == cudaSuccess
                         ? std::string(" (") + prop.name + ")"
                         : std::string();
  return "CUDA device " + std::to_string(ordinal) + name;
}

std::string deviceStatusMessage() { return otckd_status_message(); }

} // namespace otc
