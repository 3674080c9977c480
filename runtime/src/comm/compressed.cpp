//===- compressed.cpp - Compressed gradient all-reduce --------------------===//
//
// compressed_all_reduce_mean_f32(comm, desc, g, n, r, bucket) on W ranks, at
// optimizer step t (1-based; a skipped step does not advance t):
//
//  * Dense steps: t <= desc.warmup_steps, or exchange ALL_REDUCE (method
//    NONE). A plain fp32 mean all-reduce (counted as all_reduce_mean_f32:
//    allReduceBytes of n * 4, each way); the residual is not touched. The
//    mean is identical on every rank, so a non-finite mean is detected
//    locally and skips the step everywhere.
//
//  * Compressed steps, in this order:
//     1. Adaptive ratio (desc.adaptive and a method with a ratio: TOPK,
//        TOPK_INT8, RANDOMK). The bucket's norm over ranks
//            ‖g‖ = sqrt( (1/W) Σ_ranks Σ_i g_i² )
//        (one MPI_Allreduce of a double, 8 bytes counted). A non-finite ‖g‖
//        skips the step on every rank. ‖g‖₀ is the largest ‖g‖ of the
//        bucket's compressed steps so far (checkpointed), and
//            ratio = clamp(ratio_max · ‖g‖ / ‖g‖₀, ratio_min, ratio_max)
//        (ratio_max while ‖g‖₀ is unset): lighter compression while the norm
//        is high, heavier as it falls. Every rank computes it from the same
//        all-reduced numbers, so all agree; desc.ratio is not used. Without
//        adaptive, ratio = desc.ratio.
//     2. Compress g (+ r, updating r, with error feedback) with otck_compress
//        into this rank's slot of the gather buffer; the kernel saves the
//        residual as it reads it (otck_compress_saving_f32). RANDOMK's seed
//        is mixed from the step's seed and the bucket.
//     3. Agree on finiteness: an int MAX all-reduce of "compress saw a NaN or
//        an infinity" (4 bytes counted). If set on any rank, every rank
//        restores r and returns OTC_STEP_SKIPPED_NONFINITE.
//     4. All-gather the fixed-size payloads (P bytes each, P from
//        otck_compress_payload_bytes; P * (W - 1) bytes counted each way)
//        and g = (1/W) Σ_ranks decompress(payload) (otck_decompress_sum_f32).
//        Finite gradients can still give a mean that is not: fp16 and bf16
//        decode an element beyond their range as infinity, and the sum of
//        the W decoded payloads overflows where |g| > FLT_MAX / W. Every
//        rank sees the same sum (the kernel reports it) and skips the step
//        (OTC_STEP_SKIPPED_NONFINITE).
//    With exchange REDUCE_SCATTER, step 4 is two-staged instead
//    (reduceScatter below): an all-to-all of the ranks' shards of the
//    payload, each owner's sum compressed again (its error added to the
//    owner's residual), and an all-gather of those.
//    W == 1 runs the same compress/decompress (same numerics as W ranks),
//    but no collective runs and nothing is counted.
//
//  * A bucket of more than 2^20 elements whose exchange is queued (not
//    adaptive, whose job does it all on the collectives thread; not RANDOMK,
//    whose choice depends on a block's index within the call) goes in
//    pieces of 2^20 (whole blocks): each piece is compressed and its
//    all-gather and decompression queued at once, so that the link carries
//    one piece while the next is compressed. Same payload bytes, same
//    result bits; the finiteness flag comes after the last piece, so a
//    skipped step has gathered the payloads (P * (W - 1) + 4 bytes).
//
//  So a compressed step counts P * (W - 1) + 4 (+ 8 adaptive) bytes sent
//  and as many received per bucket when W > 1, and 0 when W == 1; with the
//  reduce-scatter exchange, rank r sends P - S_r + (S_r + 4) * (W - 1) + 4
//  (+ 8), S_r being its shard's payload (about P / W).
//
// Momentum correction with factor masking (Deep Gradient Compression; a
// `velocity` u, this rank's, and the step's momentum m in [0, 1)): before
// anything else u = m · u + g. A compressed step sends u and its tail,
// w = u + m/(1-m) · u, in g's place in what is compressed with the
// residual (the adaptive ratio's norm is u's); once this
// rank's payload is written, u = 0 at every index it sends, and at every
// other index the tail goes back out of the residual
// (otck_compress_mask_sent_tail_f32), which keeps u + residual there as
// plain masking would. The tail is what momentum would still add of u over
// the steps to come (m u + m^2 u + ...): masking alone drops it, so an
// index sent often trains as without momentum (measured: 1-2 points of
// test accuracy lost on 4 ranks); sent with its value, each gradient
// counts 1/(1-m) times as under momentum SGD, and no velocity is left to
// push a stale index on. With desc.nesterov the base is g instead of u
// (w = g + m/(1-m) · u; without the tail, the look-ahead m · u + g). A
// dense step (`--compress-warmup`) sends u (the look-ahead) whole and
// keeps it: momentum SGD. The mean is written to g's buffer as without.
//
// A skipped step leaves no trace: the session undoes every bucket already
// compressed in that step (residual, velocity, ‖g‖₀) when the program
// returns OTC_STEP_SKIPPED_NONFINITE, and does not advance the step counter.
//
//===----------------------------------------------------------------------===//

#include "comm/compressed.h"
#include "core/status.h"

#include <otc/compress.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace otc {

namespace {

// Buckets are few (one per owner group and size class); a larger index is a
// corrupt call, not a reason to allocate gigabytes of state.
constexpr int64_t kMaxBuckets = 1 << 16;

[[noreturn]] void badDesc(int64_t bucket, const std::string &what) {
  throw Error(OTC_INVALID_ARGUMENT, "compressed all-reduce of bucket " +
                                        std::to_string(bucket) + ": " + what);
}

bool validRatio(float r) { return r > 0.f && r <= 1.f; }

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Double accumulation: the sum is NaN or infinite iff some g_i is (a float
// squared stays far below the double range).
double sumSquares(const float *g, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i)
    s += double(g[i]) * double(g[i]);
  return s;
}

bool allFinite(const float *g, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(g[i]))
      return false;
  return true;
}

} // namespace

MomentumTail momentumTail(float momentum, bool nesterov, bool dense) {
  if (dense)
    return {nesterov, momentum, 0.0f};
  // Momentum would add m u + m^2 u + ... = m/(1-m) u after this step.
  const double m = momentum, ahead = m / (1.0 - m);
  return {true, float(ahead), float(nesterov ? ahead - m : ahead)};
}

bool compressUsesRatio(int32_t method) {
  return method == OTCK_COMPRESS_TOPK || method == OTCK_COMPRESS_TOPK_INT8 ||
         method == OTCK_COMPRESS_RANDOMK;
}

void checkCompressDesc(const otc_compress_desc_t &d, int64_t bucket) {
  if (d.method < OTCK_COMPRESS_NONE || d.method > OTCK_COMPRESS_POWERSGD)
    badDesc(bucket, "unknown method " + std::to_string(d.method));
  const bool lowRank = d.method == OTCK_COMPRESS_POWERSGD;
  if (lowRank && d.exchange != OTC_EXCHANGE_ALL_REDUCE)
    badDesc(bucket, "PowerSGD all-reduces its factors: its exchange is the "
                    "all-reduce");
  if (lowRank && (d.powersgd_rank < 1 || d.num_matrices < 0 ||
                  (d.num_matrices > 0 && !d.matrices) || d.adaptive))
    badDesc(bucket, "bad PowerSGD rank or matrices");
  if (!lowRank && (d.powersgd_rank != 0 || d.num_matrices != 0))
    badDesc(bucket, "PowerSGD's rank and matrices with another method");
  if (d.exchange != OTC_EXCHANGE_ALL_GATHER &&
      d.exchange != OTC_EXCHANGE_REDUCE_SCATTER &&
      d.exchange != OTC_EXCHANGE_ALL_REDUCE)
    badDesc(bucket, "unknown exchange " + std::to_string(d.exchange));
  if (d.exchange == OTC_EXCHANGE_ALL_REDUCE && d.method != OTCK_COMPRESS_NONE &&
      !lowRank)
    badDesc(bucket, "the plain all-reduce exchange sends fp32 (method none) "
                    "or PowerSGD's factors, not method " +
                        std::to_string(d.method));
  if (d.warmup_steps < 0)
    badDesc(bucket, "negative warmup_steps");
  if (d.nesterov != 0 && d.nesterov != 1)
    badDesc(bucket, "nesterov must be 0 or 1");
  if (!compressUsesRatio(d.method))
    return;
  if (d.adaptive) {
    if (!validRatio(d.ratio_min) || !validRatio(d.ratio_max) ||
        d.ratio_min > d.ratio_max)
      badDesc(bucket, "adaptive ratio bounds [" + std::to_string(d.ratio_min) +
                          ", " + std::to_string(d.ratio_max) +
                          "] are not within (0, 1]");
  } else if (!validRatio(d.ratio)) {
    badDesc(bucket,
            "ratio " + std::to_string(d.ratio) + " is not within (0, 1]");
  }
}

otck_compress_config compressConfig(const otc_compress_desc_t &desc,
                                    float ratio, uint64_t stepSeed,
                                    int64_t bucket) {
  otck_compress_config cfg{};
  cfg.method = otck_compress_method(desc.method);
  cfg.block_size = desc.block_size;
  cfg.ratio = ratio;
  cfg.seed = splitmix64(stepSeed ^ splitmix64(uint64_t(bucket)));
  return cfg;
}

int64_t compressPayloadBytes(const otck_compress_config &cfg, int64_t n,
                             int64_t bucket) {
  int64_t p = otck_compress_payload_bytes(&cfg, n);
  if (p < 0)
    badDesc(bucket, "the kernels refuse method " +
                        std::to_string(int(cfg.method)) + " with block size " +
                        std::to_string(cfg.block_size) + " and ratio " +
                        std::to_string(cfg.ratio));
  return p;
}

int64_t compressStateFloats(const otc_compress_desc_t &d) {
  if (d.method != OTCK_COMPRESS_POWERSGD || d.powersgd_rank < 1 ||
      d.num_matrices < 0 || (d.num_matrices > 0 && !d.matrices))
    return 0;
  int64_t total = 0;
  for (int64_t i = 0; i < d.num_matrices; ++i) {
    const int64_t rows = d.matrices[3 * i + 1], cols = d.matrices[3 * i + 2];
    if (rows < 1 || cols < 1 || cols > (int64_t(1) << 40))
      return 0;
    total += cols * std::min<int64_t>({d.powersgd_rank, rows, cols});
  }
  return total;
}

void checkMatrices(const otc_compress_desc_t &d, int64_t count,
                   int64_t bucket) {
  if (d.method != OTCK_COMPRESS_POWERSGD)
    return;
  int64_t end = 0;
  for (int64_t i = 0; i < d.num_matrices; ++i) {
    const int64_t *m = d.matrices + 3 * i;
    if (m[0] < end || m[1] < 1 || m[2] < 1 || m[1] > count ||
        m[2] > count / m[1] || m[0] > count - m[1] * m[2])
      badDesc(bucket, "PowerSGD matrix " + std::to_string(i) +
                          " is not after the previous one within the "
                          "bucket of " +
                          std::to_string(count) + " floats");
    end = m[0] + m[1] * m[2];
  }
}

float adaptiveRatio(double norm, double norm0, float ratioMin, float ratioMax) {
  if (!(norm0 > 0) || !std::isfinite(norm0))
    return ratioMax;
  double r = double(ratioMax) * norm / norm0;
  if (!(r > double(ratioMin))) // also a NaN norm
    return ratioMin;
  return r < double(ratioMax) ? float(r) : ratioMax;
}

BucketState &CompressState::bucket(int64_t index) {
  if (index < 0 || index >= kMaxBuckets)
    throw Error(OTC_INVALID_ARGUMENT,
                "compressed all-reduce: bucket index " + std::to_string(index) +
                    " is outside [0, " + std::to_string(kMaxBuckets) + ")");
  if (size_t(index) >= buckets.size())
    buckets.resize(size_t(index) + 1);
  return buckets[size_t(index)];
}

void CompressState::undoStep() {
  // Newest first: if a bucket was (wrongly) reduced twice in one step, its
  // oldest saved state wins.
  for (auto it = touched.rbegin(); it != touched.rend(); ++it) {
    BucketState &b = buckets[size_t(it->bucket)];
    if (it->residual)
      std::memcpy(it->residual, b.savedResidual.data(),
                  size_t(it->count) * sizeof(float));
    if (it->velocity)
      std::memcpy(it->velocity, b.savedVelocity.data(),
                  size_t(it->count) * sizeof(float));
    if (it->state)
      std::memcpy(it->state, b.savedState.data(),
                  size_t(it->stateCount) * sizeof(float));
    b.norm0 = it->norm0;
    b.ratio = it->ratio;
    b.steps = it->steps;
  }
  touched.clear();
}

/// Puts back the velocity of `undo`'s bucket as it was before this step.
static void restoreVelocity(BucketState &b, const BucketUndo &undo) {
  if (undo.velocity)
    std::memcpy(undo.velocity, b.savedVelocity.data(),
                size_t(undo.count) * sizeof(float));
}

/// Masks the velocity where `payload` (this rank's, of `n` elements) sends
/// and takes the tail back out of the residual elsewhere.
static void maskSent(const otck_compress_config &cfg, int64_t n,
                     const uint8_t *payload, float tail, float *velocity,
                     float *residual, int64_t bucket) {
  if (otck_compress_mask_sent_tail_f32(&cfg, n, payload, tail, velocity,
                                       residual) != 0)
    badDesc(bucket, "the masking kernel refused the configuration");
}

/// A non-finite bucket: without an owner group every rank sees it and the
/// step is skipped; in an SDP owner group it is remembered for agree_finite
/// and the step goes on in step with the group.
static int nonfinite(StepComm &sc, const std::vector<int64_t> *members) {
  if (!members)
    return OTC_STEP_SKIPPED_NONFINITE;
  sc.pendingNonfinite = true;
  return OTC_STEP_OK;
}

/// Agrees on a bucket's finiteness, `bad` being this rank's compression's
/// verdict. In an SDP owner group a bad bucket is remembered for
/// agree_finite and its exchange goes on. Otherwise, when any rank's is
/// bad, every rank restores the bucket's residual and ‖g‖₀: true, skip.
static bool agreeToSkip(StepComm &sc, BucketState &b, const BucketUndo &undo,
                        const std::vector<int64_t> *members, bool bad) {
  if (members) {
    if (bad)
      sc.pendingNonfinite = true;
    return false;
  }
  if (!anyRank(sc.comm, bad))
    return false;
  if (undo.residual)
    std::memcpy(undo.residual, b.savedResidual.data(),
                size_t(undo.count) * sizeof(float));
  restoreVelocity(b, undo);
  b.norm0 = undo.norm0;
  return true;
}

/// data = the sum of `count` payloads divided by `world` (the mean of the
/// all-gather's W payloads, or one owner's sum of a shard); true when some of
/// it is not finite.
static bool decompressMean(const otck_compress_config &cfg, int64_t n,
                           const uint8_t *payloads, int count, int world,
                           float *data, int64_t bucket) {
  const int rc = otck_decompress_sum_f32(&cfg, n, payloads, count,
                                         1.0f / float(world), data);
  if (rc < 0) // the config was accepted before; a kernel/ABI mismatch
    badDesc(bucket, "the decompression kernel refused the configuration");
  return rc != 0;
}

/// The end of a bucket's exchange, the mean decompressed: `meanNonfinite`
/// when some of it is not finite (see the header's step 4). Every member
/// decoded the same payloads, so all see it and skip together (the session
/// undoes this bucket).
static int settle(StepComm &sc, BucketState &b, const otck_compress_config &cfg,
                  bool meanNonfinite, const std::vector<int64_t> *members) {
  if (meanNonfinite)
    return nonfinite(sc, members);
  b.ratio = cfg.ratio;
  ++b.steps;
  return OTC_STEP_OK;
}

/// Elements per piece of a bucket exchanged in pieces (a multiple of the
/// block size): about 4 MiB of gradient.
static int64_t exchangePiece(const otck_compress_config &cfg) {
  constexpr int64_t kPieceElements = int64_t(1) << 20;
  const int64_t block = std::max<int64_t>(cfg.block_size, 1);
  return std::max<int64_t>(1, kPieceElements / block) * block;
}

/// Whether the pieces' payloads of a bucket of `count` elements add up to
/// its payload of `bytes`, which every method but RANDOMK's cut at block
/// boundaries does.
static bool cutsIntoPieces(const otck_compress_config &cfg, int64_t count,
                           int64_t bytes) {
  if (cfg.method == OTCK_COMPRESS_RANDOMK)
    return false;
  const int64_t piece = exchangePiece(cfg);
  if (count <= piece)
    return false;
  const int64_t whole = count / piece, rest = count % piece;
  int64_t sum = whole * otck_compress_payload_bytes(&cfg, piece);
  if (rest > 0)
    sum += otck_compress_payload_bytes(&cfg, rest);
  return sum == bytes;
}

/// compressAndExchange for a bucket of more than one piece, its exchange
/// queued: each piece is compressed on the calling thread and its
/// all-gather and decompression queued at once, so that the link carries
/// the first piece while the next ones are compressed and the pieces
/// received are decompressed while later ones travel. The pieces' payloads
/// are the bucket's, cut at block boundaries (RANDOMK, whose choice depends
/// on the block's index within the call, is not cut), so the result is the
/// same bits. Finiteness is agreed after the last piece (one flag, as for a
/// whole bucket): a skipped step has gathered the payloads.
static int exchangeInPieces(StepComm &sc, const otck_compress_config &cfg,
                            const float *src, float *data, int64_t count,
                            float *residual, BucketState &b,
                            const BucketUndo &undo,
                            const std::vector<int64_t> *members, int world,
                            int rank) {
  const int64_t bucket = undo.bucket, piece = exchangePiece(cfg);
  const bool feedback = residual != nullptr;
  BucketState *bp = &b; // stable: CompressState keeps buckets in a deque
  StepComm *scp = &sc;
  bool anyBad = false;
  // This step's pieces: none of the bucket's jobs of earlier steps is left
  // (a step drains its collectives before it returns).
  b.meanNonfinite = false;
  size_t offset = 0; // of this piece's W payloads in `gathered`
  for (int64_t begin = 0; begin < count; begin += piece) {
    const int64_t n = std::min(piece, count - begin);
    const int64_t p = compressPayloadBytes(cfg, n, bucket);
    uint8_t *mine = b.gathered.data() + offset + size_t(rank) * size_t(p);
    // Every piece is compressed and saved, a bad one too (its residual is
    // left as it was): the undo below restores the whole bucket.
    int rc = otck_compress_saving_f32(
        &cfg, n, src + begin, feedback ? residual + begin : nullptr,
        feedback ? b.savedResidual.data() + begin : nullptr, mine);
    if (rc < 0)
      badDesc(bucket, "the compression kernel refused the configuration");
    if (rc == 0 && undo.velocity)
      maskSent(cfg, n, mine, b.tail, undo.velocity + begin,
               feedback ? residual + begin : nullptr, bucket);
    anyBad |= rc != 0;
    const bool last = begin + n == count;
    const bool bad = anyBad;
    auto exchange = [=] {
      uint8_t *payloads = bp->gathered.data() + offset;
      if (members)
        groupAllGatherInPlace(scp->comm, *members, payloads, p);
      else
        allGatherInPlace(scp->comm, payloads, p);
      const bool meanBad =
          decompressMean(cfg, n, payloads, world, world, data + begin, bucket);
      bp->meanNonfinite |= meanBad;
      if (!last)
        return int(OTC_STEP_OK);
      if (agreeToSkip(*scp, *bp, undo, members, bad))
        return int(OTC_STEP_SKIPPED_NONFINITE);
      scp->compress->touched.push_back(undo);
      return settle(*scp, *bp, cfg, bp->meanNonfinite, members);
    };
    rc = runCollective(&sc, true, "compressed exchange", exchange);
    if (rc != OTC_STEP_OK || last) // run here (no collectives thread)
      return rc;
    offset += size_t(p) * size_t(world);
  }
  return OTC_STEP_OK;
}

/// PowerSGD's matrices of `desc` for the kernels.
static std::vector<otck_powersgd_matrix>
lowRankMatrices(const otc_compress_desc_t &desc) {
  std::vector<otck_powersgd_matrix> mats(size_t(desc.num_matrices));
  for (size_t i = 0; i < mats.size(); ++i)
    mats[i] = {desc.matrices[3 * i], desc.matrices[3 * i + 1],
               desc.matrices[3 * i + 2]};
  return mats;
}

/// Calls `fn(begin, end)` for every range of the bucket of `count` floats
/// outside PowerSGD's matrices, in order.
template <typename Fn>
static void forEachUncompressed(const std::vector<otck_powersgd_matrix> &mats,
                                int64_t count, Fn fn) {
  int64_t at = 0;
  for (const otck_powersgd_matrix &m : mats) {
    if (m.offset > at)
      fn(at, m.offset);
    at = m.offset + m.rows * m.cols;
  }
  if (count > at)
    fn(at, count);
}

/// A PowerSGD step of one bucket (method POWERSGD; Vogels et al. 2019,
/// torch's powerSGD_hook), as one job on the collectives thread:
///  1. a Q of zeros (a fresh state) starts from the seeded normal of
///     otck_powersgd_init_q_f32, seeded by the bucket's index (the same on
///     every rank, whatever the program's seed, as torch's fixed seed);
///  2. with error feedback M = g + e on every matrix (in the residual's
///     buffer), else M = g; P = M Q in the same pass;
///  3. the rest of the bucket (gathered) is averaged uncompressed;
///  4. P is averaged over the ranks and orthonormalised (Gram-Schmidt);
///  5. Q = M^T P, averaged over the ranks: the new state (warm start);
///  6. g = P Q^T on every matrix, e = M - P Q^T.
/// The averages are mean all-reduces (counted as such); torch sums P, which
/// the orthonormalisation makes the same, and divides the sum of Q by W.
/// A P, Q or uncompressed mean that is not finite, or a P Q^T that
/// overflows (the same on every rank: the kernel's bits do not depend on
/// the CPU), skips the step; the residual and Q are restored.
static int powerSgd(StepComm &sc, const otc_compress_desc_t &desc, float *data,
                    int64_t count, float *residual, float *q, BucketState &b,
                    int64_t bucket, const std::vector<int64_t> *members) {
  const int64_t qFloats = compressStateFloats(desc);
  BucketUndo undo{bucket,  residual, nullptr, count,  b.norm0,
                  b.ratio, b.steps,  q,       qFloats};
  if (residual && b.savedResidual.size() < size_t(count))
    b.savedResidual.resize(size_t(count));
  if (b.savedState.size() < size_t(qFloats))
    b.savedState.resize(size_t(qFloats));
  StepComm *scp = &sc;
  BucketState *bp = &b;
  const otc_compress_desc_t d = desc;
  return runCollective(&sc, true, "powersgd exchange", [=] {
    BucketState &st = *bp;
    const std::vector<otck_powersgd_matrix> mats = lowRankMatrices(d);
    const int64_t num = int64_t(mats.size()), rank = d.powersgd_rank;
    auto mean = [&](float *v, int64_t n) {
      if (n == 0)
        return true;
      if (members)
        groupAllReduceMeanF32(scp->comm, *members, v, n);
      else
        allReduceMeanF32(scp->comm, v, n);
      return allFinite(v, n);
    };
    auto refused = [&] {
      badDesc(bucket, "the PowerSGD kernels refused the matrices");
    };
    if (qFloats)
      std::memcpy(st.savedState.data(), q, size_t(qFloats) * 4);
    // (checkCompressDesc has the rank >= 1: no matrices is 0 floats.)
    const int64_t pFloats = otck_powersgd_p_floats(mats.data(), num, rank);
    if (pFloats < 0 || otck_powersgd_init_q_f32(mats.data(), num, rank,
                                                uint64_t(bucket), q) < 0)
      refused();
    st.lowRankP.resize(size_t(pFloats));
    float *p = st.lowRankP.data();
    float *m = data;
    if (residual) {
      // The undo's copy of e, M = g + e and P = M Q in one pass per matrix;
      // the rest of the bucket is only copied.
      float *saved = st.savedResidual.data();
      if (otck_powersgd_project_feedback_f32(mats.data(), num, rank, data,
                                             residual, saved, q, p) != 0)
        refused();
      forEachUncompressed(mats, count, [&](int64_t begin, int64_t end) {
        std::memcpy(saved + begin, residual + begin,
                    size_t(end - begin) * sizeof(float));
      });
      m = residual;
    } else if (otck_powersgd_project_f32(mats.data(), num, rank, data, q, p) !=
               0) {
      refused();
    }
    scp->compress->touched.push_back(undo);
    // The rest, averaged as it is (no error feedback, as torch's hook).
    st.uncompressed.clear();
    forEachUncompressed(mats, count, [&](int64_t begin, int64_t end) {
      st.uncompressed.insert(st.uncompressed.end(), data + begin, data + end);
    });
    bool finite = mean(st.uncompressed.data(), int64_t(st.uncompressed.size()));
    int64_t at = 0;
    forEachUncompressed(mats, count, [&](int64_t begin, int64_t end) {
      std::copy(st.uncompressed.begin() + at,
                st.uncompressed.begin() + at + (end - begin), data + begin);
      at += end - begin;
    });
    if (num > 0) {
      finite &= mean(p, pFloats);
      if (otck_powersgd_orthonormalize_f32(mats.data(), num, rank, p, 0.0f) !=
              0 ||
          otck_powersgd_back_project_f32(mats.data(), num, rank, m, p, q) != 0)
        refused();
      finite &= mean(q, qFloats);
      // 1: a product overflowed (the kernel checks what it writes; the rest
      // of the bucket was checked by its mean).
      const int rc = otck_powersgd_decompress_f32(mats.data(), num, rank, p, q,
                                                  1.0f, data, residual);
      if (rc < 0)
        refused();
      finite &= rc == 0;
    }
    if (!finite)
      return nonfinite(*scp, members);
    ++st.steps;
    return int(OTC_STEP_OK);
  });
}

Shards cutShards(const otck_compress_config &cfg, int64_t count, int world,
                 int64_t bucket) {
  Shards s;
  const size_t w = size_t(world);
  for (auto *v :
       {&s.begin, &s.size, &s.offset, &s.bytes, &s.region, &s.regionOffset})
    v->resize(w);
  for (size_t i = 0; i < w; ++i) {
    s.size[i] =
        otck_compress_shard(&cfg, count, world, int64_t(i), &s.begin[i]);
    if (s.size[i] < 0)
      badDesc(bucket, "the kernels refuse to cut the bucket into shards");
    s.offset[i] = compressPayloadBytes(cfg, s.begin[i], bucket);
    s.bytes[i] = compressPayloadBytes(cfg, s.size[i], bucket);
    // The pieces must tile the bucket's payload (a block-wise layout).
    const int64_t next =
        compressPayloadBytes(cfg, s.begin[i] + s.size[i], bucket);
    if (s.offset[i] + s.bytes[i] != next)
      badDesc(bucket, "the method's payload does not cut at block "
                      "boundaries");
    s.region[i] = 4 + (s.bytes[i] + 3) / 4 * 4;
    s.regionOffset[i] = s.regionTotal;
    s.regionTotal += s.region[i];
  }
  return s;
}

/// Error feedback of the two-stage exchange's second compression: what an
/// owner's payload dropped returns to the ranks that sent it, each taking
/// back its own first-stage values at the indices dropped (its decoded
/// payload, masked by every owner's payload), and the owner adds its
/// quantisation error at the indices kept. Together that is the owner's
/// error of the sum, S - decoded, which a later step's mean brings back as
/// every rank's own error is; spread over the senders, no rank's residual
/// grows by the world size.
static void returnDropped(const otck_compress_config &cfg, const Shards &sh,
                          BucketState &b, float *residual, int64_t count,
                          int world, int rank, int64_t bucket) {
  auto kernel = [&](int rc) {
    if (rc != 0)
      badDesc(bucket, "a kernel refused the second stage's error feedback");
  };
  if (b.returned.size() < size_t(count))
    b.returned.resize(size_t(count));
  float *mineBack = b.returned.data();
  kernel(otck_decompress_sum_f32(&cfg, count, b.gathered.data(), 1, 1.0f,
                                 mineBack));
  for (int s = 0; s < world; ++s) {
    const uint8_t *kept = b.shardBlocks.data() + sh.regionOffset[size_t(s)] + 4;
    kernel(otck_compress_mask_sent_f32(&cfg, sh.size[size_t(s)], kept,
                                       mineBack + sh.begin[size_t(s)]));
  }
  kernel(
      otck_compress_accumulate_f32(count, 1.0f, mineBack, residual, nullptr));
  // The owner: err - err at the dropped indices = err at the kept ones.
  const size_t me = size_t(rank);
  const int64_t mine = sh.size[me];
  if (mine == 0) // more ranks than blocks: this rank owns no shard
    return;
  float *err = b.shardError.data(), *dropped = b.returned.data();
  std::memcpy(dropped, err, size_t(mine) * sizeof(float));
  kernel(otck_compress_mask_sent_f32(
      &cfg, mine, b.shardBlocks.data() + sh.regionOffset[me] + 4, dropped));
  kernel(otck_compress_accumulate_f32(mine, -1.0f, err, dropped, nullptr));
  kernel(otck_compress_accumulate_f32(mine, 1.0f, dropped,
                                      residual + sh.begin[me], nullptr));
}

/// compressAndExchange's step 4 with the two-stage exchange
/// (OTC_EXCHANGE_REDUCE_SCATTER), `payload` being this rank's compressed
/// bucket (step 2, as for the all-gather) and `bad` its verdict:
///  a. after the finiteness flag, an all-to-all gives rank s every rank's
///     bytes of shard s, and it sums their decompressions (rank order,
///     scale 1: bitwise the all-gather's sum before its 1/W);
///  b. rank s compresses that sum again into its block of `shardBlocks`,
///     after a 4-byte flag that says whether the sum was not finite;
///  c. an all-gather of the owners' blocks; every rank decodes each shard's
///     payload scaled by 1/W into `data`. A flag set by any owner, or a
///     mean that is not finite, skips the step on every rank (all decode
///     the same bytes). With error feedback, the second compression's
///     error goes back to the residuals (returnDropped).
/// Bytes counted: this rank's payload less its own shard's (to the owners)
/// and its block once per other rank, plus the 4-byte flag: about
/// 2 P (W - 1) / W against the all-gather's P (W - 1).
static int reduceScatter(StepComm &sc, const otck_compress_config &cfg,
                         float *data, int64_t count, float *residual,
                         BucketState &b, const BucketUndo &undo,
                         const std::vector<int64_t> *members, int world,
                         int rank, bool bad) {
  const int64_t bucket = undo.bucket;
  if (agreeToSkip(sc, b, undo, members, bad))
    return OTC_STEP_SKIPPED_NONFINITE;
  // From here on the bucket's update stands unless a later bucket of the
  // same step is skipped; the session then calls undoStep.
  sc.compress->touched.push_back(undo);
  const Shards sh = cutShards(cfg, count, world, bucket);
  const size_t w = size_t(world), me = size_t(rank);
  const int64_t mine = sh.size[me], p = sh.bytes[me];
  if (b.received.size() < size_t(p) * w)
    b.received.resize(size_t(p) * w);
  if (b.shardBlocks.size() < size_t(sh.regionTotal))
    b.shardBlocks.resize(size_t(sh.regionTotal));
  if (residual && b.shardError.size() < size_t(mine))
    b.shardError.resize(size_t(mine));
  std::vector<int64_t> recvBytes(w, p), recvOffset(w);
  for (size_t r = 0; r < w; ++r)
    recvOffset[r] = int64_t(r) * p;
  allToAllV(sc.comm, members, b.gathered.data(), sh.bytes.data(),
            sh.offset.data(), b.received.data(), recvBytes.data(),
            recvOffset.data());

  float *sum = data + sh.begin[me]; // compressed already: takes the result
  int32_t flag = otck_decompress_sum_f32(&cfg, mine, b.received.data(), world,
                                         1.0f, sum) != 0;
  uint8_t *block = b.shardBlocks.data() + sh.regionOffset[me];
  if (!flag) {
    float *err = residual ? b.shardError.data() : nullptr;
    if (err)
      std::fill(err, err + mine, 0.0f);
    const int rc = otck_compress_f32(&cfg, mine, sum, err, block + 4);
    if (rc < 0)
      badDesc(bucket, "the compression kernel refused the configuration");
    flag = rc != 0;
  }
  std::memcpy(block, &flag, 4);
  std::vector<int64_t> sent(w);
  for (size_t r = 0; r < w; ++r)
    sent[r] = 4 + sh.bytes[r];
  allGatherVInPlace(sc.comm, members, b.shardBlocks.data(), sent.data(),
                    sh.regionOffset.data());

  bool meanBad = false;
  for (size_t s = 0; s < w; ++s) {
    std::memcpy(&flag, b.shardBlocks.data() + sh.regionOffset[s], 4);
    meanBad |= flag != 0;
  }
  for (size_t s = 0; s < w && !meanBad; ++s)
    meanBad |= decompressMean(cfg, sh.size[s],
                              b.shardBlocks.data() + sh.regionOffset[s] + 4, 1,
                              world, data + sh.begin[s], bucket);
  if (residual && !meanBad)
    returnDropped(cfg, sh, b, residual, count, world, rank, bucket);
  return settle(sc, b, cfg, meanBad, members);
}

/// Steps 2-4 of a compressed step at `ratio`: compresses `src` (the
/// gradient `data`, or the velocity with its tail) on the calling thread, then
/// exchanges into `data`: queued on the collectives thread (`queue`) or right
/// here (the caller is that thread's job).
static int compressAndExchange(StepComm &sc, const otc_compress_desc_t &desc,
                               const float *src, float *data, int64_t count,
                               float *residual, BucketState &b,
                               const BucketUndo &undo,
                               const std::vector<int64_t> *members, int world,
                               int rank, float ratio, bool queue) {
  const int64_t bucket = undo.bucket;
  const bool feedback = desc.error_feedback != 0;
  const bool adaptive = desc.adaptive && compressUsesRatio(desc.method);
  otck_compress_config cfg = compressConfig(desc, ratio, sc.seed, bucket);
  int64_t p = compressPayloadBytes(cfg, count, bucket);
  // Sized once for the largest payload this descriptor can produce (the
  // adaptive ratio moves k), so steps never reallocate.
  if (b.gathered.size() < size_t(p) * size_t(world)) {
    otck_compress_config most = cfg;
    if (adaptive)
      most.ratio = desc.ratio_max;
    int64_t cap = std::max(p, compressPayloadBytes(most, count, bucket));
    b.gathered.resize(size_t(cap) * size_t(world));
  }
  if (feedback && b.savedResidual.size() < size_t(count))
    b.savedResidual.resize(size_t(count));
  const bool twoStage =
      desc.exchange == OTC_EXCHANGE_REDUCE_SCATTER && world > 1;
  if (queue && !twoStage && cutsIntoPieces(cfg, count, p))
    return exchangeInPieces(sc, cfg, src, data, count,
                            feedback ? residual : nullptr, b, undo, members,
                            world, rank);
  // The all-gather's slot of this rank; the two-stage exchange sends
  // pieces of the payload from the buffer's start.
  uint8_t *mine = b.gathered.data() + (twoStage ? 0 : size_t(rank) * size_t(p));
  // The kernel saves the residual as it streams it, for undoStep.
  int rc = otck_compress_saving_f32(
      &cfg, count, src, feedback ? residual : nullptr,
      feedback ? b.savedResidual.data() : nullptr, mine);
  if (rc < 0) // the config was accepted above; a kernel/ABI mismatch
    badDesc(bucket, "the compression kernel refused the configuration");
  if (rc == 0 && undo.velocity) // factor masking: what was sent is gone
    maskSent(cfg, count, mine, b.tail, undo.velocity,
             feedback ? residual : nullptr, bucket);
  const bool bad = rc != 0;
  BucketState *bp = &b; // stable: CompressState keeps buckets in a deque
  StepComm *scp = &sc;
  float *res = feedback ? residual : nullptr;
  auto exchange = [=] {
    if (twoStage)
      return reduceScatter(*scp, cfg, data, count, res, *bp, undo, members,
                           world, rank, bad);
    if (agreeToSkip(*scp, *bp, undo, members, bad))
      return int(OTC_STEP_SKIPPED_NONFINITE);
    // From here on the bucket's update stands unless a later bucket of
    // the same step is skipped; the session then calls undoStep.
    scp->compress->touched.push_back(undo);
    if (members)
      groupAllGatherInPlace(scp->comm, *members, bp->gathered.data(), p);
    else
      allGatherInPlace(scp->comm, bp->gathered.data(), p);
    const bool meanBad = decompressMean(cfg, count, bp->gathered.data(), world,
                                        world, data, bucket);
    return settle(*scp, *bp, cfg, meanBad, members);
  };
  return queue ? runCollective(&sc, true, "compressed exchange", exchange)
               : exchange();
}

int compressedAllReduceMean(StepComm &sc, const otc_compress_desc_t &desc,
                            float *data, int64_t count, float *residual,
                            float *velocity, float momentum, float *state,
                            int64_t bucket, int64_t group) {
  if (!sc.comm || !sc.compress)
    throw Error(OTC_INVALID_ARGUMENT, "compressed all-reduce without a "
                                      "session communicator");
  if (count < 0 || (count > 0 && !data))
    badDesc(bucket, "bad gradient buffer");
  checkCompressDesc(desc, bucket);
  bool feedback = desc.error_feedback != 0;
  if (feedback && count > 0 && !residual)
    badDesc(bucket, "error feedback is on but the residual is NULL");
  if (velocity && !(momentum >= 0.0f && momentum < 1.0f))
    badDesc(bucket, "momentum correction needs a momentum in [0, 1), got " +
                        std::to_string(momentum));
  if (velocity && desc.method == OTCK_COMPRESS_POWERSGD)
    badDesc(bucket, "PowerSGD keeps no velocity");
  checkMatrices(desc, count, bucket);
  if ((compressStateFloats(desc) > 0) != (state != nullptr))
    badDesc(bucket, state ? "a state for a method that keeps none"
                          : "PowerSGD's state (its matrices' Q) is NULL");
  BucketState &b = sc.compress->bucket(bucket);
  if (count == 0)
    return OTC_STEP_OK;
  // Momentum correction: the velocity takes this step's gradient first (its
  // old value saved for an undo) and is what gets sent.
  if (velocity) {
    if (b.savedVelocity.size() < size_t(count))
      b.savedVelocity.resize(size_t(count));
    if (otck_compress_accumulate_f32(count, momentum, data, velocity,
                                     b.savedVelocity.data()) != 0)
      badDesc(bucket, "bad velocity buffer");
  }
  const bool denseStep = sc.step <= desc.warmup_steps;
  const bool dense = desc.exchange == OTC_EXCHANGE_ALL_REDUCE || denseStep;
  const float *src = velocity ? velocity : data;
  const MomentumTail t = momentumTail(momentum, desc.nesterov != 0, dense);
  if (velocity && t.copied) {
    // u's tail (or Nesterov's look-ahead): w = base + scale u, base u or g.
    if (b.outgoing.size() < size_t(count))
      b.outgoing.resize(size_t(count));
    std::memcpy(b.outgoing.data(), velocity, size_t(count) * sizeof(float));
    if (otck_compress_accumulate_f32(count, t.scale,
                                     desc.nesterov ? data : velocity,
                                     b.outgoing.data(), nullptr) != 0)
      badDesc(bucket, "bad velocity buffer");
    src = b.outgoing.data();
  }
  b.tail = t.unsent;

  // SDP owner group: its members only; a non-finite bucket is remembered
  // for agree_finite rather than ending the step (the others are elsewhere).
  const std::vector<int64_t> *members = nullptr;
  if (group >= 0) {
    if (!sc.groups || group >= int64_t(sc.groups->size()))
      badDesc(bucket, "names an SDP owner group the manifest lacks");
    members = &(*sc.groups)[size_t(group)];
  }
  // The collectives run through runCollective: on the communicator's
  // collectives thread when it has one. The step's own thread compresses a
  // fixed-ratio bucket and queues its exchange; an adaptive bucket's norm,
  // compression and exchange are queued together. The program goes on.
  StepComm *scp = &sc;
  if (desc.method == OTCK_COMPRESS_POWERSGD && !denseStep)
    return powerSgd(sc, desc, data, count, feedback ? residual : nullptr, state,
                    b, bucket, members);
  if (dense) {
    // A dense step sends every element: the velocity (or look-ahead) goes
    // out whole and keeps its momentum, as momentum SGD's (the residual is
    // not touched).
    const BucketUndo undo{bucket,  nullptr, velocity, count,
                          b.norm0, b.ratio, b.steps};
    if (velocity)
      std::memcpy(data, src, size_t(count) * sizeof(float));
    return runCollective(&sc, true, "all_reduce", [=] {
      if (undo.velocity) // the session restores it if the step is skipped
        scp->compress->touched.push_back(undo);
      if (members)
        groupAllReduceMeanF32(scp->comm, *members, data, count);
      else
        allReduceMeanF32(scp->comm, data, count);
      return allFinite(data, count) ? int(OTC_STEP_OK)
                                    : nonfinite(*scp, members);
    });
  }

  const int myRank = otc_comm_rank(sc.comm);
  const int world = members ? int(members->size()) : otc_comm_size(sc.comm);
  const int rank =
      members ? int(std::find(members->begin(), members->end(), myRank) -
                    members->begin())
              : myRank;
  if (rank == world) // a hand-written program; the compiler never does this
    badDesc(bucket, "names SDP owner group " + std::to_string(group) +
                        ", which does not hold rank " + std::to_string(myRank));
  BucketUndo undo{
      bucket, feedback ? residual : nullptr, velocity, count, b.norm0, b.ratio,
      b.steps};

  float ratio = compressUsesRatio(desc.method) ? desc.ratio : 1.f;
  if (desc.adaptive && compressUsesRatio(desc.method)) {
    // The ratio needs every rank's norm before compressing. The norm's
    // all-reduce, the compression and the exchange run as one job on the
    // collectives thread, so the step's thread goes on with backward
    // instead of waiting for the exchanges queued before this one.
    // The velocity's norm, not its tail's (which the momentum scales).
    const float *normOf = velocity ? velocity : data;
    const otc_compress_desc_t d = desc;
    BucketState *bp = &b;
    return runCollective(&sc, true, "compressed exchange", [=] {
      double sq = sumSquares(normOf, count);
      if (members)
        groupAllReduceSumF64(scp->comm, *members, &sq, 1);
      else
        allReduceSumF64(scp->comm, &sq, 1, /*counted=*/true);
      double norm = std::sqrt(sq / double(world));
      float r = d.ratio;
      if (!std::isfinite(norm)) { // every member sees the same sum
        if (int rc = nonfinite(*scp, members); rc != OTC_STEP_OK) {
          restoreVelocity(*bp, undo); // not compressed, not in `touched`
          return rc;
        }
      } else {
        if (norm > bp->norm0) // the largest norm so far
          bp->norm0 = norm;
        r = adaptiveRatio(norm, bp->norm0, d.ratio_min, d.ratio_max);
      }
      return compressAndExchange(*scp, d, src, data, count, residual, *bp, undo,
                                 members, world, rank, r,
                                 /*queue=*/false);
    });
  }
  return compressAndExchange(sc, desc, src, data, count, residual, b, undo,
                             members, world, rank, ratio, /*queue=*/true);
}

int compressedAllReduceCallback(void *opaque, const otc_compress_desc_t *desc,
                                float *data, int64_t count, float *residual,
                                float *velocity, float momentum, float *state,
                                int64_t bucket) {
  return groupCompressedAllReduceCallback(opaque, -1, desc, data, count,
                                          residual, velocity, momentum, state,
                                          bucket);
}

int groupCompressedAllReduceCallback(void *opaque, int64_t group,
                                     const otc_compress_desc_t *desc,
                                     float *data, int64_t count,
                                     float *residual, float *velocity,
                                     float momentum, float *state,
                                     int64_t bucket) {
  auto *sc = static_cast<StepComm *>(opaque);
  try {
    if (!sc || !desc)
      throw Error(OTC_INVALID_ARGUMENT,
                  "compressed all-reduce: comm or desc is NULL");
    return compressedAllReduceMean(*sc, *desc, data, count, residual, velocity,
                                   momentum, state, bucket, group);
  } catch (const std::exception &e) {
    if (sc)
      setCommError(sc->comm, e.what());
    return OTC_STEP_ERR_COMM;
  }
}

} // namespace otc
