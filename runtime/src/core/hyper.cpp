//===- hyper.cpp - Run-time hyperparameters and lr schedules --------------===//

#include "core/hyper.h"
#include "core/program.h"
#include "core/session.h"
#include "core/status.h"

#include <algorithm>
#include <cmath>

namespace otc {

namespace {

constexpr double kPi = 3.14159265358979323846;

struct HyperInfo {
  const char *name;
  double otc_hyperparams_t::*field;
  /// The optimizers that have it ("*": all). "rmsprop+momentum": RMSprop
  /// compiled with a momentum buffer (OptimizerSpec::momentumBuffer).
  std::initializer_list<const char *> optimizers;
  /// Why an optimizer without it lacks it (appended to the message).
  const char *hint = "";
};

const HyperInfo kHypers[] = {
    {"lr", &otc_hyperparams_t::lr, {"*"}},
    {"weight_decay", &otc_hyperparams_t::weight_decay, {"*"}},
    {"momentum",
     &otc_hyperparams_t::momentum,
     {"momentum", "rmsprop+momentum"},
     " (compile with --optimizer momentum, or rmsprop with --momentum > 0 "
     "for a momentum buffer)"},
    {"beta1", &otc_hyperparams_t::beta1, {"adam", "adamw", "lamb", "lion"}},
    {"beta2", &otc_hyperparams_t::beta2, {"adam", "adamw", "lamb", "lion"}},
    {"eps",
     &otc_hyperparams_t::eps,
     {"adam", "adamw", "lamb", "adagrad", "rmsprop"}},
    {"alpha", &otc_hyperparams_t::alpha, {"rmsprop"}},
    {"lr_decay", &otc_hyperparams_t::lr_decay, {"adagrad"}},
};

const HyperInfo *findHyper(const std::string &name) {
  for (const HyperInfo &h : kHypers)
    if (name == h.name)
      return &h;
  return nullptr;
}

bool hasHyper(const HyperInfo &h, const OptimizerSpec &spec) {
  const std::string key =
      spec.name == "rmsprop" && spec.momentumBuffer ? "rmsprop+momentum" : "";
  return std::any_of(
      h.optimizers.begin(), h.optimizers.end(), [&](const char *o) {
        return std::string(o) == "*" || spec.name == o || key == o;
      });
}

[[noreturn]] void bad(const std::string &what) {
  throw Error(OTC_INVALID_ARGUMENT, what);
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// torch's _LRScheduler anneal_func "cos": from `start` at pct 0 to `end`
/// at pct 1.
double cosineAnneal(double start, double end, double pct) {
  return end + (start - end) / 2.0 * (std::cos(kPi * pct) + 1);
}

} // namespace

otc_hyperparams_t initialHyperparams(const OptimizerSpec &spec) {
  otc_hyperparams_t h{};
  h.lr = spec.lr;
  h.weight_decay = spec.weightDecay;
  h.momentum = spec.momentum;
  h.beta1 = spec.beta1;
  h.beta2 = spec.beta2;
  h.eps = spec.eps;
  h.alpha = spec.alpha;
  h.lr_decay = spec.lrDecay;
  return h;
}

double *hyperField(otc_hyperparams_t &h, const std::string &name) {
  const HyperInfo *info = findHyper(name);
  return info ? &(h.*(info->field)) : nullptr;
}

void checkHyperparameter(const OptimizerSpec &spec, const std::string &name,
                         double value) {
  const std::string &optimizer = spec.name;
  const HyperInfo *info = findHyper(name);
  if (!info) {
    std::string known;
    for (const HyperInfo &h : kHypers)
      known += std::string(known.empty() ? "" : ", ") + h.name;
    bad("unknown hyperparameter '" + name + "' (known: " + known + ")");
  }
  if (!hasHyper(*info, spec))
    bad("the program's optimizer " + optimizer + " has no " + name +
        info->hint);
  if (!std::isfinite(value))
    bad(name + " must be finite, got " + num(value));
  bool ok = true;
  const char *range = "";
  if (name == "lr" || name == "weight_decay" || name == "lr_decay")
    ok = value >= 0, range = ">= 0";
  else if (name == "eps")
    ok = value > 0, range = "> 0";
  else
    ok = value >= 0 && value < 1, range = "in [0, 1)";
  if (!ok)
    bad(name + " must be " + range + ", got " + num(value));
}

const char *cycledMomentum(const OptimizerSpec &spec) {
  const std::string &o = spec.name;
  if (o == "momentum" || (o == "rmsprop" && spec.momentumBuffer))
    return "momentum";
  if (o == "adam" || o == "adamw" || o == "lamb" || o == "lion")
    return "beta1";
  return "";
}

void validateSchedule(const otc_lr_schedule_t &s) {
  auto finite = [&](const char *field, double v) {
    if (!std::isfinite(v))
      bad(std::string("lr schedule: ") + field + " must be finite, got " +
          num(v));
  };
  for (auto [field, v] : {std::pair<const char *, double>{"base_lr", s.base_lr},
                          {"warmup_start_factor", s.warmup_start_factor},
                          {"lr_min", s.lr_min},
                          {"gamma", s.gamma},
                          {"wsd_decay_fraction", s.wsd_decay_fraction},
                          {"pct_start", s.pct_start},
                          {"div_factor", s.div_factor},
                          {"final_div_factor", s.final_div_factor},
                          {"base_momentum", s.base_momentum},
                          {"max_momentum", s.max_momentum}})
    finite(field, v);
  if (s.kind < OTC_LR_CONSTANT || s.kind > OTC_LR_ONECYCLE)
    bad("lr schedule: unknown kind " + std::to_string(s.kind));
  if (!(s.base_lr > 0))
    bad("lr schedule: the base lr must be > 0, got " + num(s.base_lr));
  if (s.warmup_steps < 0)
    bad("lr schedule: warmup_steps must be >= 0, got " +
        std::to_string(s.warmup_steps));
  if (!(s.warmup_start_factor >= 0 && s.warmup_start_factor <= 1))
    bad("lr schedule: warmup_start_factor must be in [0, 1], got " +
        num(s.warmup_start_factor));
  if (!(s.lr_min >= 0 && s.lr_min <= s.base_lr))
    bad("lr schedule: lr_min must be in [0, base lr " + num(s.base_lr) +
        "], got " + num(s.lr_min));
  bool decays = s.kind == OTC_LR_LINEAR || s.kind == OTC_LR_COSINE ||
                s.kind == OTC_LR_WSD || s.kind == OTC_LR_ONECYCLE;
  if (s.total_steps < 0 || (decays && s.total_steps < 1))
    bad("lr schedule: total_steps must be >= 1, got " +
        std::to_string(s.total_steps));
  if (s.total_steps > 0 && decays && s.warmup_steps >= s.total_steps)
    bad("lr schedule: the warm-up (" + std::to_string(s.warmup_steps) +
        " steps) must be shorter than the schedule (" +
        std::to_string(s.total_steps) + " steps)");
  if (s.total_steps > 0 && !decays && s.warmup_steps > s.total_steps)
    bad("lr schedule: the warm-up (" + std::to_string(s.warmup_steps) +
        " steps) is longer than the run (" + std::to_string(s.total_steps) +
        " steps)");
  if (s.kind == OTC_LR_STEP && s.step_size < 1)
    bad("lr schedule: step_size must be >= 1, got " +
        std::to_string(s.step_size));
  if (s.kind == OTC_LR_STEP && !(s.gamma > 0))
    bad("lr schedule: gamma must be > 0, got " + num(s.gamma));
  if (s.kind == OTC_LR_WSD &&
      !(s.wsd_decay_fraction > 0 && s.wsd_decay_fraction <= 1))
    bad("lr schedule: wsd_decay_fraction must be in (0, 1], got " +
        num(s.wsd_decay_fraction));
  if (s.kind == OTC_LR_ONECYCLE) {
    if (s.warmup_steps)
      bad("lr schedule: onecycle warms up by itself (pct_start); "
          "warmup_steps must be 0");
    if (!(s.pct_start > 0 && s.pct_start < 1))
      bad("lr schedule: pct_start must be in (0, 1), got " + num(s.pct_start));
    // torch's phase ends: pct_start * T - 1 and T - 1 must be distinct.
    double end1 = s.pct_start * double(s.total_steps) - 1;
    if (!(end1 > 0 && end1 < double(s.total_steps - 1)))
      bad("lr schedule: onecycle over " + std::to_string(s.total_steps) +
          " steps with pct_start " + num(s.pct_start) +
          " leaves a phase without steps");
    if (!(s.div_factor > 0) || !(s.final_div_factor > 0))
      bad("lr schedule: div_factor and final_div_factor must be > 0");
    if (s.cycle_momentum &&
        !(s.base_momentum >= 0 && s.base_momentum <= s.max_momentum &&
          s.max_momentum < 1))
      bad("lr schedule: momentum bounds must satisfy 0 <= base_momentum (" +
          num(s.base_momentum) + ") <= max_momentum (" + num(s.max_momentum) +
          ") < 1");
  }
}

double scheduleLr(const otc_lr_schedule_t &s, int64_t step, double *momentum) {
  const double base = s.base_lr;
  int64_t k = std::max<int64_t>(step - 1, 0);
  if (s.kind == OTC_LR_ONECYCLE) {
    // torch.optim.lr_scheduler.OneCycleLR (two phases), step_num = k.
    double initial = base / s.div_factor;
    double minLr = initial / s.final_div_factor;
    double T = double(s.total_steps);
    double end1 = s.pct_start * T - 1, end2 = T - 1;
    double kk = std::min(double(k), end2);
    double lr, mom;
    if (kk <= end1) {
      double pct = kk / end1;
      lr = cosineAnneal(initial, base, pct);
      mom = cosineAnneal(s.max_momentum, s.base_momentum, pct);
    } else {
      double pct = (kk - end1) / (end2 - end1);
      lr = cosineAnneal(base, minLr, pct);
      mom = cosineAnneal(s.base_momentum, s.max_momentum, pct);
    }
    if (momentum && s.cycle_momentum)
      *momentum = mom;
    return lr;
  }
  const int64_t W = s.warmup_steps;
  if (k < W) {
    const double f = s.warmup_start_factor;
    return base * (f + (1 - f) * double(k) / double(W));
  }
  const int64_t D = std::max<int64_t>(s.total_steps - W, 1);
  const int64_t j = std::min(k - W, D);
  switch (s.kind) {
  case OTC_LR_LINEAR:
    return base + (s.lr_min - base) * double(j) / double(D);
  case OTC_LR_COSINE:
    return s.lr_min +
           (base - s.lr_min) * (1 + std::cos(kPi * double(j) / double(D))) / 2;
  case OTC_LR_STEP:
    return base * std::pow(s.gamma, double((k - W) / s.step_size));
  case OTC_LR_WSD: {
    int64_t E =
        std::max<int64_t>(1, std::llround(s.wsd_decay_fraction * double(D)));
    E = std::min(E, D);
    int64_t into = j - (D - E);
    if (into <= 0)
      return base;
    return base + (s.lr_min - base) * double(into) / double(E);
  }
  default:
    return base;
  }
}

} // namespace otc

namespace otc {

void applySchedule(otc_session_t *s) {
  if (!s->schedule)
    return;
  double mom = 0;
  s->hyper.lr = scheduleLr(*s->schedule, s->step + 1, &mom);
  if (s->schedule->kind == OTC_LR_ONECYCLE && s->schedule->cycle_momentum)
    *hyperField(s->hyper, cycledMomentum(s->manifest().optimizer)) = mom;
}

} // namespace otc

using namespace otc;

extern "C" {

otc_status_t otc_session_set_hyperparameter(otc_session_t *session,
                                            const char *name, double value) {
  return guard([&] {
    if (!session || !name)
      throw Error(OTC_INVALID_ARGUMENT, "session and name must not be NULL");
    checkHyperparameter(session->manifest().optimizer, name, value);
    if (session->schedule && std::string(name) == "lr")
      throw Error(OTC_FAILED_PRECONDITION,
                  "a learning-rate schedule sets the lr; change the "
                  "schedule's base lr instead");
    if (session->schedule && session->schedule->cycle_momentum &&
        session->schedule->kind == OTC_LR_ONECYCLE &&
        cycledMomentum(session->manifest().optimizer) == std::string(name))
      throw Error(OTC_FAILED_PRECONDITION,
                  std::string("the onecycle schedule cycles ") + name);
    *hyperField(session->hyper, name) = value;
  });
}

otc_status_t otc_session_get_hyperparameter(const otc_session_t *session,
                                            const char *name,
                                            double *out_value) {
  return guard([&] {
    if (!session || !name || !out_value)
      throw Error(OTC_INVALID_ARGUMENT,
                  "session, name and out_value must not be NULL");
    otc_hyperparams_t h = session->hyper;
    double *field = hyperField(h, name);
    // Unknown, or not the optimizer's: the same message as setting it.
    checkHyperparameter(session->manifest().optimizer, name,
                        field ? *field : 0);
    *out_value = *field;
  });
}

otc_status_t otc_session_set_lr(otc_session_t *session, double lr) {
  return otc_session_set_hyperparameter(session, "lr", lr);
}

double otc_session_get_lr(const otc_session_t *session) {
  return session ? session->hyper.lr : 0.0;
}

void otc_lr_schedule_initialize(otc_lr_schedule_t *s) {
  if (!s)
    return;
  *s = otc_lr_schedule_t{};
  s->kind = OTC_LR_CONSTANT;
  s->cycle_momentum = 1;
  s->step_size = 1;
  s->gamma = 0.1;
  s->wsd_decay_fraction = 0.1;
  s->pct_start = 0.3;
  s->div_factor = 25;
  s->final_div_factor = 1e4;
  s->base_momentum = 0.85;
  s->max_momentum = 0.95;
}

otc_status_t otc_lr_schedule_validate(const otc_lr_schedule_t *schedule) {
  return guard([&] {
    if (!schedule)
      throw Error(OTC_INVALID_ARGUMENT, "schedule is NULL");
    validateSchedule(*schedule);
  });
}

otc_status_t otc_lr_schedule_evaluate(const otc_lr_schedule_t *schedule,
                                      int64_t step, double *out_lr,
                                      double *out_momentum) {
  return guard([&] {
    if (!schedule)
      throw Error(OTC_INVALID_ARGUMENT, "schedule is NULL");
    if (step < 1)
      throw Error(OTC_INVALID_ARGUMENT,
                  "steps count from 1, got " + std::to_string(step));
    validateSchedule(*schedule);
    double lr = scheduleLr(*schedule, step, out_momentum);
    if (out_lr)
      *out_lr = lr;
  });
}

otc_status_t otc_session_set_lr_schedule(otc_session_t *session,
                                         const otc_lr_schedule_t *schedule) {
  return guard([&] {
    if (!session)
      throw Error(OTC_INVALID_ARGUMENT, "session is NULL");
    if (!schedule) {
      session->schedule.reset();
      return;
    }
    validateSchedule(*schedule);
    const OptimizerSpec &opt = session->manifest().optimizer;
    if (schedule->kind == OTC_LR_ONECYCLE && schedule->cycle_momentum &&
        !*cycledMomentum(opt))
      throw Error(OTC_INVALID_ARGUMENT,
                  "lr schedule: onecycle cycles the momentum, but the "
                  "program's optimizer " +
                      opt.name + " has none (turn cycle_momentum off)");
    session->schedule = *schedule;
    applySchedule(session);
  });
}

int32_t otc_session_get_lr_schedule(const otc_session_t *session,
                                    otc_lr_schedule_t *out) {
  if (!session || !session->schedule)
    return 0;
  if (out)
    *out = *session->schedule;
  return 1;
}

} // extern "C"
