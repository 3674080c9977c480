//===- hyper.h - Run-time hyperparameters and lr schedules ------*- C++ -*-===//

#ifndef OTC_RUNTIME_CORE_HYPER_H
#define OTC_RUNTIME_CORE_HYPER_H

#include "otc/program_abi.h"
#include "otc/runtime.h"

#include <string>

namespace otc {

struct OptimizerSpec;
} // namespace otc
struct otc_session;
namespace otc {

/// The compile-time values of `spec` (the manifest's optimizer object).
otc_hyperparams_t initialHyperparams(const OptimizerSpec &spec);

/// The field of `h` named `name`, or nullptr for an unknown name.
double *hyperField(otc_hyperparams_t &h, const std::string &name);

/// Throws INVALID_ARGUMENT when `name` is unknown, `value` out of its range
/// or the optimizer `spec` has no such hyperparameter (RMSprop has a
/// momentum only when compiled with a momentum buffer).
void checkHyperparameter(const OptimizerSpec &spec, const std::string &name,
                         double value);

/// The hyperparameter a OneCycle schedule cycles for `spec` ("momentum" for
/// momentum SGD and RMSprop with a momentum buffer, "beta1" for Adam, AdamW,
/// LAMB and Lion), or "" when it has none.
const char *cycledMomentum(const OptimizerSpec &spec);

/// Throws INVALID_ARGUMENT naming the first field of `s` out of range.
void validateSchedule(const otc_lr_schedule_t &s);

/// lr (and, with a momentum cycle, momentum) of 1-based step `step`.
double scheduleLr(const otc_lr_schedule_t &s, int64_t step,
                  double *momentum = nullptr);

/// Sets the session's hyperparameters to its schedule's for the next step
/// (after each step, a new schedule, a loaded checkpoint); none: no-op.
void applySchedule(otc_session *s);

} // namespace otc

#endif // OTC_RUNTIME_CORE_HYPER_H
