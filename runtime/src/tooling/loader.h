//===- loader.h - Shuffled, sharded batches ---------------------*- C++ -*-===//
//
// The loader is defined on the *global* batch so that W ranks with batch B
// see exactly the samples one rank with batch W*B sees: per epoch a global
// permutation of the N samples (Fisher-Yates driven by std::mt19937_64,
// seeded from the seed and the epoch, so it is the same on every platform);
// global batch g is perm[g*W*B, (g+1)*W*B); rank r takes its slice
// [r*B, (r+1)*B); the last partial global batch is dropped.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_RUNTIME_TOOLING_LOADER_H
#define OTC_RUNTIME_TOOLING_LOADER_H

#include <cstdint>
#include <vector>

namespace otc {

/// Portable permutation of [0, n) for (seed, epoch).
std::vector<int64_t> epochPermutation(int64_t n, uint64_t seed, int64_t epoch);

class Loader {
public:
  /// What a checkpoint must hold to continue exactly where it stopped.
  struct State {
    uint64_t seed = 0;
    int64_t epoch = 0;    // 0-based
    int64_t position = 0; // global batches taken in this epoch
    uint8_t shuffle = 1;
    int64_t numSamples = 0, worldSize = 1, batch = 1;
  };

  Loader(int64_t numSamples, int32_t worldSize, int32_t rank, int64_t batch,
         uint64_t seed, bool shuffle);

  int64_t batchesPerEpoch() const { return batchesPerEpoch_; }
  int64_t epoch() const { return state_.epoch; }
  int64_t position() const { return state_.position; }
  /// This rank's sample indices of the next batch; moves to the next epoch
  /// (a new permutation) when the current one is exhausted.
  std::vector<int64_t> next();

  const State &state() const { return state_; }
  /// Restores a saved position; throws when it was saved for another
  /// dataset size, world size or batch.
  void restore(const State &state);

private:
  void startEpoch();

  State state_;
  int32_t rank_;
  int64_t batchesPerEpoch_;
  std::vector<int64_t> perm_;
  int64_t permEpoch_ = -1;
};

} // namespace otc

#endif // OTC_RUNTIME_TOOLING_LOADER_H
