#include "bench/npy.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status.h"

namespace graphserve {

// The element bytes are copied as they are, so the host must store them as
// the files do.
static_assert(std::endian::native == std::endian::little,
              "bench/npy.cc reads and writes little-endian data on a little-endian host only");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
// NumPy pads the preamble plus header to a multiple of 64 bytes so that the
// data can be memory-mapped aligned.
constexpr size_t kHeaderAlignment = 64;

absl::Status Invalid(absl::string_view name, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(name, ": not a supported .npy file: ", what));
}

// NumPy's little-endian descr of each table row it has a type for
// (bfloat16 has none in NumPy itself).
struct Descr {
  DType dtype;
  const char* descr;
};
constexpr Descr kDescrs[] = {
    {DType::kFloat32, "<f4"}, {DType::kFloat64, "<f8"}, {DType::kFloat16, "<f2"},
    {DType::kInt8, "|i1"},    {DType::kInt16, "<i2"},   {DType::kInt32, "<i4"},
    {DType::kInt64, "<i8"},   {DType::kUInt8, "|u1"},   {DType::kUInt16, "<u2"},
    {DType::kUInt32, "<u4"},  {DType::kUInt64, "<u8"},  {DType::kBool, "|b1"},
};

std::optional<DType> DTypeFromDescr(absl::string_view descr) {
  if (descr == "<b1") return DType::kBool;  // older writers
  for (const Descr& entry : kDescrs) {
    if (descr == entry.descr) return entry.dtype;
  }
  return std::nullopt;
}

const char* DescrFromDType(DType dtype) {
  for (const Descr& entry : kDescrs) {
    if (dtype == entry.dtype) return entry.descr;
  }
  return "?";
}

// The text after `key` and its colon in the header dict, or nullopt. Keys are
// quoted with ' by NumPy; " is accepted too.
std::optional<absl::string_view> ValueAfterKey(absl::string_view header, absl::string_view key) {
  for (const char quote : {'\'', '"'}) {
    const std::string quoted = absl::StrCat(std::string(1, quote), key, std::string(1, quote));
    const size_t at = header.find(quoted);
    if (at == absl::string_view::npos) continue;
    absl::string_view rest = header.substr(at + quoted.size());
    rest = absl::StripLeadingAsciiWhitespace(rest);
    if (rest.empty() || rest.front() != ':') return std::nullopt;
    rest.remove_prefix(1);
    return absl::StripLeadingAsciiWhitespace(rest);
  }
  return std::nullopt;
}

struct NpyHeader {
  DType dtype = DType::kFloat32;
  Dims dims;
};

absl::StatusOr<NpyHeader> ParseHeader(absl::string_view header, absl::string_view name) {
  NpyHeader parsed;

  const std::optional<absl::string_view> descr_value = ValueAfterKey(header, "descr");
  if (!descr_value || descr_value->empty() ||
      (descr_value->front() != '\'' && descr_value->front() != '"')) {
    return Invalid(name, absl::StrCat("no 'descr' string in header ", header));
  }
  const size_t descr_end = descr_value->find(descr_value->front(), 1);
  if (descr_end == absl::string_view::npos) {
    return Invalid(name, absl::StrCat("unterminated 'descr' in header ", header));
  }
  const absl::string_view descr = descr_value->substr(1, descr_end - 1);
  const std::optional<DType> dtype = DTypeFromDescr(descr);
  if (!dtype) {
    return Invalid(name, absl::StrCat("dtype '", descr,
                                      "' is not supported; save '<f4' (float32), '<i8' (int64) "
                                      "or '|b1' (bool) little-endian arrays"));
  }
  parsed.dtype = *dtype;

  const std::optional<absl::string_view> fortran = ValueAfterKey(header, "fortran_order");
  if (!fortran) return Invalid(name, absl::StrCat("no 'fortran_order' in header ", header));
  if (absl::StartsWith(*fortran, "True")) {
    return Invalid(name, "Fortran-order arrays are not supported; save np.ascontiguousarray(a)");
  }
  if (!absl::StartsWith(*fortran, "False")) {
    return Invalid(name, absl::StrCat("bad 'fortran_order' in header ", header));
  }

  const std::optional<absl::string_view> shape_value = ValueAfterKey(header, "shape");
  if (!shape_value || shape_value->empty() || shape_value->front() != '(') {
    return Invalid(name, absl::StrCat("no 'shape' tuple in header ", header));
  }
  const size_t shape_end = shape_value->find(')');
  if (shape_end == absl::string_view::npos) {
    return Invalid(name, absl::StrCat("unterminated 'shape' in header ", header));
  }
  for (absl::string_view part :
       absl::StrSplit(shape_value->substr(1, shape_end - 1), ',', absl::SkipWhitespace())) {
    int64_t dim = 0;
    if (!absl::SimpleAtoi(part, &dim) || dim < 0) {
      return Invalid(name, absl::StrCat("bad dim '", part, "' in shape of header ", header));
    }
    parsed.dims.push_back(dim);
  }
  return parsed;
}

}  // namespace

absl::StatusOr<HostTensor> ParseNpy(absl::string_view bytes, absl::string_view name) {
  if (bytes.size() < kMagicSize + 2 || bytes.substr(0, kMagicSize) != kMagic) {
    return Invalid(name, "missing the \\x93NUMPY magic");
  }
  const auto major = static_cast<uint8_t>(bytes[kMagicSize]);
  size_t header_len = 0;
  size_t preamble = 0;
  auto byte_at = [&](size_t i) { return static_cast<size_t>(static_cast<uint8_t>(bytes[i])); };
  if (major == 1) {
    preamble = kMagicSize + 2 + 2;
    if (bytes.size() < preamble) return Invalid(name, "truncated preamble");
    header_len = byte_at(8) | byte_at(9) << 8;
  } else if (major == 2 || major == 3) {
    preamble = kMagicSize + 2 + 4;
    if (bytes.size() < preamble) return Invalid(name, "truncated preamble");
    header_len = byte_at(8) | byte_at(9) << 8 | byte_at(10) << 16 | byte_at(11) << 24;
  } else {
    return Invalid(name, absl::StrCat("format version ", major, ".x is not supported (1 to 3 are)"));
  }
  if (bytes.size() < preamble + header_len) {
    return Invalid(name, absl::StrCat("header of ", header_len, " bytes runs past the end of the ",
                                      bytes.size(), "-byte file"));
  }
  ASSIGN_OR_RETURN(const NpyHeader header,
                   ParseHeader(bytes.substr(preamble, header_len), name));

  const absl::string_view data = bytes.substr(preamble + header_len);
  // Checked multiplication: a hostile shape must not wrap around to the file size.
  size_t expected = DTypeSize(header.dtype);
  bool overflow = false;
  for (int64_t dim : header.dims) {
    overflow = overflow || __builtin_mul_overflow(expected, static_cast<size_t>(dim), &expected);
  }
  if (std::find(header.dims.begin(), header.dims.end(), 0) != header.dims.end()) {
    expected = 0;
    overflow = false;
  }
  if (overflow || expected != data.size()) {
    return Invalid(name, absl::StrCat("shape ", DimsToString(header.dims), " of ",
                                      std::string(DTypeName(header.dtype)), " needs ",
                                      overflow ? std::string("more than 2^64")
                                               : absl::StrCat(expected),
                                      " data bytes, the file holds ", data.size()));
  }

  HostTensor tensor(header.dtype, header.dims);
  if (!data.empty()) std::memcpy(tensor.raw(), data.data(), data.size());
  return tensor;
}

std::string SerializeNpy(const HostTensor& tensor) {
  std::string shape;
  if (tensor.dims().size() == 1) {
    shape = absl::StrCat("(", tensor.dims()[0], ",)");
  } else {
    shape = absl::StrCat("(", absl::StrJoin(tensor.dims(), ", "), ")");
  }
  std::string header = absl::StrCat("{'descr': '", DescrFromDType(tensor.dtype()),
                                    "', 'fortran_order': False, 'shape': ", shape, ", }");
  constexpr size_t kPreamble = kMagicSize + 2 + 2;
  // Pad with spaces so that preamble + header + '\n' is aligned.
  const size_t unpadded = kPreamble + header.size() + 1;
  header.append((kHeaderAlignment - unpadded % kHeaderAlignment) % kHeaderAlignment, ' ');
  header.push_back('\n');

  std::string out(kMagic, kMagicSize);
  out.push_back('\x01');  // version 1.0
  out.push_back('\x00');
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>((header.size() >> 8) & 0xff));
  out += header;
  out.append(static_cast<const char*>(tensor.raw()), tensor.bytes());
  return out;
}

absl::StatusOr<HostTensor> ReadNpyFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) return absl::InternalError(absl::StrCat("error reading ", path));
  return ParseNpy(bytes, path);
}

absl::Status WriteNpyFile(const std::string& path, const HostTensor& tensor) {
  const std::string bytes = SerializeNpy(tensor);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return absl::InternalError(absl::StrCat("cannot open ", path, " for writing"));
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.close();
  if (!file) return absl::InternalError(absl::StrCat("error writing ", path));
  return absl::OkStatus();
}

}  // namespace graphserve
