#pragma once
// Host types for the two 16-bit floats, IEEE binary16 (`Half`) and bfloat16
// (`BFloat16`): storage of the 2-byte pattern, conversion to and from float
// with round-to-nearest-even, so the host reference executor, the request
// path and tests can read and write them (ONNX Runtime's MLFloat16 and
// BFloat16 play this part). Arithmetic happens in float: convert, compute,
// convert back, as the CUDA kernels do with fp32 accumulation.
//
// Plain C++ (no CUDA headers): the device code uses CUDA's __half and
// __nv_bfloat16, which have the same size and bit layout.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace graphserve {

namespace half_internal {

inline uint32_t FloatBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}

inline float BitsFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// float -> binary16, round to nearest even; overflow gives Inf, NaN stays a
// quiet NaN with its sign.
inline uint16_t FloatToHalfBits(float f) {
  const uint32_t bits = FloatBits(f);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to Inf
  if (abs < 0x38800000u) {
    // Subnormal or zero in binary16: in units of its step, 2^-24, the value
    // is |f| * 2^24 (exact in float); rounding it once, to nearest even,
    // gives the bits (1024 is the smallest normal, as it should be).
    const float scaled = BitsFloat(abs) * 16777216.0f;  // 2^24
    const uint32_t rounded = static_cast<uint32_t>(std::nearbyint(scaled));
    return static_cast<uint16_t>(sign | rounded);
  }
  // Normal: rebias the exponent (127 -> 15) and round the mantissa's low 13
  // bits to nearest even.
  const uint32_t mantissa_odd = (abs >> 13) & 1u;
  const uint32_t rounded = abs + 0xfffu + mantissa_odd;
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

inline float HalfBitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    const float value = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign != 0 ? -value : value;
  }
  if (exponent == 0x1f) return BitsFloat(sign | 0x7f800000u | (mantissa << 13));  // Inf, NaN
  return BitsFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// float -> bfloat16: the high 16 bits of the float, rounded to nearest even;
// NaN stays a quiet NaN.
inline uint16_t FloatToBFloat16Bits(float f) {
  const uint32_t bits = FloatBits(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

inline float BFloat16BitsToFloat(uint16_t b) { return BitsFloat(static_cast<uint32_t>(b) << 16); }

}  // namespace half_internal

// IEEE 754 binary16.
struct Half {
  uint16_t bits = 0;

  Half() = default;
  explicit Half(float f) : bits(half_internal::FloatToHalfBits(f)) {}
  static Half FromBits(uint16_t bits) {
    Half h;
    h.bits = bits;
    return h;
  }
  explicit operator float() const { return half_internal::HalfBitsToFloat(bits); }
  // As the values compare: NaN equals nothing, -0 equals +0.
  friend bool operator==(Half a, Half b) { return static_cast<float>(a) == static_cast<float>(b); }
};

// bfloat16: float's sign and exponent, 7 mantissa bits.
struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  explicit BFloat16(float f) : bits(half_internal::FloatToBFloat16Bits(f)) {}
  static BFloat16 FromBits(uint16_t bits) {
    BFloat16 b;
    b.bits = bits;
    return b;
  }
  explicit operator float() const { return half_internal::BFloat16BitsToFloat(bits); }
  friend bool operator==(BFloat16 a, BFloat16 b) {
    return static_cast<float>(a) == static_cast<float>(b);
  }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2, "16-bit storage");

template <typename T>
inline constexpr bool kIsHost16BitFloat = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// An element as the value code generic over the element type computes with:
// the 16-bit floats widened to float (exactly), every other type unchanged.
template <typename T>
auto Widen(T x) {
  if constexpr (kIsHost16BitFloat<T>) {
    return static_cast<float>(x);
  } else {
    return x;
  }
}

// Widen's inverse: a value computed wider (in float or double) stored as an
// element of T; the 16-bit floats round to nearest even from float.
template <typename T, typename Wide>
T Narrow(Wide value) {
  if constexpr (kIsHost16BitFloat<T>) {
    return T(static_cast<float>(value));
  } else {
    return static_cast<T>(value);
  }
}

}  // namespace graphserve
