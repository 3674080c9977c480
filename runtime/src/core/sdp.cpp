//===- sdp.cpp - Subnetwork data parallelism in the runtime ---------------===//

#include "core/sdp.h"
#include "comm/comm.h"
#include "core/export.h"
#include "core/session.h"
#include "core/status.h"

#include <cstring>
#include <optional>

namespace otc {

void forEachKept(const TensorSpec &local, const std::vector<int64_t> &fullShape,
                 const std::function<void(int64_t, int64_t)> &fn) {
  size_t rank = fullShape.size();
  // The full-tensor index of every kept position, per axis.
  std::vector<std::vector<int64_t>> kept(rank);
  for (size_t a = 0; a < rank; ++a)
    for (int64_t i = 0; i < fullShape[a]; ++i)
      kept[a].push_back(i);
  for (const auto &[axis, ranges] : local.slices) {
    std::vector<int64_t> &k = kept[size_t(axis)];
    k.clear();
    for (size_t r = 0; r + 1 < ranges.size(); r += 2)
      for (int64_t i = ranges[r]; i < ranges[r + 1]; ++i)
        k.push_back(i);
  }
  int64_t n = local.numel();
  std::vector<size_t> idx(rank, 0);
  for (int64_t l = 0; l < n; ++l) {
    int64_t g = 0;
    for (size_t a = 0; a < rank; ++a)
      g = g * fullShape[a] + kept[a][idx[a]];
    fn(l, g);
    for (size_t a = rank; a-- > 0;) {
      if (++idx[a] < kept[a].size())
        break;
      idx[a] = 0;
    }
  }
}

void forEachTile(const TensorSpec &p, const float *data,
                 const std::function<void(const std::vector<int64_t> &,
                                          const std::vector<float> &)> &fn) {
  const TensorSpec::Tiles &t = *p.tiles;
  size_t rank = p.shape.size();
  std::vector<size_t> cell(t.axes.size(), 0);
  std::vector<float> values;
  for (const std::vector<int64_t> &owners : t.owners) {
    // The tile's box: its cut along each tiled axis, the whole of others.
    std::vector<int64_t> lo(rank, 0), hi(p.shape);
    for (size_t k = 0; k < t.axes.size(); ++k) {
      lo[size_t(t.axes[k])] = t.cuts[k][cell[k]];
      hi[size_t(t.axes[k])] = t.cuts[k][cell[k] + 1];
    }
    values.clear();
    std::vector<int64_t> idx(lo);
    bool empty = false;
    for (size_t a = 0; a < rank; ++a)
      empty |= lo[a] >= hi[a];
    while (!empty) {
      int64_t l = 0;
      for (size_t a = 0; a < rank; ++a)
        l = l * p.shape[a] + idx[a];
      values.push_back(data[l]);
      size_t a = rank;
      while (a > 0 && ++idx[a - 1] == hi[a - 1]) {
        idx[a - 1] = lo[a - 1];
        --a;
      }
      if (a == 0)
        break;
    }
    fn(owners, values);
    for (size_t k = t.axes.size(); k-- > 0;) {
      if (++cell[k] + 1 < t.cuts[k].size())
        break;
      cell[k] = 0;
    }
  }
}

void assembleFullModel(otc_session_t *s) {
  const Manifest &full = s->program->manifest;
  if (!s->fullArena) {
    s->fullArena = makeArena(full);
    if (s->device) {
      // Collective, as the session's own device arena.
      std::optional<Error> failed;
      try {
        s->fullDevice =
            DeviceArena::create(s->fullArena.get(), full.arenaBytes);
      } catch (const Error &e) {
        failed = e;
      }
      if (!allAgree(s->comm, !failed)) {
        s->fullArena.reset();
        s->fullDevice.reset();
        throw failed ? *failed
                     : Error(OTC_UNAVAILABLE, "another rank could not "
                                              "allocate the whole model on "
                                              "its CUDA device");
      }
    }
    s->assembledStep = -1;
  }
  if (s->assembledStep == s->step)
    return;
  s->pullFromDevice();
  if (s->fullDevice)
    s->fullDevice->pull();
  int rank = otc_comm_rank(s->comm);
  for (const TensorSpec &p : full.params) {
    if (p.dtype != DType::F32)
      throw Error(OTC_FAILED_PRECONDITION,
                  "parameter '" + p.name +
                      "' is not float32; SDP assembles "
                      "float32 parameters only");
    // Every rank holding an element contributes it and counts itself. A
    // parameter's holders agree, so sum / count is their value exactly (a
    // float times at most a few thousand, in double, divided back); a
    // buffer's (BatchNorm statistics, each rank its own) is their mean,
    // which calibration then re-estimates.
    size_t n = size_t(p.numel());
    std::vector<double> buf(2 * n, 0.0); // values, then holder counts
    const TensorSpec *l = s->manifest().findParam(p.name);
    if (l && (!l->owners.empty() || l->tiles || rank == 0)) {
      const float *src = reinterpret_cast<const float *>(s->at(*l));
      forEachKept(*l, p.shape, [&](int64_t local, int64_t global) {
        buf[size_t(global)] = src[local];
        buf[n + size_t(global)] = 1.0;
      });
    }
    allReduceSumF64(s->comm, buf.data(), int64_t(buf.size()));
    float *dst = reinterpret_cast<float *>(s->fullArena.get() + p.offset);
    for (size_t i = 0; i < n; ++i)
      if (buf[n + i] > 0.5)
        dst[i] = float(buf[i] / buf[n + i]);
  }
  if (s->fullDevice)
    s->fullDevice->hostChanged();
  s->assembledStep = s->step;
}

void copyInputsToFullModel(otc_session_t *s) {
  for (const TensorSpec &in : s->program->manifest.inputs)
    if (const TensorSpec *t = s->manifest().findInput(in.name)) {
      std::memcpy(s->fullArena.get() + in.offset, s->at(*t), in.bytes());
      if (s->fullDevice)
        s->fullDevice->pushHostRange(s->fullArena.get() + in.offset,
                                     in.bytes());
    }
}

void calibrateFullModel(otc_session_t *s) {
  const otc_program_entry_t *entry = s->program->entry;
  if (!entry->calibrate_step)
    return;
  assembleFullModel(s);
  copyInputsToFullModel(s);
  otc_step_context_t ctx{};
  ctx.step = s->step;
  ctx.seed = stepSeed(s->seed, s->step);
  DeviceArena *device = s->fullDevice.get();
  if (device) {
    device->beforeStep();
    ctx.stream = device->stream();
  }
  int rc = entry->calibrate_step(
      device ? device->devicePtr() : s->fullArena.get(), &ctx);
  if (device)
    device->afterStep();
  if (rc != OTC_STEP_OK)
    throw Error(rc == OTC_STEP_ERR_DEVICE ? OTC_UNAVAILABLE : OTC_INTERNAL,
                "calibrate_step failed with code " + std::to_string(rc) +
                    (rc == OTC_STEP_ERR_DEVICE ? ": " + deviceStatusMessage()
                                               : std::string()));
}

void averageFullBuffers(otc_session_t *s) {
  if (!s->fullArena)
    return;
  if (s->fullDevice)
    s->fullDevice->pull();
  for (const TensorSpec &p : s->program->manifest.params) {
    if (!p.buffer || p.dtype != DType::F32)
      continue;
    std::vector<double> v(size_t(p.numel()));
    auto *data = reinterpret_cast<float *>(s->fullArena.get() + p.offset);
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = data[i];
    allReduceSumF64(s->comm, v.data(), int64_t(v.size()));
    int world = otc_comm_size(s->comm);
    for (size_t i = 0; i < v.size(); ++i)
      data[i] = float(v[i] / world);
  }
  if (s->fullDevice)
    s->fullDevice->hostChanged();
}

} // namespace otc

using namespace otc;

/// A full-model call of the C API: nothing to do outside SDP.
static otc_status_t onFullModel(otc_session_t *session,
                                void (*fn)(otc_session_t *)) {
  return guard([&] {
    if (!session)
      throw Error(OTC_INVALID_ARGUMENT, "session is NULL");
    if (session->isSdp())
      fn(session);
  });
}

extern "C" {

otc_status_t otc_session_assemble_full_model(otc_session_t *session) {
  return onFullModel(session, assembleFullModel);
}

otc_status_t otc_session_calibrate_full_model(otc_session_t *session) {
  return onFullModel(session, calibrateFullModel);
}

otc_status_t otc_session_average_full_buffers(otc_session_t *session) {
  return onFullModel(session, averageFullBuffers);
}

} // extern "C"
