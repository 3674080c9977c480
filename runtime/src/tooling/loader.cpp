//===- loader.cpp - Global shuffled batches sharded by rank ---------------===//

#include "tooling/loader.h"
#include "core/status.h"

#include <algorithm>
#include <random>
#include <string>

namespace otc {

namespace {

// Mixes seed and epoch so consecutive epochs get unrelated streams.
uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Unbiased integer in [0, bound) by rejection: std::uniform_int_distribution
// differs between standard libraries, this does not.
uint64_t uniformBelow(std::mt19937_64 &rng, uint64_t bound) {
  uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  uint64_t v;
  do {
    v = rng();
  } while (v >= limit);
  return v % bound;
}

} // namespace

std::vector<int64_t> epochPermutation(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    perm[size_t(i)] = i;
  std::mt19937_64 rng(splitmix64(seed ^ splitmix64(uint64_t(epoch))));
  for (int64_t i = n - 1; i > 0; --i) {
    int64_t j = int64_t(uniformBelow(rng, uint64_t(i) + 1));
    std::swap(perm[size_t(i)], perm[size_t(j)]);
  }
  return perm;
}

Loader::Loader(int64_t numSamples, int32_t worldSize, int32_t rank,
               int64_t batch, uint64_t seed, bool shuffle)
    : rank_(rank) {
  state_.seed = seed;
  state_.shuffle = shuffle ? 1 : 0;
  state_.numSamples = numSamples;
  state_.worldSize = worldSize;
  state_.batch = batch;
  int64_t global = int64_t(worldSize) * batch;
  batchesPerEpoch_ = global > 0 ? numSamples / global : 0;
  if (batchesPerEpoch_ == 0)
    throw Error(OTC_INVALID_ARGUMENT,
                "the dataset has " + std::to_string(numSamples) +
                    " samples, fewer than one global batch of " +
                    std::to_string(global) + " (" + std::to_string(worldSize) +
                    " ranks x batch " + std::to_string(batch) + ")");
}

void Loader::startEpoch() {
  if (permEpoch_ == state_.epoch)
    return;
  if (state_.shuffle) {
    perm_ = epochPermutation(state_.numSamples, state_.seed, state_.epoch);
  } else {
    perm_.resize(size_t(state_.numSamples));
    for (int64_t i = 0; i < state_.numSamples; ++i)
      perm_[size_t(i)] = i;
  }
  permEpoch_ = state_.epoch;
}

std::vector<int64_t> Loader::next() {
  if (state_.position >= batchesPerEpoch_) {
    ++state_.epoch;
    state_.position = 0;
  }
  startEpoch();
  int64_t begin =
      state_.position * state_.worldSize * state_.batch + rank_ * state_.batch;
  std::vector<int64_t> indices(perm_.begin() + begin,
                               perm_.begin() + begin + state_.batch);
  ++state_.position;
  return indices;
}

void Loader::restore(const State &s) {
  if (s.numSamples != state_.numSamples || s.worldSize != state_.worldSize ||
      s.batch != state_.batch)
    throw Error(OTC_FAILED_PRECONDITION,
                "the checkpoint's data position is for " +
                    std::to_string(s.numSamples) + " samples, " +
                    std::to_string(s.worldSize) + " ranks, batch " +
                    std::to_string(s.batch) + "; this run has " +
                    std::to_string(state_.numSamples) + " samples, " +
                    std::to_string(state_.worldSize) + " ranks, batch " +
                    std::to_string(state_.batch));
  if (s.position < 0 || s.position > batchesPerEpoch_ || s.epoch < 0)
    throw Error(OTC_DATA_LOSS, "the checkpoint's data position is invalid");
  state_ = s;
  permEpoch_ = -1;
}

} // namespace otc

extern "C" otc_status_t otc_epoch_permutation(int64_t n, uint64_t seed,
                                              int64_t epoch, int64_t *out) {
  return otc::guard([&] {
    if (n < 0)
      throw otc::Error(OTC_INVALID_ARGUMENT,
                       "otc_epoch_permutation: n must be >= 0, got " +
                           std::to_string(n));
    if (n > 0 && !out)
      throw otc::Error(OTC_INVALID_ARGUMENT, "otc_epoch_permutation: out is "
                                             "NULL");
    std::vector<int64_t> perm = otc::epochPermutation(n, seed, epoch);
    std::copy(perm.begin(), perm.end(), out);
  });
}
