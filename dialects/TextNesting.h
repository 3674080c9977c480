//===- TextNesting.h - How deeply IR text nests -----------------*- C++ -*-===//
//
// MLIR's parser recurses once or more per nesting level without a limit:
// about 20000 levels of brackets overflow the stack of mlir-opt and otc-opt
// alike. Tools that parse text a user wrote measure its nesting first and
// refuse what is deeper than kMaxTextNesting (otc-opt; the mlir fuzz
// harness leaves such inputs out).
//
//===----------------------------------------------------------------------===//

#ifndef OTC_DIALECTS_TEXTNESTING_H
#define OTC_DIALECTS_TEXTNESTING_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <cstddef>

namespace otc {

/// Deepest nesting otc-opt parses: far beyond any program, far below what
/// overflows an 8 MiB stack.
constexpr size_t kMaxTextNesting = 4096;

/// How deeply brackets ((, [, {, <) nest in `text`. A closer that does not
/// match the innermost opener is ignored, so this is at least the parser's
/// depth.
inline size_t textNesting(llvm::StringRef text) {
  llvm::SmallVector<char> open;
  size_t deepest = 0;
  for (char c : text) {
    if (c == '(' || c == '[' || c == '{' || c == '<') {
      open.push_back(c);
      deepest = std::max(deepest, open.size());
    } else if (!open.empty() && ((c == ')' && open.back() == '(') ||
                                 (c == ']' && open.back() == '[') ||
                                 (c == '}' && open.back() == '{') ||
                                 (c == '>' && open.back() == '<'))) {
      open.pop_back();
    }
  }
  return deepest;
}

} // namespace otc

#endif // OTC_DIALECTS_TEXTNESTING_H
