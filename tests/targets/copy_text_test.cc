// COPY text rendered from JSON text must be exactly what the tree path
// renders, and every row that needs more than its text must be declined.
#include "connectors/targets/copy_text.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace sluice::connectors::targets {
namespace {

using nlohmann::json;

const std::map<std::string, std::string, std::less<>> kTypes = {
    {"id", "int8"},   {"name", "text"},  {"doc", "jsonb"},  {"ratio", "float8"},
    {"paid", "bool"}, {"raw", "bytea"},  {"tags", "_text"}, {"amount", "numeric"},
    {"big", "int8"},  {"list", "jsonb"}, {"note", "json"}};

const std::string& TypeOf(std::string_view name) {
  static const std::string unknown;
  auto it = kTypes.find(name);
  return it == kTypes.end() ? unknown : it->second;
}

std::optional<CopyText> Render(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::vector<JsonRow> views;
  for (const auto& [key, image] : rows) views.push_back({key, image});
  return RenderJsonImages(views, TypeOf);
}

// What the tree path writes for the same image (members in nlohmann order).
std::string TreeRow(const std::string& image) {
  std::string out;
  bool first = true;
  json parsed = json::parse(image);
  for (const auto& [k, v] : parsed.items()) {
    if (!first) out.push_back('\t');
    first = false;
    AppendCopyValue(out, TypeOf(k), v);
  }
  return out + "\n";
}

TEST(CopyText, RendersEveryKindOfValueExactlyAsTheTreePathDoes) {
  std::vector<std::string> images = {
      R"({"amount":"12.50","big":18446744073709551615,"doc":{"a":[1,2.5,null],"s":"t\tn\n"},"id":-7,"list":[1,{"b":true}],"name":"tab\there \\ back\nline \"q\" \u00e9 \r","paid":true,"ratio":0.1})",
      R"({"amount":null,"big":0,"doc":{},"id":8,"list":[],"name":"","paid":false,"ratio":1e300})",
      R"({"amount":"-0.001","big":-9223372036854775808,"doc":null,"id":9,"list":null,"name":"\\N","paid":null,"ratio":-2.5E-3})"};
  std::vector<std::pair<std::string, std::string>> rows;
  std::string want;
  for (const auto& image : images) {
    auto id = json::parse(image)["id"];
    rows.emplace_back(json{{"id", id}}.dump(), image);
    want += TreeRow(image);
  }
  auto text = Render(rows);
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(text->rows, want);
  EXPECT_EQ(text->names, (std::vector<std::string>{"amount", "big", "doc", "id", "list", "name",
                                                   "paid", "ratio"}));
}

// Doubles are spelt without a tree, so each must come out as nlohmann's dump
// of the same value: the shortest text that reads back to it.
TEST(CopyText, DoublesAreSpeltAsTheTreePathSpellsThem) {
  const std::vector<std::string> doubles = {
      "5e-324", "2.2250738585072014e-308", "1.7976931348623157e308",
      "-0.0",   "0.30000000000000004",     "1e21",
      "1E-7",   "123456789.125",           "-1.5e+300",
      "0.1e1"};
  std::vector<std::pair<std::string, std::string>> rows;
  std::string want;
  for (std::size_t i = 0; i < doubles.size(); ++i) {
    std::string image = fmt::format(R"({{"id":{},"ratio":{}}})", i, doubles[i]);
    rows.emplace_back(fmt::format(R"({{"id":{}}})", i), image);
    want += TreeRow(image);
  }
  for (std::size_t i = 0; i < rows.size(); ++i)
    EXPECT_TRUE(Render({rows[i]}).has_value()) << doubles[i];
  auto text = Render(rows);
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(text->rows, want);
}

TEST(CopyText, DeclinesRowsThatNeedMoreThanTheirText) {
  auto declined = [](const std::string& image, const std::string& key = R"({"id":1})") {
    return !Render({{key, image}}).has_value();
  };
  EXPECT_FALSE(declined(R"({"id":1,"name":"x"})"));                    // the control: this one fits
  EXPECT_TRUE(declined(R"({"id":1,"raw":"AAE="})"));                   // bytea arrives as base64
  EXPECT_TRUE(declined(R"({"id":1,"tags":["a",null]})"));              // an array literal
  EXPECT_TRUE(declined(R"({"id":1,"note":{"b":1,"a":2}})"));           // json keeps its text
  EXPECT_TRUE(declined(R"({"id":1,"doc":"a"})"));                      // into jsonb: quoted JSON
  EXPECT_TRUE(declined(R"({"id":1,"ratio":100000000000000000000})"));  // past 64 bits
  EXPECT_TRUE(declined(R"({"name":"x"})"));                            // no key member
  EXPECT_TRUE(declined(R"({"id":"1","name":"x"})"));                   // the key spelled otherwise
  EXPECT_TRUE(declined(R"({"id":2,"name":"x"})"));                     // another key value
  EXPECT_TRUE(declined(R"({})", R"({})"));
  EXPECT_TRUE(declined(R"([1])"));
  EXPECT_TRUE(declined(R"({"id":1,"name":)"));
  EXPECT_TRUE(declined(R"({"id":1})", R"({"id":)"));
  // Rows of one COPY share one column list.
  EXPECT_TRUE(
      Render({{R"({"id":1})", R"({"id":1,"name":"a"})"}, {R"({"id":2})", R"({"id":2,"name":"b"})"}})
          .has_value());
  EXPECT_FALSE(Render({{R"({"id":1})", R"({"id":1,"name":"a"})"},
                       {R"({"id":2})", R"({"id":2,"paid":true})"}})
                   .has_value());
  EXPECT_FALSE(Render({{R"({"id":1})", R"({"id":1,"name":"a"})"},
                       {R"({"id":2})", R"({"id":2,"name":"b","paid":true})"}})
                   .has_value());
}

TEST(CopyText, AJsonStringIntoJsonIsQuotedAndAValueCarriedAsTextIsNot) {
  std::string out;
  AppendCopyValue(out, "jsonb", json("a\tb"));
  EXPECT_EQ(out, "\"a\\\\tb\"");  // the JSON "a\tb", its backslash escaped for COPY
  out.clear();
  AppendCopyValue(out, "text", json(R"({"n": 1e400})"));  // how as_text values are passed
  EXPECT_EQ(out, R"({"n": 1e400})");
}

TEST(CopyText, APartialImageIsCompletedWithTheEarlierImagesValuesAsWritten) {
  auto merged = MergePartialImage(R"({"id":1,"a\"b":{"x":[1,"}"]},"doc":"t\"\u00e9","n":null})",
                                  R"({"id":1,"n":5})", R"(["a\"b","doc","gone"])");
  ASSERT_TRUE(merged.has_value());
  EXPECT_EQ(merged->image, R"({"id":1,"n":5,"a\"b":{"x":[1,"}"]},"doc":"t\"\u00e9"})");
  EXPECT_EQ(json::parse(merged->image)["a\"b"]["x"][1], "}");
  EXPECT_EQ(merged->unchanged, R"(["gone"])");  // the earlier image did not have it either
  auto whole = MergePartialImage(R"({"id":1,"doc":2})", R"({"id":1})", R"(["doc"])");
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->image, R"({"id":1,"doc":2})");
  EXPECT_EQ(whole->unchanged, "");
  EXPECT_FALSE(MergePartialImage("[1]", R"({"id":1})", R"(["doc"])").has_value());
  EXPECT_FALSE(MergePartialImage(R"({"id":1})", R"({"id":1})", "{}").has_value());
}

TEST(CopyText, AKeyIsSpeltOneWayWhateverItsMemberOrderOrSpacing) {
  EXPECT_EQ(CanonicalKeyText(R"({"a":1,"b":"x"})"), CanonicalKeyText(R"({ "b" : "x", "a" : 1 })"));
  EXPECT_NE(CanonicalKeyText(R"({"a":1})"), CanonicalKeyText(R"({"a":"1"})"));
  EXPECT_NE(CanonicalKeyText(R"({"a":"1","b":"2"})"), CanonicalKeyText(R"({"a":"1b","":"2"})"));
  EXPECT_FALSE(CanonicalKeyText("[1]").has_value());
}

}  // namespace
}  // namespace sluice::connectors::targets
