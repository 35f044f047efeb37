//===- Npy.cpp - NumPy .npy reading and writing ---------------------------===//

#include "SinkAttn/Runtime/Npy.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the .npy code stores host values as little-endian bytes"
#endif

namespace sinkattn::rt {

const char *npyDescr(NpyDType dtype) {
  switch (dtype) {
  case NpyDType::F32:
    return "<f4";
  case NpyDType::F16:
    return "<f2";
  case NpyDType::BF16Bits:
    return "<u2";
  case NpyDType::I32:
    return "<i4";
  }
  return "?";
}

size_t npyElementSize(NpyDType dtype) {
  return dtype == NpyDType::F32 || dtype == NpyDType::I32 ? 4 : 2;
}

/// Product of dims, or false on overflow.
static bool checkedCount(const std::vector<uint64_t> &shape, uint64_t &count) {
  count = 1;
  for (uint64_t d : shape)
    if (__builtin_mul_overflow(count, d, &count))
      return false;
  return true;
}

uint64_t NpyArray::elementCount() const {
  uint64_t n = 0;
  return checkedCount(shape, n) ? n : UINT64_MAX;
}

template <typename T>
static NpyArray makeArray(NpyDType dtype, std::vector<uint64_t> shape,
                          const std::vector<T> &values) {
  NpyArray a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  a.data.resize(values.size() * sizeof(T));
  if (!values.empty())
    std::memcpy(a.data.data(), values.data(), a.data.size());
  return a;
}

NpyArray makeNpyF32(std::vector<uint64_t> shape, const std::vector<float> &v) {
  return makeArray(NpyDType::F32, std::move(shape), v);
}
NpyArray makeNpyF16(std::vector<uint64_t> shape, const std::vector<uint16_t> &v) {
  return makeArray(NpyDType::F16, std::move(shape), v);
}
NpyArray makeNpyBf16(std::vector<uint64_t> shape, const std::vector<uint16_t> &v) {
  return makeArray(NpyDType::BF16Bits, std::move(shape), v);
}
NpyArray makeNpyI32(std::vector<uint64_t> shape, const std::vector<int32_t> &v) {
  return makeArray(NpyDType::I32, std::move(shape), v);
}

template <typename T>
static Expected<std::vector<T>> elementsAs(const NpyArray &a, bool dtypeOk,
                                           const char *what) {
  if (!dtypeOk)
    return Status::error(std::string("npy array has dtype ") +
                         npyDescr(a.dtype) + ", expected " + what);
  std::vector<T> out(a.data.size() / sizeof(T));
  if (!out.empty())
    std::memcpy(out.data(), a.data.data(), out.size() * sizeof(T));
  return out;
}

Expected<std::vector<float>> npyAsF32(const NpyArray &a) {
  return elementsAs<float>(a, a.dtype == NpyDType::F32, "<f4");
}
Expected<std::vector<int32_t>> npyAsI32(const NpyArray &a) {
  return elementsAs<int32_t>(a, a.dtype == NpyDType::I32, "<i4");
}
Expected<std::vector<uint16_t>> npyAsU16Bits(const NpyArray &a) {
  return elementsAs<uint16_t>(
      a, a.dtype == NpyDType::F16 || a.dtype == NpyDType::BF16Bits,
      "<f2 or <u2");
}

Expected<std::string> encodeNpy(const NpyArray &a) {
  uint64_t count = 0;
  if (!checkedCount(a.shape, count) ||
      count > UINT64_MAX / npyElementSize(a.dtype) ||
      count * npyElementSize(a.dtype) != a.data.size())
    return Status::error("npy array data has " + std::to_string(a.data.size()) +
                         " bytes, which does not match its shape and dtype");

  std::string header = std::string("{'descr': '") + npyDescr(a.dtype) +
                       "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < a.shape.size(); ++i) {
    header += std::to_string(a.shape[i]);
    if (a.shape.size() == 1 || i + 1 < a.shape.size())
      header += a.shape.size() == 1 ? "," : ", ";
  }
  header += "), }";
  // NumPy pads the header with spaces and a final newline so that the data
  // starts at a multiple of 64 bytes (10 = magic + version + length).
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  if (header.size() > 0xffff)
    return Status::error("npy header too long for format version 1.0");

  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char *>(a.data.data()), a.data.size());
  return out;
}

namespace {
/// Parser for the Python-literal header dict, e.g.
/// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
public:
  explicit HeaderParser(std::string_view text) : text(text) {}

  Status parse(std::string &descr, bool &fortran, std::vector<uint64_t> &shape) {
    bool haveDescr = false, haveFortran = false, haveShape = false;
    skipSpace();
    if (!consume('{'))
      return fail("expected '{'");
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::string key;
      SINKATTN_RT_TRY(parseString(key));
      skipSpace();
      if (!consume(':'))
        return fail("expected ':' after key '" + key + "'");
      skipSpace();
      if (key == "descr") {
        SINKATTN_RT_TRY(parseString(descr));
        haveDescr = true;
      } else if (key == "fortran_order") {
        if (consumeWord("True"))
          fortran = true;
        else if (consumeWord("False"))
          fortran = false;
        else
          return fail("fortran_order must be True or False");
        haveFortran = true;
      } else if (key == "shape") {
        SINKATTN_RT_TRY(parseShape(shape));
        haveShape = true;
      } else {
        return fail("unexpected key '" + key + "'");
      }
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume('}'))
        break;
      return fail("expected ',' or '}'");
    }
    if (!haveDescr || !haveFortran || !haveShape)
      return fail("header must contain 'descr', 'fortran_order' and 'shape'");
    return Status();
  }

private:
  Status fail(const std::string &what) const {
    return Status::error("malformed npy header at offset " +
                         std::to_string(pos) + ": " + what);
  }
  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\n' ||
                                 text[pos] == '\t' || text[pos] == '\r'))
      ++pos;
  }
  bool consume(char c) {
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  bool consumeWord(std::string_view w) {
    if (text.substr(pos, w.size()) == w) {
      pos += w.size();
      return true;
    }
    return false;
  }
  Status parseString(std::string &out) {
    if (pos >= text.size() || (text[pos] != '\'' && text[pos] != '"'))
      return fail("expected a quoted string");
    char quote = text[pos++];
    size_t end = text.find(quote, pos);
    if (end == std::string_view::npos)
      return fail("unterminated string");
    out = std::string(text.substr(pos, end - pos));
    pos = end + 1;
    return Status();
  }
  Status parseShape(std::vector<uint64_t> &shape) {
    if (!consume('('))
      return fail("shape must be a tuple");
    while (true) {
      skipSpace();
      if (consume(')'))
        return Status();
      if (pos >= text.size() || text[pos] < '0' || text[pos] > '9')
        return fail("expected a non-negative integer in shape");
      uint64_t v = 0;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, uint64_t(text[pos] - '0'), &v))
          return fail("shape dimension overflows 64 bits");
        ++pos;
      }
      if (pos < text.size() && text[pos] == 'L') // Python 2 long suffix.
        ++pos;
      if (shape.size() >= 64)
        return fail("shape has more than 64 dimensions");
      shape.push_back(v);
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume(')'))
        return Status();
      return fail("expected ',' or ')' in shape");
    }
  }

  std::string_view text;
  size_t pos = 0;
};
} // namespace

Expected<NpyArray> decodeNpy(std::string_view bytes) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != std::string_view("\x93NUMPY", 6))
    return Status::error("not an .npy file (missing \\x93NUMPY magic)");
  const auto byteAt = [&](size_t i) { return static_cast<uint8_t>(bytes[i]); };
  uint8_t major = byteAt(6);
  size_t headerLen = 0, headerStart = 0;
  if (major == 1) {
    headerLen = byteAt(8) | (size_t(byteAt(9)) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return Status::error("truncated .npy header");
    headerLen = byteAt(8) | (size_t(byteAt(9)) << 8) |
                (size_t(byteAt(10)) << 16) | (size_t(byteAt(11)) << 24);
    headerStart = 12;
  } else {
    return Status::error("unsupported .npy format version " +
                         std::to_string(major) + "." +
                         std::to_string(byteAt(7)));
  }
  if (headerLen > bytes.size() - headerStart)
    return Status::error("truncated .npy header");

  std::string descr;
  bool fortran = false;
  NpyArray a;
  HeaderParser parser(bytes.substr(headerStart, headerLen));
  SINKATTN_RT_TRY(parser.parse(descr, fortran, a.shape));
  if (fortran)
    return Status::error("Fortran-order .npy arrays are not supported; save "
                         "with np.ascontiguousarray");
  if (descr == "<f4")
    a.dtype = NpyDType::F32;
  else if (descr == "<f2")
    a.dtype = NpyDType::F16;
  else if (descr == "<u2")
    a.dtype = NpyDType::BF16Bits;
  else if (descr == "<i4")
    a.dtype = NpyDType::I32;
  else
    return Status::error("unsupported .npy dtype '" + descr +
                         "'; expected <f4, <f2, <u2 (bf16 bits) or <i4");

  uint64_t count = 0;
  size_t dataBytes = bytes.size() - headerStart - headerLen;
  if (!checkedCount(a.shape, count) ||
      count > UINT64_MAX / npyElementSize(a.dtype) ||
      count * npyElementSize(a.dtype) != dataBytes)
    return Status::error(".npy data section has " + std::to_string(dataBytes) +
                         " bytes, which does not match the header's shape and "
                         "dtype");
  auto data = bytes.substr(headerStart + headerLen);
  a.data.assign(data.begin(), data.end());
  return a;
}

Status writeNpy(const std::string &path, const NpyArray &array) {
  SINKATTN_RT_ASSIGN_OR_RETURN(std::string bytes, encodeNpy(array));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return Status::error("cannot open " + path + " for writing: " +
                         std::strerror(errno));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out)
    return Status::error("failed writing " + path);
  return Status();
}

Expected<NpyArray> readNpy(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error("cannot open " + path + ": " + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  if (in.bad())
    return Status::error("failed reading " + path);
  Expected<NpyArray> a = decodeNpy(bytes);
  if (!a.ok())
    return a.status().withContext(path + ": ");
  return a;
}

} // namespace sinkattn::rt
