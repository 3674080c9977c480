//===- test_fixture.h - A hand-written compiled program ---------*- C++ -*-===//
//
// Stands in for otc-compile's output: softmax regression (logits = x W^T + b,
// mean cross-entropy, momentum SGD) written with plain loops against the
// arena layout its manifest declares, plus the source .onnx model written
// with the ONNX protobuf API. With a compression descriptor its gradient
// bucket goes through compressed_all_reduce_mean_f32 (residual: manifest
// state "bucket0.residual"), as otc-compile --compress emits; with an EMA
// decay it keeps "<param>.ema" state as otc-compile --ema does. Entry points
// cannot carry state, so each fixture occupies one of a few global slots.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_RUNTIME_CORE_TEST_FIXTURE_H
#define OTC_RUNTIME_CORE_TEST_FIXTURE_H

#include "otc/runtime.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace otc::testing {

/// A status's code and message (the status freed).
struct StatusText {
  otc_status_code_t code;
  std::string message;
};

inline StatusText take(otc_status_t s) {
  StatusText t{otc_status_code(s), otc_status_message(s)};
  otc_status_free(s);
  return t;
}

/// Asserts that an otc_* call returned OK, printing its message otherwise.
#define ASSERT_OK(expr)                                                        \
  do {                                                                         \
    ::otc::testing::StatusText otcT = ::otc::testing::take(expr);              \
    ASSERT_EQ(otcT.code, OTC_OK) << otcT.message;                              \
  } while (0)

/// A new empty folder under the system's temporary directory ($TMPDIR),
/// named `prefix`-XXXXXX; "" when it cannot be created.
inline std::string makeTempDir(const std::string &prefix) {
  std::string tmpl =
      (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  return mkdtemp(buf.data()) ? std::string(buf.data()) : std::string();
}

struct Layout {
  int64_t D = 0, C = 0, B = 0;
  float lr = 0.1f, mu = 0.9f;
  uint64_t w = 0, b = 0, vw = 0, vb = 0, gw = 0, gb = 0, x = 0, y = 0, loss = 0,
           logits = 0, evalLoss = 0, residual = 0, arena = 0;
  bool compressed = false;
  otc_compress_desc_t desc{};
  /// --ema: the decay and the EMA state of W and b.
  double ema = 0;
  uint64_t ew = 0, eb = 0;
};

constexpr int kSlots = 4;
inline Layout gLayouts[kSlots];

inline int forward(const Layout &l, uint8_t *arena, float *outLoss,
                   bool grads) {
  auto *w = reinterpret_cast<float *>(arena + l.w);
  auto *b = reinterpret_cast<float *>(arena + l.b);
  auto *x = reinterpret_cast<float *>(arena + l.x);
  auto *y = reinterpret_cast<int64_t *>(arena + l.y);
  auto *logits = reinterpret_cast<float *>(arena + l.logits);
  auto *gw = reinterpret_cast<float *>(arena + l.gw);
  auto *gb = reinterpret_cast<float *>(arena + l.gb);
  if (grads) {
    std::memset(gw, 0, size_t(l.C * l.D) * 4);
    std::memset(gb, 0, size_t(l.C) * 4);
  }
  double loss = 0;
  std::vector<float> p(static_cast<size_t>(l.C));
  for (int64_t i = 0; i < l.B; ++i) {
    if (y[i] < 0 || y[i] >= l.C)
      return OTC_STEP_ERR_LABEL_RANGE;
    float mx = -INFINITY;
    for (int64_t c = 0; c < l.C; ++c) {
      float z = b[c];
      for (int64_t d = 0; d < l.D; ++d)
        z += x[i * l.D + d] * w[c * l.D + d];
      logits[i * l.C + c] = z;
      mx = std::max(mx, z);
    }
    float sum = 0;
    for (int64_t c = 0; c < l.C; ++c)
      sum += (p[size_t(c)] = std::exp(logits[i * l.C + c] - mx));
    for (int64_t c = 0; c < l.C; ++c)
      p[size_t(c)] /= sum;
    loss += -std::log(std::max(p[size_t(y[i])], 1e-30f));
    if (grads)
      for (int64_t c = 0; c < l.C; ++c) {
        float g = (p[size_t(c)] - (c == y[i] ? 1.f : 0.f)) / float(l.B);
        gb[c] += g;
        for (int64_t d = 0; d < l.D; ++d)
          gw[c * l.D + d] += g * x[i * l.D + d];
      }
  }
  *outLoss = float(loss / double(l.B));
  return OTC_STEP_OK;
}

template <int Slot>
int fixtureTrainStep(uint8_t *arena, const otc_step_context_t *ctx) {
  const Layout &l = gLayouts[Slot];
  float loss;
  if (int rc = forward(l, arena, &loss, true))
    return rc;
  std::memcpy(arena + l.loss, &loss, 4);
  // Gradients of W and b are contiguous: one all-reduce, as buckets are.
  auto *grads = reinterpret_cast<float *>(arena + l.gw);
  int64_t n = l.C * l.D + l.C;
  if (l.compressed) {
    auto *residual = reinterpret_cast<float *>(arena + l.residual);
    // Skipped or failed: return before any update.
    if (int rc = ctx->compressed_all_reduce_mean_f32(
            ctx->comm, &l.desc, grads, n,
            l.desc.error_feedback ? residual : nullptr, nullptr, 0.0f,
            nullptr, 0))
      return rc;
  } else if (ctx->all_reduce_mean_f32(ctx->comm, grads, n)) {
    return OTC_STEP_ERR_COMM;
  }
  // The all-reduce may still be running (overlap).
  if (int rc = ctx->wait_collectives(ctx->comm))
    return rc;
  // The hyperparameters are the step's (the manifest's unless set).
  const float lr = float(ctx->hyper->lr), mu = float(ctx->hyper->momentum);
  auto update = [&](uint64_t w, uint64_t v, uint64_t g, int64_t n) {
    auto *pw = reinterpret_cast<float *>(arena + w);
    auto *pv = reinterpret_cast<float *>(arena + v);
    auto *pg = reinterpret_cast<float *>(arena + g);
    for (int64_t i = 0; i < n; ++i) {
      pv[i] = mu * pv[i] + pg[i];
      pw[i] -= lr * pv[i];
    }
  };
  update(l.w, l.vw, l.gw, l.C * l.D);
  update(l.b, l.vb, l.gb, l.C);
  // The EMA after the update: the first optimizer step copies.
  auto ema = [&](uint64_t e, uint64_t w, int64_t n) {
    auto *pe = reinterpret_cast<float *>(arena + e);
    auto *pw = reinterpret_cast<const float *>(arena + w);
    for (int64_t i = 0; i < n; ++i)
      pe[i] = ctx->step <= 1
                  ? pw[i]
                  : float(l.ema * pe[i] + (1 - l.ema) * double(pw[i]));
  };
  if (l.ema > 0) {
    ema(l.ew, l.w, l.C * l.D);
    ema(l.eb, l.b, l.C);
  }
  return OTC_STEP_OK;
}

template <int Slot>
int fixtureEvalStep(uint8_t *arena, const otc_step_context_t *) {
  const Layout &l = gLayouts[Slot];
  float loss;
  if (int rc = forward(l, arena, &loss, false))
    return rc;
  std::memcpy(arena + l.evalLoss, &loss, 4);
  return OTC_STEP_OK;
}

/// Writes the source model: logits = Gemm(x, fc.weight, fc.bias, transB=1).
/// fc.weight is stored as float_data, fc.bias as raw_data (both paths).
inline void writeLinearModel(const std::string &path, int64_t D, int64_t C,
                             uint64_t seed, bool wrongShape = false) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("otc-runtime-test");
  model.add_opset_import()->set_version(13);
  onnx::GraphProto *g = model.mutable_graph();
  g->set_name("linear");
  auto addValue = [](onnx::ValueInfoProto *v, const char *name, int elem,
                     std::vector<int64_t> dims) {
    v->set_name(name);
    auto *t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem);
    for (int64_t d : dims)
      t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  addValue(g->add_input(), "x", onnx::TensorProto::FLOAT, {1, D});
  addValue(g->add_output(), "logits", onnx::TensorProto::FLOAT, {1, C});
  onnx::NodeProto *n = g->add_node();
  n->set_op_type("Gemm");
  n->add_input("x");
  n->add_input("fc.weight");
  n->add_input("fc.bias");
  n->add_output("logits");
  auto *a = n->add_attribute();
  a->set_name("transB");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.f, 0.1f);
  onnx::TensorProto *w = g->add_initializer();
  w->set_name("fc.weight");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(C);
  w->add_dims(wrongShape ? D + 1 : D);
  for (int64_t i = 0; i < C * (wrongShape ? D + 1 : D); ++i)
    w->add_float_data(normal(rng));
  onnx::TensorProto *b = g->add_initializer();
  b->set_name("fc.bias");
  b->set_data_type(onnx::TensorProto::FLOAT);
  b->add_dims(C);
  std::vector<float> bias(static_cast<size_t>(C));
  for (float &v : bias)
    v = normal(rng);
  b->set_raw_data(bias.data(), bias.size() * 4);
  std::ofstream out(path, std::ios::binary);
  if (!model.SerializeToOstream(&out))
    throw std::runtime_error("cannot write " + path);
}

/// What a LinearProgram's manifest says beyond the defaults.
struct LinearOptions {
  /// The optimizer object's name and extra members (JSON, each with a
  /// leading comma); the step itself stays momentum SGD.
  std::string optimizer = "momentum";
  std::string optimizerFields;
  /// > 0: an EMA of the weights with this decay ("ema" in the manifest).
  double ema = 0;
  /// false: the manifest names an EMA but lists no EMA state (invalid).
  bool emaState = true;
};

/// A compiled-program stand-in occupying global slot `slot`.
struct LinearProgram {
  LinearProgram(int slot, const std::string &modelPath, int64_t D, int64_t C,
                int64_t B, int worldSize, float lr = 0.1f, float mu = 0.9f,
                const otc_compress_desc_t *compress = nullptr,
                const LinearOptions &options = LinearOptions())
      : slot(slot) {
    Layout &l = gLayouts[slot];
    l = Layout();
    l.D = D, l.C = C, l.B = B, l.lr = lr, l.mu = mu;
    l.ema = options.ema;
    if (compress) {
      l.compressed = true;
      l.desc = *compress;
    }
    uint64_t at = 0;
    auto place = [&](uint64_t bytes) {
      uint64_t o = at;
      at += (bytes + 63) / 64 * 64;
      return o;
    };
    l.w = place(uint64_t(C * D) * 4);
    l.b = place(uint64_t(C) * 4);
    l.vw = place(uint64_t(C * D) * 4);
    l.vb = place(uint64_t(C) * 4);
    l.gw = at; // gw and gb contiguous
    at += uint64_t(C * D) * 4;
    l.gb = at;
    at += uint64_t(C) * 4;
    at = (at + 63) / 64 * 64;
    l.x = place(uint64_t(B * D) * 4);
    l.y = place(uint64_t(B) * 8);
    l.loss = place(4);
    l.logits = place(uint64_t(B * C) * 4);
    l.evalLoss = place(4);
    if (compress)
      l.residual = place(uint64_t(C * D + C) * 4);
    if (options.ema > 0) {
      l.ew = place(uint64_t(C * D) * 4);
      l.eb = place(uint64_t(C) * 4);
    }
    l.arena = at;
    auto shape = [](std::vector<int64_t> s) {
      std::string r = "[";
      for (size_t i = 0; i < s.size(); ++i)
        r += (i ? "," : "") + std::to_string(s[i]);
      return r + "]";
    };
    auto tensor = [&](const char *name, const char *dtype,
                      std::vector<int64_t> s, uint64_t offset,
                      const std::string &more = "") {
      return std::string("{\"name\":\"") + name + "\",\"dtype\":\"" + dtype +
             "\",\"shape\":" + shape(s) +
             ",\"offset\":" + std::to_string(offset) + more + "}";
    };
    manifest =
        "{\"otc_manifest_version\":1,\"model_path\":\"" + modelPath +
        "\",\"world_size\":" + std::to_string(worldSize) +
        ",\"batch\":" + std::to_string(B) +
        ",\"seed\":0,\"loss\":\"cross-entropy\","
        "\"optimizer\":{\"name\":\"" +
        options.optimizer + "\",\"lr\":" + std::to_string(lr) +
        ",\"momentum\":" + std::to_string(mu) + options.optimizerFields +
        (options.ema > 0 ? ",\"ema\":" + std::to_string(options.ema)
                         : std::string()) +
        "},\"arena_bytes\":" + std::to_string(l.arena) + ",\"params\":[" +
        tensor("fc.weight", "f32", {C, D}, l.w) + "," +
        tensor("fc.bias", "f32", {C}, l.b) + "],\"state\":[" +
        tensor("fc.weight.momentum", "f32", {C, D}, l.vw,
               ",\"param\":\"fc.weight\"") +
        "," +
        tensor("fc.bias.momentum", "f32", {C}, l.vb, ",\"param\":\"fc.bias\"") +
        // Error-feedback residual: state whose "param" names no parameter.
        (compress ? "," + tensor("bucket0.residual", "f32", {C * D + C},
                                 l.residual, ",\"param\":\"bucket0\"")
                  : std::string()) +
        (options.ema > 0 && options.emaState
             ? "," +
                   tensor("fc.weight.ema", "f32", {C, D}, l.ew,
                          ",\"param\":\"fc.weight\"") +
                   "," +
                   tensor("fc.bias.ema", "f32", {C}, l.eb,
                          ",\"param\":\"fc.bias\"")
             : std::string()) +
        "],\"inputs\":[" +
        tensor("x", "f32", {B, D}, l.x, ",\"role\":\"data\"") + "," +
        tensor("y", "i64", {B}, l.y, ",\"role\":\"label\"") +
        "],\"loss_offset\":" + std::to_string(l.loss) +
        ",\"eval_output\":" + tensor("logits", "f32", {B, C}, l.logits) +
        ",\"eval_loss_offset\":" + std::to_string(l.evalLoss) +
        ",\"memory\":{\"params\":0,\"grads\":0,\"optimizer\":0,"
        "\"activations\":0,\"inputs\":0,\"peak\":0}}";
    entry.abi_version = OTC_PROGRAM_ABI_VERSION;
    entry.manifest_json = manifest.c_str();
    entry.arena_bytes = l.arena;
    static const decltype(&fixtureTrainStep<0>) trains[kSlots] = {
        fixtureTrainStep<0>, fixtureTrainStep<1>, fixtureTrainStep<2>,
        fixtureTrainStep<3>};
    static const decltype(&fixtureEvalStep<0>) evals[kSlots] = {
        fixtureEvalStep<0>, fixtureEvalStep<1>, fixtureEvalStep<2>,
        fixtureEvalStep<3>};
    entry.train_step = trains[slot];
    entry.eval_step = evals[slot];
  }

  int slot;
  std::string manifest;
  otc_program_entry_t entry{};
};

/// Separable synthetic classification data: x ~ N(0,1)^D, y = argmax(T x).
inline void makeData(int64_t n, int64_t D, int64_t C, uint64_t seed,
                     std::vector<float> &x, std::vector<int64_t> &y) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> t(static_cast<size_t>(C * D));
  for (float &v : t)
    v = normal(rng);
  x.resize(size_t(n * D));
  y.resize(size_t(n));
  for (float &v : x)
    v = normal(rng);
  for (int64_t i = 0; i < n; ++i) {
    int64_t best = 0;
    float bestZ = -INFINITY;
    for (int64_t c = 0; c < C; ++c) {
      float z = 0;
      for (int64_t d = 0; d < D; ++d)
        z += t[size_t(c * D + d)] * x[size_t(i * D + d)];
      if (z > bestZ)
        bestZ = z, best = c;
    }
    y[size_t(i)] = best;
  }
}

} // namespace otc::testing

#endif // OTC_RUNTIME_CORE_TEST_FIXTURE_H
