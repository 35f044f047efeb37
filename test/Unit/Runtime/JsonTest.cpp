//===- JsonTest.cpp - JSON value, parser, writer --------------------------===//

#include "SinkAttn/Runtime/Json.h"
#include "SinkAttn/Runtime/Random.h"

#include <gtest/gtest.h>

using namespace sinkattn::rt;

namespace {

JsonValue parseOk(const std::string &text) {
  Expected<JsonValue> v = parseJson(text);
  EXPECT_TRUE(v.ok()) << v.message();
  return v.ok() ? *v : JsonValue();
}

std::string parseError(const std::string &text) {
  Expected<JsonValue> v = parseJson(text);
  EXPECT_FALSE(v.ok()) << "accepted: " << text;
  return v.ok() ? std::string() : v.message();
}

TEST(Json, ParsesAllKinds) {
  JsonValue v = parseOk(R"({"a": [1, -2, 3.5, 1e3, true, false, null],
                            "s": "x\"y\\z\/\n\t\u00e9\ud83d\ude00",
                            "o": {}, "e": []})");
  ASSERT_TRUE(v.isObject());
  const JsonValue::Array &a = v.find("a")->asArray();
  ASSERT_EQ(a.size(), 7u);
  EXPECT_TRUE(a[0].isInt());
  EXPECT_EQ(a[0].asInt(), 1);
  EXPECT_EQ(a[1].asInt(), -2);
  EXPECT_EQ(a[2].kind(), JsonValue::Kind::Double);
  EXPECT_EQ(a[2].asDouble(), 3.5);
  EXPECT_EQ(a[3].kind(), JsonValue::Kind::Double);
  EXPECT_EQ(a[3].asDouble(), 1000.0);
  EXPECT_TRUE(a[4].asBool());
  EXPECT_TRUE(a[5].isBool());
  EXPECT_FALSE(a[5].asBool());
  EXPECT_TRUE(a[6].isNull());
  EXPECT_EQ(v.find("s")->asString(),
            "x\"y\\z/\n\t\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_TRUE(v.find("o")->isObject());
  EXPECT_TRUE(v.find("e")->isArray());
  EXPECT_EQ(v.find("missing"), nullptr);
}

TEST(Json, Integers) {
  EXPECT_EQ(parseOk("9223372036854775807").asInt(), INT64_MAX);
  EXPECT_EQ(parseOk("-9223372036854775808").asInt(), INT64_MIN);
  JsonValue big = parseOk("9223372036854775808");
  EXPECT_EQ(big.kind(), JsonValue::Kind::Double);
  EXPECT_EQ(parseOk("-0").asInt(), 0);
  EXPECT_NE(parseError("1e999").find("out of range"), std::string::npos);
}

TEST(Json, WriterRoundTrip) {
  JsonValue v = JsonValue::object();
  v.set("int", 42).set("neg", -7).set("dbl", 0.1).set("whole", 2.0);
  v.set("str", "tab\there \"q\" \x01").set("t", true).set("n", nullptr);
  v.set("arr", JsonValue::array({1, 2, 3}));
  v.set("nested", JsonValue::array({JsonValue::object({{"k", "v"}})}));
  for (unsigned indent : {0u, 2u, 4u}) {
    std::string text = writeJson(v, indent);
    JsonValue back = parseOk(text);
    EXPECT_EQ(back, v) << text;
  }
  std::string pretty = writeJson(v);
  EXPECT_NE(pretty.find("\"arr\": [1, 2, 3]"), std::string::npos) << pretty;
  EXPECT_NE(pretty.find("\"whole\": 2.0"), std::string::npos) << pretty;
  EXPECT_NE(pretty.find("\\u0001"), std::string::npos) << pretty;
  EXPECT_EQ(writeJson(JsonValue(1.0 / 0.0), 0), "null");
  // Member order is preserved.
  EXPECT_LT(pretty.find("\"int\""), pretty.find("\"neg\""));
}

TEST(Json, ErrorsCarryLineAndColumn) {
  std::string msg = parseError("{\n  \"a\": 1,\n  \"b\" 2\n}");
  EXPECT_NE(msg.find("line 3, column 7"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected ':'"), std::string::npos) << msg;
}

TEST(Json, RejectsMalformedInput) {
  EXPECT_NE(parseError("").find("unexpected end"), std::string::npos);
  EXPECT_NE(parseError("{\"a\":1,\"a\":2}").find("duplicate key"),
            std::string::npos);
  EXPECT_NE(parseError("[1,]").find("unexpected character ']'"),
            std::string::npos);
  EXPECT_NE(parseError("[1] x").find("after the JSON value"),
            std::string::npos);
  EXPECT_NE(parseError("\"a\nb\"").find("control character"),
            std::string::npos);
  EXPECT_NE(parseError("\"\\x\"").find("invalid escape"), std::string::npos);
  EXPECT_NE(parseError("\"\\ud800\"").find("surrogate"), std::string::npos);
  EXPECT_NE(parseError("\"\\udc00\"").find("surrogate"), std::string::npos);
  EXPECT_NE(parseError("\"\\u12\"").find("4 hex digits"), std::string::npos);
  EXPECT_NE(parseError("01").find("after the JSON value"), std::string::npos);
  EXPECT_NE(parseError("1.").find("after '.'"), std::string::npos);
  EXPECT_NE(parseError("-").find("expected a digit"), std::string::npos);
  EXPECT_NE(parseError("tru").find("unexpected character 't'"),
            std::string::npos);
  EXPECT_NE(parseError("{1:2}").find("string key"), std::string::npos);
  EXPECT_NE(parseError("\"abc").find("unterminated"), std::string::npos);
  EXPECT_NE(parseError(std::string("\x00", 1)).find("0x00"),
            std::string::npos);
}

TEST(Json, DepthIsBounded) {
  std::string deep(100000, '[');
  EXPECT_NE(parseError(deep).find("nesting deeper than 64"),
            std::string::npos);
  std::string ok = std::string(64, '[') + std::string(64, ']');
  parseOk(ok);
  std::string tooDeep = std::string(65, '[') + std::string(65, ']');
  parseError(tooDeep);
  std::string objects;
  for (int i = 0; i < 1000; ++i)
    objects += "{\"a\":";
  EXPECT_NE(parseError(objects).find("nesting"), std::string::npos);
}

TEST(Json, RandomBytesNeverCrash) {
  Rng rng(77);
  const std::string alphabet = "{}[]\":,-0123456789.eE+truefalsn \\u\n\x01\xff";
  for (int i = 0; i < 20000; ++i) {
    std::string s(rng.next() % 64, ' ');
    for (char &c : s)
      c = alphabet[rng.next() % alphabet.size()];
    (void)parseJson(s);
  }
}

} // namespace
