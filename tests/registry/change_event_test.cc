// The Debezium-like change envelope, in both formats.
#include "registry/change_event.h"

#include <gtest/gtest.h>

#include "registry/avro_codec.h"
#include "registry/wire_format.h"

namespace sluice::registry {
namespace {

using nlohmann::json;

TableSpec Orders() {
  return TableSpec{"shop",
                   "appdb",
                   "public",
                   "orders",
                   {{"id", "long", false},
                    {"note", "string", true},
                    {"placed_at", {{"type", "long"}, {"logicalType", "timestamp-micros"}}, true}}};
}

Change Insert() {
  Change c;
  c.op = common::ChangeOp::kCreate;
  c.after = json{{"id", 1}, {"note", "hi"}, {"placed_at", 1700000000000000}};
  c.source.lsn = 123456;
  c.source.ts_ms = 1700000000000;
  c.ts_ms = 1700000000123;
  return c;
}

TEST(ChangeEvent, EnvelopeSchemaHasDebeziumFields) {
  auto schema = avro::Schema::FromJson(EnvelopeSchema(Orders()));
  ASSERT_TRUE(schema.ok()) << schema.status().message();
  const auto& root = (*schema)->root();
  EXPECT_EQ(root.full_name, "shop.public.orders.Envelope");
  std::vector<std::string> names;
  for (const auto& f : root.fields) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"before", "after", "source", "op", "ts_ms"}));
  const avro::Node* value = (*schema)->FindNamed("shop.public.orders.Value");
  ASSERT_NE(value, nullptr);
  EXPECT_EQ(value->fields[0].type->type, avro::Type::kLong);   // NOT NULL column
  EXPECT_EQ(value->fields[1].type->type, avro::Type::kUnion);  // nullable column
  EXPECT_TRUE(value->fields[1].default_value->is_null());
  const avro::Node* source = (*schema)->FindNamed("io.sluice.Source");
  ASSERT_NE(source, nullptr);
  EXPECT_GE(source->FieldIndex("lsn"), 0);
  EXPECT_GE(source->FieldIndex("ts_ms"), 0);
  EXPECT_GE(source->FieldIndex("table"), 0);
}

TEST(ChangeEvent, AvroEventIsWireFramedAndDecodesBack) {
  auto enc = ChangeEventEncoder::Create(Orders(), EventFormat::kAvro);
  ASSERT_TRUE(enc.ok()) << enc.status().message();
  EXPECT_EQ(enc->value_subject(), "shop.public.orders-value");
  auto bytes = enc->Encode(Insert(), 42);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto framed = UnframeMessage(*bytes);
  ASSERT_TRUE(framed.ok());
  EXPECT_EQ(framed->schema_id, 42);
  auto schema = avro::Schema::Parse(enc->schema_text());
  auto datum = avro::Decode(**schema, framed->payload);
  ASSERT_TRUE(datum.ok()) << datum.status().message();
  EXPECT_EQ((*datum)["op"], "c");
  EXPECT_TRUE((*datum)["before"].is_null());
  EXPECT_EQ((*datum)["after"]["note"], "hi");
  EXPECT_EQ((*datum)["source"]["lsn"], 123456);
  EXPECT_EQ((*datum)["source"]["table"], "orders");
  EXPECT_EQ((*datum)["ts_ms"], 1700000000123);
}

TEST(ChangeEvent, JsonEventIsTheSameEnvelopeAsText) {
  auto enc = ChangeEventEncoder::Create(Orders(), EventFormat::kJson);
  ASSERT_TRUE(enc.ok());
  Change del;
  del.op = common::ChangeOp::kDelete;
  del.before = json{{"id", 9}, {"note", nullptr}};
  auto text = enc->Encode(del, 0);
  ASSERT_TRUE(text.ok()) << text.status().message();
  json env = json::parse(*text);
  EXPECT_EQ(env["op"], "d");
  EXPECT_TRUE(env["after"].is_null());
  EXPECT_EQ(env["before"]["id"], 9);
  EXPECT_TRUE(env["before"]["placed_at"].is_null());  // absent column reads as null
  EXPECT_TRUE(env["source"]["lsn"].is_null());
}

TEST(ChangeEvent, EveryOpRoundTripsInAvro) {
  auto enc = ChangeEventEncoder::Create(Orders(), EventFormat::kAvro);
  auto schema = avro::Schema::Parse(enc->schema_text());
  for (common::ChangeOp op : {common::ChangeOp::kCreate, common::ChangeOp::kUpdate,
                              common::ChangeOp::kDelete, common::ChangeOp::kRead}) {
    Change c = Insert();
    c.op = op;
    c.before = json{{"id", 1}, {"note", "old"}};
    auto bytes = enc->Encode(c, 1);
    ASSERT_TRUE(bytes.ok()) << bytes.status().message();
    auto datum = avro::Decode(**schema, UnframeMessage(*bytes)->payload);
    ASSERT_TRUE(datum.ok());
    EXPECT_EQ((*datum)["op"], std::string(1, static_cast<char>(op)));
  }
}

TEST(ChangeEvent, OpWithoutItsRowImageIsRejected) {
  auto enc = ChangeEventEncoder::Create(Orders(), EventFormat::kAvro);
  Change c;
  c.op = common::ChangeOp::kCreate;
  EXPECT_FALSE(enc->Encode(c, 1).ok());
  c.op = common::ChangeOp::kDelete;
  EXPECT_FALSE(enc->Encode(c, 1).ok());
}

TEST(ChangeEvent, NullInNotNullColumnIsRejected) {
  auto enc = ChangeEventEncoder::Create(Orders(), EventFormat::kAvro);
  Change c = Insert();
  c.after = json{{"note", "no id"}};
  auto r = enc->Encode(c, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("id"), std::string::npos);
}

TEST(ChangeEvent, InvalidColumnTypeFailsCreate) {
  TableSpec t = Orders();
  t.columns.push_back({"bad", "nosuchtype", false});
  EXPECT_FALSE(ChangeEventEncoder::Create(t, EventFormat::kAvro).ok());
}

TEST(ChangeEvent, ColumnNamesAreMadeAvroSafe) {
  TableSpec t{"srv", "db", "my-schema", "2024 table", {{"weird col", "int", true}}};
  auto enc = ChangeEventEncoder::Create(t, EventFormat::kAvro);
  ASSERT_TRUE(enc.ok()) << enc.status().message();
  Change c;
  c.after = json{{"weird col", 5}};
  auto bytes = enc->Encode(c, 3);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto datum =
      avro::Decode(**avro::Schema::Parse(enc->schema_text()), UnframeMessage(*bytes)->payload);
  EXPECT_EQ((*datum)["after"]["weird_col"], 5);
}

}  // namespace
}  // namespace sluice::registry
