//===- ElementTypes.h - The element types OTC computes on -------*- C++ -*-===//
//
// One table of the tensor element types OTC supports, read by everything
// that maps an element type to another vocabulary: the importer (ONNX
// TensorProto.DataType), the C++ emitter (C type, otck_dtype code) and the
// manifest writer (dtype name, which the runtime and otc_program.py parse).
//
// Signed integers are signless MLIR integers (i8, i16, i32, i64), unsigned
// ones unsigned MLIR integers (ui8 ... ui64), booleans i1 (one byte in
// memory); f16 and bf16 are storage types that only Cast converts.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_DIALECTS_GRAPH_ELEMENTTYPES_H
#define OTC_DIALECTS_GRAPH_ELEMENTTYPES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"

namespace otc {

struct ElementTypeInfo {
  enum Kind { Float, BFloat, Signless, Unsigned };
  Kind kind;
  unsigned width;    ///< bits (1 for bool)
  int code;          ///< ONNX TensorProto.DataType, which otck_dtype mirrors
  const char *dtype; ///< manifest name ("f32", "u8", ...)
  const char *cType; ///< type of the emitted C++ code's pointers
  const char *onnx;  ///< the ONNX name, for diagnostics

  mlir::Type get(mlir::MLIRContext *ctx) const {
    switch (kind) {
    case Float:
      return width == 16   ? mlir::Type(mlir::Float16Type::get(ctx))
             : width == 64 ? mlir::Type(mlir::Float64Type::get(ctx))
                           : mlir::Type(mlir::Float32Type::get(ctx));
    case BFloat:
      return mlir::BFloat16Type::get(ctx);
    case Signless:
      return mlir::IntegerType::get(ctx, width);
    case Unsigned:
      return mlir::IntegerType::get(ctx, width, mlir::IntegerType::Unsigned);
    }
    return {};
  }
  bool matches(mlir::Type t) const {
    switch (kind) {
    case Float:
      return llvm::isa<mlir::Float16Type, mlir::Float32Type, mlir::Float64Type>(
                 t) &&
             t.getIntOrFloatBitWidth() == width;
    case BFloat:
      return t.isBF16();
    case Signless:
      return t.isSignlessInteger(width);
    case Unsigned:
      return t.isUnsignedInteger(width);
    }
    return false;
  }
  bool isInteger() const {
    return (kind == Signless && width > 1) || kind == Unsigned;
  }
};

inline constexpr ElementTypeInfo kElementTypes[] = {
    {ElementTypeInfo::Float, 32, 1, "f32", "float", "FLOAT"},
    {ElementTypeInfo::Float, 64, 11, "f64", "double", "DOUBLE"},
    {ElementTypeInfo::Float, 16, 10, "f16", "uint16_t", "FLOAT16"},
    {ElementTypeInfo::BFloat, 16, 16, "bf16", "uint16_t", "BFLOAT16"},
    {ElementTypeInfo::Signless, 64, 7, "i64", "int64_t", "INT64"},
    {ElementTypeInfo::Signless, 32, 6, "i32", "int32_t", "INT32"},
    {ElementTypeInfo::Signless, 16, 5, "i16", "int16_t", "INT16"},
    {ElementTypeInfo::Signless, 8, 3, "i8", "int8_t", "INT8"},
    {ElementTypeInfo::Unsigned, 64, 13, "u64", "uint64_t", "UINT64"},
    {ElementTypeInfo::Unsigned, 32, 12, "u32", "uint32_t", "UINT32"},
    {ElementTypeInfo::Unsigned, 16, 4, "u16", "uint16_t", "UINT16"},
    {ElementTypeInfo::Unsigned, 8, 2, "u8", "uint8_t", "UINT8"},
    // The kernels' boolean: one byte, 0 or 1.
    {ElementTypeInfo::Signless, 1, 9, "bool", "uint8_t", "BOOL"},
};

/// The entry of an MLIR element type, or nullptr.
inline const ElementTypeInfo *elementTypeInfo(mlir::Type t) {
  for (const ElementTypeInfo &e : kElementTypes)
    if (e.matches(t))
      return &e;
  return nullptr;
}

/// The entry of an ONNX TensorProto.DataType (otck_dtype) code, or nullptr.
inline const ElementTypeInfo *elementTypeInfo(int code) {
  for (const ElementTypeInfo &e : kElementTypes)
    if (e.code == code)
      return &e;
  return nullptr;
}

/// Integers OTC computes on (signed and unsigned, 8 to 64 bits; not bool).
inline bool isIntegerElement(mlir::Type t) {
  const ElementTypeInfo *e = elementTypeInfo(t);
  return e && e->isInteger();
}

/// The element types the arithmetic kernels take: f32 and the integers.
inline bool isArithmeticElement(mlir::Type t) {
  return t.isF32() || isIntegerElement(t);
}

} // namespace otc

#endif // OTC_DIALECTS_GRAPH_ELEMENTTYPES_H
