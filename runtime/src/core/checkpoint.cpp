//===- checkpoint.cpp - Atomic, checksummed checkpoints -------------------===//

#include "core/checkpoint.h"
#include "core/hyper.h"
#include "core/session.h"
#include "core/status.h"

#include <zlib.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace otc {

namespace {

constexpr char kMagic[8] = {'O', 'T', 'C', 'C', 'K', 'P', 'T', '1'};
// 2: the runtime section (compressed all-reduce state, skipped steps).
// 3: the hyper section (run-time hyperparameters, lr schedule).
constexpr uint32_t kVersion = 3;
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 8 + 8 + 4 + 4 + 8 + 8 + 4 + 4;
enum SectionKind : uint32_t {
  kParam = 1,
  kState = 2,
  kExtra = 3,
  kRuntime = 4,
  kSdp = 5, // the SDP assignment of components to ranks, as text
  kHyper = 6
};
constexpr size_t kRuntimeHeaderBytes = 8 + 4 + 4;
constexpr size_t kSavedBucketBytes = 8 + 4 + 4 + 8;

/// The SDP masks a checkpoint belongs to, in words ("" without SDP).
std::string describeSdp(const Manifest &m) {
  if (!m.sdp)
    return "";
  std::ostringstream os;
  os << m.sdp->mode << "-level, " << m.sdp->masking
     << " masking, C = " << m.sdp->active << " on " << m.worldSize << " ranks:";
  for (const auto &[name, owners] : m.sdp->components) {
    os << " " << name << " ->";
    for (size_t i = 0; i < owners.size(); ++i)
      os << (i ? "," : " ") << owners[i];
    os << ";";
  }
  return os.str();
}

uint32_t crcOf(const uint8_t *data, size_t size) {
  return uint32_t(crc32_z(crc32_z(0L, Z_NULL, 0), data, size));
}

class Writer {
public:
  template <typename T> void put(T v) {
    out_.append(reinterpret_cast<const char *>(&v), sizeof v);
  }
  void bytes(const void *p, size_t n) {
    out_.append(static_cast<const char *>(p), n);
  }
  void section(uint32_t kind, const std::string &name, const void *data,
               size_t n) {
    put<uint32_t>(kind);
    put<uint32_t>(uint32_t(name.size()));
    put<uint64_t>(n);
    bytes(name.data(), name.size());
    bytes(data, n);
  }
  std::string &str() { return out_; }

private:
  std::string out_;
};

class Reader {
public:
  Reader(const std::string &path, const uint8_t *p, size_t n)
      : path_(path), p_(p), n_(n) {}
  template <typename T> T get() {
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
  const uint8_t *take(size_t n) {
    if (n > n_ - pos_)
      throw Error(OTC_DATA_LOSS,
                  "checkpoint '" + path_ + "': malformed section table");
    const uint8_t *r = p_ + pos_;
    pos_ += n;
    return r;
  }
  size_t pos() const { return pos_; }

private:
  std::string path_;
  const uint8_t *p_;
  size_t n_, pos_ = 0;
};

void putHyper(Writer &w, const otc_hyperparams_t &h,
              const std::optional<otc_lr_schedule_t> &schedule) {
  for (double v : {h.lr, h.weight_decay, h.momentum, h.beta1, h.beta2, h.eps,
                   h.alpha, h.lr_decay})
    w.put<double>(v);
  w.put<uint32_t>(schedule ? 1 : 0);
  w.put<uint32_t>(0);
  if (!schedule)
    return;
  const otc_lr_schedule_t &s = *schedule;
  w.put<int32_t>(s.kind);
  w.put<int32_t>(s.cycle_momentum);
  w.put<double>(s.base_lr);
  w.put<int64_t>(s.warmup_steps);
  w.put<double>(s.warmup_start_factor);
  w.put<int64_t>(s.total_steps);
  w.put<double>(s.lr_min);
  w.put<int64_t>(s.step_size);
  for (double v : {s.gamma, s.wsd_decay_fraction, s.pct_start, s.div_factor,
                   s.final_div_factor, s.base_momentum, s.max_momentum})
    w.put<double>(v);
}

void getHyper(Reader &r, CheckpointData &data) {
  otc_hyperparams_t h{};
  for (double *v : {&h.lr, &h.weight_decay, &h.momentum, &h.beta1, &h.beta2,
                    &h.eps, &h.alpha, &h.lr_decay})
    *v = r.get<double>();
  data.hyper = h;
  uint32_t hasSchedule = r.get<uint32_t>();
  r.get<uint32_t>();
  if (!hasSchedule)
    return;
  otc_lr_schedule_t s{};
  s.kind = r.get<int32_t>();
  s.cycle_momentum = r.get<int32_t>();
  s.base_lr = r.get<double>();
  s.warmup_steps = r.get<int64_t>();
  s.warmup_start_factor = r.get<double>();
  s.total_steps = r.get<int64_t>();
  s.lr_min = r.get<double>();
  s.step_size = r.get<int64_t>();
  for (double *v :
       {&s.gamma, &s.wsd_decay_fraction, &s.pct_start, &s.div_factor,
        &s.final_div_factor, &s.base_momentum, &s.max_momentum})
    *v = r.get<double>();
  data.schedule = s;
}

void syncDirOf(const std::string &path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  if (dir.empty())
    dir = "/";
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

} // namespace

void writeFileAtomically(const std::string &path, const std::string &bytes) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(OTC_IO_ERROR,
                "cannot create '" + tmp + "': " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(OTC_IO_ERROR,
                  "cannot write '" + tmp + "': " + std::strerror(err));
    }
    done += size_t(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw Error(OTC_IO_ERROR,
                "cannot flush '" + tmp + "': " + std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw Error(OTC_IO_ERROR, "cannot rename '" + tmp + "' to '" + path +
                                  "': " + std::strerror(err));
  }
  syncDirOf(path);
}

CheckpointData readCheckpoint(const std::string &path,
                              const Manifest &manifest) {
  auto fail = [&](otc_status_code_t code, const std::string &what) {
    return Error(code, "checkpoint '" + path + "': " + what);
  };
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw fail(OTC_NOT_FOUND,
               std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string file = ss.str();
  const auto *p = reinterpret_cast<const uint8_t *>(file.data());
  if (file.size() < sizeof kMagic || std::memcmp(p, kMagic, sizeof kMagic))
    throw fail(OTC_DATA_LOSS, "not an OTC checkpoint (bad magic)");
  if (file.size() < kHeaderBytes + 4)
    throw fail(OTC_DATA_LOSS, "truncated: expected at least " +
                                  std::to_string(kHeaderBytes + 4) +
                                  " bytes, found " +
                                  std::to_string(file.size()));
  Reader header(path, p, kHeaderBytes);
  header.take(sizeof kMagic);
  uint32_t version = header.get<uint32_t>();
  header.get<uint32_t>(); // flags
  uint64_t total = header.get<uint64_t>();
  uint64_t hash = header.get<uint64_t>();
  CheckpointData data;
  data.worldSize = header.get<int32_t>();
  header.get<int32_t>();
  data.step = header.get<int64_t>();
  data.seed = header.get<uint64_t>();
  uint32_t sections = header.get<uint32_t>();
  if (version == 1)
    throw fail(OTC_FAILED_PRECONDITION,
               "format version 1 was written by an older runtime without "
               "compressed all-reduce state; this runtime reads version " +
                   std::to_string(kVersion) +
                   " only (retrain, or resume with the runtime that wrote it)");
  if (version != kVersion && version != 2)
    throw fail(OTC_FAILED_PRECONDITION, "unsupported version " +
                                            std::to_string(version) +
                                            " (this runtime reads versions 2 "
                                            "and " +
                                            std::to_string(kVersion) + ")");
  if (total != file.size())
    throw fail(OTC_DATA_LOSS,
               std::string(total > file.size() ? "truncated: expected "
                                               : "size mismatch: expected ") +
                   std::to_string(total) + " bytes, found " +
                   std::to_string(file.size()));
  uint32_t stored;
  std::memcpy(&stored, p + file.size() - 4, 4);
  if (crcOf(p, file.size() - 4) != stored)
    throw fail(OTC_DATA_LOSS, "checksum mismatch: file is corrupt");
  Reader body(path, p + kHeaderBytes, file.size() - 4 - kHeaderBytes);
  bool hasRuntime = false;
  std::string sdp;
  for (uint32_t i = 0; i < sections; ++i) {
    uint32_t kind = body.get<uint32_t>();
    uint32_t nameLen = body.get<uint32_t>();
    uint64_t n = body.get<uint64_t>();
    const uint8_t *name = body.take(nameLen);
    const uint8_t *bytes = body.take(n);
    std::vector<uint8_t> v(bytes, bytes + n);
    std::string key(reinterpret_cast<const char *>(name), nameLen);
    if (kind == kParam)
      data.params[key] = std::move(v);
    else if (kind == kState)
      data.state[key] = std::move(v);
    else if (kind == kExtra)
      data.extra = std::move(v);
    else if (kind == kRuntime) {
      Reader r(path, v.data(), v.size());
      data.skippedSteps = r.get<int64_t>();
      uint32_t buckets = r.get<uint32_t>();
      r.get<uint32_t>();
      if (v.size() != kRuntimeHeaderBytes + buckets * kSavedBucketBytes)
        throw fail(OTC_DATA_LOSS, "malformed runtime section");
      data.buckets.resize(buckets);
      for (SavedBucket &b : data.buckets) {
        b.norm0 = r.get<double>();
        b.ratio = r.get<float>();
        r.get<uint32_t>();
        b.steps = r.get<int64_t>();
      }
      hasRuntime = true;
    } else if (kind == kSdp)
      sdp.assign(v.begin(), v.end());
    else if (kind == kHyper) {
      Reader r(path, v.data(), v.size());
      getHyper(r, data);
      if (r.pos() != v.size())
        throw fail(OTC_DATA_LOSS, "malformed hyperparameter section");
      if (data.schedule) {
        try {
          validateSchedule(*data.schedule);
        } catch (const Error &e) {
          throw fail(OTC_DATA_LOSS,
                     std::string("holds an invalid ") + e.what());
        }
      }
    } else
      throw fail(OTC_DATA_LOSS, "unknown section kind " + std::to_string(kind));
  }
  std::string mine = describeSdp(manifest);
  if (sdp != mine)
    throw fail(OTC_FAILED_PRECONDITION,
               "written for " +
                   (sdp.empty() ? std::string("a program without SDP")
                                : "the SDP assignment (" + sdp + ")") +
                   ", but this program has " +
                   (mine.empty() ? std::string("no SDP")
                                 : "the SDP assignment (" + mine + ")"));
  if (hash != manifest.hash)
    throw fail(OTC_FAILED_PRECONDITION,
               "compiled for a different program/world size (checkpoint: "
               "world size " +
                   std::to_string(data.worldSize) +
                   ", this program: world "
                   "size " +
                   std::to_string(manifest.worldSize) +
                   "; parameter names or shapes, or the SDP assignment of "
                   "components to ranks, may differ too)");

  auto check = [&](const std::vector<TensorSpec> &specs,
                   const std::map<std::string, std::vector<uint8_t>> &got,
                   const char *what) {
    for (const TensorSpec &t : specs) {
      auto it = got.find(t.name);
      if (it == got.end())
        throw fail(OTC_DATA_LOSS,
                   std::string("has no ") + what + " '" + t.name + "'");
      if (it->second.size() != t.bytes())
        throw fail(OTC_DATA_LOSS, std::string(what) + " '" + t.name + "' has " +
                                      std::to_string(it->second.size()) +
                                      " bytes, expected " +
                                      std::to_string(t.bytes()));
    }
  };
  check(manifest.params, data.params, "parameter");
  check(manifest.state, data.state, "state");
  if (!hasRuntime)
    throw fail(OTC_DATA_LOSS, "has no runtime section");
  if (version >= 3 && !data.hyper)
    throw fail(OTC_DATA_LOSS, "has no hyperparameter section");
  return data;
}

} // namespace otc

using namespace otc;

extern "C" {

otc_status_t otc_session_save_checkpoint(const otc_session_t *session,
                                         const char *path, const void *extra,
                                         size_t extra_bytes) {
  return guard([&] {
    if (!session || !path)
      throw Error(OTC_INVALID_ARGUMENT, "session and path must not be NULL");
    if (extra_bytes && !extra)
      throw Error(OTC_INVALID_ARGUMENT, "extra is NULL but extra_bytes > 0");
    if (session->microBatches)
      throw Error(OTC_FAILED_PRECONDITION,
                  "the step is in the middle of its gradient accumulation (" +
                      std::to_string(session->microBatches) + " of " +
                      std::to_string(session->entry->accumulate) +
                      " micro-batches): save after otc_session_train_step");
    const Manifest &m = session->manifest();
    Writer w;
    w.bytes(kMagic, sizeof kMagic);
    w.put<uint32_t>(kVersion);
    w.put<uint32_t>(0);
    w.put<uint64_t>(0); // total bytes, patched below
    w.put<uint64_t>(m.hash);
    w.put<int32_t>(m.worldSize);
    w.put<int32_t>(0);
    w.put<int64_t>(session->step);
    w.put<uint64_t>(session->seed);
    std::string sdp = describeSdp(m);
    w.put<uint32_t>(
        uint32_t(m.params.size() + m.state.size() + 3 + (sdp.empty() ? 0 : 1)));
    w.put<uint32_t>(0);
    session->pullFromDevice();
    for (const TensorSpec &t : m.params)
      w.section(kParam, t.name, session->at(t), t.bytes());
    for (const TensorSpec &t : m.state)
      w.section(kState, t.name, session->at(t), t.bytes());
    w.section(kExtra, "extra", extra, extra_bytes);
    if (!sdp.empty())
      w.section(kSdp, "", sdp.data(), sdp.size());
    Writer rt;
    const auto &buckets = session->compress.buckets;
    rt.put<int64_t>(session->skippedSteps);
    rt.put<uint32_t>(uint32_t(buckets.size()));
    rt.put<uint32_t>(0);
    for (const BucketState &b : buckets) {
      rt.put<double>(b.norm0);
      rt.put<float>(b.ratio);
      rt.put<uint32_t>(0);
      rt.put<int64_t>(b.steps);
    }
    w.section(kRuntime, "runtime", rt.str().data(), rt.str().size());
    Writer hw;
    putHyper(hw, session->hyper, session->schedule);
    w.section(kHyper, "hyper", hw.str().data(), hw.str().size());
    std::string &out = w.str();
    uint64_t total = out.size() + 4;
    std::memcpy(&out[16], &total, sizeof total);
    uint32_t crc =
        crcOf(reinterpret_cast<const uint8_t *>(out.data()), out.size());
    w.put<uint32_t>(crc);
    writeFileAtomically(path, out);
  });
}

otc_status_t otc_session_load_checkpoint(otc_session_t *session,
                                         const char *path, void *extra,
                                         size_t extra_capacity,
                                         size_t *out_extra_bytes) {
  return guard([&] {
    if (!session || !path)
      throw Error(OTC_INVALID_ARGUMENT, "session and path must not be NULL");
    const Manifest &m = session->manifest();
    // Everything is validated before the first byte of the session changes.
    CheckpointData data = readCheckpoint(path, m);
    session->pullFromDevice();
    session->hostChanged();
    session->assembledStep = -1; // SDP: the whole model is stale
    for (const TensorSpec &t : m.params)
      std::memcpy(session->at(t), data.params[t.name].data(), t.bytes());
    for (const TensorSpec &t : m.state)
      std::memcpy(session->at(t), data.state[t.name].data(), t.bytes());
    session->step = data.step;
    session->seed = data.seed;
    session->skippedSteps = data.skippedSteps;
    if (data.hyper) {
      session->hyper = *data.hyper;
      session->schedule = data.schedule;
    }
    // Scratch buffers of buckets beyond the checkpoint's are kept; only
    // their adaptive state starts over, as in a run that never got there.
    auto &buckets = session->compress.buckets;
    if (buckets.size() < data.buckets.size())
      buckets.resize(data.buckets.size());
    for (size_t i = 0; i < buckets.size(); ++i) {
      SavedBucket saved =
          i < data.buckets.size() ? data.buckets[i] : SavedBucket();
      buckets[i].norm0 = saved.norm0;
      buckets[i].ratio = saved.ratio;
      buckets[i].steps = saved.steps;
    }
    session->compress.touched.clear();
    session->lastStepSkipped = false;
    session->microBatches = 0; // the accumulators came back as saved (zero)
    if (out_extra_bytes)
      *out_extra_bytes = data.extra.size();
    if (extra && data.extra.size() <= extra_capacity)
      std::memcpy(extra, data.extra.data(), data.extra.size());
  });
}

otc_status_t otc_checkpoint_validate(const otc_program_t *program,
                                     const char *path) {
  return guard([&] {
    if (!program || !path)
      throw Error(OTC_INVALID_ARGUMENT, "program and path must not be NULL");
    if (program->variants.empty())
      return (void)readCheckpoint(path, program->manifest);
    // SDP: each rank's checkpoint belongs to its variant.
    std::string first;
    for (const Manifest &v : program->variants) {
      try {
        readCheckpoint(path, v);
        return;
      } catch (const Error &e) {
        if (first.empty())
          first = e.what();
      }
    }
    throw Error(OTC_FAILED_PRECONDITION, first);
  });
}

} // extern "C"
