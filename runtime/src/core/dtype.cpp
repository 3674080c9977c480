//===- dtype.cpp - Element types ------------------------------------------===//

#include "core/dtype.h"
#include "core/status.h"
#include "otc/runtime.h"

#include <limits>

namespace otc {

namespace {
// ONNX TensorProto.DataType numbers (onnx.proto), without its header.
const DTypeInfo kDTypes[] = {
    {DType::F32, "f32", 4, 1, "<f4"},    {DType::F64, "f64", 8, 11, "<f8"},
    {DType::I64, "i64", 8, 7, "<i8"},    {DType::I32, "i32", 4, 6, "<i4"},
    {DType::U8, "u8", 1, 2, "|u1"},      {DType::Bool, "bool", 1, 9, "|b1"},
    {DType::I8, "i8", 1, 3, "|i1"},      {DType::I16, "i16", 2, 5, "<i2"},
    {DType::U16, "u16", 2, 4, "<u2"},    {DType::U32, "u32", 4, 12, "<u4"},
    {DType::U64, "u64", 8, 13, "<u8"},   {DType::F16, "f16", 2, 10, "<f2"},
    {DType::BF16, "bf16", 2, 16, "<V2"},
};
} // namespace

// otc_dtype_t is DType as the C API spells it.
static_assert(
    int(DType::F32) == OTC_DTYPE_F32 && int(DType::F64) == OTC_DTYPE_F64 &&
        int(DType::I64) == OTC_DTYPE_I64 && int(DType::I32) == OTC_DTYPE_I32 &&
        int(DType::U8) == OTC_DTYPE_U8 && int(DType::Bool) == OTC_DTYPE_BOOL &&
        int(DType::I8) == OTC_DTYPE_I8 && int(DType::I16) == OTC_DTYPE_I16 &&
        int(DType::U16) == OTC_DTYPE_U16 && int(DType::U32) == OTC_DTYPE_U32 &&
        int(DType::U64) == OTC_DTYPE_U64 && int(DType::F16) == OTC_DTYPE_F16 &&
        int(DType::BF16) == OTC_DTYPE_BF16,
    "otc_dtype_t and DType differ");

const DTypeInfo &dtypeInfo(DType dtype) {
  for (const DTypeInfo &d : kDTypes)
    if (d.dtype == dtype)
      return d;
  return kDTypes[0];
}

DType parseDType(const std::string &name) {
  std::string names;
  for (const DTypeInfo &d : kDTypes) {
    if (name == d.name)
      return d.dtype;
    names += std::string(names.empty() ? "" : ", ") + d.name;
  }
  throw Error(OTC_INVALID_ARGUMENT,
              "unknown dtype '" + name + "' (expected one of " + names + ")");
}

const char *dtypeName(DType dtype) { return dtypeInfo(dtype).name; }

size_t dtypeSize(DType dtype) { return dtypeInfo(dtype).size; }

int64_t shapeNumel(const std::vector<int64_t> &shape, size_t from) {
  // Saturates instead of overflowing: a file's header may claim any shape,
  // and the loaders refuse one whose bytes do not fit.
  for (size_t i = from; i < shape.size(); ++i)
    if (shape[i] == 0)
      return 0;
  int64_t n = 1;
  for (size_t i = from; i < shape.size(); ++i)
    if (__builtin_mul_overflow(n, shape[i], &n))
      return std::numeric_limits<int64_t>::max();
  return n;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace otc

using namespace otc;

extern "C" {

const char *otc_dtype_name(otc_dtype_t dtype) {
  for (const DTypeInfo &d : kDTypes)
    if (int(d.dtype) == int(dtype))
      return d.name;
  return "";
}

size_t otc_dtype_size(otc_dtype_t dtype) {
  for (const DTypeInfo &d : kDTypes)
    if (int(d.dtype) == int(dtype))
      return d.size;
  return 0;
}

} // extern "C"
