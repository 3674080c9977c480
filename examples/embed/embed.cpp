//===- embed.cpp - Training a compiled OTC program from C++ ---------------===//
//
// usage: embed-cpp PROGRAM.so OUT_DIR
//
// The C API (otc/runtime.h) behind small RAII owners that turn a failed call
// into an exception carrying the runtime's message. Loads a classifier
// compiled with `otc-compile --emit=lib`, trains it on separable data made
// in memory, lowers the learning rate, measures accuracy on held-out data
// with eval steps, checkpoints and restores the checkpoint into a second
// session (its parameters must equal the first's), and exports the trained
// model to OUT_DIR/trained-cpp.onnx.
//
//===----------------------------------------------------------------------===//

#include <otc/runtime.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

void check(otc_status_t status, const std::string &what) {
  if (!status)
    return;
  std::string message = what + ": " + otc_status_message(status);
  otc_status_free(status);
  throw std::runtime_error(message);
}

template <typename T, void (*Release)(T *)> struct Deleter {
  void operator()(T *p) const { Release(p); }
};
using Program =
    std::unique_ptr<otc_program_t, Deleter<otc_program_t, otc_program_release>>;
using Comm = std::unique_ptr<otc_comm_t, Deleter<otc_comm_t, otc_comm_release>>;
using Session =
    std::unique_ptr<otc_session_t, Deleter<otc_session_t, otc_session_release>>;

Session makeSession(otc_program_t *program, otc_comm_t *comm) {
  otc_session_options_t options;
  otc_session_options_initialize(&options);
  otc_session_t *s = nullptr;
  check(otc_session_create(program, comm, &options, &s), "create a session");
  return Session(s);
}

/// Gaussian blobs around one center per class.
struct Blobs {
  std::string xName, yName;
  int64_t batch = 0, features = 1, classes = 0;
  std::vector<float> centers, x;
  std::vector<int64_t> y;
  std::mt19937 gen{7};

  void next() {
    std::uniform_int_distribution<int64_t> label(0, classes - 1);
    std::normal_distribution<float> noise(0.f, 0.3f);
    for (int64_t i = 0; i < batch; ++i) {
      y[i] = label(gen);
      for (int64_t j = 0; j < features; ++j)
        x[i * features + j] = centers[y[i] * features + j] + noise(gen);
    }
  }
  void bind(otc_session_t *s) {
    next();
    bindSame(s);
  }
  void bindSame(otc_session_t *s) {
    check(otc_session_bind_input(s, xName.c_str(), x.data(),
                                 x.size() * sizeof(float)),
          "bind " + xName);
    check(otc_session_bind_input(s, yName.c_str(), y.data(),
                                 y.size() * sizeof(int64_t)),
          "bind " + yName);
  }
};

int run(const char *programPath, const std::string &outDir) {
  otc_program_t *raw = nullptr;
  check(otc_program_load(programPath, &raw), "load the program");
  Program program(raw);
  Blobs data;
  data.batch = otc_program_batch(program.get());
  for (int64_t i = 0; i < otc_program_input_count(program.get()); ++i) {
    otc_tensor_info_t in;
    check(otc_program_input(program.get(), i, &in), "read the inputs");
    if (std::strcmp(in.role, "label") == 0) {
      data.yName = in.name;
    } else {
      data.xName = in.name;
      for (int32_t k = 1; k < in.rank; ++k)
        data.features *= in.shape[k];
    }
  }
  otc_tensor_info_t logits;
  check(otc_program_eval_output(program.get(), &logits), "the model output");
  data.classes = logits.shape[1];
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  for (int64_t i = 0; i < data.classes * data.features; ++i)
    data.centers.push_back(unit(data.gen));
  data.x.resize(data.batch * data.features);
  data.y.resize(data.batch);

  otc_comm_t *c = nullptr;
  check(otc_comm_create_local(&c), "create a communicator");
  Comm comm(c);
  Session session = makeSession(program.get(), comm.get());
  float loss = 0;
  for (int step = 0; step < 80; ++step) {
    if (step == 40)
      check(otc_session_set_lr(session.get(),
                               otc_session_get_lr(session.get()) * 0.5),
            "set the learning rate");
    data.bind(session.get());
    check(otc_session_train_step(session.get(), &loss), "train step");
  }

  // Held-out accuracy from eval steps.
  std::vector<float> out(data.batch * data.classes);
  int64_t right = 0, total = 0;
  for (int b = 0; b < 10; ++b) {
    data.bind(session.get());
    check(otc_session_eval_step(session.get(), out.data(),
                                out.size() * sizeof(float)),
          "eval step");
    for (int64_t i = 0; i < data.batch; ++i, ++total) {
      int64_t best = 0;
      for (int64_t k = 1; k < data.classes; ++k)
        if (out[i * data.classes + k] > out[i * data.classes + best])
          best = k;
      right += best == data.y[i];
    }
  }
  double accuracy = double(right) / double(total);
  std::printf("loss %.4f after 80 steps, lr %g, held-out accuracy %.3f\n", loss,
              otc_session_get_lr(session.get()), accuracy);

  // Restore a checkpoint into a second session: the same parameters.
  std::string ckpt = outDir + "/embed-cpp.ckpt";
  check(otc_session_save_checkpoint(session.get(), ckpt.c_str(), nullptr, 0),
        "save a checkpoint");
  Session restored = makeSession(program.get(), comm.get());
  size_t extra = 0;
  check(otc_session_load_checkpoint(restored.get(), ckpt.c_str(), nullptr, 0,
                                    &extra),
        "load the checkpoint");
  // Both sessions on one batch: the same logits, bit for bit.
  data.next();
  std::vector<float> again(out.size());
  for (otc_session_t *s : {session.get(), restored.get()}) {
    data.bindSame(s);
    check(otc_session_eval_step(s, (s == session.get() ? out : again).data(),
                                out.size() * sizeof(float)),
          "eval step");
  }
  bool same =
      otc_session_step(restored.get()) == 80 &&
      otc_session_get_lr(restored.get()) == otc_session_get_lr(session.get()) &&
      std::memcmp(out.data(), again.data(), out.size() * sizeof(float)) == 0;
  std::string exportPath = outDir + "/trained-cpp.onnx";
  check(otc_session_export_onnx(restored.get(), exportPath.c_str()), "export");
  std::printf("restored %s into a new session (step %lld): %s; exported %s\n",
              ckpt.c_str(), (long long)otc_session_step(restored.get()),
              same ? "the same step, lr and logits" : "DIFFERENT",
              exportPath.c_str());
  return same && accuracy > 0.9 ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: embed-cpp PROGRAM.so OUT_DIR\n");
    return 2;
  }
  try {
    return run(argv[1], argv[2]);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "embed-cpp: %s\n", e.what());
    return 1;
  }
}
