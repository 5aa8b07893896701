// common::ParseJsonFast must read every text exactly as nlohmann::json::parse
// does: the envelope decoder switched parsers and nothing else may change.
#include "common/fast_json.h"

#include <gtest/gtest.h>

namespace sluice::common {
namespace {

using nlohmann::json;

TEST(ParseJsonFast, GivesTheSameValuesAsNlohmann) {
  for (const char* text :
       {R"({"a":1,"b":-2,"c":1.25,"d":"x\ty\u00e9","e":null,"f":true,"g":[1,[2,{"h":false}]]})",
        R"({"id":18446744073709551615,"n":-9223372036854775808,"z":0,"big":1e300})",
        R"({"dup":1,"dup":2})", R"([])", R"("just a string")", R"(12)",
        R"({"nested":{"deeper":{"deepest":["a","b"]}},"empty":{}})"}) {
    SCOPED_TRACE(text);
    json fast = ParseJsonFast(text);
    json slow = json::parse(text);
    EXPECT_EQ(fast, slow);
    EXPECT_EQ(fast.dump(), slow.dump());
    EXPECT_EQ(fast.type(), slow.type());
  }
}

TEST(ParseJsonFast, KeepsIntegerKindsAsNlohmannDoes) {
  // nlohmann reads non-negative integers as unsigned; comparisons and
  // dumps do not care, but get<> and is_number_unsigned() do.
  EXPECT_TRUE(ParseJsonFast("5").is_number_unsigned());
  EXPECT_TRUE(ParseJsonFast("-5").is_number_integer());
  EXPECT_FALSE(ParseJsonFast("-5").is_number_unsigned());
  EXPECT_TRUE(ParseJsonFast("5.0").is_number_float());
}

TEST(ParseJsonFast, IntegersBeyondSixtyFourBitsReadAsNlohmannReadsThem) {
  const char* text = R"({"n":123456789012345678901234567890})";
  EXPECT_EQ(ParseJsonFast(text), json::parse(text));
}

TEST(ParseJsonFast, RefusesWhatIsNotJson) {
  for (const char* text : {"", "not json", "{\"a\":", "{\"a\":1}}", "[1,]", "\"\xff\xfe\""}) {
    SCOPED_TRACE(text);
    EXPECT_TRUE(ParseJsonFast(text).is_discarded());
    EXPECT_TRUE(json::parse(text, nullptr, false).is_discarded());
  }
}

}  // namespace
}  // namespace sluice::common
