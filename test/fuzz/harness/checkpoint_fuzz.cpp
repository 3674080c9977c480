//===- checkpoint_fuzz.cpp - The checkpoint reader ------------------------===//
//
// Against one fixed program (a weight, a bias, their momentum). Most
// mutations would only meet the checksum, so the harness writes the input's
// total size, the program's hash and the CRC32 into it first: the section
// table, the runtime and hyperparameter sections are what gets fuzzed.
//
//===----------------------------------------------------------------------===//

#include "core/checkpoint.h"
#include "core/program.h"
#include "core/status.h"
#include "fuzz_util.h"

#include <zlib.h>

#include <cstring>
#include <vector>

namespace {

const char kManifest[] =
    R"({"otc_manifest_version":1,"model_path":"m.onnx","world_size":1,)"
    R"("batch":2,"seed":0,"loss":"cross-entropy",)"
    R"("optimizer":{"name":"momentum","lr":0.1,"momentum":0.9},)"
    R"("arena_bytes":512,"params":[)"
    R"({"name":"w","dtype":"f32","shape":[3,4],"offset":0},)"
    R"({"name":"b","dtype":"f32","shape":[3],"offset":64}],"state":[)"
    R"({"name":"w.momentum_buffer","dtype":"f32","shape":[3,4],"offset":128,"param":"w"},)"
    R"({"name":"b.momentum_buffer","dtype":"f32","shape":[3],"offset":192,"param":"b"}],)"
    R"("inputs":[{"name":"x","dtype":"f32","shape":[2,4],"offset":256,"role":"data"}],)"
    R"("outputs":[],"loss_offset":320,"eval_output":null,"eval_loss_offset":-1})";

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const otc::Manifest manifest = otc::parseManifest(kManifest, 0);
  std::vector<uint8_t> bytes(data, data + size);
  // Header: magic[8] u32 version u32 flags u64 total u64 hash ...; CRC last.
  if (bytes.size() >= 8 + 4 + 4 + 8 + 8 + 4) {
    uint64_t total = bytes.size(), hash = manifest.hash;
    std::memcpy(&bytes[16], &total, 8);
    std::memcpy(&bytes[24], &hash, 8);
    uint32_t crc = uint32_t(
        crc32_z(crc32_z(0L, Z_NULL, 0), bytes.data(), bytes.size() - 4));
    std::memcpy(&bytes[bytes.size() - 4], &crc, 4);
  }
  std::string path = otc::fuzz::writeInput(bytes.data(), bytes.size(), ".otcc");
  try {
    (void)otc::readCheckpoint(path, manifest);
  } catch (const otc::Error &e) {
    otc::fuzz::verbose(e.what());
    return 0;
  }
  otc::fuzz::verbose("loaded");
  return 0;
}
