//===- Optimizers.h - The optimizers of otc-build-training ------*- C++ -*-===//
//
// The names --optimizer takes and the defaults that differ between them,
// shared by the pass (which resolves options left unset in a textual
// pipeline) and the pipelines' options (otc-compile's flags).
//
//===----------------------------------------------------------------------===//

#ifndef OTC_PASSES_TRAINING_OPTIMIZERS_H
#define OTC_PASSES_TRAINING_OPTIMIZERS_H

#include "llvm/ADT/StringRef.h"

#include <optional>

namespace otc {

/// Every optimizer, in the order messages and help texts list them.
inline constexpr llvm::StringLiteral kOptimizers[] = {
    "sgd", "momentum", "adam", "adamw", "lamb", "lion", "adagrad", "rmsprop"};

/// The value option `option` (beta1, beta2, eps, momentum: the pass's and
/// otc-compile's option names) takes with `optimizer` when the user did not
/// set it, where it differs from the option's own default (Adam's values,
/// momentum 0.9); nullopt where the option's default holds.
inline std::optional<double> optimizerDefault(llvm::StringRef optimizer,
                                              llvm::StringRef option) {
  struct Row {
    llvm::StringLiteral optimizer, option;
    double value;
  };
  static constexpr Row kRows[] = {
      {"lion", "beta2", 0.99},     // Chen et al. 2023, lion-pytorch
      {"adagrad", "eps", 1e-10},   // torch.optim.Adagrad
      {"lamb", "eps", 1e-6},       // You et al. 2020 (also apex, timm)
      {"rmsprop", "momentum", 0.}, // torch.optim.RMSprop: no buffer
  };
  for (const Row &r : kRows)
    if (r.optimizer == optimizer && r.option == option)
      return r.value;
  return std::nullopt;
}

} // namespace otc

#endif // OTC_PASSES_TRAINING_OPTIMIZERS_H
