//===- export.cpp - Parameters from and to the source ONNX model ----------===//
//
// Weights never live in the compiled program: the initial values come from
// the source model's initializers and export writes the same model back with
// the trained values, so the graph is exactly what the user exported.
//
//===----------------------------------------------------------------------===//

#include "core/export.h"
#include "core/checkpoint.h"
#include "core/sdp.h"
#include "core/session.h"
#include "core/status.h"

#include <onnx/onnx_pb.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace otc {

namespace {

int onnxTypeOf(DType dtype) { return dtypeInfo(dtype).onnx; }

onnx::ModelProto readModel(const std::string &path) {
  if (path.empty())
    throw Error(OTC_FAILED_PRECONDITION,
                "the program's manifest names no source model (model_path)");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(OTC_NOT_FOUND,
                "cannot open the source model '" + path +
                    "': " + std::strerror(errno) +
                    " (otc-compile keeps it beside the program as "
                    "<program>.model.onnx: move the two together)");
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in))
    throw Error(OTC_DATA_LOSS,
                "'" + path + "' is not a valid ONNX model (parse failed)");
  return model;
}

std::string dirOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// Reads an initializer stored outside the model; the location must stay in
// the model's folder.
std::string readExternal(const onnx::TensorProto &t,
                         const std::string &modelPath) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &kv : t.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = std::stoll(kv.value());
    else if (kv.key() == "length")
      length = std::stoll(kv.value());
  }
  if (location.empty() || location[0] == '/' ||
      location.find("..") != std::string::npos)
    throw Error(OTC_INVALID_ARGUMENT, "initializer '" + t.name() +
                                          "' has an external data location '" +
                                          location +
                                          "' outside the model's folder");
  std::string file = dirOf(modelPath) + "/" + location;
  // Resolve links too: a symlink inside the folder may point outside it.
  char resolvedDir[PATH_MAX], resolvedFile[PATH_MAX];
  if (realpath(dirOf(modelPath).c_str(), resolvedDir) &&
      realpath(file.c_str(), resolvedFile)) {
    std::string dir = std::string(resolvedDir) + "/";
    if (std::string(resolvedFile).compare(0, dir.size(), dir) != 0)
      throw Error(OTC_INVALID_ARGUMENT,
                  "initializer '" + t.name() + "' has external data '" +
                      location + "' that resolves outside the model's folder");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw Error(OTC_NOT_FOUND, "cannot open external data '" + file +
                                   "' of initializer '" + t.name() + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string all = ss.str();
  if (offset < 0 || size_t(offset) > all.size())
    throw Error(OTC_DATA_LOSS, "external data of '" + t.name() +
                                   "' starts past the end of '" + file + "'");
  size_t n = length < 0 ? all.size() - size_t(offset) : size_t(length);
  if (n > all.size() - size_t(offset))
    throw Error(OTC_DATA_LOSS, "external data of '" + t.name() +
                                   "' is truncated in '" + file + "'");
  return all.substr(size_t(offset), n);
}

template <typename Field>
void copyTyped(const Field &field, DType dtype, uint8_t *dst) {
  for (int i = 0; i < field.size(); ++i) {
    switch (dtype) {
    case DType::F32: {
      float v = float(field.Get(i));
      std::memcpy(dst + 4 * size_t(i), &v, 4);
      break;
    }
    case DType::F64: {
      double v = double(field.Get(i));
      std::memcpy(dst + 8 * size_t(i), &v, 8);
      break;
    }
    case DType::I64: {
      int64_t v = int64_t(field.Get(i));
      std::memcpy(dst + 8 * size_t(i), &v, 8);
      break;
    }
    case DType::I32: {
      int32_t v = int32_t(field.Get(i));
      std::memcpy(dst + 4 * size_t(i), &v, 4);
      break;
    }
    case DType::U8:
    case DType::Bool:
      dst[i] = uint8_t(field.Get(i));
      break;
    default: { // the other integers and the f16/bf16 bits: the low bytes
      const size_t size = dtypeSize(dtype);
      uint64_t v = uint64_t(field.Get(i));
      std::memcpy(dst + size * size_t(i), &v, size);
      break;
    }
    }
  }
}

void fillFromInitializer(const onnx::TensorProto &t, const TensorSpec &spec,
                         const std::string &modelPath, uint8_t *dst) {
  std::string where = "initializer '" + spec.name + "' of '" + modelPath + "'";
  if (t.data_type() != onnxTypeOf(spec.dtype))
    throw Error(OTC_INVALID_ARGUMENT,
                where + " has ONNX data type " + std::to_string(t.data_type()) +
                    " but the program expects " + dtypeName(spec.dtype));
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  if (dims != spec.shape)
    throw Error(OTC_INVALID_ARGUMENT,
                where + " has shape " + shapeString(dims) +
                    " but the program expects " + shapeString(spec.shape));
  size_t n = size_t(spec.numel());
  auto countError = [&](size_t got) {
    return Error(OTC_DATA_LOSS, where + " holds " + std::to_string(got) +
                                    " values, expected " + std::to_string(n));
  };
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string raw = readExternal(t, modelPath);
    if (raw.size() != spec.bytes())
      throw countError(raw.size() / dtypeSize(spec.dtype));
    std::memcpy(dst, raw.data(), raw.size());
    return;
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != spec.bytes())
      throw countError(t.raw_data().size() / dtypeSize(spec.dtype));
    std::memcpy(dst, t.raw_data().data(), spec.bytes());
    return;
  }
  switch (spec.dtype) {
  case DType::F32:
    if (size_t(t.float_data_size()) != n)
      throw countError(size_t(t.float_data_size()));
    return copyTyped(t.float_data(), spec.dtype, dst);
  case DType::F64:
    if (size_t(t.double_data_size()) != n)
      throw countError(size_t(t.double_data_size()));
    return copyTyped(t.double_data(), spec.dtype, dst);
  case DType::I64:
    if (size_t(t.int64_data_size()) != n)
      throw countError(size_t(t.int64_data_size()));
    return copyTyped(t.int64_data(), spec.dtype, dst);
  case DType::I32:
  case DType::U8:
  case DType::Bool:
  case DType::I8:
  case DType::I16:
  case DType::U16:
  case DType::F16:
  case DType::BF16:
    if (size_t(t.int32_data_size()) != n)
      throw countError(size_t(t.int32_data_size()));
    return copyTyped(t.int32_data(), spec.dtype, dst);
  case DType::U32:
  case DType::U64:
    if (size_t(t.uint64_data_size()) != n)
      throw countError(size_t(t.uint64_data_size()));
    return copyTyped(t.uint64_data(), spec.dtype, dst);
  }
}

} // namespace

void loadInitialParams(const Manifest &m, uint8_t *arena) {
  if (m.params.empty())
    return;
  onnx::ModelProto model = readModel(m.modelPath);
  std::map<std::string, const onnx::TensorProto *> byName;
  for (const onnx::TensorProto &t : model.graph().initializer())
    byName[t.name()] = &t;
  for (const TensorSpec &p : m.params) {
    auto it = byName.find(p.name);
    if (it == byName.end())
      throw Error(OTC_NOT_FOUND, "the source model '" + m.modelPath +
                                     "' has no initializer '" + p.name + "'");
    if (p.slices.empty()) {
      fillFromInitializer(*it->second, p, m.modelPath, arena + p.offset);
      continue;
    }
    // An SDP slice: read the whole tensor, keep this rank's features.
    TensorSpec whole = p;
    whole.shape.assign(it->second->dims().begin(), it->second->dims().end());
    if (whole.shape.size() != p.shape.size())
      throw Error(OTC_INVALID_ARGUMENT,
                  "initializer '" + p.name + "' has shape " +
                      shapeString(whole.shape) + " but the program slices " +
                      shapeString(p.shape) + " out of it");
    for (const auto &[axis, ranges] : p.slices)
      if (ranges.back() > whole.shape[size_t(axis)])
        throw Error(OTC_INVALID_ARGUMENT,
                    "initializer '" + p.name + "' " + shapeString(whole.shape) +
                        " is narrower than the features the program keeps");
    std::vector<uint8_t> full(whole.bytes());
    fillFromInitializer(*it->second, whole, m.modelPath, full.data());
    forEachKept(p, whole.shape, [&](int64_t local, int64_t global) {
      size_t e = dtypeSize(p.dtype);
      std::memcpy(arena + p.offset + size_t(local) * e,
                  full.data() + size_t(global) * e, e);
    });
  }
}

void exportOnnx(const Manifest &m, const uint8_t *arena,
                const std::string &path, ExportWeights weights) {
  if (weights == ExportWeights::Ema && !(m.optimizer.ema > 0))
    throw Error(OTC_FAILED_PRECONDITION,
                "the program keeps no EMA of its weights (compile with "
                "otc-compile --ema DECAY)");
  // The next session would start from the trained weights.
  char exportReal[PATH_MAX], modelReal[PATH_MAX];
  if (realpath(path.c_str(), exportReal) &&
      realpath(m.modelPath.c_str(), modelReal) &&
      std::strcmp(exportReal, modelReal) == 0)
    throw Error(OTC_INVALID_ARGUMENT,
                "refusing to export over '" + path +
                    "': it is the program's source model, which every new "
                    "session reads its initial weights from");
  onnx::ModelProto model = readModel(m.modelPath);
  std::map<std::string, onnx::TensorProto *> byName;
  for (onnx::TensorProto &t : *model.mutable_graph()->mutable_initializer())
    byName[t.name()] = &t;
  for (const TensorSpec &p : m.params) {
    auto it = byName.find(p.name);
    if (it == byName.end())
      throw Error(OTC_NOT_FOUND, "the source model '" + m.modelPath +
                                     "' has no initializer '" + p.name + "'");
    const TensorSpec *src = &p;
    if (weights == ExportWeights::Ema && !p.buffer) {
      src = m.findEma(p.name);
      if (!src) // the manifest's parser checks this
        throw Error(OTC_INTERNAL, "parameter '" + p.name + "' has no EMA");
    }
    onnx::TensorProto &t = *it->second;
    t.clear_float_data();
    t.clear_double_data();
    t.clear_int32_data();
    t.clear_int64_data();
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto::DEFAULT);
    t.set_data_type(onnxTypeOf(p.dtype));
    t.clear_dims();
    for (int64_t d : p.shape)
      t.add_dims(d);
    t.set_raw_data(arena + src->offset, src->bytes());
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    throw Error(OTC_INTERNAL, "cannot serialise the exported model");
  writeFileAtomically(path, bytes);
}

} // namespace otc
