//===- int_ops.h - Integer arithmetic of CPU and CUDA -----------*- C++ -*-===//
//
// Internal to the kernel libraries: the element types of the integer and
// comparison kernels (one dispatch from an otck_dtype code to a C++ type)
// and the integer ops themselves, written once for host and device so that
// the CPU kernels and their CUDA twins compute the same values.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_SHARED_INT_OPS_H
#define OTC_KERNELS_SHARED_INT_OPS_H

#include "otc/kernels.h"

#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define OTCK_HOST_DEVICE __host__ __device__
#else
#define OTCK_HOST_DEVICE
#endif

namespace otc::kernels {

/// Calls body(T()) with the integer type of an otck_dtype code (signed and
/// unsigned, 8 to 64 bits); false for another code.
template <typename Body> bool withIntDtype(int code, Body &&body) {
  switch (code) {
  case OTCK_DT_INT8:
    return body(int8_t()), true;
  case OTCK_DT_INT16:
    return body(int16_t()), true;
  case OTCK_DT_INT32:
    return body(int32_t()), true;
  case OTCK_DT_INT64:
    return body(int64_t()), true;
  case OTCK_DT_UINT8:
    return body(uint8_t()), true;
  case OTCK_DT_UINT16:
    return body(uint16_t()), true;
  case OTCK_DT_UINT32:
    return body(uint32_t()), true;
  case OTCK_DT_UINT64:
    return body(uint64_t()), true;
  }
  return false;
}

/// Calls body(T()) with the element type of an otck_dtype code that the
/// comparisons take: float, double, the integers and bool (as uint8_t, its
/// values 0 and 1 order as false < true); false for another code.
template <typename Body> bool withCompareDtype(int code, Body &&body) {
  switch (code) {
  case OTCK_DT_FLOAT:
    return body(float()), true;
  case OTCK_DT_DOUBLE:
    return body(double()), true;
  case OTCK_DT_BOOL:
    return body(uint8_t()), true;
  }
  return withIntDtype(code, body);
}

/// Integer ops on T: arithmetic through the unsigned type of T's promotion
/// wraps (modulo 2^bits) instead of overflowing; `zero` is set by a division
/// by zero (and by 0 to a negative power).
template <typename T> struct IntOps {
  using U = std::make_unsigned_t<decltype(+T())>;
  static constexpr bool kSigned = std::is_signed_v<T>;
  static constexpr int kBits = int(sizeof(T)) * 8;

  OTCK_HOST_DEVICE static T add(T a, T b, bool &) { return T(U(a) + U(b)); }
  OTCK_HOST_DEVICE static T sub(T a, T b, bool &) { return T(U(a) - U(b)); }
  OTCK_HOST_DEVICE static T mul(T a, T b, bool &) { return T(U(a) * U(b)); }
  OTCK_HOST_DEVICE static T div(T a, T b, bool &zero) {
    if (b == 0) {
      zero = true;
      return 0;
    }
    // INT_MIN / -1 traps on x86: negate with wrap-around instead.
    if constexpr (kSigned)
      if (b == T(-1))
        return T(U(0) - U(a));
    return T(a / b);
  }
  OTCK_HOST_DEVICE static T fmod(T a, T b, bool &zero) {
    if (b == 0) {
      zero = true;
      return 0;
    }
    if constexpr (kSigned)
      if (b == T(-1))
        return T(0);
    return T(a % b);
  }
  OTCK_HOST_DEVICE static T mod(T a, T b, bool &zero) {
    T r = fmod(a, b, zero);
    if constexpr (kSigned)
      if (r != 0 && ((r < 0) != (b < 0)))
        return T(U(r) + U(b));
    return r;
  }
  OTCK_HOST_DEVICE static T max(T a, T b, bool &) { return a > b ? a : b; }
  OTCK_HOST_DEVICE static T min(T a, T b, bool &) { return a < b ? a : b; }
  OTCK_HOST_DEVICE static T pow(T a, T b, bool &zero) {
    if constexpr (kSigned) {
      if (b < 0) {
        if (a == 0)
          zero = true;
        // 1 / a^|b| truncated: only |a| == 1 leaves a nonzero quotient.
        return a == 1 ? T(1) : a == T(-1) ? T((b & 1) ? -1 : 1) : T(0);
      }
    }
    U r = 1, base = U(a);
    for (U e = U(b); e; e >>= 1) {
      if (e & 1)
        r *= base;
      base *= base;
    }
    return T(r);
  }
  OTCK_HOST_DEVICE static T prelu(T a, T b, bool &) {
    if constexpr (kSigned)
      return a >= 0 ? a : T(U(b) * U(a));
    return a;
  }
  /// ONNX BitShift: shifts by the width or more (or a negative amount) give
  /// 0; a right shift of a negative value fills with its sign.
  OTCK_HOST_DEVICE static T shiftLeft(T a, T b, bool &) {
    if (!inShiftRange(b))
      return T(0);
    return T(U(a) << int(b));
  }
  OTCK_HOST_DEVICE static T shiftRight(T a, T b, bool &) {
    if (!inShiftRange(b)) {
      if constexpr (kSigned)
        return a < 0 ? T(-1) : T(0);
      return T(0);
    }
    return T(a >> int(b));
  }

private:
  OTCK_HOST_DEVICE static bool inShiftRange(T b) {
    if constexpr (kSigned)
      if (b < 0)
        return false;
    return uint64_t(b) < uint64_t(kBits);
  }
};

/// Whether the integer kernels implement `op`.
OTCK_HOST_DEVICE inline bool knownIntBinary(int op) {
  return op >= OTCK_ADD && op <= OTCK_SHIFT_RIGHT;
}

/// a op b on integers (per element, for the CUDA kernels; the CPU picks the
/// op once per call with withIntOp).
template <typename T>
OTCK_HOST_DEVICE inline T intBinary(otck_binary_op op, T a, T b, bool &zero) {
  using I = IntOps<T>;
  switch (op) {
  case OTCK_ADD:
    return I::add(a, b, zero);
  case OTCK_SUB:
    return I::sub(a, b, zero);
  case OTCK_MUL:
    return I::mul(a, b, zero);
  case OTCK_DIV:
    return I::div(a, b, zero);
  case OTCK_POW:
    return I::pow(a, b, zero);
  case OTCK_MAX:
    return I::max(a, b, zero);
  case OTCK_MIN:
    return I::min(a, b, zero);
  case OTCK_MOD:
    return I::mod(a, b, zero);
  case OTCK_FMOD:
    return I::fmod(a, b, zero);
  case OTCK_PRELU:
    return I::prelu(a, b, zero);
  case OTCK_SHIFT_LEFT:
    return I::shiftLeft(a, b, zero);
  case OTCK_SHIFT_RIGHT:
    return I::shiftRight(a, b, zero);
  }
  return T(0);
}

/// Calls body(f) with f(a, b, zero) computing `op` on T, a distinct type per
/// op so that the loop it runs in is specialised; false for an unknown op.
template <typename T, typename Body>
bool withIntOp(otck_binary_op op, Body &&body) {
  using I = IntOps<T>;
  switch (op) {
  case OTCK_ADD:
    return body([](T a, T b, bool &z) { return I::add(a, b, z); }), true;
  case OTCK_SUB:
    return body([](T a, T b, bool &z) { return I::sub(a, b, z); }), true;
  case OTCK_MUL:
    return body([](T a, T b, bool &z) { return I::mul(a, b, z); }), true;
  case OTCK_DIV:
    return body([](T a, T b, bool &z) { return I::div(a, b, z); }), true;
  case OTCK_POW:
    return body([](T a, T b, bool &z) { return I::pow(a, b, z); }), true;
  case OTCK_MAX:
    return body([](T a, T b, bool &z) { return I::max(a, b, z); }), true;
  case OTCK_MIN:
    return body([](T a, T b, bool &z) { return I::min(a, b, z); }), true;
  case OTCK_MOD:
    return body([](T a, T b, bool &z) { return I::mod(a, b, z); }), true;
  case OTCK_FMOD:
    return body([](T a, T b, bool &z) { return I::fmod(a, b, z); }), true;
  case OTCK_PRELU:
    return body([](T a, T b, bool &z) { return I::prelu(a, b, z); }), true;
  case OTCK_SHIFT_LEFT:
    return body([](T a, T b, bool &z) { return I::shiftLeft(a, b, z); }), true;
  case OTCK_SHIFT_RIGHT:
    return body([](T a, T b, bool &z) { return I::shiftRight(a, b, z); }), true;
  }
  return false;
}

/// a op b for a comparison (IEEE for floats: NaN compares false).
template <typename T>
OTCK_HOST_DEVICE inline bool compareValues(otck_compare_op op, T a, T b) {
  switch (op) {
  case OTCK_CMP_EQUAL:
    return a == b;
  case OTCK_CMP_LESS:
    return a < b;
  case OTCK_CMP_LESS_OR_EQUAL:
    return a <= b;
  case OTCK_CMP_GREATER:
    return a > b;
  case OTCK_CMP_GREATER_OR_EQUAL:
    return a >= b;
  }
  return false;
}

} // namespace otc::kernels

#endif // OTC_KERNELS_SHARED_INT_OPS_H
