//===- session.cpp - Sessions, steps, parameters, checkpoints -------------===//

#include "core/session.h"
#include "comm/comm.h"
#include "core/checkpoint.h"
#include "core/export.h"
#include "core/hyper.h"
#include "core/sdp.h"
#include "core/status.h"
#include "otc/manifest_schema.h"

#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>

using namespace otc;

void ArenaDeleter::operator()(uint8_t *p) const { std::free(p); }

namespace otc {

uint64_t stepSeed(uint64_t seed, int64_t step) {
  uint64_t x = seed + 0x9e3779b97f4a7c15ull * uint64_t(step);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

Arena makeArena(const Manifest &m) {
  size_t bytes = (std::max<uint64_t>(m.arenaBytes, 1) + 63) / 64 * 64;
  Arena arena(static_cast<uint8_t *>(std::aligned_alloc(64, bytes)));
  if (!arena)
    throw Error(OTC_INTERNAL, "cannot allocate an arena of " +
                                  std::to_string(m.arenaBytes) + " bytes");
  std::memset(arena.get(), 0, bytes);
  loadInitialParams(m, arena.get());
  return arena;
}

std::string worldSizeMismatchMessage(int32_t compiled, int32_t actual) {
  return "this program was compiled for --world-size " +
         std::to_string(compiled) + " but runs on " + std::to_string(actual) +
         (actual == 1 ? " rank" : " ranks") + "; start it with `mpirun -np " +
         std::to_string(compiled) + "`";
}

} // namespace otc

namespace {

// The kernels (linked into the program, not into the runtime) own the
// thread pools; find their setter if it is there.
void setKernelThreads(int n) {
  if (n <= 0)
    return;
  using SetFn = void (*)(int);
  if (auto fn =
          reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "otck_set_num_threads")))
    fn(n);
}

const TensorSpec &findParamOrThrow(const otc_session_t *s, const char *name) {
  if (!name)
    throw Error(OTC_INVALID_ARGUMENT, "parameter name is NULL");
  const TensorSpec *t = s->manifest().findParam(name);
  if (!t)
    throw Error(OTC_NOT_FOUND,
                std::string("the program has no parameter '") + name + "'");
  return *t;
}

void checkSession(const otc_session_t *s) {
  if (!s)
    throw Error(OTC_INVALID_ARGUMENT, "session is NULL");
}

otc_step_context_t makeContext(otc_session_t *s, int64_t step) {
  otc_step_context_t ctx{};
  ctx.step = step;
  ctx.seed = stepSeed(s->seed, step);
  ctx.hyper = &s->hyper;
  s->stepComm.comm = s->comm;
  s->stepComm.compress = &s->compress;
  s->stepComm.step = step;
  s->stepComm.seed = ctx.seed;
  ctx.comm = &s->stepComm;
  ctx.all_reduce_mean_f32 = allReduceMeanCallback;
  ctx.compressed_all_reduce_mean_f32 = compressedAllReduceCallback;
  ctx.group_all_reduce_mean_f32 = groupAllReduceMeanCallback;
  ctx.broadcast_f32 = broadcastCallback;
  ctx.group_compressed_all_reduce_mean_f32 = groupCompressedAllReduceCallback;
  ctx.agree_finite = agreeFiniteCallback;
  ctx.wait_collectives = waitCollectivesCallback;
  s->stepComm.device = s->device.get();
  s->stepComm.collectives = s->collectives.get();
  if (s->device) {
    ctx.stream = s->device->stream();
    if (s->collectives)
      s->collectives->useIn(ctx);
    else
      useStagedCollectives(ctx);
  }
  s->stepComm.pendingNonfinite = false;
  s->stepComm.profiler = nullptr; // a train step's profile() sets it
  if (s->program->manifest.sdp)
    s->stepComm.groups = &s->program->manifest.sdp->groups;
  return ctx;
}

/// A train step (or micro-batch) of a profiled session: hands `ctx` and the
/// collectives the profiler and opens the step; the returned guard closes it
/// however the step ends.
struct ProfiledStep {
  Profiler *p = nullptr;
  ProfiledStep(otc_session_t *s, otc_step_context_t &ctx) {
    if (!s->profiling)
      return;
    p = s->profiler.get();
    ctx.profiler = p;
    ctx.profile = &Profiler::callback;
    s->stepComm.profiler = p;
    p->stepBegin(ctx.step);
  }
  ~ProfiledStep() {
    if (p)
      p->stepEnd();
  }
};

/// OTC_SDP_CHECK=1 (and debug builds): after every step, the owners of
/// each SDP component must hold identical values (not its buffers: each
/// rank keeps the BatchNorm statistics of its own batches).
bool sdpCheckEnabled() {
#ifndef NDEBUG
  return true;
#else
  const char *v = std::getenv("OTC_SDP_CHECK");
  return v && *v && std::strcmp(v, "0") != 0;
#endif
}

void checkOwnersAgree(otc_session_t *s) {
  // Backward masking: every rank holds every parameter, and the ones it
  // does not own must have received the owners' values.
  s->pullFromDevice();
  bool backward = s->program->manifest.sdp->masking == "backward";
  std::vector<int64_t> everyone;
  for (int32_t r = 0; r < otc_comm_size(s->comm); ++r)
    everyone.push_back(r);
  for (const TensorSpec &p : s->manifest().params) {
    if (p.tiles && p.dtype == DType::F32 && !p.buffer) {
      forEachTile(p, reinterpret_cast<const float *>(s->at(p)),
                  [&](const std::vector<int64_t> &owners,
                      const std::vector<float> &values) {
                    if (owners.size() > 1 &&
                        !groupIdentical(s->comm, owners, values.data(),
                                        int64_t(values.size())))
                      throw Error(OTC_INTERNAL,
                                  "after step " + std::to_string(s->step) +
                                      " the owners of a tile of SDP "
                                      "parameter '" +
                                      p.name + "' disagree");
                  });
      continue;
    }
    if (p.owners.empty() || p.dtype != DType::F32 || p.buffer)
      continue;
    const std::vector<int64_t> &holders = backward ? everyone : p.owners;
    if (holders.size() <= 1 ||
        std::find(holders.begin(), holders.end(), otc_comm_rank(s->comm)) ==
            holders.end())
      continue;
    if (!groupIdentical(s->comm, holders,
                        reinterpret_cast<const float *>(s->at(p)), p.numel()))
      throw Error(OTC_INTERNAL,
                  "after step " + std::to_string(s->step) +
                      " the holders of SDP parameter '" + p.name +
                      "' disagree" +
                      (backward ? " (a rank missed the owners' update)" : ""));
  }
}

/// The step's loss (manifest "loss_offset") into *out, when out is set.
void readLoss(otc_session_t *s, float *out) {
  if (!out)
    return;
  int64_t off = s->manifest().lossOffset;
  *out = 0;
  if (off < 0)
    return;
  if (s->device)
    s->device->download(uint64_t(off), sizeof(float));
  std::memcpy(out, s->arena.get() + off, sizeof(float));
}

/// --accumulate: a skipped step's sums are dropped with it.
void zeroAccumulators(otc_session_t *s) {
  for (const TensorSpec &t : s->manifest().state)
    if (t.role == otc::manifest::kAccumulatorRole) {
      std::memset(s->at(t), 0, t.bytes());
      if (s->device)
        s->device->pushHostRange(s->at(t), t.bytes());
    }
}

void checkStepResult(otc_session_t *s, int rc, const char *what) {
  if (rc == OTC_STEP_OK)
    return;
  if (rc == OTC_STEP_ERR_COMM) {
    std::string why = takeCommError(s->comm);
    throw Error(OTC_UNAVAILABLE, std::string(what) +
                                     " failed: a collective "
                                     "failed" +
                                     (why.empty() ? "" : ": " + why));
  }
  if (rc == OTC_STEP_ERR_LABEL_RANGE)
    throw Error(OTC_INVALID_ARGUMENT,
                std::string(what) +
                    " failed: a label is outside [0, classes); check the "
                    "label data");
  if (rc == OTC_STEP_ERR_INDEX_RANGE)
    throw Error(OTC_INVALID_ARGUMENT,
                std::string(what) +
                    " failed: an index input is outside its dimension; "
                    "check the index data (token ids, positions)");
  if (rc == OTC_STEP_ERR_DIVISION_BY_ZERO)
    throw Error(OTC_INVALID_ARGUMENT,
                std::string(what) + " failed: integer division by zero");
  if (rc == OTC_STEP_ERR_DEVICE) {
    std::string why = deviceStatusMessage();
    throw Error(OTC_UNAVAILABLE, std::string(what) +
                                     " failed: a CUDA kernel or copy failed" +
                                     (why.empty() ? "" : ": " + why));
  }
  throw Error(OTC_INTERNAL,
              std::string(what) + " failed with code " + std::to_string(rc));
}

} // namespace

extern "C" {

void otc_session_options_initialize(otc_session_options_t *options) {
  if (!options)
    return;
  options->seed = 0;
  options->num_threads = 0;
}

otc_status_t otc_session_create(otc_program_t *program, otc_comm_t *comm,
                                const otc_session_options_t *options,
                                otc_session_t **out_session) {
  return guard([&] {
    if (!out_session || !program || !comm)
      throw Error(OTC_INVALID_ARGUMENT,
                  "program, comm and out_session must not be NULL");
    *out_session = nullptr;
    const Manifest &m = program->manifest;
    if (otc_comm_size(comm) != m.worldSize)
      throw Error(OTC_FAILED_PRECONDITION,
                  worldSizeMismatchMessage(m.worldSize, otc_comm_size(comm)));
    auto s = std::make_unique<otc_session>();
    s->program = program;
    s->comm = comm;
    s->entry = program->entry;
    s->trainManifest = &program->manifest;
    if (!program->variants.empty()) {
      // SDP: this rank trains its own subnetwork; the owner groups get
      // their sub-communicators now, on every rank in the same order.
      int32_t v = program->entry->rank_variant[otc_comm_rank(comm)];
      s->entry = program->entry->variants[v];
      s->trainManifest = &program->variants[size_t(v)];
      splitGroups(comm, m.sdp->groups);
    }
    if (options)
      s->options = *options;
    else
      otc_session_options_initialize(&s->options);
    s->seed = s->options.seed;
    const Manifest &tm = s->manifest();
    s->hyper = initialHyperparams(tm.optimizer);
    s->arena = makeArena(tm);
    if (s->entry->device == OTC_DEVICE_CUDA) {
      for (int32_t v = 0; v < program->entry->num_variants; ++v)
        if (program->entry->variants[v]->device != program->entry->device)
          throw Error(OTC_FAILED_PRECONDITION,
                      "the program's SDP variants and whole model were "
                      "compiled for different devices");
      // Collective: a rank whose device fails must not leave the others
      // waiting in the collectives' set-up.
      std::optional<Error> failed;
      try {
        s->device = DeviceArena::create(s->arena.get(), tm.arenaBytes);
      } catch (const Error &e) {
        failed = e;
      }
      if (!allAgree(comm, !failed))
        throw failed ? *failed
                     : Error(OTC_UNAVAILABLE,
                             "another rank could not set up its CUDA device");
      s->collectives = createDeviceCollectives(
          comm, *s->device,
          m.sdp ? m.sdp->groups : std::vector<std::vector<int64_t>>());
    } else if (s->entry->device != OTC_DEVICE_CPU) {
      throw Error(OTC_FAILED_PRECONDITION,
                  "the program names device " +
                      std::to_string(s->entry->device) +
                      ", which this runtime does not know");
    }
    setKernelThreads(s->options.num_threads);
    *out_session = s.release();
  });
}

void otc_session_release(otc_session_t *session) { delete session; }

otc_status_t otc_session_bind_input(otc_session_t *session, const char *name,
                                    const void *data, size_t bytes) {
  return guard([&] {
    checkSession(session);
    if (!name)
      throw Error(OTC_INVALID_ARGUMENT, "input name is NULL");
    const TensorSpec *in = session->manifest().findInput(name);
    if (!in)
      throw Error(OTC_NOT_FOUND,
                  std::string("the program has no input '") + name + "'");
    if (bytes != in->bytes() || (bytes && !data))
      throw Error(OTC_INVALID_ARGUMENT,
                  std::string("input '") + name + "' " +
                      shapeString(in->shape) + " " + dtypeName(in->dtype) +
                      " needs " + std::to_string(in->bytes()) + " bytes, got " +
                      std::to_string(bytes));
    std::memcpy(session->at(*in), data, bytes);
    // Both copies get the input, so a later pull() cannot bring back the
    // previous batch over it.
    if (session->device)
      session->device->pushHostRange(session->at(*in), bytes);
  });
}

otc_status_t otc_session_accumulate_step(otc_session_t *session,
                                         float *out_loss) {
  return guard([&] {
    checkSession(session);
    const otc_program_entry_t *e = session->entry;
    if (!e->accumulate_step || e->accumulate <= 1)
      throw Error(OTC_FAILED_PRECONDITION,
                  "the program was compiled without --accumulate: every "
                  "batch is a train step");
    if (session->microBatches + 1 >= e->accumulate)
      throw Error(OTC_FAILED_PRECONDITION,
                  std::to_string(session->microBatches) + " of " +
                      std::to_string(e->accumulate) +
                      " micro-batches are accumulated: the last one is "
                      "otc_session_train_step's");
    otc_step_context_t ctx = makeContext(session, session->step + 1);
    // Each micro-batch draws its own random numbers (dropout).
    ctx.seed = stepSeed(ctx.seed, session->microBatches + 1);
    DeviceArena *device = session->device.get();
    if (device)
      device->beforeStep();
    ProfiledStep profiled(session, ctx);
    enterStep(session->comm, ctx.step);
    int rc = e->accumulate_step(
        device ? device->devicePtr() : session->arena.get(), &ctx);
    leaveStep(session->comm);
    if (device)
      device->afterStep();
    checkStepResult(session, rc, "accumulate_step");
    ++session->microBatches;
    readLoss(session, out_loss);
  });
}

otc_status_t otc_session_set_profiling(otc_session_t *session, int32_t on) {
  return guard([&] {
    checkSession(session);
    if (on && !session->profiler) {
      std::function<void()> sync;
      if (DeviceArena *device = session->device.get())
        sync = [device] { synchronizeStream(device->stream()); };
      session->profiler =
          std::make_unique<Profiler>(*session->entry, std::move(sync));
    }
    session->profiling = on != 0;
  });
}

otc_status_t otc_session_write_profile(const otc_session_t *session,
                                       const char *trace_path,
                                       const char *summary_path) {
  return guard([&] {
    checkSession(session);
    const Profiler *p = session->profiler.get();
    if (!p || p->steps() == 0)
      throw Error(OTC_FAILED_PRECONDITION,
                  "no step was profiled (otc_session_set_profiling)");
    const int rank = otc_comm_rank(session->comm);
    auto write = [&](const char *path, const char *what, auto &&body) {
      if (!path)
        return;
      if (std::strcmp(path, "-") == 0) {
        body(std::cout);
        std::cout.flush();
        return;
      }
      std::ofstream f(path, std::ios::binary | std::ios::trunc);
      if (f)
        body(f);
      f.flush();
      if (!f)
        throw Error(OTC_IO_ERROR, std::string("cannot write the ") + what +
                                      " '" + path +
                                      "': " + std::strerror(errno));
    };
    write(trace_path, "profile trace",
          [&](std::ostream &os) { p->writeTrace(os, rank); });
    write(summary_path, "profile summary",
          [&](std::ostream &os) { p->writeSummary(os, rank); });
  });
}

otc_status_t otc_session_train_step(otc_session_t *session, float *out_loss) {
  return guard([&] {
    checkSession(session);
    if (int32_t n = session->entry->accumulate;
        n > 1 && session->microBatches != n - 1)
      throw Error(OTC_FAILED_PRECONDITION,
                  "the program accumulates " + std::to_string(n) +
                      " micro-batches per step (--accumulate): call "
                      "otc_session_accumulate_step " +
                      std::to_string(n - 1 - session->microBatches) +
                      " more time(s) first");
    // Whatever the outcome, the next step accumulates from zero.
    session->microBatches = 0;
    uint64_t sent0, recv0;
    otc_comm_bytes(session->comm, &sent0, &recv0);
    otc_step_context_t ctx = makeContext(session, session->step + 1);
    session->compress.touched.clear();
    session->lastStepSkipped = false;
    DeviceArena *device = session->device.get();
    if (device)
      device->beforeStep();
    std::optional<ProfiledStep> profiled(std::in_place, session, ctx);
    enterStep(session->comm, ctx.step);
    int rc = session->entry->train_step(
        device ? device->devicePtr() : session->arena.get(), &ctx);
    if (session->collectives)
      rc = session->collectives->finishStep(session->stepComm, rc);
    // A step that returned early (or a program that never waits) leaves
    // queued collectives: they finish, on every rank, before anything else.
    int queued = drainCollectives(session->comm);
    leaveStep(session->comm);
    profiled.reset(); // the step's collectives included
    if (rc == OTC_STEP_OK ||
        (rc == OTC_STEP_SKIPPED_NONFINITE && queued == OTC_STEP_ERR_COMM))
      rc = queued;
    if (device)
      device->afterStep();
    uint64_t sent1, recv1;
    otc_comm_bytes(session->comm, &sent1, &recv1);
    session->stepBytesSent = sent1 - sent0;
    session->stepBytesReceived = recv1 - recv0;
    if (rc == OTC_STEP_SKIPPED_NONFINITE) {
      // Every rank got the same answer from the collective; buckets already
      // reduced in this step are undone and the optimizer step counter (Adam
      // bias correction, the step's seed) stays where it was.
      std::vector<BucketUndo> undone = session->compress.touched;
      session->compress.undoStep();
      if (device) // restored in the host mirror
        for (const BucketUndo &u : undone)
          for (float *restored : {u.residual, u.velocity})
            if (restored)
              device->pushHostRange(restored, uint64_t(u.count) * 4);
      session->lastStepSkipped = true;
      ++session->skippedSteps;
      zeroAccumulators(session);
    } else {
      session->compress.touched.clear();
      checkStepResult(session, rc, "train_step");
      ++session->step;
      applySchedule(session);
      if (session->isSdp() && sdpCheckEnabled())
        checkOwnersAgree(session);
    }
    if (int64_t off = session->manifest().gradNormOffset;
        off >= 0 && !session->lastStepSkipped) {
      if (device)
        device->download(uint64_t(off), sizeof(float));
      std::memcpy(&session->lastGradNorm, session->arena.get() + off,
                  sizeof(float));
    }
    readLoss(session, out_loss);
  });
}

otc_status_t otc_session_eval_step(otc_session_t *session, void *out,
                                   size_t out_bytes) {
  return guard([&] {
    checkSession(session);
    // SDP evaluates the whole model, assembled from the owners, on the
    // inputs bound to this rank's training program.
    const otc_program_entry_t *entry =
        session->isSdp() ? session->program->entry : session->entry;
    const Manifest &m =
        session->isSdp() ? session->program->manifest : session->manifest();
    if (!entry->eval_step)
      throw Error(OTC_FAILED_PRECONDITION, "the program has no eval_step");
    if (out && (!m.evalOutput || out_bytes != m.evalOutput->bytes()))
      throw Error(OTC_INVALID_ARGUMENT,
                  "eval output needs " +
                      std::to_string(m.evalOutput ? m.evalOutput->bytes() : 0) +
                      " bytes, got " + std::to_string(out_bytes));
    uint8_t *arena = session->arena.get();
    DeviceArena *device = session->device.get();
    if (session->isSdp()) {
      assembleFullModel(session);
      copyInputsToFullModel(session);
      arena = session->fullArena.get();
      device = session->fullDevice.get();
    }
    otc_step_context_t ctx = makeContext(session, session->step);
    if (device) // the whole model's steps run no collective
      ctx.stream = device->stream();
    if (device)
      device->beforeStep();
    int rc = entry->eval_step(device ? device->devicePtr() : arena, &ctx);
    if (device) {
      device->afterStep();
      if (m.evalLossOffset >= 0)
        device->download(uint64_t(m.evalLossOffset), sizeof(float));
      if (out && out_bytes)
        device->download(m.evalOutput->offset, out_bytes);
    }
    checkStepResult(session, rc, "eval_step");
    session->hasEvalLoss = m.evalLossOffset >= 0;
    if (session->hasEvalLoss)
      std::memcpy(&session->lastEvalLoss, arena + m.evalLossOffset,
                  sizeof(float));
    if (out && out_bytes)
      std::memcpy(out, arena + m.evalOutput->offset, out_bytes);
  });
}

otc_status_t otc_session_eval_loss(const otc_session_t *session,
                                   float *out_loss) {
  return guard([&] {
    checkSession(session);
    if (!session->hasEvalLoss)
      throw Error(OTC_FAILED_PRECONDITION,
                  "no eval loss: the program computes none or eval_step has "
                  "not run");
    if (out_loss)
      *out_loss = session->lastEvalLoss;
  });
}

otc_status_t otc_session_grad_norm(const otc_session_t *session,
                                   float *out_norm) {
  return guard([&] {
    checkSession(session);
    if (session->manifest().gradNormOffset < 0)
      throw Error(OTC_FAILED_PRECONDITION,
                  "no gradient norm: the program was compiled without "
                  "--clip-grad-norm or --clip-grad-value");
    if (out_norm)
      *out_norm = session->lastGradNorm;
  });
}

int64_t otc_session_step(const otc_session_t *session) {
  return session ? session->step : 0;
}

int32_t otc_session_last_step_skipped(const otc_session_t *session) {
  return session && session->lastStepSkipped ? 1 : 0;
}

int64_t otc_session_skipped_steps(const otc_session_t *session) {
  return session ? session->skippedSteps : 0;
}

int64_t otc_session_compress_buckets(const otc_session_t *session) {
  return session ? int64_t(session->compress.buckets.size()) : 0;
}

float otc_session_compress_ratio(const otc_session_t *session, int64_t bucket) {
  if (!session || bucket < 0 ||
      size_t(bucket) >= session->compress.buckets.size())
    return 0.f;
  return session->compress.buckets[size_t(bucket)].ratio;
}

void otc_session_step_bytes(const otc_session_t *session, uint64_t *out_sent,
                            uint64_t *out_received) {
  if (out_sent)
    *out_sent = session ? session->stepBytesSent : 0;
  if (out_received)
    *out_received = session ? session->stepBytesReceived : 0;
}

const char *otc_session_manifest(const otc_session_t *session) {
  return session && session->entry ? session->entry->manifest_json : "";
}

otc_status_t otc_session_get_param(const otc_session_t *session,
                                   const char *name, void *out,
                                   size_t out_bytes) {
  return guard([&] {
    checkSession(session);
    const TensorSpec &t = findParamOrThrow(session, name);
    if (out_bytes != t.bytes() || (out_bytes && !out))
      throw Error(OTC_INVALID_ARGUMENT,
                  std::string("parameter '") + name + "' has " +
                      std::to_string(t.bytes()) + " bytes, buffer has " +
                      std::to_string(out_bytes));
    session->pullFromDevice();
    std::memcpy(out, session->at(t), out_bytes);
  });
}

otc_status_t otc_session_set_param(otc_session_t *session, const char *name,
                                   const void *data, size_t bytes) {
  return guard([&] {
    checkSession(session);
    const TensorSpec &t = findParamOrThrow(session, name);
    if (bytes != t.bytes() || (bytes && !data))
      throw Error(OTC_INVALID_ARGUMENT,
                  std::string("parameter '") + name + "' has " +
                      std::to_string(t.bytes()) + " bytes, got " +
                      std::to_string(bytes));
    session->pullFromDevice();
    std::memcpy(session->at(t), data, bytes);
    session->hostChanged();
    session->assembledStep = -1; // SDP: the whole model is stale
  });
}

otc_status_t otc_session_export_onnx_ema(const otc_session_t *session,
                                         const char *path) {
  return guard([&] {
    checkSession(session);
    if (!path)
      throw Error(OTC_INVALID_ARGUMENT, "export path is NULL");
    session->pullFromDevice();
    exportOnnx(session->manifest(), session->arena.get(), path,
               ExportWeights::Ema);
  });
}

otc_status_t otc_session_get_ema_param(const otc_session_t *session,
                                       const char *name, void *out,
                                       size_t out_bytes) {
  return guard([&] {
    checkSession(session);
    const TensorSpec &p = findParamOrThrow(session, name);
    if (!(session->manifest().optimizer.ema > 0))
      throw Error(OTC_FAILED_PRECONDITION,
                  "the program keeps no EMA of its weights (compile with "
                  "otc-compile --ema DECAY)");
    const TensorSpec *t = p.buffer ? &p : session->manifest().findEma(p.name);
    if (!t)
      throw Error(OTC_INTERNAL,
                  std::string("parameter '") + name + "' has no EMA");
    if (out_bytes != t->bytes() || (out_bytes && !out))
      throw Error(OTC_INVALID_ARGUMENT,
                  std::string("parameter '") + name + "' has " +
                      std::to_string(t->bytes()) + " bytes, buffer has " +
                      std::to_string(out_bytes));
    session->pullFromDevice();
    std::memcpy(out, session->at(*t), out_bytes);
  });
}

otc_status_t otc_session_export_onnx(const otc_session_t *session,
                                     const char *path) {
  return guard([&] {
    checkSession(session);
    if (!path)
      throw Error(OTC_INVALID_ARGUMENT, "export path is NULL");
    if (!session->isSdp()) {
      session->pullFromDevice();
      return exportOnnx(session->manifest(), session->arena.get(), path);
    }
    // Collective: every rank assembles, rank 0 writes.
    auto *s = const_cast<otc_session_t *>(session);
    assembleFullModel(s);
    if (s->fullDevice)
      s->fullDevice->pull();
    if (otc_comm_rank(s->comm) == 0)
      exportOnnx(s->program->manifest, s->fullArena.get(), path);
  });
}

} // extern "C"
