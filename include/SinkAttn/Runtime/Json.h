//===- Json.h - Minimal JSON value, parser and writer ----------*- C++ -*-===//
//
// Self-contained (no third-party dependency) JSON support for bundle
// manifests.  Objects keep their members in insertion order so written
// manifests are stable and diffable.  Integers without fraction/exponent are
// kept exactly as int64; other numbers are doubles.  The parser is meant to
// face untrusted bytes: recursion depth is bounded, every index is checked,
// and errors carry line:column.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_RUNTIME_JSON_H
#define SINKATTN_RUNTIME_JSON_H

#include "SinkAttn/Runtime/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace sinkattn::rt {

class JsonValue {
public:
  enum class Kind { Null, Bool, Int, Double, String, Array, Object };
  using Array = std::vector<JsonValue>;
  using Object = std::vector<std::pair<std::string, JsonValue>>;

  JsonValue() = default;
  JsonValue(std::nullptr_t) {}
  JsonValue(bool b) : k(Kind::Bool), boolean(b) {}
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>,
                             int> = 0>
  JsonValue(T v) : k(Kind::Int), integer(static_cast<int64_t>(v)) {}
  JsonValue(double d) : k(Kind::Double), real(d) {}
  JsonValue(const char *s) : k(Kind::String), str(s) {}
  JsonValue(std::string s) : k(Kind::String), str(std::move(s)) {}
  static JsonValue array(Array elements = {});
  static JsonValue object(Object members = {});

  Kind kind() const { return k; }
  bool isNull() const { return k == Kind::Null; }
  bool isBool() const { return k == Kind::Bool; }
  bool isInt() const { return k == Kind::Int; }
  /// Int or Double.
  bool isNumber() const { return k == Kind::Int || k == Kind::Double; }
  bool isString() const { return k == Kind::String; }
  bool isArray() const { return k == Kind::Array; }
  bool isObject() const { return k == Kind::Object; }

  // Accessors return a neutral value (false, 0, empty) for the wrong kind,
  // so callers that check kind() first never hit undefined behaviour.
  bool asBool() const { return k == Kind::Bool && boolean; }
  int64_t asInt() const { return k == Kind::Int ? integer : 0; }
  double asDouble() const;
  const std::string &asString() const;
  const Array &asArray() const;
  const Object &asObject() const;

  /// Member lookup; nullptr when not an object or absent.
  const JsonValue *find(std::string_view key) const;
  /// Sets (replaces or appends) an object member; turns null into an object.
  JsonValue &set(std::string key, JsonValue value);
  /// Appends an array element; turns null into an array.
  JsonValue &push(JsonValue value);

  bool operator==(const JsonValue &o) const;
  bool operator!=(const JsonValue &o) const { return !(*this == o); }

private:
  Kind k = Kind::Null;
  bool boolean = false;
  int64_t integer = 0;
  double real = 0;
  std::string str;
  Array arr;
  Object obj;
};

/// "null", "boolean", "integer", "number", "string", "array", "object".
const char *jsonKindName(JsonValue::Kind kind);

/// Parses one JSON document (RFC 8259; duplicate object keys rejected,
/// nesting deeper than `maxDepth` rejected).
Expected<JsonValue> parseJson(std::string_view text, unsigned maxDepth = 64);

/// Serializes; `indent` > 0 pretty-prints (arrays of scalars stay on one
/// line), 0 is compact.  Non-finite doubles, which JSON cannot represent,
/// are written as null.
std::string writeJson(const JsonValue &value, unsigned indent = 2);

} // namespace sinkattn::rt

#endif // SINKATTN_RUNTIME_JSON_H
