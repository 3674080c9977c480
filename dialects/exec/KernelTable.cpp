//===- KernelTable.cpp - the kernel table, read ---------------------------===//

#include "dialects/exec/KernelTable.h"
#include "dialects/exec/ExecDialect.h"

#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/ErrorHandling.h"

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

using namespace mlir;
using namespace otc::exec;

namespace {

struct Row {
  llvm::StringLiteral name, family;
  unsigned minIns, maxIns, outs;
  bool cuda;
  llvm::StringLiteral attrs;
};

constexpr Row kRows[] = {
#define OTC_KERNEL(NAME, FAMILY, MIN_INS, MAX_INS, OUTS, CUDA, ATTRS)          \
  {NAME, #FAMILY, MIN_INS, MAX_INS, OUTS, CUDA != 0, ATTRS},
#include "dialects/exec/ExecKernels.def"
};

/// One "name:type[=default]" of a row's attribute list; a malformed entry
/// is a bug in the table, reported when the table is first read.
KernelAttr parseAttr(llvm::StringRef row, llvm::StringRef spec) {
  auto fail = [&](const char *why) {
    llvm::report_fatal_error(llvm::Twine("ExecKernels.def: kernel '") + row +
                             "', attribute '" + spec + "': " + why);
  };
  auto [name, rest] = spec.split(':');
  auto [type, dflt] = rest.split('=');
  KernelAttr a;
  a.name = name;
  std::optional<KernelAttrType> t =
      llvm::StringSwitch<std::optional<KernelAttrType>>(type)
          .Case("bool", KernelAttrType::Bool)
          .Case("i64", KernelAttrType::I64)
          .Case("f32", KernelAttrType::F32)
          .Case("str", KernelAttrType::Str)
          .Case("i64s", KernelAttrType::I64s)
          .Case("f32s", KernelAttrType::F32s)
          .Default(std::nullopt);
  if (name.empty() || !t)
    fail("expected name:type with type bool, i64, f32, str, i64s or f32s");
  a.type = *t;
  a.required = !rest.contains('=');
  if (a.required)
    return a;
  if (a.type == KernelAttrType::I64s || a.type == KernelAttrType::F32s) {
    if (!dflt.empty())
      fail("an array's only default is the empty one");
    return a;
  }
  a.text = dflt;
  if (a.type == KernelAttrType::Str)
    return a;
  // The table's own literals: strtod reads them as the C++ source would.
  std::string s = dflt.str();
  char *end = nullptr;
  a.number = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0')
    fail("the default is not a number");
  return a;
}

struct Table {
  std::vector<KernelInfo> kernels;
  llvm::StringMap<size_t> index;

  Table() {
    for (const Row &r : kRows) {
      KernelInfo k{r.name, r.family, r.minIns, r.maxIns, r.outs, r.cuda, {}};
      llvm::SmallVector<llvm::StringRef> specs;
      llvm::StringRef(r.attrs).split(specs, ' ', -1, /*KeepEmpty=*/false);
      for (llvm::StringRef spec : specs)
        k.attrs.push_back(parseAttr(r.name, spec));
      if (!index.try_emplace(r.name, kernels.size()).second)
        llvm::report_fatal_error(llvm::Twine("ExecKernels.def: kernel '") +
                                 r.name + "' is listed twice");
      kernels.push_back(std::move(k));
    }
  }
};

const Table &table() {
  static const Table t;
  return t;
}

/// The attribute `name` of `k`'s kernel, a fatal error if the table has
/// no such attribute for it.
const KernelAttr &declared(KernelOp k, llvm::StringRef name) {
  const KernelInfo *info = lookupKernel(k.getKernel());
  const KernelAttr *a = info ? info->attr(name) : nullptr;
  if (!a)
    llvm::report_fatal_error(llvm::Twine("kernel '") + k.getKernel() +
                             "' has no attribute '" + name +
                             "' in ExecKernels.def");
  return *a;
}

} // namespace

llvm::StringRef otc::exec::typeName(KernelAttrType t) {
  switch (t) {
  case KernelAttrType::Bool:
    return "bool";
  case KernelAttrType::I64:
    return "i64";
  case KernelAttrType::F32:
    return "f32";
  case KernelAttrType::Str:
    return "str";
  case KernelAttrType::I64s:
    return "i64s";
  case KernelAttrType::F32s:
    return "f32s";
  }
  llvm_unreachable("unknown kernel attribute type");
}

bool otc::exec::hasType(Attribute a, KernelAttrType t) {
  switch (t) {
  case KernelAttrType::Bool:
    return llvm::isa<BoolAttr>(a);
  case KernelAttrType::I64: {
    auto i = llvm::dyn_cast<IntegerAttr>(a);
    return i && i.getType().isInteger(64);
  }
  case KernelAttrType::F32: {
    auto f = llvm::dyn_cast<FloatAttr>(a);
    return f && f.getType().isF32();
  }
  case KernelAttrType::Str:
    return llvm::isa<StringAttr>(a);
  case KernelAttrType::I64s:
    return llvm::isa<DenseI64ArrayAttr>(a);
  case KernelAttrType::F32s:
    return llvm::isa<DenseF32ArrayAttr>(a);
  }
  return false;
}

const KernelAttr *KernelInfo::attr(llvm::StringRef n) const {
  for (const KernelAttr &a : attrs)
    if (a.name == n)
      return &a;
  return nullptr;
}

llvm::ArrayRef<KernelInfo> otc::exec::kernelTable() { return table().kernels; }

const KernelInfo *otc::exec::lookupKernel(llvm::StringRef name) {
  auto it = table().index.find(name);
  return it == table().index.end() ? nullptr : &table().kernels[it->second];
}

unsigned otc::exec::updateOutsPerParameter(llvm::StringRef kernel) {
  return llvm::StringSwitch<unsigned>(kernel)
      .Case("sgd_update", 1)
      .Case("momentum_update", 2)
      .Cases("adam_update", "adamw_update", 3)
      .Default(0);
}

LogicalResult otc::exec::verifyKernelAttrs(Operation *op,
                                           const KernelInfo &kernel) {
  auto list = [&] {
    std::string s;
    for (const KernelAttr &a : kernel.attrs)
      s +=
          (s.empty() ? "" : ", ") + a.name.str() + ":" + typeName(a.type).str();
    return s.empty() ? std::string("none") : s;
  };
  for (NamedAttribute na : op->getDiscardableAttrs()) {
    if (!isKernelParameter(na.getName()))
      continue;
    const KernelAttr *a = kernel.attr(na.getName());
    if (!a)
      return op->emitOpError("kernel '")
             << kernel.name << "' has no attribute '" << na.getName().strref()
             << "' (it takes: " << list() << ")";
    if (!hasType(na.getValue(), a->type))
      return op->emitOpError("kernel '")
             << kernel.name << "' attribute '" << a->name << "' must be "
             << typeName(a->type) << ", got " << na.getValue();
  }
  for (const KernelAttr &a : kernel.attrs)
    if (a.required && !op->getDiscardableAttr(a.name))
      return op->emitOpError("kernel '")
             << kernel.name << "' requires attribute '" << a.name << "' ("
             << typeName(a.type) << ")";
  return success();
}

bool otc::exec::boolParam(KernelOp k, llvm::StringRef name) {
  const KernelAttr &a = declared(k, name);
  if (auto v = k->getAttrOfType<BoolAttr>(name))
    return v.getValue();
  return a.number != 0;
}

int64_t otc::exec::i64Param(KernelOp k, llvm::StringRef name) {
  const KernelAttr &a = declared(k, name);
  if (auto v = k->getAttrOfType<IntegerAttr>(name))
    return v.getInt();
  return static_cast<int64_t>(a.number);
}

float otc::exec::f32Param(KernelOp k, llvm::StringRef name) {
  const KernelAttr &a = declared(k, name);
  if (auto v = k->getAttrOfType<FloatAttr>(name))
    return static_cast<float>(v.getValueAsDouble());
  return static_cast<float>(a.number);
}

llvm::StringRef otc::exec::strParam(KernelOp k, llvm::StringRef name) {
  const KernelAttr &a = declared(k, name);
  if (auto v = k->getAttrOfType<StringAttr>(name))
    return v.getValue();
  return a.text;
}

llvm::ArrayRef<int64_t> otc::exec::i64sParam(KernelOp k, llvm::StringRef name) {
  declared(k, name);
  if (auto v = k->getAttrOfType<DenseI64ArrayAttr>(name))
    return v.asArrayRef();
  return {};
}

llvm::ArrayRef<float> otc::exec::f32sParam(KernelOp k, llvm::StringRef name) {
  declared(k, name);
  if (auto v = k->getAttrOfType<DenseF32ArrayAttr>(name))
    return v.asArrayRef();
  return {};
}
