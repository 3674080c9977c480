//===- program.h - Compiled programs and their manifest ---------*- C++ -*-===//
//
// A program is an entry table (linked in or dlopened) plus its manifest,
// parsed and validated once into otc::Manifest so the rest of the runtime
// never touches JSON.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_RUNTIME_CORE_PROGRAM_H
#define OTC_RUNTIME_CORE_PROGRAM_H

#include "core/dtype.h"
#include "otc/runtime.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace otc {

/// A typed view into the arena.
struct TensorSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t offset = 0;
  std::string role;  // inputs: "data", "label" or ""
  std::string param; // state: the parameter it belongs to
  /// SDP parameters: the ranks averaging it (empty: every rank), the
  /// feature ranges [begin, end) this rank keeps per sliced axis of the
  /// full tensor, and whether this rank only receives the owners' values.
  std::vector<int64_t> owners;
  std::vector<std::pair<int64_t, std::vector<int64_t>>> slices;
  /// Held in tiles with different owners (an N-SDP owner count that does
  /// not divide the world size): the tiled axes, the tiles' boundaries
  /// along each (local indices) and each tile's owners, row-major.
  struct Tiles {
    std::vector<int64_t> axes;
    std::vector<std::vector<int64_t>> cuts;
    std::vector<std::vector<int64_t>> owners;
  };
  std::optional<Tiles> tiles;
  bool frozen = false;
  /// A parameter the forward updates (BatchNorm running statistics): each
  /// rank keeps its own.
  bool buffer = false;

  int64_t numel() const;
  /// Elements per sample: the product of shape[1:].
  int64_t sampleNumel() const;
  size_t bytes() const { return size_t(numel()) * dtypeSize(dtype); }
};

struct OptimizerSpec {
  std::string name = "sgd";
  double lr = 0.01, momentum = 0, weightDecay = 0;
  bool nesterov = false;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double alpha = 0.99, lrDecay = 0;
  /// RMSprop: keeps grad_avg; keeps a momentum buffer (and so reads the
  /// run-time momentum; also true for momentum SGD).
  bool centered = false, momentumBuffer = false;
  /// Decay of the weights' EMA (state "<param>.ema"), 0 for none.
  double ema = 0;
};

/// Subnetwork data parallelism: which components each rank owns and which
/// program variant it runs (the top-level manifest of an SDP program).
struct SdpPlan {
  std::string mode, masking;
  double active = 1;
  std::vector<int32_t> rankVariant;
  std::vector<std::vector<int64_t>> groups;
  std::vector<std::pair<std::string, std::vector<int64_t>>> components;
};

struct Manifest {
  int version = 1;
  std::string modelPath;
  int32_t worldSize = 1;
  int64_t batch = 1;
  uint64_t seed = 0;
  std::string loss = "none";
  OptimizerSpec optimizer;
  uint64_t arenaBytes = 0;
  std::vector<TensorSpec> params, state, inputs;
  int64_t lossOffset = -1;
  std::optional<TensorSpec> evalOutput;
  int64_t evalLossOffset = -1;
  int64_t gradNormOffset = -1; ///< the clipped step's norm, -1: none
  std::optional<SdpPlan> sdp;
  /// Identifies the program for checkpoints: parameter and state names,
  /// dtypes and shapes, and the world size (not offsets, which a recompile
  /// may change without changing what a checkpoint means).
  uint64_t hash = 0;

  const TensorSpec *findParam(const std::string &name) const;
  /// The EMA state of parameter `param` ("<param>.ema"), or nullptr.
  const TensorSpec *findEma(const std::string &param) const;
  const TensorSpec *findInput(const std::string &name) const;
  const TensorSpec *inputWithRole(const std::string &role) const;
  /// True when some state differs between ranks (error-feedback residuals,
  /// momentum-corrected velocities, SDP subnetworks):
  /// checkpoints are then written per rank.
  bool hasPerRankState() const;
};

/// Parses and validates a manifest against the arena size of its entry.
Manifest parseManifest(const std::string &json, uint64_t entryArenaBytes);

uint64_t fnv1a64(const void *data, size_t size,
                 uint64_t hash = 0xcbf29ce484222325ull);

} // namespace otc

struct otc_program {
  const otc_program_entry_t *entry = nullptr;
  void *handle = nullptr; // dlopen handle, when loaded from a file
  /// The program (for SDP: the whole model, which only evaluates).
  otc::Manifest manifest;
  /// SDP: the per-rank training programs, parallel to entry->variants.
  std::vector<otc::Manifest> variants;
};

#endif // OTC_RUNTIME_CORE_PROGRAM_H
