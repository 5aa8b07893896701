// SchemaRepository against a real, migrated PostgreSQL: dedupe, version
// numbering, soft/hard deletes and per-subject compatibility.
#include "registry/repository.h"

#include <gtest/gtest.h>

#include "registry/user_schemas.h"
#include "support/test_database.h"

namespace sluice::registry {
namespace {

using testing::kUserV1;
using testing::kUserV2;
// Adds a field with no default: a reader of V1 data cannot fill it.
const char* kUserEmailRequired =
    R"({"type":"record","name":"User","fields":[{"name":"id","type":"long"},
  {"name":"email","type":"string"}]})";

class RepositoryTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(repo_.EnsureTables().ok()); }

  long Count(const std::string& sql) {
    return db_.Transact([&](pqxx::work& tx) { return tx.exec1(sql)[0].as<long>(); });
  }

  testing::TestDatabase test_db_;
  store::Database db_{test_db_.url()};
  SchemaRepository repo_{db_};
};

TEST_F(RepositoryTest, EnsureTablesIsIdempotent) {
  EXPECT_TRUE(repo_.EnsureTables().ok());
  EXPECT_TRUE(repo_.EnsureTables().ok());
}

TEST_F(RepositoryTest, SameSchemaUnderTwentySubjectsIsOneSchemaRowAndTwentyVersions) {
  int first = 0;
  for (int i = 0; i < 20; ++i) {
    auto id = repo_.Register("topic" + std::to_string(i) + "-value", SchemaType::kAvro, kUserV1);
    ASSERT_TRUE(id.ok()) << id.error().message;
    if (i == 0) first = *id;
    EXPECT_EQ(*id, first);
  }
  EXPECT_EQ(Count("SELECT count(*) FROM schema"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM schema_version"), 20);
  EXPECT_EQ(Count("SELECT count(*) FROM schema_version WHERE version = 1"), 20);
}

TEST_F(RepositoryTest, ReRegisteringIdenticalContentIsANoOp) {
  auto a = repo_.Register("s", SchemaType::kAvro, kUserV1);
  // Same content, different whitespace and key order.
  auto b = repo_.Register("s", SchemaType::kAvro,
                          R"({ "fields": [ {"type": "long", "name": "id"} ], "name": "User",
                               "type": "record" })");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(*repo_.Versions("s", false), std::vector<int>{1});
}

TEST_F(RepositoryTest, VersionsCountFromOnePerSubject) {
  ASSERT_TRUE(repo_.Register("a", SchemaType::kAvro, kUserV1).ok());
  ASSERT_TRUE(repo_.Register("a", SchemaType::kAvro, kUserV2).ok());
  ASSERT_TRUE(repo_.Register("b", SchemaType::kAvro, kUserV2).ok());
  EXPECT_EQ(*repo_.Versions("a", false), (std::vector<int>{1, 2}));
  EXPECT_EQ(*repo_.Versions("b", false), std::vector<int>{1});
  auto latest = repo_.GetVersion("a", "latest", false);
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->version, 2);
  EXPECT_EQ(latest->schema, kUserV2);  // stored verbatim
  EXPECT_EQ(repo_.GetVersion("b", "1", false)->id, latest->id);
}

TEST_F(RepositoryTest, IncompatibleSchemaIsRefusedWithReasons) {
  ASSERT_TRUE(repo_.Register("s", SchemaType::kAvro, kUserV1).ok());
  auto r = repo_.Register("s", SchemaType::kAvro, kUserEmailRequired);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, error_code::kIncompatibleSchema);
  EXPECT_EQ(r.error().http_status(), 409);
  EXPECT_NE(r.error().message.find("email"), std::string::npos);
  EXPECT_EQ(Count("SELECT count(*) FROM schema_version"), 1);
}

TEST_F(RepositoryTest, InvalidSchemaIsRefusedWithTheParserError) {
  auto r = repo_.Register("s", SchemaType::kAvro, R"({"type":"record","name":"R"})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, error_code::kInvalidSchema);
  EXPECT_EQ(r.error().http_status(), 422);
  EXPECT_NE(r.error().message.find("Record has no fields"), std::string::npos);
}

TEST_F(RepositoryTest, SubjectLevelNoneAdmitsABreakingChange) {
  ASSERT_TRUE(repo_.Register("s", SchemaType::kAvro, kUserV1).ok());
  ASSERT_TRUE(repo_.SetCompatibility(std::string("s"), Compatibility::kNone).ok());
  EXPECT_TRUE(repo_.Register("s", SchemaType::kAvro, kUserEmailRequired).ok());
  // Other subjects keep the global default.
  ASSERT_TRUE(repo_.Register("t", SchemaType::kAvro, kUserV1).ok());
  EXPECT_FALSE(repo_.Register("t", SchemaType::kAvro, kUserEmailRequired).ok());
}

TEST_F(RepositoryTest, CompatibilityDefaultsToBackwardAndSubjectLevelIsOptional) {
  EXPECT_EQ(*repo_.GetCompatibility(std::nullopt, false), Compatibility::kBackward);
  auto none = repo_.GetCompatibility(std::string("s"), false);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, error_code::kSubjectLevelCompatibilityNotConfigured);
  ASSERT_TRUE(repo_.SetCompatibility(std::nullopt, Compatibility::kFull).ok());
  EXPECT_EQ(*repo_.GetCompatibility(std::string("s"), true), Compatibility::kFull);
}

TEST_F(RepositoryTest, SoftDeletedVersionHidesButKeepsCountingAndIdResolves) {
  int id1 = *repo_.Register("s", SchemaType::kAvro, kUserV1);
  ASSERT_TRUE(repo_.Register("s", SchemaType::kAvro, kUserV2).ok());
  auto deleted = repo_.DeleteVersion("s", "2", false);
  ASSERT_TRUE(deleted.ok()) << deleted.error().message;
  EXPECT_EQ(*repo_.Versions("s", false), std::vector<int>{1});
  EXPECT_EQ(*repo_.Versions("s", true), (std::vector<int>{1, 2}));
  EXPECT_EQ(repo_.DeleteVersion("s", "2", false).error().code, error_code::kVersionSoftDeleted);
  // Re-registering the deleted content makes a new version.
  ASSERT_TRUE(repo_.Register("s", SchemaType::kAvro, kUserV2).ok());
  EXPECT_EQ(*repo_.Versions("s", false), (std::vector<int>{1, 3}));
  EXPECT_TRUE(repo_.GetSchema(id1).ok());
}

TEST_F(RepositoryTest, PermanentDeleteNeedsASoftDeleteFirst) {
  ASSERT_TRUE(repo_.Register("s", SchemaType::kAvro, kUserV1).ok());
  EXPECT_EQ(repo_.DeleteSubject("s", true).error().code, error_code::kSubjectNotSoftDeleted);
  EXPECT_EQ(*repo_.DeleteSubject("s", false), std::vector<int>{1});
  EXPECT_EQ(repo_.DeleteSubject("s", false).error().code, error_code::kSubjectSoftDeleted);
  EXPECT_EQ(repo_.Versions("s", false).error().code, error_code::kSubjectNotFound);
  EXPECT_EQ(*repo_.DeleteSubject("s", true), std::vector<int>{1});
  EXPECT_EQ(Count("SELECT count(*) FROM schema_version"), 0);
  EXPECT_EQ(repo_.DeleteSubject("s", false).error().code, error_code::kSubjectNotFound);
}

TEST_F(RepositoryTest, LookupFindsTheVersionByContent) {
  ASSERT_TRUE(repo_.Register("s", SchemaType::kAvro, kUserV1).ok());
  ASSERT_TRUE(repo_.Register("s", SchemaType::kAvro, kUserV2).ok());
  auto v = repo_.Lookup("s", SchemaType::kAvro, kUserV1, false);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->version, 1);
  EXPECT_EQ(repo_.Lookup("s", SchemaType::kAvro, kUserEmailRequired, false).error().code,
            error_code::kSchemaNotFound);
  EXPECT_EQ(repo_.Lookup("nope", SchemaType::kAvro, kUserV1, false).error().code,
            error_code::kSubjectNotFound);
}

TEST_F(RepositoryTest, JsonAndAvroSchemasAreStoredWithTheirType) {
  auto id = repo_.Register("j", SchemaType::kJson, R"({"type":"object"})");
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(repo_.GetSchema(*id)->type, SchemaType::kJson);
  EXPECT_EQ(Count("SELECT count(*) FROM schema WHERE type = 'json'"), 1);
}

TEST_F(RepositoryTest, BadVersionIdsAreInvalid) {
  ASSERT_TRUE(repo_.Register("s", SchemaType::kAvro, kUserV1).ok());
  EXPECT_EQ(repo_.GetVersion("s", "zero", false).error().code, error_code::kInvalidVersion);
  EXPECT_EQ(repo_.GetVersion("s", "0", false).error().code, error_code::kInvalidVersion);
  EXPECT_EQ(repo_.GetVersion("s", "7", false).error().code, error_code::kVersionNotFound);
}

}  // namespace
}  // namespace sluice::registry
