//===- Json.cpp - Minimal JSON value, parser and writer -------------------===//

#include "SinkAttn/Runtime/Json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>

namespace sinkattn::rt {

//===----------------------------------------------------------------------===//
// JsonValue
//===----------------------------------------------------------------------===//

JsonValue JsonValue::array(Array elements) {
  JsonValue v;
  v.k = Kind::Array;
  v.arr = std::move(elements);
  return v;
}

JsonValue JsonValue::object(Object members) {
  JsonValue v;
  v.k = Kind::Object;
  v.obj = std::move(members);
  return v;
}

double JsonValue::asDouble() const {
  if (k == Kind::Double)
    return real;
  if (k == Kind::Int)
    return static_cast<double>(integer);
  return 0;
}

const std::string &JsonValue::asString() const {
  static const std::string empty;
  return k == Kind::String ? str : empty;
}

const JsonValue::Array &JsonValue::asArray() const {
  static const Array empty;
  return k == Kind::Array ? arr : empty;
}

const JsonValue::Object &JsonValue::asObject() const {
  static const Object empty;
  return k == Kind::Object ? obj : empty;
}

const JsonValue *JsonValue::find(std::string_view key) const {
  if (k != Kind::Object)
    return nullptr;
  for (const auto &member : obj)
    if (member.first == key)
      return &member.second;
  return nullptr;
}

JsonValue &JsonValue::set(std::string key, JsonValue value) {
  if (k == Kind::Null)
    k = Kind::Object;
  for (auto &member : obj)
    if (member.first == key) {
      member.second = std::move(value);
      return *this;
    }
  obj.emplace_back(std::move(key), std::move(value));
  return *this;
}

JsonValue &JsonValue::push(JsonValue value) {
  if (k == Kind::Null)
    k = Kind::Array;
  arr.push_back(std::move(value));
  return *this;
}

bool JsonValue::operator==(const JsonValue &o) const {
  if (k != o.k)
    return false;
  switch (k) {
  case Kind::Null:
    return true;
  case Kind::Bool:
    return boolean == o.boolean;
  case Kind::Int:
    return integer == o.integer;
  case Kind::Double:
    return real == o.real;
  case Kind::String:
    return str == o.str;
  case Kind::Array:
    return arr == o.arr;
  case Kind::Object:
    return obj == o.obj;
  }
  return false;
}

const char *jsonKindName(JsonValue::Kind kind) {
  switch (kind) {
  case JsonValue::Kind::Null:
    return "null";
  case JsonValue::Kind::Bool:
    return "boolean";
  case JsonValue::Kind::Int:
    return "integer";
  case JsonValue::Kind::Double:
    return "number";
  case JsonValue::Kind::String:
    return "string";
  case JsonValue::Kind::Array:
    return "array";
  case JsonValue::Kind::Object:
    return "object";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

namespace {
class Parser {
public:
  Parser(std::string_view text, unsigned maxDepth)
      : text(text), maxDepth(maxDepth) {}

  Expected<JsonValue> parseDocument() {
    JsonValue v;
    skipSpace();
    SINKATTN_RT_TRY(parseValue(v, 0));
    skipSpace();
    if (pos != text.size())
      return fail("unexpected characters after the JSON value");
    return v;
  }

private:
  Status fail(const std::string &what) const {
    // Line/column are computed only on error; the parser itself tracks a
    // plain byte offset.
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return Status::error("JSON parse error at line " + std::to_string(line) +
                         ", column " + std::to_string(column) + ": " + what);
  }

  bool atEnd() const { return pos >= text.size(); }
  char peek() const { return atEnd() ? '\0' : text[pos]; }

  void skipSpace() {
    while (!atEnd() && (text[pos] == ' ' || text[pos] == '\t' ||
                        text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }

  bool consumeLiteral(std::string_view word) {
    if (text.substr(pos, word.size()) == word) {
      pos += word.size();
      return true;
    }
    return false;
  }

  Status parseValue(JsonValue &out, unsigned depth) {
    if (atEnd())
      return fail("unexpected end of input, expected a value");
    char c = peek();
    switch (c) {
    case '{':
      return parseObject(out, depth + 1);
    case '[':
      return parseArray(out, depth + 1);
    case '"': {
      std::string s;
      SINKATTN_RT_TRY(parseString(s));
      out = JsonValue(std::move(s));
      return Status();
    }
    case 't':
      if (consumeLiteral("true")) {
        out = JsonValue(true);
        return Status();
      }
      break;
    case 'f':
      if (consumeLiteral("false")) {
        out = JsonValue(false);
        return Status();
      }
      break;
    case 'n':
      if (consumeLiteral("null")) {
        out = JsonValue();
        return Status();
      }
      break;
    default:
      if (c == '-' || (c >= '0' && c <= '9'))
        return parseNumber(out);
      break;
    }
    return fail(std::string("unexpected character ") + describe(c));
  }

  static std::string describe(char c) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f)
      return std::string("'") + c + "'";
    char buf[16];
    snprintf(buf, sizeof(buf), "0x%02x", u);
    return buf;
  }

  Status parseObject(JsonValue &out, unsigned depth) {
    if (depth > maxDepth)
      return fail("nesting deeper than " + std::to_string(maxDepth) +
                  " levels");
    ++pos; // '{'
    out = JsonValue::object();
    JsonValue::Object members;
    // A set, not a scan of `members`: hostile inputs with many keys must
    // not make parsing quadratic.
    std::set<std::string> keys;
    skipSpace();
    if (peek() == '}') {
      ++pos;
      return Status();
    }
    while (true) {
      skipSpace();
      if (peek() != '"')
        return fail("expected a string key in object");
      std::string key;
      SINKATTN_RT_TRY(parseString(key));
      if (!keys.insert(key).second)
        return fail("duplicate key \"" + key + "\" in object");
      skipSpace();
      if (peek() != ':')
        return fail("expected ':' after object key");
      ++pos;
      skipSpace();
      JsonValue value;
      SINKATTN_RT_TRY(parseValue(value, depth));
      members.emplace_back(std::move(key), std::move(value));
      skipSpace();
      if (peek() == ',') {
        ++pos;
        continue;
      }
      if (peek() == '}') {
        ++pos;
        out = JsonValue::object(std::move(members));
        return Status();
      }
      return fail("expected ',' or '}' in object");
    }
  }

  Status parseArray(JsonValue &out, unsigned depth) {
    if (depth > maxDepth)
      return fail("nesting deeper than " + std::to_string(maxDepth) +
                  " levels");
    ++pos; // '['
    JsonValue::Array elements;
    skipSpace();
    if (peek() == ']') {
      ++pos;
      out = JsonValue::array();
      return Status();
    }
    while (true) {
      skipSpace();
      JsonValue value;
      SINKATTN_RT_TRY(parseValue(value, depth));
      elements.push_back(std::move(value));
      skipSpace();
      if (peek() == ',') {
        ++pos;
        continue;
      }
      if (peek() == ']') {
        ++pos;
        out = JsonValue::array(std::move(elements));
        return Status();
      }
      return fail("expected ',' or ']' in array");
    }
  }

  bool parseHex4(uint32_t &out) {
    if (text.size() - pos < 4)
      return false;
    out = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text[pos + i];
      out <<= 4;
      if (c >= '0' && c <= '9')
        out |= c - '0';
      else if (c >= 'a' && c <= 'f')
        out |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        out |= c - 'A' + 10;
      else
        return false;
    }
    pos += 4;
    return true;
  }

  static void appendUtf8(std::string &s, uint32_t cp) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xc0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xe0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      s += static_cast<char>(0xf0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  Status parseString(std::string &out) {
    ++pos; // opening quote
    out.clear();
    while (true) {
      if (atEnd())
        return fail("unterminated string");
      char c = text[pos];
      if (c == '"') {
        ++pos;
        return Status();
      }
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("unescaped control character " + describe(c) +
                    " in string");
      if (c != '\\') {
        out += c;
        ++pos;
        continue;
      }
      ++pos; // backslash
      if (atEnd())
        return fail("unterminated escape sequence");
      char e = text[pos++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cp = 0;
        if (!parseHex4(cp))
          return fail("invalid \\u escape (need 4 hex digits)");
        if (cp >= 0xdc00 && cp <= 0xdfff)
          return fail("unpaired low surrogate in \\u escape");
        if (cp >= 0xd800 && cp <= 0xdbff) {
          uint32_t low = 0;
          if (!consumeLiteral("\\u") || !parseHex4(low) || low < 0xdc00 ||
              low > 0xdfff)
            return fail("high surrogate in \\u escape not followed by a low "
                        "surrogate");
          cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        --pos;
        return fail("invalid escape sequence \\" + std::string(1, e));
      }
    }
  }

  Status parseNumber(JsonValue &out) {
    const size_t start = pos;
    bool isInteger = true;
    if (peek() == '-')
      ++pos;
    if (peek() == '0') {
      ++pos;
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9')
        ++pos;
    } else {
      return fail("invalid number: expected a digit");
    }
    if (peek() == '.') {
      isInteger = false;
      ++pos;
      if (!(peek() >= '0' && peek() <= '9'))
        return fail("invalid number: expected a digit after '.'");
      while (peek() >= '0' && peek() <= '9')
        ++pos;
    }
    if (peek() == 'e' || peek() == 'E') {
      isInteger = false;
      ++pos;
      if (peek() == '+' || peek() == '-')
        ++pos;
      if (!(peek() >= '0' && peek() <= '9'))
        return fail("invalid number: expected a digit in the exponent");
      while (peek() >= '0' && peek() <= '9')
        ++pos;
    }
    const char *first = text.data() + start;
    const char *last = text.data() + pos;
    if (isInteger) {
      int64_t v = 0;
      auto r = std::from_chars(first, last, v);
      if (r.ec == std::errc() && r.ptr == last) {
        out = JsonValue(v);
        return Status();
      }
      // Too large for int64: fall through and keep it as a double.
    }
    // from_chars, unlike strtod, ignores the C locale's decimal separator.
    double d = 0;
    auto r = std::from_chars(first, last, d);
    if (r.ec == std::errc::result_out_of_range) {
      pos = start;
      return fail("number out of range");
    }
    if (r.ec != std::errc() || r.ptr != last) {
      pos = start;
      return fail("invalid number");
    }
    out = JsonValue(d);
    return Status();
  }

  std::string_view text;
  unsigned maxDepth;
  size_t pos = 0;
};
} // namespace

Expected<JsonValue> parseJson(std::string_view text, unsigned maxDepth) {
  return Parser(text, maxDepth).parseDocument();
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

static void writeString(std::string &out, const std::string &s) {
  out += '"';
  for (char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
        out += buf;
      } else {
        out += c;
      }
    }
  }
  out += '"';
}

static void writeDouble(std::string &out, double d) {
  if (!std::isfinite(d)) {
    out += "null";
    return;
  }
  // Shortest representation that round-trips exactly.
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), d);
  std::string s(buf, r.ptr);
  // Keep a marker of "double-ness" so the value re-parses as a double.
  if (s.find_first_of(".eE") == std::string::npos)
    s += ".0";
  out += s;
}

static bool isScalar(const JsonValue &v) {
  return !v.isArray() && !v.isObject();
}

static void writeValue(std::string &out, const JsonValue &v, unsigned indent,
                       unsigned level) {
  auto newline = [&](unsigned lvl) {
    if (indent) {
      out += '\n';
      out.append(size_t(indent) * lvl, ' ');
    }
  };
  switch (v.kind()) {
  case JsonValue::Kind::Null:
    out += "null";
    return;
  case JsonValue::Kind::Bool:
    out += v.asBool() ? "true" : "false";
    return;
  case JsonValue::Kind::Int:
    out += std::to_string(v.asInt());
    return;
  case JsonValue::Kind::Double:
    writeDouble(out, v.asDouble());
    return;
  case JsonValue::Kind::String:
    writeString(out, v.asString());
    return;
  case JsonValue::Kind::Array: {
    const auto &a = v.asArray();
    if (a.empty()) {
      out += "[]";
      return;
    }
    bool flat = true;
    for (const auto &e : a)
      flat = flat && isScalar(e);
    out += '[';
    for (size_t i = 0; i < a.size(); ++i) {
      if (i)
        out += flat && indent ? ", " : ",";
      if (!flat)
        newline(level + 1);
      writeValue(out, a[i], indent, level + 1);
    }
    if (!flat)
      newline(level);
    out += ']';
    return;
  }
  case JsonValue::Kind::Object: {
    const auto &o = v.asObject();
    if (o.empty()) {
      out += "{}";
      return;
    }
    out += '{';
    for (size_t i = 0; i < o.size(); ++i) {
      if (i)
        out += ',';
      newline(level + 1);
      writeString(out, o[i].first);
      out += indent ? ": " : ":";
      writeValue(out, o[i].second, indent, level + 1);
    }
    newline(level);
    out += '}';
    return;
  }
  }
}

std::string writeJson(const JsonValue &value, unsigned indent) {
  std::string out;
  writeValue(out, value, indent, 0);
  if (indent)
    out += '\n';
  return out;
}

} // namespace sinkattn::rt
