//===- device_none.cpp - Arenas of CUDA programs, without CUDA ------------===//
//
// The runtime was built without the CUDA toolkit: a program compiled with
// --target cuda is refused when its session is created.
//
//===----------------------------------------------------------------------===//

#include "core/status.h"
#include "device/device.h"

namespace otc {

std::unique_ptr<DeviceArena> DeviceArena::create(uint8_t *, uint64_t) {
  throw Error(OTC_FAILED_PRECONDITION,
              "this program was compiled with --target cuda, but the OTC "
              "runtime was built without CUDA; rebuild OTC where the CUDA "
              "toolkit is installed, or recompile the program with --target "
              "cpu");
}

// Unreachable: no DeviceArena exists without CUDA.
DeviceArena::~DeviceArena() = default;
void DeviceArena::copyUp(uint64_t, uint64_t) {}
void DeviceArena::beforeStep() {}
void DeviceArena::download(uint64_t, uint64_t) {}
void DeviceArena::pull() {}
float *DeviceArena::stage(float *p, int64_t) { return p; }
void DeviceArena::pushStaged() {}
void DeviceArena::pushHostRange(const void *, uint64_t) {}
std::string deviceStatusMessage() { return ""; }
void synchronizeStream(void *) {}
std::unique_ptr<DeviceCollectives>
createDeviceCollectives(otc_comm_t *, DeviceArena &,
                        const std::vector<std::vector<int64_t>> &) {
  return nullptr;
}

} // namespace otc
