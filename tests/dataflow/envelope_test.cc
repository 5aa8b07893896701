#include <gtest/gtest.h>

#include "dataflow/envelope.h"

namespace sluice::dataflow {
namespace {

using nlohmann::json;

connectors::TableSchema Schema() {
  connectors::TableSchema s;
  s.table = {"public", "orders"};
  s.topic = "t";
  s.columns = {{"id", 23, -1, "int4", true}, {"name", 25, -1, "text", false}};
  return s;
}

TEST(Envelope, RoundTripsAnUpdateWithItsColumns) {
  connectors::ChangeEvent e;
  e.op = common::ChangeOp::kUpdate;
  e.table = {"public", "orders"};
  e.topic = "t";
  e.key = {{"id", 7}};
  e.after = {{"id", 7}, {"name", "x"}};
  auto encoded = EncodeEnvelope(e, Schema());
  auto decoded = DecodeEnvelope(encoded.key, encoded.value);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->op, common::ChangeOp::kUpdate);
  EXPECT_EQ(decoded->key, (json{{"id", 7}}));
  EXPECT_EQ(decoded->after["name"], "x");
  ASSERT_EQ(decoded->columns.size(), 2u);
  EXPECT_TRUE(decoded->columns[0].key);
  EXPECT_EQ(decoded->columns[1].source_type, "text");
}

// Found by the pgoutput fuzzer: a SQL_ASCII source sends text that is not
// UTF-8; encoding must not throw (the worker would crash-loop on the row).
TEST(Envelope, TextThatIsNotUtf8IsCarriedWithReplacementCharacters) {
  connectors::ChangeEvent e;
  e.op = common::ChangeOp::kCreate;
  e.table = {"public", "orders"};
  e.key = {{"id", "k\xff"}};
  e.after = {{"id", 1}, {"name", "caf\xe9"}};
  EncodedEvent encoded;
  ASSERT_NO_THROW(encoded = EncodeEnvelope(e, Schema()));
  auto decoded = DecodeEnvelope(encoded.key, encoded.value);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->after["name"], "caf\xef\xbf\xbd");
}

// The value is written member by member; it must read exactly as the dump
// of the whole envelope object would (sorted members, U+FFFD for bytes that
// are not UTF-8), with `columns` moved last.
TEST(Envelope, TheValueIsSpeltAsTheWholeObjectsDump) {
  auto reference = [](const connectors::ChangeEvent& e, const std::string& columns) {
    json object = {{"after", e.after_json.empty() ? e.after : json::parse(e.after_json)},
                   {"before", e.before},
                   {"op", std::string(1, common::Letter(e.op))},
                   {"schema_version", e.schema_version},
                   {"source",
                    {{"commit_lsn", e.commit_lsn},
                     {"lsn", e.lsn},
                     {"schema", e.table.schema},
                     {"snapshot", e.op == common::ChangeOp::kRead},
                     {"table", e.table.name},
                     {"ts_ms", e.commit_time_micros / 1000}}}};
    if (!e.text_columns.empty()) object["as_text"] = e.text_columns;
    if (!e.unchanged_columns.empty()) object["unchanged"] = e.unchanged_columns;
    std::string text = object.dump(-1, ' ', false, json::error_handler_t::replace);
    text.pop_back();
    return text + ",\"columns\":" + columns + "}";
  };
  const std::string columns = ColumnsJson(Schema());

  connectors::ChangeEvent update;
  update.op = common::ChangeOp::kUpdate;
  update.table = {"sch\"ema\xff", "ta\\ble\n\x01"};
  update.schema_version = 3;
  update.lsn = 99;
  update.commit_lsn = 98;
  update.commit_time_micros = 1796673523796123;
  update.before = {{"id", 6}, {"name", "old \xe9"}};
  update.after = {{"id", 7}, {"name", "new \"\\ \U0001F600"}};
  update.text_columns = {"na\"me", "\xfe", "plain"};
  update.unchanged_columns = {"big\tnote", "doc"};
  EXPECT_EQ(EnvelopeValue(update, columns), reference(update, columns));

  connectors::ChangeEvent snapshot_row;
  snapshot_row.op = common::ChangeOp::kRead;
  snapshot_row.table = {"public", "orders"};
  snapshot_row.after_json = R"({"id":1,"name":"x"})";
  EXPECT_EQ(EnvelopeValue(snapshot_row, columns), reference(snapshot_row, columns));

  connectors::ChangeEvent deleted;
  deleted.op = common::ChangeOp::kDelete;
  deleted.table = {"public", "orders"};
  deleted.before = {{"id", 1}};
  EXPECT_EQ(EnvelopeValue(deleted, columns), reference(deleted, columns));
}

TEST(Envelope, DebeziumFieldsArePresent) {
  connectors::ChangeEvent e;
  e.op = common::ChangeOp::kCreate;
  e.table = {"public", "orders"};
  e.key = {{"id", 1}};
  e.after = {{"id", 1}};
  e.lsn = 42;
  auto v = json::parse(EncodeEnvelope(e, Schema()).value);
  EXPECT_TRUE(v.contains("before"));
  EXPECT_EQ(v["op"], "c");
  EXPECT_EQ(v["source"]["lsn"], 42);
  EXPECT_EQ(v["source"]["table"], "orders");
}

TEST(Envelope, GarbageIsRefusedWithAReason) {
  EXPECT_FALSE(DecodeEnvelope("", "not json").ok());
  EXPECT_FALSE(DecodeEnvelope("{\"id\":1}", "{\"op\":\"z\"}").ok());
  EXPECT_FALSE(DecodeEnvelope("", "{\"op\":\"c\",\"after\":{}}").ok());  // no key
}

// Columns are parsed once per distinct list; envelopes whose key order
// differs, or whose strings merely look like the marker, decode the same.
TEST(Envelope, ColumnsAnywhereAndMarkerLookalikesDecodeTheSame) {
  connectors::ChangeEvent e;
  e.op = common::ChangeOp::kCreate;
  e.table = {"public", "orders"};
  e.key = {{"id", 1}};
  e.after = {{"id", 1}, {"name", ",\"columns\":[]}"}};
  auto encoded = EncodeEnvelope(e, Schema());
  auto first = DecodeEnvelope(encoded.key, encoded.value);
  auto again = DecodeEnvelope(encoded.key, encoded.value);  // the cached column list
  ASSERT_TRUE(first.ok() && again.ok()) << first.status().ToString();
  EXPECT_EQ(first->after["name"], ",\"columns\":[]}");
  EXPECT_EQ(again->columns, first->columns);
  ASSERT_EQ(first->columns.size(), 2u);
  // The same envelope with `columns` first (as another producer may write it).
  json reordered = json::parse(encoded.value);
  std::string columns_first =
      "{\"columns\":" + reordered["columns"].dump() + "," + reordered.dump().substr(1);
  auto other = DecodeEnvelope(encoded.key, columns_first);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_EQ(other->columns, first->columns);
  EXPECT_EQ(other->after, first->after);
  // A nested "columns" array in an envelope that also ends in "]}".
  std::string lookalike =
      R"({"op":"c","after":{"id":2,"name":"x"},"meta":{"k":1,"columns":[1]},"tags":[1]})";
  auto odd = DecodeEnvelope(R"({"id":2})", lookalike);
  ASSERT_TRUE(odd.ok()) << odd.status().ToString();
  EXPECT_TRUE(odd->columns.empty());
  EXPECT_EQ(odd->after["name"], "x");
}

// What the in-place path reads of a row change, as views into its message.
TEST(Envelope, RowChangesAreViewedInPlaceAndWhatNeedsDecodingIsNot) {
  connectors::ChangeEvent e;
  e.table = {"public", "orders"};
  e.key = {{"id", 7}};
  e.op = common::ChangeOp::kUpdate;
  e.after = {{"id", 7}};
  e.unchanged_columns = {"name"};  // unchanged TOAST, absent from the image
  auto update = EncodeEnvelope(e, Schema());
  auto view = ViewRowChange(update.value);
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->op, common::ChangeOp::kUpdate);
  EXPECT_EQ(json::parse(view->image), (json{{"id", 7}}));
  EXPECT_EQ(json::parse(view->unchanged), (json{"name"}));
  EXPECT_EQ(json::parse(view->columns).size(), 2u);
  // The views point into the message itself.
  EXPECT_GE(view->image.data(), update.value.data());
  EXPECT_LE(view->image.data() + view->image.size(), update.value.data() + update.value.size());

  e.op = common::ChangeOp::kDelete;
  e.before = {{"id", 7}};
  e.after = nullptr;
  e.unchanged_columns.clear();
  auto deleted = ViewRowChange(EncodeEnvelope(e, Schema()).value);
  ASSERT_TRUE(deleted.has_value());
  EXPECT_EQ(deleted->op, common::ChangeOp::kDelete);
  EXPECT_TRUE(deleted->image.empty());

  e.op = common::ChangeOp::kCreate;
  e.before = nullptr;
  e.after = {{"id", 7}, {"name", "x"}};
  auto created = ViewRowChange(EncodeEnvelope(e, Schema()).value);
  ASSERT_TRUE(created.has_value());
  EXPECT_TRUE(created->unchanged.empty());

  // An update with a before image (a key change, REPLICA IDENTITY FULL)
  // and a truncate take the decoded path.
  e.op = common::ChangeOp::kUpdate;
  e.before = {{"id", 3}};
  EXPECT_FALSE(ViewRowChange(EncodeEnvelope(e, Schema()).value).has_value());
  e.op = common::ChangeOp::kTruncate;
  e.before = nullptr;
  e.after = nullptr;
  EXPECT_FALSE(ViewRowChange(EncodeEnvelope(e, Schema()).value).has_value());
  EXPECT_FALSE(ViewRowChange(R"({"op":"u","after":[1],"columns":[]})").has_value());
  EXPECT_FALSE(ViewRowChange("not json").has_value());
}

TEST(Envelope, ValuesCarriedAsTextAreNamedAndKeepTheirText) {
  connectors::ChangeEvent e;
  e.op = common::ChangeOp::kCreate;
  e.table = {"public", "orders"};
  e.key = {{"id", 7}};
  e.after = {{"id", 7}, {"name", R"({"n": 1e400})"}};
  e.text_columns = {"name"};
  auto encoded = EncodeEnvelope(e, Schema());
  // Viewed in place, the values carried as text are named beside the image.
  auto view = ViewRowChange(encoded.value);
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(json::parse(view->as_text), json::array({"name"}));
  EXPECT_EQ(json::parse(view->image)["name"], R"({"n": 1e400})");
  auto decoded = DecodeEnvelope(encoded.key, encoded.value);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->after["name"], R"({"n": 1e400})");
  EXPECT_EQ(decoded->as_text, std::vector<std::string>{"name"});
  EXPECT_TRUE(decoded->old_key.is_null());
}

TEST(Envelope, AnUpdateThatChangedTheKeyCarriesTheOldKey) {
  connectors::ChangeEvent e;
  e.op = common::ChangeOp::kUpdate;
  e.table = {"public", "orders"};
  e.key = {{"id", 30}};
  e.before = {{"id", 3}};  // pgoutput's old-key tuple
  e.after = {{"id", 30}, {"name", "x"}};
  auto encoded = EncodeEnvelope(e, Schema());
  auto decoded = DecodeEnvelope(encoded.key, encoded.value);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->old_key, (json{{"id", 3}}));
  // The same key before and after (REPLICA IDENTITY FULL sends the old row
  // on every update) is no key change.
  e.key = {{"id", 3}};
  e.before = {{"id", 3}, {"name", "old"}};
  e.after = {{"id", 3}, {"name", "new"}};
  encoded = EncodeEnvelope(e, Schema());
  decoded = DecodeEnvelope(encoded.key, encoded.value);
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(decoded->old_key.is_null());
}

}  // namespace
}  // namespace sluice::dataflow
