// Proof of compatibility with clients we did not write: Debian's
// python3-confluent-kafka SchemaRegistryClient and python3-avro drive a real
// RegistryServer and decode (and produce) change events in the wire format.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/uuid.h"
#include "registry/avro_codec.h"
#include "registry/change_event.h"
#include "registry/server.h"
#include "registry/wire_format.h"
#include "support/test_database.h"

namespace sluice::registry {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

void WriteFile(const fs::path& p, const std::string& data) {
  std::ofstream out(p, std::ios::binary);
  out << data;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ConfluentClient, PythonClientRegistersFetchesAndDecodesOurChangeEvents) {
  const char* src = std::getenv("SLUICE_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "run through ctest";
  testing::TestDatabase test_db;
  store::Database db(test_db.url());
  RegistryServer server(db);
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  std::string url = "http://127.0.0.1:" + std::to_string(server.port());

  TableSpec table{"shop",
                  "appdb",
                  "public",
                  "orders",
                  {{"id", "long", false},
                   {"note", "string", true},
                   {"amount", "double", true},
                   {"paid", "boolean", false},
                   {"placed_at", {{"type", "long"}, {"logicalType", "timestamp-micros"}}, true}}};
  auto enc = ChangeEventEncoder::Create(table, EventFormat::kAvro);
  ASSERT_TRUE(enc.ok());
  httplib::Client http("127.0.0.1", server.port());
  auto reg = http.Post(("/subjects/" + enc->value_subject() + "/versions").c_str(),
                       json{{"schema", enc->schema_text()}}.dump(),
                       "application/vnd.schemaregistry.v1+json");
  ASSERT_TRUE(reg);
  ASSERT_EQ(reg->status, 200) << reg->body;
  int id = json::parse(reg->body)["id"];

  Change c;
  c.op = common::ChangeOp::kCreate;
  c.after = json{{"id", 42},
                 {"note", "héllo"},
                 {"amount", 9.5},
                 {"paid", true},
                 {"placed_at", 1700000000000000}};
  c.source.lsn = 987654321;
  c.source.ts_ms = 1700000000000;
  c.ts_ms = 1700000000500;
  auto message = enc->Encode(c, id);
  ASSERT_TRUE(message.ok()) << message.status().message();
  auto expected = enc->Envelope(c);

  fs::path work = fs::temp_directory_path() / ("sluice-registry-" + common::Uuid::V4().ToString());
  fs::create_directories(work);
  WriteFile(work / "envelope.avsc", enc->schema_text());
  WriteFile(work / "schema_id", std::to_string(id));
  WriteFile(work / "message.bin", *message);
  WriteFile(work / "expected.json", expected->dump());

  std::string cmd = "/usr/bin/python3 " + std::string(src) +
                    "/tests/registry/confluent_client_check.py " + url + " " + work.string() +
                    " > " + (work / "out.txt").string() + " 2>&1";
  int rc = std::system(cmd.c_str());
  std::string out = ReadFile(work / "out.txt");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ALL CHECKS PASSED"), std::string::npos) << out;

  // The message Apache Avro wrote decodes with our decoder.
  if (rc == 0) {
    std::string theirs_bytes = ReadFile(work / "python_message.bin");
    auto framed = UnframeMessage(theirs_bytes);  // views into theirs_bytes
    ASSERT_TRUE(framed.ok());
    EXPECT_EQ(framed->schema_id, id);
    auto schema = avro::Schema::Parse(enc->schema_text());
    auto datum = avro::Decode(**schema, framed->payload);
    ASSERT_TRUE(datum.ok()) << datum.status().message();
    json theirs = json::parse(ReadFile(work / "python_datum.json"));
    EXPECT_EQ((*datum)["op"], "u");
    EXPECT_EQ((*datum)["before"], theirs["before"]);
    EXPECT_EQ((*datum)["source"], theirs["source"]);
  }
  server.Stop();
  fs::remove_all(work);
}

}  // namespace
}  // namespace sluice::registry
