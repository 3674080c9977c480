//===- module.cpp - otc._otc: Python bindings of the runtime C API --------===//
//
// Program (otc_program_t of a program built with `otc-compile --emit=lib`),
// Session (otc_session_t with its communicator: MPI when the process was
// started by mpirun, else a local 1-rank one), the learning-rate schedules
// and the driver's data order. The pure-Python part of the package
// (python/otc/__init__.py) adds otc.compile() and re-exports these.
//
//===----------------------------------------------------------------------===//

#include "otcpy.h"
#include "tensor.h"

#include <mpi.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>

namespace otcpy {

namespace {
PyObject *errorType = nullptr; // otc.Error
} // namespace

void raiseError(otc_status_code_t code, const std::string &msg) {
  py::object e = py::reinterpret_borrow<py::object>(errorType)(msg);
  e.attr("code") = otc_status_code_name(code);
  PyErr_SetObject(errorType, e.ptr());
  throw py::error_already_set();
}

void check(otc_status_t status) {
  if (!status)
    return;
  otc_status_code_t code = otc_status_code(status);
  std::string msg = otc_status_message(status);
  otc_status_free(status);
  raiseError(code, msg);
}

TensorSpec TensorSpec::fromInfo(const otc_tensor_info_t &info) {
  TensorSpec s;
  s.name = info.name ? info.name : "";
  s.role = info.role ? info.role : "";
  s.dtype = info.dtype;
  s.shape.assign(info.shape, info.shape + info.rank);
  return s;
}

int64_t TensorSpec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

const char *numpyDtypeName(otc_dtype_t dtype) {
  switch (dtype) {
  case OTC_DTYPE_F32:
    return "float32";
  case OTC_DTYPE_F64:
    return "float64";
  case OTC_DTYPE_F16:
    return "float16";
  case OTC_DTYPE_BF16:
    return "uint16";
  case OTC_DTYPE_I8:
    return "int8";
  case OTC_DTYPE_I16:
    return "int16";
  case OTC_DTYPE_I32:
    return "int32";
  case OTC_DTYPE_I64:
    return "int64";
  case OTC_DTYPE_U8:
    return "uint8";
  case OTC_DTYPE_U16:
    return "uint16";
  case OTC_DTYPE_U32:
    return "uint32";
  case OTC_DTYPE_U64:
    return "uint64";
  case OTC_DTYPE_BOOL:
    return "bool";
  }
  return "";
}

py::array newArray(const TensorSpec &spec) {
  py::module_ np = py::module_::import("numpy");
  return np.attr("empty")(py::tuple(py::cast(spec.shape)),
                          numpyDtypeName(spec.dtype));
}

namespace {

py::dict specDict(const TensorSpec &s) {
  py::dict d;
  d["name"] = s.name;
  d["role"] = s.role;
  d["dtype"] = numpyDtypeName(s.dtype);
  d["shape"] = py::tuple(py::cast(s.shape));
  return d;
}

//--- Manifests ---------------------------------------------------------------

py::object parseManifest(const char *json) {
  return py::module_::import("json").attr("loads")(json);
}

py::object deepCopy(py::handle value) {
  return py::module_::import("copy").attr("deepcopy")(value);
}

// The per-rank memory plan (bytes by category).
py::dict memoryOf(py::handle manifest) {
  if (!manifest.contains("memory"))
    return py::dict();
  return py::dict(deepCopy(manifest["memory"]));
}

otc_dtype_t dtypeFromName(const std::string &name) {
  for (int d = OTC_DTYPE_F32; d <= OTC_DTYPE_BF16; ++d)
    if (name == otc_dtype_name(otc_dtype_t(d)))
      return otc_dtype_t(d);
  raiseError(OTC_DATA_LOSS,
             "the manifest names an unknown dtype '" + name + "'");
}

std::vector<TensorSpec> paramSpecs(py::handle manifest) {
  std::vector<TensorSpec> specs;
  for (py::handle t : manifest["params"]) {
    TensorSpec s;
    s.name = t["name"].cast<std::string>();
    s.dtype = dtypeFromName(t["dtype"].cast<std::string>());
    s.shape = t["shape"].cast<std::vector<int64_t>>();
    specs.push_back(std::move(s));
  }
  return specs;
}

//--- Programs ----------------------------------------------------------------

struct ProgramHandle {
  otc_program_t *program = nullptr;
  ~ProgramHandle() { otc_program_release(program); }
};

class Session;

class Program {
public:
  static Program load(const std::string &path) {
    Program p;
    p.path_ = path;
    p.h_ = std::make_shared<ProgramHandle>();
    check(otc_program_load(path.c_str(), &p.h_->program));
    otc_program_t *prog = p.h_->program;
    for (int64_t i = 0, n = otc_program_input_count(prog); i < n; ++i) {
      otc_tensor_info_t info;
      check(otc_program_input(prog, i, &info));
      p.inputs_.push_back(TensorSpec::fromInfo(info));
    }
    otc_tensor_info_t info;
    if (otc_status_t s = otc_program_eval_output(prog, &info))
      otc_status_free(s); // NOT_FOUND: a program without an eval step
    else
      p.evalOutput_ = TensorSpec::fromInfo(info);
    p.manifest_ = parseManifest(otc_program_manifest(prog));
    return p;
  }

  otc_program_t *get() const { return h_->program; }
  const std::shared_ptr<ProgramHandle> &handle() const { return h_; }
  const std::string &path() const { return path_; }
  const std::vector<TensorSpec> &inputs() const { return inputs_; }
  const std::optional<TensorSpec> &evalOutput() const { return evalOutput_; }
  py::object manifest() const { return deepCopy(manifest_); }
  py::dict memoryReport() const { return memoryOf(manifest_); }

  py::list inputList() const {
    py::list l;
    for (const TensorSpec &s : inputs_)
      l.append(specDict(s));
    return l;
  }
  py::object evalOutputDict() const {
    return evalOutput_ ? py::object(specDict(*evalOutput_)) : py::none();
  }
  py::list features() const {
    uint32_t f = otc_program_features(get());
    static const std::pair<uint32_t, const char *> names[] = {
        {OTC_PROGRAM_SDP, "sdp"},
        {OTC_PROGRAM_EVAL_STEP, "eval_step"},
        {OTC_PROGRAM_EVAL_LOSS, "eval_loss"},
        {OTC_PROGRAM_CALIBRATE_STEP, "calibrate_step"},
        {OTC_PROGRAM_PER_RANK_STATE, "per_rank_state"},
        {OTC_PROGRAM_EMA, "ema"}};
    py::list l;
    for (auto [bit, name] : names)
      if (f & bit)
        l.append(name);
    return l;
  }

private:
  std::string path_;
  std::shared_ptr<ProgramHandle> h_;
  std::vector<TensorSpec> inputs_;
  std::optional<TensorSpec> evalOutput_;
  py::object manifest_;
};

//--- Learning-rate schedules -------------------------------------------------

const std::pair<const char *, otc_lr_schedule_kind_t> kScheduleKinds[] = {
    {"constant", OTC_LR_CONSTANT}, {"linear", OTC_LR_LINEAR},
    {"cosine", OTC_LR_COSINE},     {"step", OTC_LR_STEP},
    {"wsd", OTC_LR_WSD},           {"onecycle", OTC_LR_ONECYCLE}};

// The fields of otc_lr_schedule_t but `kind`, by name.
struct ScheduleField {
  const char *name;
  double otc_lr_schedule_t::*real = nullptr;
  int64_t otc_lr_schedule_t::*count = nullptr;
  int32_t otc_lr_schedule_t::*flag = nullptr;
};
const ScheduleField kScheduleFields[] = {
    {"cycle_momentum", nullptr, nullptr, &otc_lr_schedule_t::cycle_momentum},
    {"base_lr", &otc_lr_schedule_t::base_lr},
    {"warmup_steps", nullptr, &otc_lr_schedule_t::warmup_steps},
    {"warmup_start_factor", &otc_lr_schedule_t::warmup_start_factor},
    {"total_steps", nullptr, &otc_lr_schedule_t::total_steps},
    {"lr_min", &otc_lr_schedule_t::lr_min},
    {"step_size", nullptr, &otc_lr_schedule_t::step_size},
    {"gamma", &otc_lr_schedule_t::gamma},
    {"wsd_decay_fraction", &otc_lr_schedule_t::wsd_decay_fraction},
    {"pct_start", &otc_lr_schedule_t::pct_start},
    {"div_factor", &otc_lr_schedule_t::div_factor},
    {"final_div_factor", &otc_lr_schedule_t::final_div_factor},
    {"base_momentum", &otc_lr_schedule_t::base_momentum},
    {"max_momentum", &otc_lr_schedule_t::max_momentum}};

std::string scheduleChoices() {
  std::string s;
  for (auto [name, kind] : kScheduleKinds)
    s += std::string(s.empty() ? "" : ", ") + name;
  return s;
}

otc_lr_schedule_t scheduleFrom(const std::string &kind, py::dict fields) {
  otc_lr_schedule_t s;
  otc_lr_schedule_initialize(&s);
  bool known = false;
  for (auto [name, k] : kScheduleKinds)
    if (kind == name) {
      s.kind = k;
      known = true;
    }
  if (!known)
    raiseError(OTC_INVALID_ARGUMENT, "unknown lr schedule '" + kind + "' (" +
                                         scheduleChoices() + ")");
  for (auto [key, value] : fields) {
    std::string name = py::str(key);
    const ScheduleField *f = nullptr;
    for (const ScheduleField &c : kScheduleFields)
      if (name == c.name)
        f = &c;
    if (!f) {
      std::string all;
      for (const ScheduleField &c : kScheduleFields)
        all += std::string(all.empty() ? "" : ", ") + c.name;
      raiseError(OTC_INVALID_ARGUMENT,
                 "unknown lr schedule field '" + name + "' (" + all + ")");
    }
    if (f->real)
      s.*(f->real) = value.cast<double>();
    else if (f->count)
      s.*(f->count) = value.cast<int64_t>();
    else
      s.*(f->flag) = value.cast<bool>() ? 1 : 0;
  }
  check(otc_lr_schedule_validate(&s));
  return s;
}

py::dict scheduleDict(const otc_lr_schedule_t &s) {
  py::dict d;
  for (auto [name, k] : kScheduleKinds)
    if (s.kind == k)
      d["kind"] = name;
  for (const ScheduleField &f : kScheduleFields) {
    if (f.real)
      d[f.name] = s.*(f.real);
    else if (f.count)
      d[f.name] = s.*(f.count);
    else
      d[f.name] = bool(s.*(f.flag));
  }
  return d;
}

//--- Sessions ----------------------------------------------------------------

// Open MPI's components are plugins that need libmpi's symbols global,
// which a Python extension (RTLD_LOCAL) does not give them.
void promoteMpiSymbols() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&MPI_Init), &info) && info.dli_fname)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
}

bool launchedByMpirun() {
  for (const char *v :
       {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(v))
      return true;
  return false;
}

class Session {
public:
  Session(const Program &program, std::optional<int32_t> rank,
          std::optional<int32_t> world, std::optional<uint64_t> seed,
          std::optional<int32_t> threads, std::optional<bool> overlap,
          std::optional<double> timeout)
      : program_(program) {
    if (launchedByMpirun()) {
      promoteMpiSymbols();
      check(otc_comm_create_mpi(&comm_));
    } else {
      if (world && *world != 1)
        raiseError(OTC_FAILED_PRECONDITION,
                   "world=" + std::to_string(*world) +
                       " needs the job started by `mpirun -np " +
                       std::to_string(*world) +
                       "` (this process is not part of an MPI job)");
      check(otc_comm_create_local(&comm_));
    }
    int32_t r = otc_comm_rank(comm_), w = otc_comm_size(comm_);
    if (rank && *rank != r) {
      release();
      raiseError(OTC_INVALID_ARGUMENT, "rank=" + std::to_string(*rank) +
                                           " but this process is rank " +
                                           std::to_string(r) + " of " +
                                           std::to_string(w));
    }
    if (world && *world != w) {
      release();
      raiseError(OTC_INVALID_ARGUMENT, "world=" + std::to_string(*world) +
                                           " but the job has " +
                                           std::to_string(w) + " ranks");
    }
    if (overlap)
      otc_comm_set_overlap(comm_, *overlap ? 1 : 0);
    if (timeout)
      checkOrRelease(otc_comm_set_timeout(comm_, *timeout));
    otc_session_options_t options;
    otc_session_options_initialize(&options);
    if (seed)
      options.seed = *seed;
    if (threads)
      options.num_threads = *threads;
    checkOrRelease(
        otc_session_create(program_.get(), comm_, &options, &session_));
    // SDP: this rank's subnetwork, with its own parameter shapes and plan.
    manifest_ = parseManifest(otc_session_manifest(session_));
    params_ = paramSpecs(manifest_);
  }
  ~Session() { release(); }

  void close() { release(); }
  int32_t rank() const { return otc_comm_rank(comm()); }
  int32_t worldSize() const { return otc_comm_size(comm()); }

  float trainStep(py::handle inputs) {
    return runStep(inputs, /*eval=*/false, otc_session_train_step);
  }
  float accumulateStep(py::handle inputs) {
    return runStep(inputs, /*eval=*/false, otc_session_accumulate_step);
  }

  py::array evalStep(py::handle inputs) {
    const std::optional<TensorSpec> &spec = program_.evalOutput();
    if (!spec)
      raiseError(OTC_FAILED_PRECONDITION,
                 "the program has no eval step (its eval output is missing)");
    std::vector<std::pair<const TensorSpec *, HostTensor>> bound =
        convert(inputs, /*eval=*/true);
    py::array out = newArray(*spec);
    void *dst = out.mutable_data();
    otc_status_t st = nullptr;
    {
      py::gil_scoped_release nogil;
      st = bindAll(bound);
      if (!st)
        st = otc_session_eval_step(session(), dst, spec->bytes());
    }
    check(st);
    return out;
  }

  float evalLoss() const {
    if (!evalHadLabels_)
      raiseError(OTC_FAILED_PRECONDITION,
                 "the last eval_step had no labels: it computed no loss");
    float loss = 0;
    check(otc_session_eval_loss(session(), &loss));
    return loss;
  }

  py::dict parameters(bool ema) const {
    py::dict d;
    for (const TensorSpec &s : params_) {
      py::array a = newArray(s);
      otc_status_t st =
          ema ? otc_session_get_ema_param(session(), s.name.c_str(),
                                          a.mutable_data(), s.bytes())
              : otc_session_get_param(session(), s.name.c_str(),
                                      a.mutable_data(), s.bytes());
      check(st);
      d[py::str(s.name)] = a;
    }
    return d;
  }

  void setParameters(py::handle values) {
    // Every value is checked before the first is written.
    std::vector<std::pair<const TensorSpec *, HostTensor>> bound;
    for (auto [key, value] : py::reinterpret_borrow<py::dict>(
             py::module_::import("builtins").attr("dict")(values))) {
      const TensorSpec &s = param(py::str(key));
      bound.emplace_back(&s, HostTensor::from(value, s, "parameter"));
    }
    for (auto &[spec, t] : bound)
      check(otc_session_set_param(session(), spec->name.c_str(), t.data(),
                                  t.bytes()));
  }

  double hyperparameter(const std::string &name) const {
    double v = 0;
    check(otc_session_get_hyperparameter(session(), name.c_str(), &v));
    return v;
  }
  void setHyperparameter(const std::string &name, double value) {
    check(otc_session_set_hyperparameter(session(), name.c_str(), value));
  }

  void setLrSchedule(std::optional<std::string> kind, py::kwargs fields) {
    if (!kind) {
      if (fields.size())
        raiseError(OTC_INVALID_ARGUMENT,
                   "set_lr_schedule(None) removes the schedule; it takes no "
                   "fields");
      check(otc_session_set_lr_schedule(session(), nullptr));
      return;
    }
    otc_lr_schedule_t s = scheduleFrom(*kind, fields);
    check(otc_session_set_lr_schedule(session(), &s));
  }
  py::object lrSchedule() const {
    otc_lr_schedule_t s;
    if (!otc_session_get_lr_schedule(session(), &s))
      return py::none();
    return scheduleDict(s);
  }

  void saveCheckpoint(const std::string &pattern, py::bytes extra) const {
    std::string path = checkpointPath(pattern), data = extra;
    otc_status_t st;
    {
      py::gil_scoped_release nogil;
      st = otc_session_save_checkpoint(session(), path.c_str(), data.data(),
                                       data.size());
    }
    check(st);
  }
  py::bytes loadCheckpoint(const std::string &pattern) {
    std::string path = checkpointPath(pattern), extra(4096, '\0');
    size_t size = 0;
    for (;;) {
      otc_status_t st;
      {
        py::gil_scoped_release nogil;
        st = otc_session_load_checkpoint(session(), path.c_str(), extra.data(),
                                         extra.size(), &size);
      }
      check(st);
      if (size <= extra.size())
        break;
      extra.resize(size); // loading again is idempotent
    }
    extra.resize(size);
    return py::bytes(extra);
  }

  void exportOnnx(const std::string &path, bool ema) const {
    otc_status_t st;
    {
      py::gil_scoped_release nogil;
      st = ema ? otc_session_export_onnx_ema(session(), path.c_str())
               : otc_session_export_onnx(session(), path.c_str());
    }
    check(st);
  }

  int64_t step() const { return otc_session_step(session()); }
  int64_t skippedSteps() const { return otc_session_skipped_steps(session()); }
  bool lastStepSkipped() const {
    return otc_session_last_step_skipped(session()) != 0;
  }
  float gradNorm() const {
    float n = 0;
    check(otc_session_grad_norm(session(), &n));
    return n;
  }
  std::pair<uint64_t, uint64_t> commBytes() const {
    uint64_t sent = 0, received = 0;
    otc_comm_bytes(comm(), &sent, &received);
    return {sent, received};
  }
  std::pair<uint64_t, uint64_t> stepBytes() const {
    uint64_t sent = 0, received = 0;
    otc_session_step_bytes(session(), &sent, &received);
    return {sent, received};
  }
  int64_t lastInputCopies() const { return lastInputCopies_; }
  py::object manifest() const { return deepCopy(manifest_); }
  py::dict memoryReport() const { return memoryOf(manifest_); }

private:
  void release() {
    otc_session_release(session_);
    session_ = nullptr;
    otc_comm_release(comm_);
    comm_ = nullptr;
  }
  void checkOrRelease(otc_status_t st) {
    if (st)
      release();
    check(st);
  }
  otc_session_t *session() const {
    if (!session_)
      raiseError(OTC_FAILED_PRECONDITION, "the session is closed");
    return session_;
  }
  // Every rank's own file where ranks hold different state: "{rank}" in
  // the path becomes the rank.
  std::string checkpointPath(const std::string &pattern) const {
    static const std::string key = "{rank}";
    std::string path = pattern;
    size_t at = path.find(key);
    if (at == std::string::npos) {
      if ((otc_program_features(program_.get()) & OTC_PROGRAM_PER_RANK_STATE) &&
          worldSize() > 1)
        raiseError(OTC_INVALID_ARGUMENT,
                   "checkpoint '" + pattern +
                       "': this program's ranks hold different state (SDP "
                       "subnetworks or error-feedback residuals), so each "
                       "writes its own file: put {rank} in the path");
      return path;
    }
    for (; at != std::string::npos; at = path.find(key, at))
      path.replace(at, key.size(), std::to_string(rank()));
    return path;
  }
  const TensorSpec &param(const std::string &name) const {
    for (const TensorSpec &s : params_)
      if (s.name == name)
        return s;
    raiseError(OTC_NOT_FOUND, "the program has no parameter '" + name + "'");
  }
  otc_comm_t *comm() const {
    if (!comm_)
      raiseError(OTC_FAILED_PRECONDITION, "the session is closed");
    return comm_;
  }

  // The values of `inputs` (a mapping name -> value, or a sequence in the
  // program's input order) checked against the program's inputs. A train
  // step needs every input; an eval step every one but the labels.
  std::vector<std::pair<const TensorSpec *, HostTensor>>
  convert(py::handle inputs, bool eval) {
    const std::vector<TensorSpec> &specs = program_.inputs();
    std::vector<std::pair<const TensorSpec *, py::handle>> named;
    py::object keep;
    if (py::isinstance(
            inputs, py::module_::import("collections.abc").attr("Mapping"))) {
      keep =
          py::module_::import("builtins").attr("list")(inputs.attr("items")());
      for (py::handle item : keep) {
        py::handle key = item.cast<py::tuple>()[0];
        if (!py::isinstance<py::str>(key))
          throw py::type_error("input names are strings, got " +
                               py::repr(key).cast<std::string>());
        std::string name = key.cast<std::string>();
        const TensorSpec *spec = nullptr;
        for (const TensorSpec &s : specs)
          if (s.name == name)
            spec = &s;
        if (!spec)
          raiseError(OTC_NOT_FOUND, "the program has no input '" + name +
                                        "' (its inputs: " + inputNames() + ")");
        named.emplace_back(spec, item.cast<py::tuple>()[1]);
      }
    } else if (py::isinstance<py::sequence>(inputs) &&
               !py::isinstance<py::str>(inputs)) {
      keep = py::reinterpret_borrow<py::object>(inputs);
      py::sequence seq = py::reinterpret_borrow<py::sequence>(inputs);
      if (seq.size() > specs.size())
        raiseError(OTC_INVALID_ARGUMENT, std::to_string(seq.size()) +
                                             " inputs given, the program "
                                             "has " +
                                             std::to_string(specs.size()) +
                                             " (" + inputNames() + ")");
      for (size_t i = 0; i < seq.size(); ++i)
        named.emplace_back(&specs[i], seq[i]);
    } else {
      throw py::type_error("inputs are a mapping name -> array (or a sequence "
                           "in the program's input order: " +
                           inputNames() + ")");
    }
    std::vector<std::pair<const TensorSpec *, HostTensor>> bound;
    bool labels = false;
    for (const TensorSpec &s : specs) {
      auto it = std::find_if(named.begin(), named.end(),
                             [&](auto &n) { return n.first == &s; });
      if (it == named.end()) {
        if (eval && s.role == "label")
          continue;
        raiseError(OTC_INVALID_ARGUMENT,
                   std::string(eval ? "eval_step" : "train_step") +
                       " needs input '" + s.name + "' " + shapeString(s.shape) +
                       " " + numpyDtypeName(s.dtype) +
                       " (its inputs: " + inputNames() + ")");
      }
      labels |= s.role == "label";
      bound.emplace_back(&s, HostTensor::from(it->second, s, "input"));
    }
    if (eval)
      evalHadLabels_ = labels;
    lastInputCopies_ = 0;
    for (auto &b : bound)
      lastInputCopies_ += b.second.copied();
    return bound;
  }

  otc_status_t
  bindAll(const std::vector<std::pair<const TensorSpec *, HostTensor>> &b) {
    for (auto &[spec, t] : b)
      if (otc_status_t st = otc_session_bind_input(session_, spec->name.c_str(),
                                                   t.data(), t.bytes()))
        return st;
    return nullptr;
  }

  float runStep(py::handle inputs, bool eval,
                otc_status_t (*step)(otc_session_t *, float *)) {
    otc_session_t *s = session();
    auto bound = convert(inputs, eval);
    float loss = 0;
    otc_status_t st = nullptr;
    {
      py::gil_scoped_release nogil;
      st = bindAll(bound);
      if (!st)
        st = step(s, &loss);
    }
    check(st);
    return loss;
  }

  std::string inputNames() const {
    std::string s;
    for (const TensorSpec &t : program_.inputs())
      s += std::string(s.empty() ? "" : ", ") + t.name + " " +
           shapeString(t.shape) + " " + numpyDtypeName(t.dtype);
    return s;
  }

  Program program_;
  py::object manifest_;            // this rank's (otc_session_manifest)
  std::vector<TensorSpec> params_; // its parameters
  otc_comm_t *comm_ = nullptr;
  otc_session_t *session_ = nullptr;
  int64_t lastInputCopies_ = 0;
  bool evalHadLabels_ = false;
};

} // namespace
} // namespace otcpy

PYBIND11_MODULE(_otc, m) {
  using namespace otcpy;
  namespace py = pybind11;
  m.doc() = "Bindings of the OTC runtime's C API (otc/runtime.h); use the "
            "otc package, which re-exports them.";

  errorType = PyErr_NewExceptionWithDoc(
      "otc.Error",
      "An OTC failure: the runtime's (or otc-compile's) message; `code` is "
      "the status code's name (e.g. 'INVALID_ARGUMENT').",
      PyExc_RuntimeError, nullptr);
  m.attr("Error") = py::handle(errorType);

  py::class_<Program>(m, "Program", py::dynamic_attr(),
                      "A program built with `otc-compile --emit=lib`.")
      .def_static("load", &Program::load, py::arg("path"),
                  "Loads a program (a shared library from otc-compile "
                  "--emit=lib).")
      .def_property_readonly("path", &Program::path)
      .def_property_readonly(
          "batch", [](const Program &p) { return otc_program_batch(p.get()); },
          "Samples per rank in one step (the leading axis of every input).")
      .def_property_readonly(
          "world_size",
          [](const Program &p) { return otc_program_world_size(p.get()); })
      .def_property_readonly(
          "seed", [](const Program &p) { return otc_program_seed(p.get()); })
      .def_property_readonly(
          "loss", [](const Program &p) { return otc_program_loss(p.get()); })
      .def_property_readonly(
          "accumulate",
          [](const Program &p) { return otc_program_accumulate(p.get()); })
      .def_property_readonly("features", &Program::features)
      .def_property_readonly("inputs", &Program::inputList,
                             "The inputs in order: dicts with name, role "
                             "('data', 'label' or ''), dtype and shape.")
      .def_property_readonly("eval_output", &Program::evalOutputDict)
      .def_property_readonly("manifest", &Program::manifest)
      .def_property_readonly(
          "model_path",
          [](const Program &p) {
            return std::string(otc_program_model_path(p.get()));
          },
          "The source model sessions start from and export writes back: "
          "the copy beside the program (<program>.model.onnx).")
      .def("memory_report", &Program::memoryReport,
           "The per-rank memory plan in bytes (params, grads, optimizer, "
           "activations, inputs, outputs, comm_buffers, frozen, peak).")
      .def(
          "session",
          [](const Program &p, std::optional<int32_t> rank,
             std::optional<int32_t> world, std::optional<uint64_t> seed,
             std::optional<int32_t> threads, std::optional<bool> overlap,
             std::optional<double> timeout) {
            return std::make_unique<Session>(p, rank, world, seed, threads,
                                             overlap, timeout);
          },
          py::arg("rank") = py::none(), py::arg("world") = py::none(),
          py::kw_only(), py::arg("seed") = py::none(),
          py::arg("threads") = py::none(), py::arg("overlap") = py::none(),
          py::arg("timeout") = py::none(), py::keep_alive<0, 1>(),
          "A training session on this process's rank: MPI when started by "
          "mpirun, else one process. rank/world, when given, must be what "
          "the job is.")
      .def("__repr__",
           [](const Program &p) { return "<otc.Program " + p.path() + ">"; });

  py::class_<Session>(m, "Session")
      .def("train_step", &Session::trainStep, py::arg("inputs"),
           "One training step on `inputs` (name -> NumPy array or DLPack "
           "tensor); returns this rank's loss.")
      .def("accumulate_step", &Session::accumulateStep, py::arg("inputs"))
      .def("eval_step", &Session::evalStep, py::arg("inputs"),
           "The forward on `inputs` (labels optional); returns the model "
           "output as a NumPy array.")
      .def_property_readonly("eval_loss", &Session::evalLoss)
      .def(
          "parameters",
          [](const Session &s) { return s.parameters(/*ema=*/false); },
          "The parameters by ONNX initializer name, as NumPy arrays "
          "(copies; with SDP, this rank's parts).")
      .def(
          "ema_parameters",
          [](const Session &s) { return s.parameters(/*ema=*/true); },
          "The EMA of the parameters (programs compiled with --ema).")
      .def("set_parameters", &Session::setParameters, py::arg("values"),
           "Writes the given parameters (name -> array); all are checked "
           "first.")
      .def_property(
          "lr", [](const Session &s) { return s.hyperparameter("lr"); },
          [](Session &s, double lr) { s.setHyperparameter("lr", lr); },
          "The learning rate of the next train step.")
      .def("get_hyperparameter", &Session::hyperparameter, py::arg("name"))
      .def("set_hyperparameter", &Session::setHyperparameter, py::arg("name"),
           py::arg("value"))
      .def("set_lr_schedule", &Session::setLrSchedule, py::arg("kind"),
           "set_lr_schedule(kind, **fields): kind in constant, linear, "
           "cosine, step, wsd, onecycle (None removes it); fields as "
           "otc_lr_schedule_t names them (base_lr, warmup_steps, "
           "total_steps, lr_min, ...).")
      .def_property_readonly("lr_schedule", &Session::lrSchedule)
      .def("save_checkpoint", &Session::saveCheckpoint, py::arg("path"),
           py::arg("extra") = py::bytes(),
           "Writes a checkpoint ('{rank}' in the path becomes the rank; "
           "needed when ranks hold different state, 'per_rank_state').")
      .def("load_checkpoint", &Session::loadCheckpoint, py::arg("path"),
           "Restores a checkpoint; returns the extra bytes saved with it.")
      .def("export", &Session::exportOnnx, py::arg("path"), py::kw_only(),
           py::arg("ema") = false,
           "Writes the ONNX model with the trained (or EMA) weights.")
      .def("memory_report", &Session::memoryReport,
           "This rank's memory plan in bytes (with SDP, its subnetwork's).")
      .def_property_readonly("manifest", &Session::manifest,
                             "This rank's manifest (with SDP, its "
                             "subnetwork's).")
      .def_property_readonly("rank", &Session::rank)
      .def_property_readonly("world_size", &Session::worldSize)
      .def_property_readonly("step", &Session::step)
      .def_property_readonly("skipped_steps", &Session::skippedSteps)
      .def_property_readonly("last_step_skipped", &Session::lastStepSkipped)
      .def_property_readonly("grad_norm", &Session::gradNorm)
      .def("comm_bytes", &Session::commBytes,
           "(sent, received) bytes of this rank's collectives so far.")
      .def("step_bytes", &Session::stepBytes)
      .def_property_readonly("last_input_copies", &Session::lastInputCopies,
                             "Inputs of the last step that had to be made "
                             "contiguous (0: every one was used in place).")
      .def("close", &Session::close)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](Session &s, py::args) {
        s.close();
        return false;
      });

  m.def(
      "lr_schedule_value",
      [](int64_t step, const std::string &kind, py::kwargs fields) {
        otc_lr_schedule_t s = scheduleFrom(kind, fields);
        double lr = 0, momentum = -1;
        check(otc_lr_schedule_evaluate(&s, step, &lr, &momentum));
        return std::make_pair(lr, momentum < 0
                                      ? py::object(py::none())
                                      : py::object(py::float_(momentum)));
      },
      py::arg("step"), py::arg("kind"),
      "(lr, momentum or None) of 1-based optimizer step `step` under a "
      "schedule given as Session.set_lr_schedule takes it.");
  m.def(
      "epoch_permutation",
      [](int64_t n, uint64_t seed, int64_t epoch) {
        py::array_t<int64_t> p(py::ssize_t(n < 0 ? 0 : n));
        check(otc_epoch_permutation(n, seed, epoch, p.mutable_data()));
        return p;
      },
      py::arg("n"), py::arg("seed"), py::arg("epoch"),
      "The command line's data order: the permutation of range(n) the "
      "driver draws for (seed, 0-based epoch).");
}
