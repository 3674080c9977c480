//===- cast_ops.h - Element conversions of otck_cast ------------*- C++ -*-===//
//
// Internal to the kernel libraries: what otck_cast computes for one element
// of each pair of types (otc/kernels.h states the rules), shared by the CPU
// kernel and its CUDA twin so that both convert bit for bit alike.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_KERNELS_SHARED_CAST_OPS_H
#define OTC_KERNELS_SHARED_CAST_OPS_H

#include "otc/kernels.h"

#include "compress_format.h"
#include "int_ops.h"

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace otc::kernels::cast {

// Element types without a C++ arithmetic type of their own.
struct Half {
  uint16_t bits;
};
struct BFloat {
  uint16_t bits;
};
struct Bool {
  uint8_t v;
};

template <typename T>
constexpr bool kIsFloating =
    std::is_floating_point_v<T> || std::is_same_v<T, Half> ||
    std::is_same_v<T, BFloat>;

/// The value of a float-like element as a double (exact).
template <typename T> OTCK_HD double floatingValue(T v) {
  if constexpr (std::is_same_v<T, Half>)
    return ::otc::kernels::compress::halfToFloat(v.bits);
  else if constexpr (std::is_same_v<T, BFloat>)
    return ::otc::kernels::compress::bf16ToFloat(v.bits);
  else
    return double(v);
}

/// d rounded to float toward an odd last bit when inexact. Rounding this
/// float to a format with at least 2 fewer bits rounds as d itself would
/// (no double rounding at a midpoint).
OTCK_HD float roundToOddFloat(double d) {
  float f = float(d);
  if (double(f) == d || d != d)
    return f;
  uint32_t bits = ::otc::kernels::compress::bitsOf<uint32_t>(f);
  if ((bits & 1u) == 0)
    bits = fabs(double(f)) > fabs(d) ? bits - 1 : bits + 1;
  return ::otc::kernels::compress::bitsOf<float>(bits);
}

/// An integer rounded to nearest even with `precision` significant bits,
/// returned exactly (as a double): an integer's one rounding to a narrow
/// float format.
template <typename I> OTCK_HD double roundIntegerTo(I v, int precision) {
  bool neg = false;
  if constexpr (std::is_signed_v<I>)
    neg = v < 0;
  uint64_t u = neg ? uint64_t(0) - uint64_t(v) : uint64_t(v);
  int bitsUsed = 0;
  for (uint64_t t = u; t; t >>= 1)
    ++bitsUsed;
  double m;
  if (bitsUsed <= precision) {
    m = double(u);
  } else {
    int shift = bitsUsed - precision;
    uint64_t q = u >> shift, rem = u & ((uint64_t(1) << shift) - 1);
    uint64_t half = uint64_t(1) << (shift - 1);
    if (rem > half || (rem == half && (q & 1)))
      ++q;
    m = ldexp(double(q), shift);
  }
  return neg ? -m : m;
}

/// Truncation toward zero of d to integer type I, saturating; NaN -> 0.
template <typename I> OTCK_HD I saturatingTrunc(double d) {
  if (d != d)
    return 0;
  double t = trunc(d);
  // 2^digits (max + 1 rounds to it) and min are exact doubles.
  // I's range from its bits (numeric_limits is host-only in CUDA).
  using U = std::make_unsigned_t<I>;
  constexpr I kMax = std::is_signed_v<I> ? I(U(~U(0)) >> 1) : I(~U(0));
  constexpr I kMin = std::is_signed_v<I> ? I(-kMax - 1) : I(0);
  constexpr double kHi = double(kMax) + 1.0;
  constexpr double kLo = double(kMin);
  if (t >= kHi)
    return kMax;
  if (t < kLo)
    return kMin;
  return I(t);
}

template <typename To, typename From> OTCK_HD To castOne(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, Bool>) {
    if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat>)
      return Bool{uint8_t((v.bits & 0x7fffu) != 0)};
    else
      return Bool{uint8_t(v != 0)}; // NaN != 0
  } else if constexpr (std::is_same_v<From, Bool>) {
    return castOne<To>(int32_t(v.v != 0));
  } else if constexpr (kIsFloating<From>) {
    if constexpr (std::is_same_v<To, Half>) {
      if constexpr (std::is_same_v<From, double>)
        return Half{::otc::kernels::compress::floatToHalf(roundToOddFloat(v))};
      else
        return Half{
            ::otc::kernels::compress::floatToHalf(float(floatingValue(v)))};
    } else if constexpr (std::is_same_v<To, BFloat>) {
      if constexpr (std::is_same_v<From, double>)
        return BFloat{
            ::otc::kernels::compress::floatToBf16(roundToOddFloat(v))};
      else
        return BFloat{
            ::otc::kernels::compress::floatToBf16(float(floatingValue(v)))};
    } else if constexpr (std::is_floating_point_v<To>) {
      return To(floatingValue(v));
    } else {
      return saturatingTrunc<To>(floatingValue(v));
    }
  } else { // From is an integer.
    if constexpr (std::is_same_v<To, Half>)
      return Half{
          ::otc::kernels::compress::floatToHalf(float(roundIntegerTo(v, 11)))};
    else if constexpr (std::is_same_v<To, BFloat>)
      return BFloat{
          ::otc::kernels::compress::floatToBf16(float(roundIntegerTo(v, 8)))};
    else if constexpr (std::is_floating_point_v<To>)
      return To(v);
    else // Modulo 2^bits through the unsigned type.
      return To(std::make_unsigned_t<To>(v));
  }
}

/// Calls body(T()) with the element type of an otck_dtype code; false for an
/// unknown code.
template <typename Body> bool withDtype(int code, Body body) {
  switch (code) {
  case OTCK_DT_FLOAT:
    return body(float()), true;
  case OTCK_DT_DOUBLE:
    return body(double()), true;
  case OTCK_DT_FLOAT16:
    return body(Half()), true;
  case OTCK_DT_BFLOAT16:
    return body(BFloat()), true;
  case OTCK_DT_BOOL:
    return body(Bool()), true;
  }
  return withIntDtype(code, body);
}

} // namespace otc::kernels::cast

#endif // OTC_KERNELS_SHARED_CAST_OPS_H
