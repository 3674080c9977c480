//===- hyper_test.cpp - Learning-rate schedules ---------------------------===//

#include "core/hyper.h"
#include "core/program.h"
#include "core/status.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace otc;

namespace {

otc_lr_schedule_t schedule(otc_lr_schedule_kind_t kind, double base,
                           int64_t warmup, int64_t total) {
  otc_lr_schedule_t s;
  otc_lr_schedule_initialize(&s);
  s.kind = kind;
  s.base_lr = base;
  s.warmup_steps = warmup;
  s.total_steps = total;
  return s;
}

std::string invalid(const otc_lr_schedule_t &s) {
  try {
    validateSchedule(s);
  } catch (const Error &e) {
    EXPECT_EQ(e.code(), OTC_INVALID_ARGUMENT);
    return e.what();
  }
  return "";
}

// Values printed by torch 1.13 (the lr of each optimizer step, read from
// param_groups before optimizer.step()).
TEST(LrSchedule, WarmupThenCosineAsSequentialLR) {
  // SequentialLR([LinearLR(start_factor=0.1, total_iters=4),
  //               CosineAnnealingLR(T_max=16, eta_min=0.01)], [4]), lr 0.1.
  otc_lr_schedule_t s = schedule(OTC_LR_COSINE, 0.1, 4, 20);
  s.warmup_start_factor = 0.1;
  s.lr_min = 0.01;
  EXPECT_NEAR(scheduleLr(s, 1), 0.010000000000000002, 1e-15);
  EXPECT_NEAR(scheduleLr(s, 3), 0.055000000000000014, 1e-15);
  EXPECT_NEAR(scheduleLr(s, 5), 0.1, 1e-15);
  EXPECT_NEAR(scheduleLr(s, 11), 0.07222075445642903, 1e-15);
  EXPECT_NEAR(scheduleLr(s, 20), 0.01086466238185463, 1e-15);
  // Held at lr_min after the schedule (torch's cosine would rise again).
  EXPECT_NEAR(scheduleLr(s, 21), 0.01, 1e-15);
  EXPECT_NEAR(scheduleLr(s, 1000), 0.01, 1e-15);
}

TEST(LrSchedule, OneCycleAsTorch) {
  // OneCycleLR(max_lr=0.1, total_steps=20) on SGD(momentum=0.9).
  otc_lr_schedule_t s = schedule(OTC_LR_ONECYCLE, 0.1, 0, 20);
  double mom = -1;
  EXPECT_NEAR(scheduleLr(s, 1, &mom), 0.0040000000000000036, 1e-15);
  EXPECT_NEAR(mom, 0.95, 1e-15);
  EXPECT_NEAR(scheduleLr(s, 6, &mom), 0.1, 1e-15);
  EXPECT_NEAR(mom, 0.85, 1e-15);
  EXPECT_NEAR(scheduleLr(s, 12, &mom), 0.06112620219362893, 1e-15);
  EXPECT_NEAR(mom, 0.8888739533021842, 1e-15);
  EXPECT_NEAR(scheduleLr(s, 20, &mom), 4e-07, 1e-18);
  EXPECT_NEAR(mom, 0.95, 1e-15);
  EXPECT_NEAR(scheduleLr(s, 25, &mom), 4e-07, 1e-18);
  s.cycle_momentum = 0;
  mom = -1;
  scheduleLr(s, 3, &mom);
  EXPECT_EQ(mom, -1) << "no cycle: the momentum is not touched";
}

TEST(LrSchedule, ClosedForms) {
  // Linear to lr_min after a warm-up from 0 (HF's linear schedule).
  otc_lr_schedule_t lin = schedule(OTC_LR_LINEAR, 1.0, 10, 110);
  lin.lr_min = 0.1;
  EXPECT_EQ(scheduleLr(lin, 1), 0.0);
  EXPECT_DOUBLE_EQ(scheduleLr(lin, 6), 0.5);
  EXPECT_DOUBLE_EQ(scheduleLr(lin, 11), 1.0);
  EXPECT_DOUBLE_EQ(scheduleLr(lin, 61), 0.55);
  EXPECT_DOUBLE_EQ(scheduleLr(lin, 111), 0.1);
  EXPECT_DOUBLE_EQ(scheduleLr(lin, 500), 0.1);
  // StepLR(step_size=3, gamma=0.5) after 2 warm-up steps.
  otc_lr_schedule_t st = schedule(OTC_LR_STEP, 0.8, 2, 0);
  st.step_size = 3;
  st.gamma = 0.5;
  st.warmup_start_factor = 0.5;
  EXPECT_DOUBLE_EQ(scheduleLr(st, 1), 0.4);
  EXPECT_DOUBLE_EQ(scheduleLr(st, 2), 0.6);
  for (int64_t k = 2; k < 14; ++k)
    EXPECT_DOUBLE_EQ(scheduleLr(st, k + 1), 0.8 * std::pow(0.5, (k - 2) / 3))
        << k;
  // WSD: 100 steps after a 0-step warm-up, the last 20 decay linearly.
  otc_lr_schedule_t wsd = schedule(OTC_LR_WSD, 2.0, 0, 100);
  wsd.wsd_decay_fraction = 0.2;
  EXPECT_DOUBLE_EQ(scheduleLr(wsd, 1), 2.0);
  EXPECT_DOUBLE_EQ(scheduleLr(wsd, 81), 2.0);
  EXPECT_DOUBLE_EQ(scheduleLr(wsd, 91), 1.0);
  EXPECT_DOUBLE_EQ(scheduleLr(wsd, 101), 0.0);
  // Constant with a warm-up, and none at all.
  otc_lr_schedule_t c = schedule(OTC_LR_CONSTANT, 0.3, 3, 0);
  EXPECT_DOUBLE_EQ(scheduleLr(c, 1), 0.0);
  EXPECT_DOUBLE_EQ(scheduleLr(c, 3), 0.2);
  EXPECT_DOUBLE_EQ(scheduleLr(c, 4), 0.3);
  EXPECT_DOUBLE_EQ(scheduleLr(c, 9999), 0.3);
}

TEST(LrSchedule, ValidationNamesTheField) {
  EXPECT_EQ(invalid(schedule(OTC_LR_COSINE, 0.1, 4, 20)), "");
  EXPECT_NE(invalid(schedule(OTC_LR_COSINE, -0.1, 0, 20)).find("base lr"),
            std::string::npos);
  EXPECT_NE(invalid(schedule(OTC_LR_COSINE, 0.1, 20, 20))
                .find("warm-up (20 steps) must be shorter than the schedule "
                      "(20 steps)"),
            std::string::npos);
  EXPECT_NE(invalid(schedule(OTC_LR_CONSTANT, 0.1, 30, 20))
                .find("longer than the run"),
            std::string::npos);
  EXPECT_NE(invalid(schedule(OTC_LR_LINEAR, 0.1, 0, 0)).find("total_steps"),
            std::string::npos);
  otc_lr_schedule_t s = schedule(OTC_LR_COSINE, 0.1, 0, 20);
  s.lr_min = 0.2;
  EXPECT_NE(invalid(s).find("lr_min"), std::string::npos);
  s = schedule(OTC_LR_STEP, 0.1, 0, 0);
  s.gamma = 0;
  EXPECT_NE(invalid(s).find("gamma"), std::string::npos);
  s.gamma = NAN;
  EXPECT_NE(invalid(s).find("gamma must be finite"), std::string::npos);
  s = schedule(OTC_LR_ONECYCLE, 0.1, 5, 20);
  EXPECT_NE(invalid(s).find("warms up by itself"), std::string::npos);
  s = schedule(OTC_LR_ONECYCLE, 0.1, 0, 3);
  EXPECT_NE(invalid(s).find("phase without steps"), std::string::npos);
  s = schedule(OTC_LR_WSD, 0.1, 0, 20);
  s.wsd_decay_fraction = 0;
  EXPECT_NE(invalid(s).find("wsd_decay_fraction"), std::string::npos);
  s = schedule(OTC_LR_CONSTANT, 0.1, 0, 0);
  s.kind = 17;
  EXPECT_NE(invalid(s).find("unknown kind 17"), std::string::npos);
}

/// An optimizer as its manifest names it (momentum SGD keeps buffers).
OptimizerSpec optimizer(const char *name, bool momentumBuffer = false) {
  OptimizerSpec spec;
  spec.name = name;
  spec.momentumBuffer = momentumBuffer || spec.name == "momentum";
  return spec;
}

/// checkHyperparameter's message, "" when it accepts.
std::string message(const OptimizerSpec &spec, const char *name, double v) {
  try {
    checkHyperparameter(spec, name, v);
  } catch (const Error &e) {
    EXPECT_EQ(e.code(), OTC_INVALID_ARGUMENT);
    return e.what();
  }
  return "";
}

TEST(Hyperparameters, RangesAndOptimizers) {
  auto message = [](const char *opt, const char *name, double v) {
    return ::message(optimizer(opt), name, v);
  };
  EXPECT_EQ(message("adamw", "beta2", 0.95), "");
  EXPECT_EQ(message("sgd", "lr", 0), "") << "a schedule may reach 0";
  EXPECT_NE(message("sgd", "lr", -1).find("lr must be >= 0, got -1"),
            std::string::npos);
  EXPECT_NE(message("adam", "eps", 0).find("eps must be > 0"),
            std::string::npos);
  EXPECT_NE(message("momentum", "momentum", 1).find("in [0, 1)"),
            std::string::npos);
  EXPECT_NE(message("sgd", "momentum", 0.9)
                .find("compile with --optimizer "
                      "momentum"),
            std::string::npos);
  EXPECT_NE(message("momentum", "beta1", 0.9).find("has no beta1"),
            std::string::npos);
  EXPECT_NE(message("sgd", "learning_rate", 0.1).find("unknown hyperparameter"),
            std::string::npos);
  EXPECT_NE(message("sgd", "lr", INFINITY).find("finite"), std::string::npos);
  OptimizerSpec spec;
  spec.name = "adamw";
  spec.lr = 3e-4;
  spec.beta2 = 0.95;
  otc_hyperparams_t h = initialHyperparams(spec);
  EXPECT_EQ(h.lr, 3e-4);
  EXPECT_EQ(*hyperField(h, "beta2"), 0.95);
  EXPECT_EQ(hyperField(h, "nope"), nullptr);
}

// Which optimizer reads which hyperparameter: torch.optim's (and the
// papers') parameters of each, with the run-time field of otc_hyperparams_t.
TEST(Hyperparameters, TableOfTheNewOptimizers) {
  struct Case {
    const char *optimizer;
    std::vector<const char *> has, hasNot;
  };
  const Case cases[] = {
      {"lamb",
       {"lr", "weight_decay", "beta1", "beta2", "eps"},
       {"momentum", "alpha", "lr_decay"}},
      {"lion",
       {"lr", "weight_decay", "beta1", "beta2"},
       {"eps", "momentum", "alpha", "lr_decay"}},
      {"adagrad",
       {"lr", "weight_decay", "eps", "lr_decay"},
       {"beta1", "beta2", "momentum", "alpha"}},
      {"rmsprop",
       {"lr", "weight_decay", "eps", "alpha"},
       {"beta1", "beta2", "momentum", "lr_decay"}},
      {"adam", {"beta1", "beta2", "eps"}, {"alpha", "lr_decay", "momentum"}},
      {"momentum", {"momentum"}, {"alpha", "lr_decay", "eps"}},
  };
  for (const Case &c : cases) {
    for (const char *name : c.has)
      EXPECT_EQ(message(optimizer(c.optimizer), name, 0.5), "")
          << c.optimizer << " " << name;
    for (const char *name : c.hasNot)
      EXPECT_NE(message(optimizer(c.optimizer), name, 0.5)
                    .find(std::string("optimizer ") + c.optimizer + " has no " +
                          name),
                std::string::npos)
          << c.optimizer << " " << name;
  }
  // RMSprop reads a momentum only when compiled with a momentum buffer
  // (torch keeps one exactly when momentum > 0).
  EXPECT_NE(message(optimizer("rmsprop"), "momentum", 0.9)
                .find("rmsprop with --momentum > 0"),
            std::string::npos);
  EXPECT_EQ(message(optimizer("rmsprop", true), "momentum", 0.9), "");
  // Ranges: alpha as the other averaging factors, lr_decay as the lr.
  EXPECT_NE(message(optimizer("rmsprop"), "alpha", 1.0).find("in [0, 1)"),
            std::string::npos);
  EXPECT_NE(
      message(optimizer("adagrad"), "lr_decay", -0.1).find("must be >= 0"),
      std::string::npos);
  EXPECT_EQ(message(optimizer("adagrad"), "lr_decay", 0.0), "");
  EXPECT_NE(message(optimizer("adagrad"), "eps", 0).find("eps must be > 0"),
            std::string::npos);
  // The unknown-name message lists the new fields.
  EXPECT_NE(message(optimizer("sgd"), "rho", 0.5)
                .find("known: lr, weight_decay, momentum, beta1, beta2, eps, "
                      "alpha, lr_decay"),
            std::string::npos);
}

TEST(Hyperparameters, OneCycleCyclesTheOptimizersMomentum) {
  EXPECT_STREQ(cycledMomentum(optimizer("momentum")), "momentum");
  EXPECT_STREQ(cycledMomentum(optimizer("adam")), "beta1");
  EXPECT_STREQ(cycledMomentum(optimizer("lamb")), "beta1");
  EXPECT_STREQ(cycledMomentum(optimizer("lion")), "beta1");
  EXPECT_STREQ(cycledMomentum(optimizer("rmsprop", true)), "momentum");
  EXPECT_STREQ(cycledMomentum(optimizer("rmsprop")), "");
  EXPECT_STREQ(cycledMomentum(optimizer("adagrad")), "");
  EXPECT_STREQ(cycledMomentum(optimizer("sgd")), "");
}

TEST(Hyperparameters, InitialValuesOfTheNewFields) {
  OptimizerSpec spec = optimizer("rmsprop");
  spec.alpha = 0.9;
  spec.lrDecay = 0.25;
  spec.eps = 1e-10;
  otc_hyperparams_t h = initialHyperparams(spec);
  EXPECT_EQ(h.alpha, 0.9);
  EXPECT_EQ(h.lr_decay, 0.25);
  EXPECT_EQ(h.eps, 1e-10);
  EXPECT_EQ(hyperField(h, "alpha"), &h.alpha);
  EXPECT_EQ(hyperField(h, "lr_decay"), &h.lr_decay);
  // torch's defaults when the manifest says nothing.
  otc_hyperparams_t d = initialHyperparams(OptimizerSpec());
  EXPECT_EQ(d.alpha, 0.99);
  EXPECT_EQ(d.lr_decay, 0.0);
}

} // namespace
