//===- dtype.h - Element types ----------------------------------*- C++ -*-===//
//
// The element types of manifests and data files, one table for their names,
// sizes, ONNX and numpy codes. otc_dtype_t is the same numbering in the C
// API.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_RUNTIME_CORE_DTYPE_H
#define OTC_RUNTIME_CORE_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace otc {

/// Element types of the manifest (the compiler's dialects/graph/
/// ElementTypes.h names them). F16 and BF16 are storage types: the runtime
/// copies them but converts no data to or from them.
enum class DType {
  F32,
  F64,
  I64,
  I32,
  U8,
  Bool,
  I8,
  I16,
  U16,
  U32,
  U64,
  F16,
  BF16
};

/// What the runtime knows of each DType: one row per type.
struct DTypeInfo {
  DType dtype;
  const char *name; ///< manifest name
  size_t size;      ///< bytes
  int onnx;         ///< ONNX TensorProto.DataType
  const char *npy;  ///< numpy descr (little-endian)
};
const DTypeInfo &dtypeInfo(DType dtype);

/// Parses "f32", "i64", ...; throws INVALID_ARGUMENT otherwise.
DType parseDType(const std::string &name);
const char *dtypeName(DType dtype);
size_t dtypeSize(DType dtype);

std::string shapeString(const std::vector<int64_t> &shape);
/// The product of shape[from:] (1 when empty): elements of the tensor, or
/// of one sample with from = 1; INT64_MAX when the product overflows.
int64_t shapeNumel(const std::vector<int64_t> &shape, size_t from = 0);

} // namespace otc

#endif // OTC_RUNTIME_CORE_DTYPE_H
