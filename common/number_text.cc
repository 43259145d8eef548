#include "common/number_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <system_error>
#include <type_traits>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/dtype.h"

namespace graphserve {

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// `text` without its sign, and whether the sign was '-'. At most one sign.
absl::string_view TakeSign(absl::string_view text, bool* negative) {
  *negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    *negative = text.front() == '-';
    text.remove_prefix(1);
  }
  return text;
}

// An integer of type T: a sign and decimal digits, within T's range.
template <typename T>
absl::StatusOr<T> ParseInteger(absl::string_view text, DType dtype) {
  bool negative = false;
  const absl::string_view digits = TakeSign(text, &negative);
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), IsDigit)) {
    return absl::InvalidArgumentError(
        absl::StrCat("is not a decimal integer (", KServeDatatype(dtype),
                     " elements are written as digits with an optional sign)"));
  }
  const auto out_of_range = [dtype] {
    return absl::InvalidArgumentError(absl::StrCat(
        "is outside the range of ", KServeDatatype(dtype), " (", +std::numeric_limits<T>::min(),
        " to ", +std::numeric_limits<T>::max(), ")"));
  };
  // The magnitude first, so that -9223372036854775808 reads for INT64.
  uint64_t magnitude = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
  if (error != std::errc() || end != digits.data() + digits.size()) return out_of_range();
  if (negative) {
    if (magnitude == 0) return T{0};
    if constexpr (std::is_unsigned_v<T>) {
      return out_of_range();
    } else {
      const uint64_t limit = static_cast<uint64_t>(-(std::numeric_limits<T>::min() + 1)) + 1;
      if (magnitude > limit) return out_of_range();
      return static_cast<T>(-static_cast<int64_t>(magnitude - 1) - 1);
    }
  }
  if (magnitude > static_cast<uint64_t>(std::numeric_limits<T>::max())) return out_of_range();
  return static_cast<T>(magnitude);
}

// A floating-point number as the nearest double.
absl::StatusOr<double> ParseDouble(absl::string_view text, DType dtype) {
  bool negative = false;
  const absl::string_view unsigned_text = TakeSign(text, &negative);
  const double sign = negative ? -1.0 : 1.0;
  if (absl::EqualsIgnoreCase(unsigned_text, "nan")) {
    return std::copysign(std::numeric_limits<double>::quiet_NaN(), sign);
  }
  if (absl::EqualsIgnoreCase(unsigned_text, "inf") ||
      absl::EqualsIgnoreCase(unsigned_text, "infinity")) {
    return sign * std::numeric_limits<double>::infinity();
  }
  const auto not_a_number = [dtype] {
    return absl::InvalidArgumentError(absl::StrCat(
        "is not a number (", KServeDatatype(dtype),
        " elements are written as decimal or scientific text, NaN, INF or -INF)"));
  };
  // from_chars takes no '+' and would take a second sign, "inf" or "nan":
  // what follows the one sign must start as a decimal number does.
  if (unsigned_text.empty() || !(IsDigit(unsigned_text.front()) || unsigned_text.front() == '.')) {
    return not_a_number();
  }
  double value = 0;
  const char* const last = unsigned_text.data() + unsigned_text.size();
  const auto [end, error] =
      std::from_chars(unsigned_text.data(), last, value, std::chars_format::general);
  if (error == std::errc::result_out_of_range) {
    return absl::InvalidArgumentError("is outside the range of a double");
  }
  if (error != std::errc() || end != last) return not_a_number();
  return sign * value;
}

// onnxruntime's text of a float or double (Note [Number text]).
void AppendFloatText(double value, std::string* out) {
  if (std::isnan(value)) {
    out->append("NaN");
  } else if (std::isinf(value)) {
    out->append(value < 0 ? "-INF" : "INF");
  } else {
    char text[32];  // "%.8g" writes at most 15: "-1.2345678e-308"
    const int length = std::snprintf(text, sizeof(text), "%.8g", value);
    out->append(text, static_cast<size_t>(length));
  }
}

}  // namespace

absl::Status ParseNumberText(absl::string_view text, DType dtype, std::byte* out) {
  text = absl::StripAsciiWhitespace(text);
  return VisitDType(dtype, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::Host;
    T element{};
    if constexpr (std::is_same_v<T, bool>) {
      return absl::InvalidArgumentError(
          "is not read: BOOL elements have no text form (Note [Number text])");
    } else if constexpr (IsFloatingDType(decltype(tag)::value)) {
      const absl::StatusOr<double> value = ParseDouble(text, dtype);
      if (!value.ok()) return value.status();
      if constexpr (std::is_same_v<T, double>) {
        element = *value;
      } else if constexpr (std::is_same_v<T, float>) {
        element = static_cast<float>(*value);
      } else {
        element = T(static_cast<float>(*value));  // Half, BFloat16: through float
      }
    } else {
      const absl::StatusOr<T> value = ParseInteger<T>(text, dtype);
      if (!value.ok()) return value.status();
      element = *value;
    }
    std::memcpy(out, &element, sizeof(T));
    return absl::OkStatus();
  });
}

void AppendNumberText(const std::byte* element, DType dtype, std::string* out) {
  VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::Host;
    T value;
    std::memcpy(&value, element, sizeof(T));
    if constexpr (std::is_same_v<T, bool>) {
      out->push_back(value ? '1' : '0');
    } else if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) {
      AppendFloatText(value, out);
    } else if constexpr (IsFloatingDType(decltype(tag)::value)) {
      AppendFloatText(static_cast<float>(value), out);  // Half, BFloat16: widened
    } else {
      absl::StrAppend(out, +value);  // + prints int8 and uint8 as numbers
    }
  });
}

}  // namespace graphserve
