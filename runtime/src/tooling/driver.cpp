//===- driver.cpp - The training executable's main ------------------------===//
//
// Flags, data, the training loop with progress, evaluation, checkpoints,
// resume, metrics and export. Exit codes: 0 success, 1 a runtime failure,
// 2 a usage or input problem (flags, data files, world size). Uses only the
// C API (otc/runtime.h) and tooling: what it does, an embedder can do.
//
//===----------------------------------------------------------------------===//

#include "tooling/driver.h"
#include "tooling/data.h"
#include "tooling/loader.h"
#include "tooling/metrics.h"
#include "tooling/status.h"

#include <dirent.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace otc {

namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

/// A failure every rank already agreed on and rank 0 already reported.
struct AgreedFailure {
  int exitCode;
};

struct UsageError : std::runtime_error {
  explicit UsageError(const std::string &m) : std::runtime_error(m) {}
};

struct Options {
  std::optional<int64_t> steps, epochs;
  bool shuffle = true;
  std::optional<uint64_t> seed;
  std::vector<std::pair<std::string, std::string>> data, evalData;
  std::string dataset;
  int32_t threads = 0;
  bool overlap = true;
  int64_t logEvery = 50;
  std::string checkpointDir;
  int64_t checkpointEvery = 0;
  bool resume = false;
  std::string resumeFrom;
  std::string exportPath;
  std::string exportEmaPath;
  std::string metricsPath;
  std::string tensorboardDir;
  std::string profilePath;
  /// SDP with BatchNorm: training batches per rank that re-estimate the
  /// whole model's running statistics before evaluation and export.
  int64_t sdpCalibrationBatches = 100;
  bool quiet = false;
  bool help = false;
  /// Consecutive skipped (non-finite) steps after which training stops.
  int64_t maxSkippedSteps = 100;
  /// Seconds a collective waits for its peers before the job ends.
  double collectiveTimeout = 600;
  /// --lr, --weight-decay, ...: run-time hyperparameters, in flag order.
  std::vector<std::pair<std::string, double>> hyper;
  /// The lr schedule's flags; `scheduleGiven` when any was given.
  otc_lr_schedule_t schedule = defaultSchedule();
  bool scheduleGiven = false;
  std::optional<int64_t> decaySteps;

  static otc_lr_schedule_t defaultSchedule() {
    otc_lr_schedule_t s;
    otc_lr_schedule_initialize(&s);
    return s;
  }
};

const char *kUsage =
    "usage: %s [options]\n"
    "\n"
    "Trains the compiled model (start W ranks with `mpirun -np W`).\n"
    "\n"
    "data:\n"
    "  --data NAME=FILE        training data for input NAME (.npy or "
    "IDX[.gz]);\n"
    "                          repeat for every input\n"
    "  --eval-data NAME=FILE   evaluation data for input NAME\n"
    "  --dataset fashion-mnist built-in Fashion-MNIST (train / t10k split;\n"
    "                          folder from $OTC_DATASET_DIR or\n"
    "                          /usr/share/datasets/fashion-mnist)\n"
    "  --no-shuffle            keep the data order (default: reshuffle every\n"
    "                          epoch from the seed)\n"
    "training:\n"
    "  --steps N               train until optimizer step N (a resumed run\n"
    "                          counts the steps already taken)\n"
    "  --epochs E              train until the end of epoch E (default 1 when\n"
    "                          neither --steps nor --epochs is given; with\n"
    "                          both, training stops at the first reached)\n"
    "  --seed S                seed for shuffling and dropout (default: the\n"
    "                          one given to otc-compile)\n"
    "  --threads N             kernel threads per rank (at most the\n"
    "                          machine's hardware threads)\n"
    "  --max-skipped-steps N   stop with an error after N consecutive steps\n"
    "                          skipped for a NaN or infinity in the averaged\n"
    "                          gradient (default 100; no checkpoint is\n"
    "                          written over the last good one)\n"
    "  --collective-timeout S  end the job when a collective waits more than\n"
    "                          S seconds for its peers, naming the "
    "collective,\n"
    "                          the step and the ranks that did not arrive\n"
    "                          (default 600; 0: no limit)\n"
    "  --no-overlap            run the all-reduces in the step's own thread\n"
    "                          (default: on a thread of their own, overlapped\n"
    "                          with the rest of the backward pass)\n"
    "optimizer (default: the values given to otc-compile; a resumed run\n"
    "continues with the checkpoint's unless given):\n"
    "  --lr F, --weight-decay F, --momentum F, --beta1 F, --beta2 F, --eps F,\n"
    "  --alpha F, --lr-decay F hyperparameters the steps read at run time\n"
    "                          (those of the program's optimizer)\n"
    "  --lr-schedule S         constant|linear|cosine|step|wsd|onecycle\n"
    "                          (torch.optim.lr_scheduler semantics; default\n"
    "                          constant); the lr of every step goes to the\n"
    "                          metrics\n"
    "  --warmup-steps N        linear warm-up from --warmup-start-factor\n"
    "                          (default 0) times the lr over N steps\n"
    "  --lr-min F              the lr linear/cosine/wsd decay to (default 0)\n"
    "  --decay-steps N         steps of the whole schedule, warm-up included\n"
    "                          (default: the run's, from --steps/--epochs)\n"
    "  --step-size N, --gamma F  step: lr * gamma every N steps (1, 0.1)\n"
    "  --wsd-decay-fraction F  wsd: the last fraction F of the steps after\n"
    "                          the warm-up decays (default 0.1)\n"
    "  --onecycle-pct-start F, --onecycle-div-factor F,\n"
    "  --onecycle-final-div-factor F, --no-cycle-momentum\n"
    "                          onecycle (OneCycleLR's 0.3, 25, 1e4; cycles\n"
    "                          the momentum 0.95..0.85 unless turned off)\n"
    "checkpoints:\n"
    "  --checkpoint-dir DIR    write DIR/ckpt-<step>.otcc (keeps the last 2),\n"
    "                          always one at the end of training\n"
    "  --checkpoint-every N    also every N steps\n"
    "  --resume                continue from the newest checkpoint in\n"
    "                          --checkpoint-dir (start fresh if there is "
    "none)\n"
    "  --resume-from FILE      continue from FILE\n"
    "output:\n"
    "  --export FILE.onnx      write the trained model as ONNX\n"
    "  --export-ema FILE.onnx  write the EMA of the weights as ONNX\n"
    "                          (programs compiled with --ema DECAY)\n"
    "  --sdp-calibration-batches N\n"
    "                          SDP with BatchNorm: training batches per rank\n"
    "                          that re-estimate the whole model's running\n"
    "                          statistics before eval/export (default 100)\n"
    "  --metrics FILE.jsonl    JSON lines: one per logged step and per eval\n"
    "  --tensorboard DIR       the same as TensorBoard scalars: a new event\n"
    "                          file in DIR (created) per run\n"
    "  --profile FILE.json     profile the train steps: print each kernel's\n"
    "                          share of the step, calls and GFLOP/s or GB/s\n"
    "                          (rank 0; the first step, a warm-up, left out\n"
    "                          when more ran) and write a Chrome trace "
    "(Perfetto,\n"
    "                          chrome://tracing) to FILE.json (rank r > 0:\n"
    "                          FILE.rank<r>.json)\n"
    "  --log-every N           log every N steps (default 50)\n"
    "  --quiet                 print errors only\n"
    "  --help                  this text\n";

int64_t parseInt(const std::string &flag, const std::string &value,
                 int64_t min) {
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno == ERANGE)
    throw UsageError("invalid value '" + value + "' for " + flag +
                     ": expected an integer");
  if (v < min)
    throw UsageError("invalid value '" + value + "' for " + flag +
                     ": must be >= " + std::to_string(min));
  return v;
}

double parseDouble(const std::string &flag, const std::string &value) {
  errno = 0;
  char *end = nullptr;
  double v = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    throw UsageError("invalid value '" + value + "' for " + flag +
                     ": expected a finite number");
  return v;
}

std::pair<std::string, std::string> parseBinding(const std::string &flag,
                                                 const std::string &value) {
  size_t eq = value.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == value.size())
    throw UsageError("invalid value '" + value + "' for " + flag +
                     ": expected NAME=FILE");
  return {value.substr(0, eq), value.substr(eq + 1)};
}

Options parseOptions(int argc, char **argv) {
  Options o;
  static const char *kWithValue[] = {"--steps",
                                     "--epochs",
                                     "--seed",
                                     "--data",
                                     "--eval-data",
                                     "--dataset",
                                     "--threads",
                                     "--log-every",
                                     "--checkpoint-dir",
                                     "--checkpoint-every",
                                     "--resume-from",
                                     "--export",
                                     "--export-ema",
                                     "--metrics",
                                     "--profile",
                                     "--tensorboard",
                                     "--sdp-calibration-batches",
                                     "--lr",
                                     "--weight-decay",
                                     "--momentum",
                                     "--beta1",
                                     "--beta2",
                                     "--eps",
                                     "--alpha",
                                     "--lr-decay",
                                     "--lr-schedule",
                                     "--warmup-steps",
                                     "--warmup-start-factor",
                                     "--lr-min",
                                     "--decay-steps",
                                     "--step-size",
                                     "--gamma",
                                     "--wsd-decay-fraction",
                                     "--onecycle-pct-start",
                                     "--onecycle-div-factor",
                                     "--onecycle-final-div-factor",
                                     "--max-skipped-steps",
                                     "--collective-timeout"};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool hasInline = false;
    if (arg.rfind("--", 0) == 0) {
      size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        hasInline = true;
      }
    }
    bool wantsValue = std::find_if(std::begin(kWithValue), std::end(kWithValue),
                                   [&](const char *f) { return arg == f; }) !=
                      std::end(kWithValue);
    if (wantsValue && !hasInline) {
      if (i + 1 >= argc)
        throw UsageError("missing value for " + arg);
      value = argv[++i];
    } else if (!wantsValue && hasInline) {
      throw UsageError(arg + " takes no value");
    }
    if (arg == "--help" || arg == "-h")
      o.help = true;
    else if (arg == "--steps")
      o.steps = parseInt(arg, value, 0);
    else if (arg == "--epochs")
      o.epochs = parseInt(arg, value, 1);
    else if (arg == "--no-shuffle")
      o.shuffle = false;
    else if (arg == "--no-overlap")
      o.overlap = false;
    else if (arg == "--seed")
      o.seed = uint64_t(parseInt(arg, value, 0));
    else if (arg == "--data")
      o.data.push_back(parseBinding(arg, value));
    else if (arg == "--eval-data")
      o.evalData.push_back(parseBinding(arg, value));
    else if (arg == "--dataset") {
      if (value != "fashion-mnist")
        throw UsageError("unknown dataset '" + value +
                         "' (available: fashion-mnist)");
      o.dataset = value;
    } else if (arg == "--threads") {
      // More kernel threads than the machine runs only oversubscribes it
      // (and a huge count exhausts it before the first step).
      int64_t cores = std::max(1u, std::thread::hardware_concurrency());
      int64_t n = parseInt(arg, value, 1);
      if (n > cores)
        throw UsageError("invalid value '" + value + "' for " + arg +
                         ": this machine runs " + std::to_string(cores) +
                         " hardware thread" + (cores == 1 ? "" : "s"));
      o.threads = int32_t(n);
    } else if (arg == "--log-every")
      o.logEvery = parseInt(arg, value, 1);
    else if (arg == "--checkpoint-dir")
      o.checkpointDir = value;
    else if (arg == "--checkpoint-every")
      o.checkpointEvery = parseInt(arg, value, 1);
    else if (arg == "--resume")
      o.resume = true;
    else if (arg == "--resume-from")
      o.resumeFrom = value;
    else if (arg == "--export")
      o.exportPath = value;
    else if (arg == "--export-ema")
      o.exportEmaPath = value;
    else if (arg == "--sdp-calibration-batches")
      o.sdpCalibrationBatches = parseInt(arg, value, 0);
    else if (arg == "--metrics")
      o.metricsPath = value;
    else if (arg == "--profile")
      o.profilePath = value;
    else if (arg == "--tensorboard")
      o.tensorboardDir = value;
    else if (arg == "--quiet")
      o.quiet = true;
    else if (arg == "--max-skipped-steps")
      o.maxSkippedSteps = parseInt(arg, value, 1);
    else if (arg == "--collective-timeout") {
      o.collectiveTimeout = parseDouble(arg, value);
      if (!(o.collectiveTimeout >= 0))
        throw UsageError("invalid value '" + value +
                         "' for --collective-timeout: must be >= 0 seconds");
    } else if (arg == "--lr" || arg == "--weight-decay" ||
               arg == "--momentum" || arg == "--beta1" || arg == "--beta2" ||
               arg == "--eps" || arg == "--alpha" || arg == "--lr-decay") {
      std::string name = arg.substr(2);
      std::replace(name.begin(), name.end(), '-', '_');
      double v = parseDouble(arg, value);
      if (arg == "--lr" && !(v > 0))
        throw UsageError("invalid value '" + value + "' for --lr: must be > 0");
      o.hyper.emplace_back(name, v);
    } else if (arg == "--lr-schedule") {
      static const std::pair<const char *, otc_lr_schedule_kind_t> kinds[] = {
          {"constant", OTC_LR_CONSTANT}, {"linear", OTC_LR_LINEAR},
          {"cosine", OTC_LR_COSINE},     {"step", OTC_LR_STEP},
          {"wsd", OTC_LR_WSD},           {"onecycle", OTC_LR_ONECYCLE}};
      auto it = std::find_if(std::begin(kinds), std::end(kinds),
                             [&](const auto &k) { return value == k.first; });
      if (it == std::end(kinds))
        throw UsageError("unknown --lr-schedule '" + value +
                         "' (expected constant, linear, cosine, step, wsd or "
                         "onecycle)");
      o.schedule.kind = it->second;
      o.scheduleGiven = true;
    } else if (arg == "--warmup-steps" || arg == "--decay-steps" ||
               arg == "--step-size") {
      int64_t v = parseInt(arg, value, arg == "--warmup-steps" ? 0 : 1);
      if (arg == "--warmup-steps")
        o.schedule.warmup_steps = v;
      else if (arg == "--step-size")
        o.schedule.step_size = v;
      else
        o.decaySteps = v;
      o.scheduleGiven = true;
    } else if (arg == "--warmup-start-factor" || arg == "--lr-min" ||
               arg == "--gamma" || arg == "--wsd-decay-fraction" ||
               arg == "--onecycle-pct-start" ||
               arg == "--onecycle-div-factor" ||
               arg == "--onecycle-final-div-factor") {
      double v = parseDouble(arg, value);
      otc_lr_schedule_t &sc = o.schedule;
      double *field = arg == "--warmup-start-factor"   ? &sc.warmup_start_factor
                      : arg == "--lr-min"              ? &sc.lr_min
                      : arg == "--gamma"               ? &sc.gamma
                      : arg == "--wsd-decay-fraction"  ? &sc.wsd_decay_fraction
                      : arg == "--onecycle-pct-start"  ? &sc.pct_start
                      : arg == "--onecycle-div-factor" ? &sc.div_factor
                                                       : &sc.final_div_factor;
      *field = v;
      o.scheduleGiven = true;
    } else if (arg == "--no-cycle-momentum") {
      o.schedule.cycle_momentum = 0;
      o.scheduleGiven = true;
    } else
      throw UsageError("unknown flag '" + std::string(argv[i]) + "'");
  }
  if (o.resume && o.checkpointDir.empty())
    throw UsageError("--resume needs --checkpoint-dir DIR");
  if (o.resume && !o.resumeFrom.empty())
    throw UsageError("give either --resume or --resume-from, not both");
  if (o.checkpointEvery && o.checkpointDir.empty())
    throw UsageError("--checkpoint-every needs --checkpoint-dir DIR");
  if (!o.dataset.empty() && (!o.data.empty() || !o.evalData.empty()))
    throw UsageError("give either --dataset or --data/--eval-data, not both");
  return o;
}

// The launcher's rank before MPI is up, so only one rank prints flag errors.
bool launcherRankIsZero() {
  for (const char *var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char *v = std::getenv(var))
      return std::atoi(v) == 0;
  return true;
}

//--- Agreement on failures across ranks -------------------------------------

/// Runs `fn` on every rank and agrees on the outcome: if any rank failed,
/// rank 0 prints its own error (or, when only other ranks failed, those
/// print theirs) and every rank returns false together.
template <typename Fn> bool allRanks(otc_comm_t *comm, int &exitCode, Fn &&fn) {
  std::optional<std::string> error;
  int code = 0;
  try {
    fn();
  } catch (const UsageError &e) {
    error = e.what();
    code = kExitUsage;
  } catch (const std::exception &e) {
    std::optional<otc_status_code_t> c = failureCode(e);
    error =
        c ? std::string(e.what()) : std::string("internal error: ") + e.what();
    code = c == OTC_INVALID_ARGUMENT || c == OTC_NOT_FOUND ||
                   c == OTC_FAILED_PRECONDITION
               ? kExitUsage
               : kExitFailure;
  }
  int rank = otc_comm_rank(comm);
  double v[3] = {error ? 1.0 : 0.0, rank == 0 && error ? 1.0 : 0.0,
                 double(code)};
  check(otc_comm_all_reduce_sum_f64(comm, v, 3));
  if (v[0] == 0)
    return true;
  if (error && (rank == 0 || v[1] == 0))
    std::fprintf(stderr, "%serror: %s\n",
                 rank == 0 ? ""
                           : ("[rank " + std::to_string(rank) + "] ").c_str(),
                 error->c_str());
  // Every rank exits with the same code: usage (2) only if every failing
  // rank saw a usage problem.
  exitCode = v[2] == double(kExitUsage) * v[0] ? kExitUsage : kExitFailure;
  return false;
}

//--- Checkpoint files --------------------------------------------------------

struct LoaderExtra {
  char magic[8] = {'O', 'T', 'C', 'L', 'O', 'A', 'D', '1'};
  uint64_t seed = 0;
  int64_t epoch = 0, position = 0, numSamples = 0, worldSize = 0, batch = 0;
  uint64_t shuffle = 0;
};

/// The file of `rank` for a checkpoint `path` (ckpt-N.otcc): rank 0's is
/// `path` itself, rank r's ckpt-N.rank<r>.otcc. Only programs with
/// per-rank state (error-feedback residuals) write rank files.
std::string rankPath(const std::string &path, int rank) {
  if (rank == 0)
    return path;
  const std::string ext = ".otcc";
  std::string base =
      path.size() >= ext.size() &&
              path.compare(path.size() - ext.size(), ext.size(), ext) == 0
          ? path.substr(0, path.size() - ext.size())
          : path;
  return base + ".rank" + std::to_string(rank) + ext;
}

std::vector<std::pair<int64_t, std::string>>
listCheckpoints(const std::string &dir, int rank = 0) {
  std::vector<std::pair<int64_t, std::string>> found;
  DIR *d = opendir(dir.c_str());
  if (!d)
    return found;
  const std::regex kName(rank == 0 ? std::string("ckpt-([0-9]+)\\.otcc")
                                   : "ckpt-([0-9]+)\\.rank" +
                                         std::to_string(rank) + "\\.otcc");
  while (dirent *e = readdir(d)) {
    std::cmatch m;
    if (std::regex_match(e->d_name, m, kName))
      found.emplace_back(std::stoll(m[1].str()), dir + "/" + e->d_name);
  }
  closedir(d);
  std::sort(found.begin(), found.end());
  return found;
}

/// Refuses an output file whose folder does not exist or cannot be
/// written, before any training (a full run must not end in that error).
void checkOutputPath(const std::string &flag, const std::string &path) {
  if (path.empty())
    return;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw UsageError(flag + " " + path + ": is a folder; give a file name");
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  if (dir.empty())
    dir = "/";
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw UsageError(flag + " " + path + ": the folder '" + dir +
                     "' does not exist");
  if (::access(dir.c_str(), W_OK) != 0)
    throw UsageError(flag + " " + path + ": the folder '" + dir +
                     "' is not writable: " + std::strerror(errno));
}

/// Export over the program's own model would make the next run start from
/// the trained weights: refused before training rather than after.
void checkNotModel(const std::string &flag, const std::string &path,
                   const otc_program_t *program) {
  char a[PATH_MAX], b[PATH_MAX];
  if (!path.empty() && realpath(path.c_str(), a) &&
      realpath(otc_program_model_path(program), b) && std::strcmp(a, b) == 0)
    throw UsageError(flag + " " + path +
                     ": it is the program's source model, which every run "
                     "reads its initial weights from; export elsewhere");
}

/// Temporaries a killed checkpoint write left behind (name.otcc.tmp): the
/// checkpoint itself was never renamed into place, so they hold nothing.
/// Each rank removes its own (rank 0 also the single-writer ones).
void removeStaleTemporaries(const std::string &dir, int rank) {
  DIR *d = opendir(dir.c_str());
  if (!d)
    return;
  const std::regex kTmp(
      "ckpt-[0-9]+" + std::string(rank == 0 ? "(\\.rank0)?" : "\\.rank") +
      (rank == 0 ? "" : std::to_string(rank)) + "\\.otcc\\.tmp");
  std::vector<std::string> stale;
  while (dirent *e = readdir(d))
    if (std::regex_match(e->d_name, kTmp))
      stale.push_back(dir + "/" + e->d_name);
  closedir(d);
  for (const std::string &p : stale)
    std::remove(p.c_str());
}

/// Creates `dir` and the folders above it (the folder of `flag`).
void makeDirs(const std::string &flag, const std::string &dir) {
  std::string path;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    path = dir.substr(0, pos);
    if (!path.empty() && ::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
      fail(OTC_IO_ERROR, flag + " " + dir + ": cannot create the folder '" +
                             path + "': " + std::strerror(errno));
  }
}

//--- The run -----------------------------------------------------------------

/// What the driver needs to know of the program, read through the C API.
struct ProgramInfo {
  std::vector<InputSpec> inputs;
  int64_t batch = 1;
  uint64_t seed = 0;
  std::string loss;
  uint32_t features = 0;
  /// The model output evaluation reads (otc_program_eval_output).
  bool hasEvalOutput = false;
  DType evalDType = DType::F32;
  std::vector<int64_t> evalShape;

  explicit ProgramInfo(const otc_program_t *program)
      : inputs(programInputs(program)), batch(otc_program_batch(program)),
        seed(otc_program_seed(program)), loss(otc_program_loss(program)),
        features(otc_program_features(program)) {
    otc_tensor_info_t out;
    if (otc_status_t st = otc_program_eval_output(program, &out)) {
      otc_status_free(st); // NOT_FOUND: no eval output
      return;
    }
    hasEvalOutput = true;
    evalDType = DType(int(out.dtype));
    evalShape.assign(out.shape, out.shape + out.rank);
  }
  bool has(otc_program_feature_t f) const { return (features & f) != 0; }
  bool hasInput(const std::string &name) const {
    return std::any_of(inputs.begin(), inputs.end(),
                       [&](const InputSpec &in) { return in.name == name; });
  }
  bool classifies() const { return loss == "cross-entropy" || loss == "nll"; }
};

struct EvalResult {
  int64_t correct = 0, total = 0;
  double lossSum = 0;
  bool hasAccuracy = false, hasLoss = false;
};

int64_t readInteger(const uint8_t *p, DType dtype) {
  switch (dtype) {
  case DType::I64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::U8:
  case DType::Bool:
    return *p;
  case DType::I8:
    return int8_t(*p);
  case DType::I16: {
    int16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  case DType::U16: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  case DType::U32: {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::U64: {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return int64_t(v);
  }
  case DType::F16: // storage types: never class labels
  case DType::BF16:
    return -1;
  case DType::F32: {
    float v;
    std::memcpy(&v, p, 4);
    return int64_t(v);
  }
  case DType::F64: {
    double v;
    std::memcpy(&v, p, 8);
    return int64_t(v);
  }
  }
  return 0;
}

// Cross-entropy labels must be class indices; checked once up front so a bad
// file is a clear input error rather than a failed step.
void checkLabels(const ProgramInfo &m, const Dataset &ds) {
  if (!m.classifies() || !m.hasEvalOutput || m.evalShape.size() < 2)
    return;
  // [batch, ..., classes] outputs: one label per position of a sample.
  int64_t classes = m.evalShape.back();
  for (const Dataset::Column &col : ds.columns()) {
    if (col.input.role != "label")
      continue;
    int64_t per = col.input.sampleNumel();
    size_t width = col.sampleBytes / size_t(std::max<int64_t>(per, 1));
    for (int64_t i = 0; i < ds.size(); ++i)
      for (int64_t j = 0; j < per; ++j) {
        int64_t y = readInteger(col.data.data() + size_t(i) * col.sampleBytes +
                                    size_t(j) * width,
                                col.input.dtype);
        if (y < 0 || y >= classes)
          throw UsageError("'" + col.source + "': label " + std::to_string(y) +
                           " of sample " + std::to_string(i) +
                           " is outside [0, " + std::to_string(classes) +
                           ") for input '" + col.input.name + "'");
      }
  }
}

class Run {
public:
  Run(Options o, otc_program_t *program, otc_comm_t *comm)
      : o_(std::move(o)), program_(program), comm_(comm), m_(program),
        rank_(otc_comm_rank(comm)), world_(otc_comm_size(comm)),
        bar_(stderr, !o_.quiet && otc_comm_rank(comm) == 0) {}

  int run();

private:
  /// This rank's --profile trace: FILE.json on rank 0, FILE.rank<r>.json
  /// on rank r; "" without --profile.
  std::string profileTracePath() const {
    const std::string &p = o_.profilePath;
    if (p.empty() || rank_ == 0)
      return p;
    const std::string tag = ".rank" + std::to_string(rank_);
    size_t dot = p.rfind('.'), slash = p.rfind('/');
    if (dot == std::string::npos || dot == 0 ||
        (slash != std::string::npos && dot < slash))
      return p + tag;
    return p.substr(0, dot) + tag + p.substr(dot);
  }

  /// After training with --profile: every rank writes its trace, rank 0
  /// prints the summary.
  void writeProfile() {
    if (o_.profilePath.empty())
      return;
    otc_status_t st = otc_session_write_profile(
        session_.get(), profileTracePath().c_str(), nullptr);
    if (st && otc_status_code(st) == OTC_FAILED_PRECONDITION) {
      otc_status_free(st); // a run with no step left to take
      info("--profile: no step ran, so there is no profile");
      return;
    }
    check(st);
    info("wrote the profile trace to '" + profileTracePath() + "'");
    if (rank_ == 0)
      check(otc_session_write_profile(session_.get(), nullptr, "-"));
  }

  void info(const std::string &line) {
    if (rank_ == 0 && !o_.quiet)
      bar_.print(line);
  }
  void loadData();
  void createSession();
  void resume();
  void applyRecipe();
  /// The optimizer step training ends at (from --steps and --epochs).
  int64_t lastStep() const;
  void train();
  void bindBatch(const Dataset &ds, const std::vector<int64_t> &indices);
  EvalResult evaluate();
  void reportEval();
  void prepareFullModel();
  void saveCheckpoint();
  std::vector<uint8_t> loaderExtra() const;
  /// Global batches the loader has handed out since epoch 0 began.
  int64_t batchesTaken() const {
    return loader_->epoch() * loader_->batchesPerEpoch() + loader_->position();
  }

  Options o_;
  otc_program_t *program_;
  otc_comm_t *comm_;
  const ProgramInfo m_;
  int rank_, world_;
  ProgressBar bar_;
  std::optional<Dataset> train_, eval_;
  std::unique_ptr<otc_session_t, void (*)(otc_session_t *)> session_{
      nullptr, otc_session_release};
  std::unique_ptr<Loader> loader_;
  MetricsWriter metrics_;
  /// Optimizer step and batches taken at the last checkpoint: a skipped
  /// step moves the data position without moving the step.
  std::pair<int64_t, int64_t> lastSaved_{-1, -1};
  bool resumed_ = false;
  /// SDP: the step the whole model was assembled and calibrated at.
  int64_t preparedStep_ = -1;
};

void Run::loadData() {
  if (!o_.dataset.empty()) {
    FashionMnist fm = loadFashionMnist(m_.inputs, "");
    char line[160];
    std::snprintf(line, sizeof line,
                  "fashion-mnist: %lld training / %lld test images, "
                  "normalised with mean %.4f std %.4f",
                  (long long)fm.train.size(), (long long)fm.eval.size(),
                  fm.mean, fm.std);
    info(line);
    train_ = std::move(fm.train);
    eval_ = std::move(fm.eval);
    return;
  }
  if (o_.data.empty()) {
    std::string inputs;
    for (const InputSpec &in : m_.inputs)
      inputs += " --data " + in.name + "=FILE";
    throw UsageError("no training data: give" + inputs +
                     " or --dataset fashion-mnist");
  }
  auto bind = [&](const std::vector<std::pair<std::string, std::string>> &b,
                  const char *flag) {
    std::map<std::string, Array> arrays;
    std::map<std::string, std::string> sources;
    for (const auto &[name, file] : b) {
      if (arrays.count(name))
        throw UsageError(std::string(flag) + " names input '" + name +
                         "' twice");
      if (!m_.hasInput(name)) {
        std::string known;
        for (const InputSpec &in : m_.inputs)
          known += (known.empty() ? "" : ", ") + in.name;
        throw UsageError(std::string(flag) + " " + name + "=" + file +
                         ": the program has no input '" + name +
                         "' (inputs: " + known + ")");
      }
      arrays[name] = readArray(file);
      sources[name] = file;
    }
    return Dataset::bind(m_.inputs, std::move(arrays), sources);
  };
  train_ = bind(o_.data, "--data");
  checkLabels(m_, *train_);
  if (!o_.evalData.empty()) {
    eval_ = bind(o_.evalData, "--eval-data");
    checkLabels(m_, *eval_);
  }
}

void Run::createSession() {
  otc_session_options_t options;
  otc_session_options_initialize(&options);
  options.seed = o_.seed ? *o_.seed : m_.seed;
  options.num_threads = o_.threads;
  otc_session_t *s = nullptr;
  check(otc_session_create(program_, comm_, &options, &s));
  session_.reset(s);
  loader_ = std::make_unique<Loader>(train_->size(), world_, rank_, m_.batch,
                                     options.seed, o_.shuffle);
}

void Run::resume() {
  std::string path = o_.resumeFrom;
  std::vector<std::pair<int64_t, std::string>> all;
  if (o_.resume) {
    all = listCheckpoints(o_.checkpointDir);
    if (all.empty()) {
      info("no checkpoint in '" + o_.checkpointDir + "'; starting from step 0");
      return;
    }
    path = all.back().second;
  }
  if (path.empty())
    return;
  LoaderExtra extra;
  size_t extraBytes = 0;
  if (m_.has(OTC_PROGRAM_PER_RANK_STATE) && world_ > 1)
    path = rankPath(path, rank_);
  otc_status_t st = otc_session_load_checkpoint(
      session_.get(), path.c_str(), &extra, sizeof extra, &extraBytes);
  if (st) {
    std::string message = otc_status_message(st);
    otc_status_code_t code = otc_status_code(st);
    otc_status_free(st);
    // Name the newest checkpoint that is still good, never fall back to it
    // silently: the user decides whether losing those steps is acceptable.
    for (size_t i = all.size(); i-- > 1;) {
      const std::string &prev = all[i - 1].second;
      otc_status_t vs = otc_checkpoint_validate(program_, prev.c_str());
      bool good = vs == nullptr;
      otc_status_free(vs);
      if (good) {
        message += "; the previous checkpoint '" + prev +
                   "' is valid: resume from it with --resume-from " + prev;
        break;
      }
    }
    fail(code == OTC_NOT_FOUND ? OTC_NOT_FOUND : OTC_DATA_LOSS,
         "cannot resume: " + message);
  }
  if (extraBytes != sizeof extra ||
      std::memcmp(extra.magic, LoaderExtra().magic, sizeof extra.magic) != 0)
    fail(OTC_DATA_LOSS, "checkpoint '" + path +
                            "' has no data-loader position (was it written "
                            "by this driver?)");
  Loader::State state;
  state.seed = extra.seed;
  state.epoch = extra.epoch;
  state.position = extra.position;
  state.numSamples = extra.numSamples;
  state.worldSize = extra.worldSize;
  state.batch = extra.batch;
  state.shuffle = uint8_t(extra.shuffle);
  loader_->restore(state);
  resumed_ = true;
  lastSaved_ = {otc_session_step(session_.get()), batchesTaken()};
  info("resumed from '" + path + "' at step " +
       std::to_string(otc_session_step(session_.get())));
}

int64_t Run::lastStep() const {
  int64_t batches =
      (o_.epochs || !o_.steps ? (o_.epochs ? *o_.epochs : 1) : 0) *
      loader_->batchesPerEpoch() / otc_program_accumulate(program_);
  if (!o_.steps)
    return batches;
  return batches ? std::min(*o_.steps, batches) : *o_.steps;
}

/// The optimizer flags: after a resume, so that flags given again replace
/// the checkpoint's values and a run without them continues the
/// checkpoint's schedule.
void Run::applyRecipe() {
  auto apply = [&](otc_status_t st, const std::string &flag) {
    if (!st)
      return;
    std::string message = otc_status_message(st);
    otc_status_free(st);
    throw UsageError(flag + ": " + message);
  };
  otc_session_t *s = session_.get();
  bool hadSchedule = otc_session_get_lr_schedule(s, nullptr) != 0;
  if (o_.scheduleGiven)
    apply(otc_session_set_lr_schedule(s, nullptr), "--lr-schedule");
  for (const auto &[name, value] : o_.hyper) {
    std::string flag = "--" + name;
    std::replace(flag.begin(), flag.end(), '_', '-');
    if (name == "lr" && hadSchedule && !o_.scheduleGiven)
      throw UsageError("--lr: the checkpoint's lr schedule sets the lr; give "
                       "the schedule's flags (--lr-schedule ...) to replace "
                       "it");
    apply(otc_session_set_hyperparameter(s, name.c_str(), value), flag);
  }
  if (!o_.scheduleGiven)
    return;
  otc_lr_schedule_t sc = o_.schedule;
  sc.base_lr = otc_session_get_lr(s);
  sc.total_steps = o_.decaySteps ? *o_.decaySteps : lastStep();
  if (sc.kind == OTC_LR_ONECYCLE && sc.cycle_momentum) {
    double ignored;
    otc_status_t st = otc_session_get_hyperparameter(s, "momentum", &ignored);
    bool hasMomentum = st == nullptr;
    otc_status_free(st);
    st = otc_session_get_hyperparameter(s, "beta1", &ignored);
    hasMomentum |= st == nullptr;
    otc_status_free(st);
    if (!hasMomentum) // as torch, which cycles only what the optimizer has
      sc.cycle_momentum = 0;
  }
  apply(otc_session_set_lr_schedule(s, &sc), "--lr-schedule");
  if (resumed_ && hadSchedule)
    info("the lr schedule of the command line replaces the checkpoint's");
}

std::vector<uint8_t> Run::loaderExtra() const {
  const Loader::State &s = loader_->state();
  LoaderExtra e;
  e.seed = s.seed;
  e.epoch = s.epoch;
  e.position = s.position;
  e.numSamples = s.numSamples;
  e.worldSize = s.worldSize;
  e.batch = s.batch;
  e.shuffle = s.shuffle;
  std::vector<uint8_t> bytes(sizeof e);
  std::memcpy(bytes.data(), &e, sizeof e);
  return bytes;
}

void Run::saveCheckpoint() {
  int64_t step = otc_session_step(session_.get());
  if (lastSaved_ == std::make_pair(step, batchesTaken()))
    return;
  std::string path =
      o_.checkpointDir + "/ckpt-" + std::to_string(step) + ".otcc";
  int exitCode = 0;
  // Ranks hold identical weights: rank 0 writes, the others wait for it.
  // Per-rank state (error-feedback residuals) makes every rank write its
  // own file.
  bool perRank = m_.has(OTC_PROGRAM_PER_RANK_STATE) && world_ > 1;
  bool ok = allRanks(comm_, exitCode, [&] {
    if (rank_ != 0 && !perRank)
      return;
    if (rank_ == 0)
      makeDirs("--checkpoint-dir", o_.checkpointDir);
    if (perRank) // the folder exists before the other ranks write into it
      check(otc_comm_barrier(comm_));
    std::vector<uint8_t> extra = loaderExtra();
    check(otc_session_save_checkpoint(session_.get(),
                                      rankPath(path, rank_).c_str(),
                                      extra.data(), extra.size()));
    auto all = listCheckpoints(o_.checkpointDir, rank_);
    for (size_t i = 0; i + 2 < all.size(); ++i)
      std::remove(all[i].second.c_str());
  });
  if (!ok)
    throw AgreedFailure{exitCode};
  lastSaved_ = {step, batchesTaken()};
}

void Run::bindBatch(const Dataset &ds, const std::vector<int64_t> &indices) {
  std::vector<uint8_t> buffer;
  for (size_t c = 0; c < ds.columns().size(); ++c) {
    const Dataset::Column &col = ds.columns()[c];
    buffer.resize(col.input.bytes());
    ds.gather(c, indices, buffer.data());
    check(otc_session_bind_input(session_.get(), col.input.name.c_str(),
                                 buffer.data(), buffer.size()));
  }
}

/// SDP: assembles the whole model from the owners on every rank (even one
/// without an evaluation batch: it is collective) and, with BatchNorm,
/// re-estimates its running statistics on training batches of each rank's
/// shard, averaged over the ranks.
void Run::prepareFullModel() {
  int64_t step = otc_session_step(session_.get());
  if (!m_.has(OTC_PROGRAM_SDP) || preparedStep_ == step)
    return;
  check(otc_session_assemble_full_model(session_.get()));
  if (m_.has(OTC_PROGRAM_CALIBRATE_STEP) && train_ &&
      o_.sdpCalibrationBatches) {
    const Dataset &ds = *train_;
    int64_t n = ds.size(), batches = o_.sdpCalibrationBatches;
    for (int64_t k = 0; k < batches; ++k) {
      std::vector<int64_t> indices(size_t(m_.batch));
      for (int64_t i = 0; i < m_.batch; ++i)
        indices[size_t(i)] = ((rank_ * batches + k) * m_.batch + i) % n;
      bindBatch(ds, indices);
      check(otc_session_calibrate_full_model(session_.get()));
    }
    check(otc_session_average_full_buffers(session_.get()));
  }
  preparedStep_ = step;
}

EvalResult Run::evaluate() {
  EvalResult r;
  const Dataset &ds = *eval_;
  int64_t n = ds.size();
  int64_t per = (n + world_ - 1) / world_;
  int64_t begin = std::min(n, rank_ * per), end = std::min(n, begin + per);
  const InputSpec *label = inputWithRole(m_.inputs, "label");
  size_t labelColumn = 0;
  for (size_t c = 0; c < ds.columns().size(); ++c)
    if (label && ds.columns()[c].input.name == label->name)
      labelColumn = c;
  const std::vector<int64_t> &outShape = m_.evalShape;
  bool classify = m_.classifies() && m_.hasEvalOutput && label &&
                  m_.evalDType == DType::F32 && outShape.size() == 2 &&
                  outShape[0] == m_.batch;
  r.hasAccuracy = classify;
  r.hasLoss = classify || m_.has(OTC_PROGRAM_EVAL_LOSS);
  prepareFullModel();
  int64_t outNumel = 1;
  for (int64_t d : outShape)
    outNumel *= d;
  std::vector<float> output(m_.hasEvalOutput ? size_t(outNumel) : 0);
  for (int64_t b = begin; b < end; b += m_.batch) {
    int64_t valid = std::min(m_.batch, end - b);
    std::vector<int64_t> indices(size_t(m_.batch), -1);
    for (int64_t i = 0; i < valid; ++i)
      indices[size_t(i)] = b + i;
    bindBatch(ds, indices);
    check(otc_session_eval_step(session_.get(),
                                classify ? output.data() : nullptr,
                                classify ? output.size() * sizeof(float) : 0));
    if (classify) {
      // Computed here rather than read from eval_loss so that padded rows
      // of the last batch do not count.
      const float *logits = output.data();
      int64_t classes = outShape[1];
      const Dataset::Column &col = ds.columns()[labelColumn];
      for (int64_t i = 0; i < valid; ++i) {
        const float *row = logits + i * classes;
        int64_t y = readInteger(
            col.data.data() + size_t(b + i) * col.sampleBytes, label->dtype);
        if (y < 0 || y >= classes)
          fail(OTC_INVALID_ARGUMENT, "evaluation label " + std::to_string(y) +
                                         " of sample " + std::to_string(b + i) +
                                         " is outside [0, " +
                                         std::to_string(classes) + ")");
        int64_t best = 0;
        float mx = row[0];
        for (int64_t c = 1; c < classes; ++c)
          if (row[c] > mx)
            mx = row[c], best = c;
        double sum = 0;
        for (int64_t c = 0; c < classes; ++c)
          sum += std::exp(double(row[c]) - mx);
        r.lossSum += std::log(sum) + mx - row[y];
        r.correct += best == y;
      }
    } else if (r.hasLoss) {
      float loss = 0;
      check(otc_session_eval_loss(session_.get(), &loss));
      r.lossSum += double(loss) * double(valid);
    }
    r.total += valid;
  }
  double v[3] = {double(r.correct), double(r.total), r.lossSum};
  check(otc_comm_all_reduce_sum_f64(comm_, v, 3));
  r.correct = int64_t(v[0]);
  r.total = int64_t(v[1]);
  r.lossSum = v[2];
  return r;
}

void Run::reportEval() {
  if (!eval_ || (!m_.hasEvalOutput && !m_.has(OTC_PROGRAM_EVAL_LOSS)))
    return;
  if (!m_.has(OTC_PROGRAM_EVAL_STEP))
    return;
  EvalResult r = evaluate();
  int64_t step = otc_session_step(session_.get());
  double loss = r.total ? r.lossSum / double(r.total) : 0;
  double acc = r.total ? double(r.correct) / double(r.total) : 0;
  char line[200];
  if (r.hasAccuracy)
    std::snprintf(line, sizeof line,
                  "eval: accuracy %.4f (%lld/%lld) loss %.4f", acc,
                  (long long)r.correct, (long long)r.total, loss);
  else
    std::snprintf(line, sizeof line, "eval: loss %.4f (%lld samples)", loss,
                  (long long)r.total);
  info(line);
  if (rank_ == 0)
    metrics_.logEval(step, loader_->epoch() + 1, r.hasAccuracy ? acc : -1.0,
                     r.correct, r.total, loss, r.hasLoss);
}

// --steps counts optimizer steps and --epochs counts batches: they differ
// once a step is skipped (a non-finite gradient on some rank), which takes
// a batch but not an optimizer step.
void Run::train() {
  constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();
  int64_t bpe = loader_->batchesPerEpoch();
  int64_t stepLimit = o_.steps ? *o_.steps : kNoLimit;
  int64_t batchLimit =
      o_.epochs || !o_.steps ? (o_.epochs ? *o_.epochs : 1) * bpe : kNoLimit;
  // --accumulate N: an optimizer step takes N batches.
  const int32_t accumulate = otc_program_accumulate(program_);
  int64_t total = lastStep();
  int64_t epochs = std::max<int64_t>(1, (total * accumulate + bpe - 1) / bpe);
  int64_t start = otc_session_step(session_.get());
  int64_t startBatch = batchesTaken();
  if (start >= stepLimit) {
    info("already at step " + std::to_string(start) + " of " +
         std::to_string(total) + "; nothing to train");
    return;
  }
  if (startBatch >= batchLimit) {
    info("already at the end of epoch " + std::to_string(batchLimit / bpe) +
         " (step " + std::to_string(start) + "); nothing to train");
    return;
  }
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now(), lastLog = t0, lastDraw = t0;
  int64_t iterations = 0, lastLogIteration = 0;
  double globalBatch = double(world_) * double(m_.batch) * accumulate;
  bool evaluatedAtEnd = false;
  int64_t step = start, batch = startBatch;
  int64_t consecutiveSkips = 0,
          skippedBefore = otc_session_skipped_steps(session_.get());
  std::vector<float> ratios;
  while (step < stepLimit && batch + accumulate - 1 < batchLimit) {
    int64_t epochAtStart = loader_->epoch();
    bool startedAtEpochEnd = loader_->position() == bpe;
    double lr = otc_session_get_lr(session_.get()); // this step's
    // The first N - 1 micro-batches of an accumulating program, then the
    // step itself; the loss is their mean.
    double lossSum = 0;
    for (int32_t m = 0; m + 1 < accumulate; ++m) {
      bindBatch(*train_, loader_->next());
      float micro = 0;
      check(otc_session_accumulate_step(session_.get(), &micro));
      lossSum += micro;
    }
    bindBatch(*train_, loader_->next());
    float localLoss = 0;
    check(otc_session_train_step(session_.get(), &localLoss));
    lossSum += localLoss;
    bool skipped = otc_session_last_step_skipped(session_.get()) != 0;
    step = otc_session_step(session_.get());
    batch = batchesTaken();
    ++iterations;
    // The loss reported is the mean over ranks, as a 1-rank run would see.
    double loss = lossSum / accumulate;
    check(otc_comm_all_reduce_sum_f64(comm_, &loss, 1));
    loss /= world_;

    int64_t epoch = loader_->epoch() + 1;
    int64_t inEpoch = loader_->position();
    // A step of several batches may end past an epoch's end.
    bool epochEnd = inEpoch == bpe || (loader_->epoch() != epochAtStart &&
                                       !startedAtEpochEnd && inEpoch > 0);
    bool last = step >= stepLimit || batch + accumulate - 1 >= batchLimit;
    auto now = Clock::now();
    double elapsed = std::chrono::duration<double>(now - t0).count();
    double rate = elapsed > 0 ? globalBatch * double(iterations) / elapsed : 0;
    double eta =
        elapsed / double(iterations) *
        double(std::min(stepLimit - step, (batchLimit - batch) / accumulate));
    uint64_t sent = 0, received = 0;
    otc_session_step_bytes(session_.get(), &sent, &received);
    if (skipped) {
      // Every rank skipped together; the same optimizer step is retried on
      // the next batch.
      info("step " + std::to_string(step + 1) +
           " skipped: non-finite gradient on some rank");
      if (rank_ == 0)
        metrics_.logSkip(step + 1, epoch, "non-finite gradient", sent, received,
                         elapsed);
      if (++consecutiveSkips >= o_.maxSkippedSteps) {
        bar_.finishLine();
        if (rank_ == 0)
          std::fprintf(stderr,
                       "error: %lld consecutive steps were skipped for a NaN "
                       "or infinity in the averaged gradient (--max-skipped-"
                       "steps %lld); stopping at step %lld without writing a "
                       "checkpoint. Check the data and the learning rate.\n",
                       (long long)consecutiveSkips,
                       (long long)o_.maxSkippedSteps, (long long)step);
        throw AgreedFailure{kExitFailure};
      }
    } else {
      consecutiveSkips = 0;
    }
    bool logStep = (!skipped && step % o_.logEvery == 0) || last || epochEnd;
    // A terminal is redrawn at most 10 times a second.
    if (rank_ == 0 &&
        (logStep ||
         (bar_.isTty() && now - lastDraw > std::chrono::milliseconds(100)))) {
      bar_.draw(epoch, epochs, inEpoch, bpe, loss, lr, rate, eta);
      lastDraw = now;
    }
    if (rank_ == 0 && !skipped && (step % o_.logEvery == 0 || last)) {
      double since = std::chrono::duration<double>(now - lastLog).count();
      double recent =
          since > 0
              ? globalBatch * double(iterations - lastLogIteration) / since
              : 0;
      ratios.resize(size_t(otc_session_compress_buckets(session_.get())));
      for (size_t b = 0; b < ratios.size(); ++b)
        ratios[b] = otc_session_compress_ratio(session_.get(), int64_t(b));
      float norm = -1;
      if (otc_status_t st = otc_session_grad_norm(session_.get(), &norm)) {
        otc_status_free(st);
        norm = -1;
      }
      metrics_.logStep(step, epoch, loss, lr, norm, recent, sent, received,
                       elapsed, ratios);
      lastLog = now;
      lastLogIteration = iterations;
    }
    if (epochEnd || last)
      bar_.finishLine();
    if (!skipped && !o_.checkpointDir.empty() && o_.checkpointEvery &&
        step % o_.checkpointEvery == 0)
      saveCheckpoint();
    if (epochEnd) {
      reportEval();
      evaluatedAtEnd = last;
    }
  }
  if (!evaluatedAtEnd)
    reportEval();
  if (int64_t n = otc_session_skipped_steps(session_.get()) - skippedBefore)
    info(std::to_string(n) + " step" + (n == 1 ? " was" : "s were") +
         " skipped for a non-finite gradient in this run");
}

int Run::run() {
  int exitCode = 0;
  if (otc_status_t st = otc_program_check_world_size(program_, world_)) {
    if (rank_ == 0)
      std::fprintf(stderr, "error: %s\n", otc_status_message(st));
    otc_status_free(st);
    return kExitUsage;
  }
  if (!o_.exportEmaPath.empty() && !m_.has(OTC_PROGRAM_EMA)) {
    if (rank_ == 0)
      std::fprintf(stderr, "error: --export-ema: the program keeps no EMA of "
                           "its weights (compile with otc-compile --ema "
                           "DECAY)\n");
    return kExitUsage;
  }
  // Outputs are checked before any data is read or step taken (allRanks
  // agrees between the steps: the folder exists before the others look).
  if (!allRanks(comm_, exitCode, [&] {
        checkOutputPath("--export", o_.exportPath);
        checkOutputPath("--export-ema", o_.exportEmaPath);
        checkNotModel("--export", o_.exportPath, program_);
        checkNotModel("--export-ema", o_.exportEmaPath, program_);
        checkOutputPath("--metrics", o_.metricsPath);
        checkOutputPath("--profile", profileTracePath());
        checkNotModel("--profile", profileTracePath(), program_);
        if (rank_ == 0 && !o_.tensorboardDir.empty()) {
          makeDirs("--tensorboard", o_.tensorboardDir);
          if (::access(o_.tensorboardDir.c_str(), W_OK) != 0)
            throw UsageError("--tensorboard " + o_.tensorboardDir +
                             ": not writable: " + std::strerror(errno));
        }
        if (rank_ == 0 && !o_.checkpointDir.empty())
          makeDirs("--checkpoint-dir", o_.checkpointDir);
      }))
    return exitCode;
  if (!o_.checkpointDir.empty() && !allRanks(comm_, exitCode, [&] {
        if (::access(o_.checkpointDir.c_str(), W_OK) != 0)
          throw UsageError("--checkpoint-dir " + o_.checkpointDir +
                           ": not writable: " + std::strerror(errno));
        removeStaleTemporaries(o_.checkpointDir, rank_);
      }))
    return exitCode;
  if (!allRanks(comm_, exitCode, [&] { loadData(); }))
    return exitCode;
  if (!allRanks(comm_, exitCode, [&] { createSession(); }))
    return exitCode;
  if (!allRanks(comm_, exitCode, [&] { resume(); }))
    return exitCode;
  if (!allRanks(comm_, exitCode, [&] { applyRecipe(); }))
    return exitCode;
  if (!o_.profilePath.empty() && !allRanks(comm_, exitCode, [&] {
        check(otc_session_set_profiling(session_.get(), 1));
      }))
    return exitCode;
  if (!allRanks(comm_, exitCode, [&] {
        if (rank_ == 0 && !o_.metricsPath.empty())
          metrics_.open(o_.metricsPath, resumed_);
        if (rank_ == 0 && !o_.tensorboardDir.empty())
          metrics_.openTensorBoard(o_.tensorboardDir);
      }))
    return exitCode;
  try {
    train();
    if (!o_.checkpointDir.empty())
      saveCheckpoint();
    metrics_.close();
    writeProfile();
  } catch (const AgreedFailure &f) {
    return f.exitCode == kExitUsage ? kExitFailure : f.exitCode;
  } catch (const std::exception &e) {
    // A rank that fails mid-training may leave others inside a collective.
    std::fprintf(stderr, "%serror: %s\n",
                 world_ > 1 ? ("[rank " + std::to_string(rank_) + "] ").c_str()
                            : "",
                 e.what());
    std::fflush(stderr);
    otc_comm_abort(comm_, kExitFailure);
    return kExitFailure;
  }
  if (!o_.exportPath.empty()) {
    // SDP assembles the whole model from every rank's part.
    if (!allRanks(comm_, exitCode, [&] { prepareFullModel(); }))
      return exitCode == kExitUsage ? kExitFailure : exitCode;
    if (!allRanks(comm_, exitCode, [&] {
          if (rank_ == 0 || m_.has(OTC_PROGRAM_SDP))
            check(
                otc_session_export_onnx(session_.get(), o_.exportPath.c_str()));
        }))
      return exitCode == kExitUsage ? kExitFailure : exitCode;
    info("exported the trained model to '" + o_.exportPath + "'");
  }
  if (!o_.exportEmaPath.empty()) {
    // Ranks hold the same EMA (no SDP): rank 0 writes.
    if (!allRanks(comm_, exitCode, [&] {
          if (rank_ == 0)
            check(otc_session_export_onnx_ema(session_.get(),
                                              o_.exportEmaPath.c_str()));
        }))
      return exitCode == kExitUsage ? kExitFailure : exitCode;
    info("exported the EMA of the weights to '" + o_.exportEmaPath + "'");
  }
  return 0;
}

/// Open MPI's collectives allocate and free scratch buffers as large as the
/// message on every call (an fp32 all-reduce: the whole bucket). glibc maps
/// each anew and every 4 KiB page then faults in again, every step: about
/// 8,400 faults per step for 80 MB of gradients, each ~10 us on some VMs.
/// The training executable owns its process, so it keeps freed memory for
/// reuse instead: one arena (a thread's own arena maps a block this large
/// anew each time, as the collectives thread's scratch would be), the heap
/// only, no trimming. Each setting yields to the user's own glibc variable
/// (all to GLIBC_TUNABLES); a program embedding the runtime keeps its own.
void keepFreedMemory() {
#if defined(__GLIBC__)
  if (std::getenv("GLIBC_TUNABLES"))
    return;
  if (!std::getenv("MALLOC_ARENA_MAX"))
    mallopt(M_ARENA_MAX, 1);
  if (!std::getenv("MALLOC_MMAP_MAX_") &&
      !std::getenv("MALLOC_MMAP_THRESHOLD_"))
    mallopt(M_MMAP_MAX, 0);
  if (!std::getenv("MALLOC_TRIM_THRESHOLD_"))
    mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
#endif
}

} // namespace

int driverMain(int argc, char **argv, const otc_program_entry_t *entry,
               otc_comm_t *comm) {
  keepFreedMemory();
  const char *self = argc > 0 ? argv[0] : "train";
  Options options;
  try {
    options = parseOptions(argc, argv);
  } catch (const UsageError &e) {
    if (launcherRankIsZero())
      std::fprintf(stderr, "error: %s\nrun `%s --help` for the flags\n",
                   e.what(), self);
    return kExitUsage;
  }
  if (options.help) {
    if (launcherRankIsZero())
      std::printf(kUsage, self);
    return 0;
  }
  otc_program_t *program = nullptr;
  if (otc_status_t st = otc_program_from_entry(entry, &program)) {
    std::fprintf(stderr, "error: %s\n", otc_status_message(st));
    otc_status_free(st);
    return kExitFailure;
  }
  std::unique_ptr<otc_program_t, void (*)(otc_program_t *)> programOwner(
      program, otc_program_release);
  std::unique_ptr<otc_comm_t, void (*)(otc_comm_t *)> commOwner(
      nullptr, otc_comm_release);
  if (!comm) {
    if (otc_status_t st = otc_comm_create_mpi(&comm)) {
      std::fprintf(stderr, "error: %s\n", otc_status_message(st));
      otc_status_free(st);
      return kExitFailure;
    }
    commOwner.reset(comm);
  }
  otc_comm_set_overlap(comm, options.overlap ? 1 : 0);
  if (otc_status_t st = otc_comm_set_timeout(comm, options.collectiveTimeout)) {
    std::fprintf(stderr, "error: %s\n", otc_status_message(st));
    otc_status_free(st);
    return kExitUsage;
  }
  Run run(std::move(options), program, comm);
  return run.run();
}

} // namespace otc

extern "C" int otc_driver_main(int argc, char **argv,
                               const otc_program_entry_t *entry) {
  try {
    return otc::driverMain(argc, argv, entry, nullptr);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "error: unknown internal error\n");
  }
  return 1;
}
