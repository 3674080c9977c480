//===- npy_fuzz.cpp - The .npy and IDX[.gz] data loaders ------------------===//
//
// The first byte picks the reader (even: .npy, odd: IDX, which also takes
// gzip); a loaded array is converted to float32 as the driver binds it.
//
//===----------------------------------------------------------------------===//

#include "core/status.h"
#include "fuzz_util.h"
#include "tooling/data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  bool npy = (data[0] & 1) == 0;
  std::string path =
      otc::fuzz::writeInput(data + 1, size - 1, npy ? ".npy" : ".idx");
  try {
    otc::Array a = npy ? otc::readNpy(path) : otc::readIdx(path);
    if (a.dtype != otc::DType::F16 && a.dtype != otc::DType::BF16)
      (void)otc::convertArray(a, otc::DType::F32);
  } catch (const otc::Error &e) {
    otc::fuzz::verbose(e.what());
    return 0;
  }
  otc::fuzz::verbose("loaded");
  return 0;
}
