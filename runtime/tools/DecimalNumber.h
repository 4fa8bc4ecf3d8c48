// Numeric flag values are plain decimal numbers: "12", "-3", "0.5", ".5", "1e-3", "2.5E+4". A
// base prefix ("0x10", "0b1"), a leading zero of an integer ("010", which LLVM's parser reads as
// octal 8), a sign '+', white space, "inf" and "nan" are refused, so `--lr 0x10` is not silently a
// learning rate of 16 (std::stod reads hexadecimal floats). Header-only, for the compiler's
// subcommands (compiler/tools/CommandLine.h) and disagmoe-run (runtime/tools); decimalText writes
// a value back the same way in messages (flags, training options).
#pragma once

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace disagmoe::tools {

/// "-"? digits, without a leading zero unless the number is "0".
inline bool isDecimalInteger(std::string_view s) {
  if (!s.empty() && s[0] == '-')
    s.remove_prefix(1);
  if (s.empty() || (s.size() > 1 && s[0] == '0'))
    return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return false;
  return true;
}

/// "-"? (digits ("." digits?)? | "." digits) ([eE] [+-]? digits)?
inline bool isDecimalReal(std::string_view s) {
  size_t i = 0;
  const auto digits = [&] {
    const size_t start = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])))
      ++i;
    return i - start;
  };
  if (i < s.size() && s[i] == '-')
    ++i;
  size_t mantissa = digits();
  if (i < s.size() && s[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0)
    return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-'))
      ++i;
    if (digits() == 0)
      return false;
  }
  return i == s.size();
}

/// The shortest decimal that reads back as `v` (0.5 -> "0.5", 1 -> "1", 1e-4 -> "0.0001",
/// 0.1 -> "0.1"), for messages that echo a value: std::to_string prints "1.000000".
inline std::string decimalText(double v) {
  char text[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, v);
    if (std::strtod(text, nullptr) == v)
      break;
  }
  return text;
}

} // namespace disagmoe::tools
