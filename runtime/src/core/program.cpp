//===- program.cpp - Entry tables, dlopen and manifest parsing ------------===//

#include "core/program.h"
#include "core/session.h"
#include "core/status.h"

#include "otc/manifest_schema.h"

#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <set>

namespace otc {

using json = nlohmann::json;
namespace K = otc::manifest;

int64_t TensorSpec::numel() const { return shapeNumel(shape); }

int64_t TensorSpec::sampleNumel() const { return shapeNumel(shape, 1); }

uint64_t fnv1a64(const void *data, size_t size, uint64_t hash) {
  const auto *p = static_cast<const uint8_t *>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

const TensorSpec *Manifest::findParam(const std::string &name) const {
  for (const TensorSpec &t : params)
    if (t.name == name)
      return &t;
  return nullptr;
}

const TensorSpec *Manifest::findEma(const std::string &param) const {
  for (const TensorSpec &t : state)
    if (t.param == param && t.name == param + "." + K::kEmaSlot)
      return &t;
  return nullptr;
}

const TensorSpec *Manifest::findInput(const std::string &name) const {
  for (const TensorSpec &t : inputs)
    if (t.name == name)
      return &t;
  return nullptr;
}

bool Manifest::hasPerRankState() const {
  if (sdp) // every rank trains its own subnetwork
    return true;
  for (const TensorSpec &t : state)
    if (t.role == K::kResidualRole || t.role == K::kPerRankRole)
      return true;
  return false;
}

const TensorSpec *Manifest::inputWithRole(const std::string &role) const {
  for (const TensorSpec &t : inputs)
    if (t.role == role)
      return &t;
  return nullptr;
}

namespace {

[[noreturn]] void bad(const std::string &what) {
  throw Error(OTC_INVALID_ARGUMENT, "invalid program manifest: " + what);
}

const json &field(const json &obj, const char *key, const std::string &where) {
  auto it = obj.find(key);
  if (it == obj.end())
    bad(where + " has no \"" + key + "\"");
  return *it;
}

TensorSpec parseTensor(const json &j, const std::string &where,
                       uint64_t arenaBytes) {
  if (!j.is_object())
    bad(where + " is not an object");
  TensorSpec t;
  t.name = field(j, K::kName, where).get<std::string>();
  std::string at = where + " '" + t.name + "'";
  t.dtype = parseDType(field(j, K::kDtype, at).get<std::string>());
  for (const json &d : field(j, K::kShape, at)) {
    int64_t v = d.get<int64_t>();
    if (v < 0)
      bad(at + " has a negative dimension");
    t.shape.push_back(v);
  }
  int64_t offset = field(j, K::kOffset, at).get<int64_t>();
  if (offset < 0)
    bad(at + " has a negative offset");
  t.offset = uint64_t(offset);
  if (j.contains(K::kRole))
    t.role = j[K::kRole].get<std::string>();
  if (j.contains(K::kParam))
    t.param = j[K::kParam].get<std::string>();
  if (j.contains(K::kOwners))
    for (const json &r : j[K::kOwners])
      t.owners.push_back(r.get<int64_t>());
  if (j.contains(K::kSlices))
    for (const json &sl : j[K::kSlices]) {
      int64_t axis = field(sl, K::kSliceAxis, at).get<int64_t>();
      std::vector<int64_t> ranges;
      for (const json &r : field(sl, K::kSliceRanges, at))
        ranges.push_back(r.get<int64_t>());
      if (axis < 0 || axis >= int64_t(t.shape.size()) || ranges.empty() ||
          ranges.size() % 2)
        bad(at + " has a malformed slice");
      int64_t kept = 0, last = 0;
      for (size_t k = 0; k < ranges.size(); k += 2) {
        if (ranges[k] < last || ranges[k + 1] <= ranges[k])
          bad(at + " has slice ranges out of order");
        kept += ranges[k + 1] - ranges[k];
        last = ranges[k + 1];
      }
      if (kept != t.shape[size_t(axis)])
        bad(at + " keeps " + std::to_string(kept) + " features of axis " +
            std::to_string(axis) + " but has " +
            std::to_string(t.shape[size_t(axis)]));
      t.slices.push_back({axis, std::move(ranges)});
    }
  if (j.contains(K::kTiles)) {
    const json &tj = j[K::kTiles];
    TensorSpec::Tiles tiles;
    size_t cells = 1;
    for (const json &a : field(tj, K::kTileAxes, at)) {
      int64_t axis = a.get<int64_t>();
      if (axis < 0 || axis >= int64_t(t.shape.size()))
        bad(at + " has a tile axis out of range");
      tiles.axes.push_back(axis);
    }
    for (const json &c : field(tj, K::kTileCuts, at))
      tiles.cuts.push_back(c.get<std::vector<int64_t>>());
    for (const json &o : field(tj, K::kTileOwners, at))
      tiles.owners.push_back(o.get<std::vector<int64_t>>());
    if (tiles.cuts.size() != tiles.axes.size())
      bad(at + " has tile cuts for " + std::to_string(tiles.cuts.size()) +
          " of " + std::to_string(tiles.axes.size()) + " axes");
    for (size_t k = 0; k < tiles.axes.size(); ++k) {
      const std::vector<int64_t> &cut = tiles.cuts[k];
      if (cut.size() < 2 || cut.front() != 0 ||
          cut.back() != t.shape[size_t(tiles.axes[k])] ||
          !std::is_sorted(cut.begin(), cut.end()))
        bad(at + " has tile boundaries that do not cover axis " +
            std::to_string(tiles.axes[k]));
      cells *= cut.size() - 1;
    }
    if (tiles.owners.size() != cells)
      bad(at + " lists owners for " + std::to_string(tiles.owners.size()) +
          " of " + std::to_string(cells) + " tiles");
    t.tiles = std::move(tiles);
  }
  t.frozen = j.value(K::kFrozen, false);
  t.buffer = j.value(K::kBuffer, false);
  if (t.offset % dtypeSize(t.dtype) != 0)
    bad(at + " is misaligned (offset " + std::to_string(t.offset) + ")");
  if (t.offset > arenaBytes || t.bytes() > arenaBytes - t.offset)
    bad(at + " " + shapeString(t.shape) + " at offset " +
        std::to_string(t.offset) + " does not fit in the arena of " +
        std::to_string(arenaBytes) + " bytes");
  return t;
}

void hashTensors(uint64_t &h, const char *kind,
                 const std::vector<TensorSpec> &tensors) {
  h = fnv1a64(kind, std::strlen(kind), h);
  for (const TensorSpec &t : tensors) {
    h = fnv1a64(t.name.data(), t.name.size() + 0, h);
    h = fnv1a64("\0", 1, h);
    const char *dt = dtypeName(t.dtype);
    h = fnv1a64(dt, std::strlen(dt), h);
    for (int64_t d : t.shape)
      h = fnv1a64(&d, sizeof d, h);
    h = fnv1a64("|", 1, h);
  }
}

} // namespace

Manifest parseManifest(const std::string &text, uint64_t entryArenaBytes) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception &e) {
    bad(std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object())
    bad("not a JSON object");
  // Integer fields read numbers by a cast: one beyond the int64 range (or
  // not finite) would be undefined behaviour, so none is accepted anywhere,
  // and a fraction would be cut off, so only the real-valued fields (the
  // optimizer's hyperparameters, SDP's active fraction) may have one.
  std::function<void(const json &, const std::string &, bool)> checkNumbers =
      [&](const json &v, const std::string &key, bool real) {
        if (v.is_number_float()) {
          double d = v.get<double>();
          if (!std::isfinite(d) || std::fabs(d) >= 9.2e18)
            bad("the number " + v.dump() + " is out of range");
          if (!real && d != std::floor(d))
            bad("\"" + key + "\" must be an integer, got " + v.dump());
        }
        if (v.is_object())
          for (auto it = v.begin(); it != v.end(); ++it)
            checkNumbers(it.value(), it.key(),
                         real || it.key() == K::kOptimizer ||
                             it.key() == K::kSdpActive);
        else if (v.is_array())
          for (const json &e : v)
            checkNumbers(e, key, real);
      };
  checkNumbers(j, "manifest", false);
  Manifest m;
  try {
    m.version = field(j, K::kVersionKey, "manifest").get<int>();
    if (m.version != K::kVersion)
      bad(std::string("unsupported ") + K::kVersionKey + " " +
          std::to_string(m.version) + " (this runtime reads version " +
          std::to_string(K::kVersion) + ")");
    m.modelPath = j.value(K::kModelPath, std::string());
    m.worldSize = field(j, K::kWorldSize, "manifest").get<int32_t>();
    if (m.worldSize < 1)
      bad("world_size must be >= 1");
    m.batch = j.value(K::kBatch, int64_t(0));
    m.seed = 0;
    if (j.contains(K::kSeed)) {
      if (!j[K::kSeed].is_number_unsigned())
        bad("seed must be a non-negative integer");
      m.seed = j[K::kSeed].get<uint64_t>();
    }
    m.loss = j.value(K::kLoss, std::string("none"));
    if (j.contains(K::kOptimizer) && j[K::kOptimizer].is_object()) {
      // The hyperparameters a session starts from (the steps read them at
      // run time).
      const json &o = j[K::kOptimizer];
      auto get = [&](const char *key, auto &out) {
        auto it = o.find(key);
        if (it != o.end() && !it->is_null())
          try {
            it->get_to(out);
          } catch (const json::exception &) {
            bad(std::string("optimizer field '") + key +
                "' has the wrong type");
          }
      };
      get(K::kOptimizerName, m.optimizer.name);
      get(K::kLr, m.optimizer.lr);
      get(K::kMomentum, m.optimizer.momentum);
      get(K::kNesterov, m.optimizer.nesterov);
      get(K::kWeightDecay, m.optimizer.weightDecay);
      get(K::kBeta1, m.optimizer.beta1);
      get(K::kBeta2, m.optimizer.beta2);
      get(K::kEps, m.optimizer.eps);
      get(K::kAlpha, m.optimizer.alpha);
      get(K::kLrDecay, m.optimizer.lrDecay);
      get(K::kCentered, m.optimizer.centered);
      // Manifests before RMSprop: momentum SGD is the one with buffers.
      m.optimizer.momentumBuffer = m.optimizer.name == "momentum";
      get(K::kMomentumBuffer, m.optimizer.momentumBuffer);
      get(K::kEma, m.optimizer.ema);
      if (!(m.optimizer.ema >= 0 && m.optimizer.ema < 1))
        bad("optimizer ema must be in [0, 1) (0: none), got " +
            std::to_string(m.optimizer.ema));
    }
    if (!field(j, K::kArenaBytes, "manifest").is_number_unsigned())
      bad("arena_bytes must be a non-negative integer");
    m.arenaBytes = j[K::kArenaBytes].get<uint64_t>();
    if (entryArenaBytes && m.arenaBytes != entryArenaBytes)
      bad("arena_bytes " + std::to_string(m.arenaBytes) +
          " differs from the entry table's " + std::to_string(entryArenaBytes));
    std::set<std::string> names;
    auto list = [&](const char *key, std::vector<TensorSpec> &out) {
      if (!j.contains(key))
        return;
      for (const json &t : j[key]) {
        out.push_back(parseTensor(t, key, m.arenaBytes));
        if (!names.insert(std::string(key) + ":" + out.back().name).second)
          bad(std::string(key) + " lists '" + out.back().name + "' twice");
      }
    };
    list(K::kParams, m.params);
    list(K::kState, m.state);
    list(K::kInputs, m.inputs);
    // An EMA follows every trained parameter.
    if (m.optimizer.ema > 0)
      for (const TensorSpec &p : m.params) {
        if (p.buffer)
          continue;
        const TensorSpec *e = m.findEma(p.name);
        if (!e || e->dtype != p.dtype || e->shape != p.shape)
          bad("optimizer ema is set, but parameter '" + p.name +
              "' has no state '" + p.name + "." + K::kEmaSlot +
              "' of its type");
      }
    // A program whose inputs have no "data" role may leave batch at 0: the
    // first input's leading dimension is the batch then.
    if (m.batch < 1 && !m.inputs.empty() && !m.inputs[0].shape.empty())
      m.batch = m.inputs[0].shape[0];
    if (m.batch < 1)
      bad("batch must be >= 1");
    for (const TensorSpec &in : m.inputs)
      if (in.shape.empty() || in.shape[0] != m.batch)
        bad("input '" + in.name + "' " + shapeString(in.shape) +
            " does not start with the batch size " + std::to_string(m.batch));
    m.lossOffset = j.value(K::kLossOffset, int64_t(-1));
    if (m.lossOffset >= 0 &&
        (m.lossOffset % 4 != 0 || uint64_t(m.lossOffset) + 4 > m.arenaBytes))
      bad("loss_offset is misaligned or outside the arena");
    if (j.contains(K::kEvalOutput) && !j[K::kEvalOutput].is_null())
      m.evalOutput =
          parseTensor(j[K::kEvalOutput], K::kEvalOutput, m.arenaBytes);
    m.gradNormOffset = j.value(K::kGradNormOffset, int64_t(-1));
    if (m.gradNormOffset >= 0 &&
        (m.gradNormOffset % 4 != 0 ||
         uint64_t(m.gradNormOffset) + 4 > m.arenaBytes))
      bad("grad_norm_offset is misaligned or outside the arena");
    m.evalLossOffset = j.value(K::kEvalLossOffset, int64_t(-1));
    if (m.evalLossOffset >= 0 &&
        (m.evalLossOffset % 4 != 0 ||
         uint64_t(m.evalLossOffset) + 4 > m.arenaBytes))
      bad("eval_loss_offset is misaligned or outside the arena");
    if (j.contains(K::kSdp)) {
      const json &o = j[K::kSdp];
      SdpPlan plan;
      plan.mode = field(o, K::kSdpMode, "sdp").get<std::string>();
      plan.masking = field(o, K::kSdpMasking, "sdp").get<std::string>();
      plan.active = field(o, K::kSdpActive, "sdp").get<double>();
      for (const json &v : field(o, K::kSdpRankVariant, "sdp"))
        plan.rankVariant.push_back(v.get<int32_t>());
      for (const json &g : field(o, K::kSdpGroups, "sdp")) {
        std::vector<int64_t> group = g.get<std::vector<int64_t>>();
        // A member's slot in the group's all-gather is its index here, its
        // rank in the group's communicator its world rank's order: the two
        // agree only for ranks listed once, ascending.
        for (size_t i = 0; i < group.size(); ++i)
          if (group[i] < 0 || group[i] >= m.worldSize ||
              (i > 0 && group[i] <= group[i - 1]))
            bad("sdp group " + std::to_string(plan.groups.size()) +
                " must list ranks of the world once, in ascending order");
        plan.groups.push_back(std::move(group));
      }
      for (const json &c : field(o, K::kSdpComponents, "sdp"))
        plan.components.push_back(
            {field(c, K::kComponentName, "sdp component").get<std::string>(),
             field(c, K::kComponentOwners, "sdp component")
                 .get<std::vector<int64_t>>()});
      if (int64_t(plan.rankVariant.size()) != m.worldSize)
        bad("sdp rank_variant has " + std::to_string(plan.rankVariant.size()) +
            " entries for a world of " + std::to_string(m.worldSize));
      m.sdp = std::move(plan);
    }
  } catch (const json::exception &e) {
    bad(std::string("wrong field type: ") + e.what());
  }
  uint64_t h = 0xcbf29ce484222325ull;
  hashTensors(h, K::kParams, m.params);
  hashTensors(h, K::kState, m.state);
  h = fnv1a64(&m.worldSize, sizeof m.worldSize, h);
  // SDP: a checkpoint belongs to one assignment of components to ranks.
  if (m.sdp) {
    for (int32_t v : m.sdp->rankVariant)
      h = fnv1a64(&v, sizeof v, h);
    for (const auto &[name, owners] : m.sdp->components) {
      h = fnv1a64(name.data(), name.size(), h);
      for (int64_t r : owners)
        h = fnv1a64(&r, sizeof r, h);
    }
  }
  m.hash = h;
  return m;
}

} // namespace otc

using namespace otc;

namespace {

/// The folder of the executable or shared library that holds `addr`, or ""
/// when it cannot be told.
std::string folderOfObject(const void *addr) {
  Dl_info info;
  struct link_map *map = nullptr;
  if (!addr ||
      !dladdr1(addr, &info, reinterpret_cast<void **>(&map), RTLD_DL_LINKMAP) ||
      !map)
    return "";
  char path[PATH_MAX];
  // The main program's link map has no name.
  if (map->l_name && map->l_name[0]) {
    if (!realpath(map->l_name, path))
      return "";
  } else {
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    if (n <= 0)
      return "";
    path[n] = '\0';
  }
  std::string p(path);
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? "" : p.substr(0, slash);
}

/// otc-compile names the model copy relative to the program: resolved
/// against the folder the program is in, so that a moved program still finds
/// it.
void resolveModelPath(Manifest &m, const std::string &folder) {
  if (!m.modelPath.empty() && m.modelPath[0] != '/' && !folder.empty())
    m.modelPath = folder + "/" + m.modelPath;
}

void initProgram(otc_program *program, const otc_program_entry_t *entry) {
  if (!entry)
    throw Error(OTC_INVALID_ARGUMENT, "program entry table is NULL");
  if (entry->abi_version != OTC_PROGRAM_ABI_VERSION)
    throw Error(OTC_FAILED_PRECONDITION,
                "program ABI version " + std::to_string(entry->abi_version) +
                    " is not supported by this runtime (version " +
                    std::to_string(OTC_PROGRAM_ABI_VERSION) + ")");
  if (!entry->manifest_json)
    throw Error(OTC_INVALID_ARGUMENT, "program entry table lacks a manifest");
  if (!entry->train_step && entry->num_variants <= 0)
    throw Error(OTC_FAILED_PRECONDITION,
                "the program was compiled for inference (otc-compile "
                "--inference) and has no train_step: a training session "
                "cannot run it");
  program->entry = entry;
  program->manifest = parseManifest(entry->manifest_json, entry->arena_bytes);
  const std::string folder = folderOfObject(entry);
  resolveModelPath(program->manifest, folder);
  // SDP: the whole model evaluates; each rank trains its variant.
  if (entry->num_variants > 0) {
    const Manifest &m = program->manifest;
    if (!m.sdp || !entry->variants || !entry->rank_variant || !entry->eval_step)
      throw Error(OTC_INVALID_ARGUMENT,
                  "program entry table has variants but no SDP plan");
    for (int32_t r = 0; r < m.worldSize; ++r)
      if (entry->rank_variant[r] < 0 ||
          entry->rank_variant[r] >= entry->num_variants)
        throw Error(OTC_INVALID_ARGUMENT, "program entry table maps rank " +
                                              std::to_string(r) +
                                              " to a variant it lacks");
    for (int32_t v = 0; v < entry->num_variants; ++v) {
      const otc_program_entry_t *e = entry->variants[v];
      if (!e || e->abi_version != OTC_PROGRAM_ABI_VERSION ||
          !e->manifest_json || !e->train_step)
        throw Error(OTC_INVALID_ARGUMENT,
                    "SDP variant " + std::to_string(v) + " is malformed");
      program->variants.push_back(
          parseManifest(e->manifest_json, e->arena_bytes));
      resolveModelPath(program->variants.back(), folder);
    }
  }
}

// The C view of a manifest tensor; points into the program's manifest.
otc_tensor_info_t tensorInfo(const TensorSpec &t) {
  otc_tensor_info_t info;
  info.name = t.name.c_str();
  info.role = t.role.c_str();
  info.dtype = otc_dtype_t(t.dtype);
  info.rank = int32_t(t.shape.size());
  info.shape = t.shape.data();
  return info;
}

} // namespace

extern "C" {

otc_status_t otc_program_from_entry(const otc_program_entry_t *entry,
                                    otc_program_t **out_program) {
  return guard([&] {
    if (!out_program)
      throw Error(OTC_INVALID_ARGUMENT, "out_program is NULL");
    *out_program = nullptr;
    auto program = std::make_unique<otc_program>();
    initProgram(program.get(), entry);
    *out_program = program.release();
  });
}

otc_status_t otc_program_load(const char *path, otc_program_t **out_program) {
  return guard([&] {
    if (!out_program || !path)
      throw Error(OTC_INVALID_ARGUMENT, "path or out_program is NULL");
    *out_program = nullptr;
    // A file path, never a name for the loader to search its folders for.
    std::string file = std::strchr(path, '/') ? path : std::string("./") + path;
    void *handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      throw Error(OTC_NOT_FOUND, std::string("cannot load program '") + path +
                                     "': " + (why ? why : "dlopen failed"));
    }
    auto program = std::make_unique<otc_program>();
    program->handle = handle;
    try {
      auto fn = reinterpret_cast<otc_program_entry_fn>(
          dlsym(handle, OTC_PROGRAM_ENTRY_SYMBOL));
      if (!fn)
        throw Error(OTC_INVALID_ARGUMENT,
                    std::string("'") + path + "' does not export " +
                        OTC_PROGRAM_ENTRY_SYMBOL +
                        " (was it built with otc-compile --emit=lib?)");
      initProgram(program.get(), fn());
    } catch (...) {
      dlclose(handle);
      program->handle = nullptr;
      throw;
    }
    *out_program = program.release();
  });
}

void otc_program_release(otc_program_t *program) {
  if (!program)
    return;
  if (program->handle)
    dlclose(program->handle);
  delete program;
}

const char *otc_program_model_path(const otc_program_t *program) {
  return program ? program->manifest.modelPath.c_str() : "";
}

const char *otc_program_manifest(const otc_program_t *program) {
  return program && program->entry ? program->entry->manifest_json : "";
}

int32_t otc_program_world_size(const otc_program_t *program) {
  return program ? program->manifest.worldSize : 0;
}

otc_status_t otc_program_check_world_size(const otc_program_t *program,
                                          int32_t world_size) {
  return guard([&] {
    if (!program)
      throw Error(OTC_INVALID_ARGUMENT, "program is NULL");
    if (world_size != program->manifest.worldSize)
      throw Error(
          OTC_FAILED_PRECONDITION,
          worldSizeMismatchMessage(program->manifest.worldSize, world_size));
  });
}

int64_t otc_program_batch(const otc_program_t *program) {
  return program ? program->manifest.batch : 0;
}

uint64_t otc_program_seed(const otc_program_t *program) {
  return program ? program->manifest.seed : 0;
}

const char *otc_program_loss(const otc_program_t *program) {
  return program ? program->manifest.loss.c_str() : "none";
}

uint32_t otc_program_features(const otc_program_t *program) {
  if (!program || !program->entry)
    return 0;
  const Manifest &m = program->manifest;
  uint32_t f = 0;
  if (!program->variants.empty())
    f |= OTC_PROGRAM_SDP;
  if (program->entry->eval_step)
    f |= OTC_PROGRAM_EVAL_STEP;
  if (m.evalLossOffset >= 0)
    f |= OTC_PROGRAM_EVAL_LOSS;
  if (program->entry->calibrate_step)
    f |= OTC_PROGRAM_CALIBRATE_STEP;
  if (m.hasPerRankState())
    f |= OTC_PROGRAM_PER_RANK_STATE;
  if (m.optimizer.ema > 0)
    f |= OTC_PROGRAM_EMA;
  return f;
}

int32_t otc_program_accumulate(const otc_program_t *program) {
  if (!program)
    return 0;
  // SDP: the rank variants' (all alike); else the program's own.
  const otc_program_entry_t *e = program->entry;
  if (e->num_variants > 0)
    e = e->variants[0];
  return e->accumulate_step && e->accumulate > 1 ? e->accumulate : 1;
}

int64_t otc_program_input_count(const otc_program_t *program) {
  return program ? int64_t(program->manifest.inputs.size()) : 0;
}

otc_status_t otc_program_input(const otc_program_t *program, int64_t index,
                               otc_tensor_info_t *out_info) {
  return guard([&] {
    if (!program || !out_info)
      throw Error(OTC_INVALID_ARGUMENT, "program or out_info is NULL");
    const std::vector<TensorSpec> &inputs = program->manifest.inputs;
    if (index < 0 || index >= int64_t(inputs.size()))
      throw Error(OTC_INVALID_ARGUMENT,
                  "input index " + std::to_string(index) + " is outside [0, " +
                      std::to_string(inputs.size()) + ")");
    *out_info = tensorInfo(inputs[size_t(index)]);
  });
}

otc_status_t otc_program_eval_output(const otc_program_t *program,
                                     otc_tensor_info_t *out_info) {
  return guard([&] {
    if (!program || !out_info)
      throw Error(OTC_INVALID_ARGUMENT, "program or out_info is NULL");
    if (!program->manifest.evalOutput)
      throw Error(OTC_NOT_FOUND, "the program has no eval_output");
    *out_info = tensorInfo(*program->manifest.evalOutput);
  });
}

} // extern "C"
