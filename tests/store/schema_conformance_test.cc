// The live catalog of a freshly migrated database, checked against the spec
// text: every table, column, type, nullability, reference, index and
// uniqueness the spec names, and nothing it does not.
#include <gtest/gtest.h>

#include <algorithm>
#include <pqxx/pqxx>
#include <set>

#include "store/migrations.h"
#include "store/spec_model.h"
#include "support/test_database.h"

namespace sluice::testing {
namespace {

class SchemaConformance : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    spec_ = new std::map<std::string, SpecTable>(LoadSpec(SpecPath()));
    db_ = new TestDatabase();
  }
  static void TearDownTestSuite() {
    delete db_;
    delete spec_;
  }
  pqxx::result Query(const std::string& sql) {
    pqxx::connection c(db_->url());
    pqxx::nontransaction tx(c);
    return tx.exec(sql);
  }
  static std::map<std::string, SpecTable>* spec_;
  static TestDatabase* db_;
};
std::map<std::string, SpecTable>* SchemaConformance::spec_ = nullptr;
TestDatabase* SchemaConformance::db_ = nullptr;

std::string ExpectedPgType(const std::string& table, const SpecColumn& col) {
  std::string t = col.type;
  if (t == "DATETIME") {
    // The spec calls out the one timezone-aware DATETIME in its description.
    return col.description.find("timezone-aware") != std::string::npos
               ? "timestamp with time zone"
               : "timestamp without time zone";
  }
  if (t.rfind("VARCHAR(", 0) == 0) return "character varying" + t.substr(7);
  static const std::map<std::string, std::string> kTypes = {
      {"UUID", "uuid"},       {"VARCHAR", "character varying"},
      {"JSON", "json"},       {"JSONB", "jsonb"},
      {"BOOLEAN", "boolean"}, {"INTEGER", "integer"},
      {"BIGINT", "bigint"},   {"TEXT", "text"},
      {"DATE", "date"}};
  auto it = kTypes.find(t);
  if (it == kTypes.end()) ADD_FAILURE() << table << "." << col.name << ": unknown spec type " << t;
  return it == kTypes.end() ? t : it->second;
}

// "lower((name)::text)" and "lower(name)" both become "lower(name)"; spaces go.
std::string NormaliseIndexColumns(std::string s) {
  for (std::string cast : {"::text", "::character varying"}) {
    for (auto p = s.find(cast); p != std::string::npos; p = s.find(cast)) s.erase(p, cast.size());
  }
  std::string out;
  for (char c : s)
    if (c != ' ' && c != '(' && c != ')' && c != '"') out.push_back(c);
  return out;
}

struct LiveIndex {
  std::string name;
  std::string columns;  // normalised
  bool unique;
  std::string predicate;
};

std::vector<LiveIndex> LiveIndexes(pqxx::result rows) {
  std::vector<LiveIndex> out;
  for (const auto& r : rows) {
    std::string def = r["indexdef"].c_str();
    auto open = def.find("USING btree (");
    auto where = def.find(" WHERE ");
    std::string cols =
        def.substr(open + 13, (where == std::string::npos ? def.size() : where) - (open + 13) - 1);
    out.push_back({r["indexname"].c_str(), NormaliseIndexColumns(cols),
                   def.find("CREATE UNIQUE") == 0,
                   where == std::string::npos ? "" : def.substr(where + 7)});
  }
  return out;
}

TEST_F(SchemaConformance, SpecDescribesThirtyTablesAndFiftyThreeReferences) {
  ASSERT_EQ(spec_->size(), 30u);
  std::size_t refs = 0, fks = 0;
  for (const auto& [name, t] : *spec_) {
    refs += t.references.size();
    for (const auto& r : t.references) fks += r.has_foreign_key;
  }
  EXPECT_EQ(refs, 53u);
  EXPECT_EQ(fks, 41u);
}

TEST_F(SchemaConformance, DatabaseHoldsExactlyTheSpecTablesPlusMigrationBookkeeping) {
  std::set<std::string> live;
  for (const auto& r : Query("SELECT table_name FROM information_schema.tables "
                             "WHERE table_schema = 'public'"))
    live.insert(r[0].c_str());
  std::set<std::string> expected = {store::kMigrationsTable};
  for (const auto& [name, t] : *spec_) expected.insert(name);
  EXPECT_EQ(live, expected);
}

TEST_F(SchemaConformance, EveryColumnHasTheSpecTypeAndNullability) {
  for (const auto& [table, spec] : *spec_) {
    auto rows = Query(
        "SELECT column_name, format_type(a.atttypid, a.atttypmod) AS type, "
        "a.attnotnull AS not_null FROM information_schema.columns c "
        "JOIN pg_attribute a ON a.attrelid = ('public.\"' || c.table_name || '\"')::regclass "
        "AND a.attname = c.column_name WHERE c.table_schema = 'public' "
        "AND c.table_name = '" +
        table + "'");
    std::map<std::string, std::pair<std::string, bool>> live;
    for (const auto& r : rows) live[r[0].c_str()] = {r[1].c_str(), r[2].as<bool>()};
    EXPECT_EQ(live.size(), spec.columns.size()) << table << ": column count";
    for (const auto& col : spec.columns) {
      auto it = live.find(col.name);
      if (it == live.end()) {
        ADD_FAILURE() << table << "." << col.name << " is missing";
        continue;
      }
      EXPECT_EQ(it->second.first, ExpectedPgType(table, col)) << table << "." << col.name;
      EXPECT_EQ(it->second.second, col.required) << table << "." << col.name << " nullability";
    }
  }
}

TEST_F(SchemaConformance, EveryTableIsKeyedByAnApplicationGeneratedUuid) {
  for (const auto& [table, spec] : *spec_) {
    auto pk = Query(
        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
        "AND a.attnum = ANY(i.indkey) WHERE i.indisprimary AND i.indrelid = "
        "'public.\"" +
        table + "\"'::regclass");
    ASSERT_EQ(pk.size(), 1u) << table;
    EXPECT_STREQ(pk[0][0].c_str(), "id") << table;
    auto def = Query("SELECT column_default FROM information_schema.columns WHERE table_name = '" +
                     table + "' AND column_name = 'id'");
    EXPECT_TRUE(def[0][0].is_null()) << table << ".id must have no database default";
  }
}

TEST_F(SchemaConformance, ForeignKeysMatchTheSpecIncludingOnDelete) {
  auto rows = Query(
      "SELECT cl.relname AS tbl, a.attname AS col, rt.relname AS ref_tbl, ra.attname AS ref_col, "
      "c.confdeltype AS del FROM pg_constraint c JOIN pg_class cl ON cl.oid = c.conrelid "
      "JOIN pg_class rt ON rt.oid = c.confrelid "
      "JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1] "
      "JOIN pg_attribute ra ON ra.attrelid = c.confrelid AND ra.attnum = c.confkey[1] "
      "WHERE c.contype = 'f'");
  std::map<std::string, std::string> live;  // "tbl.col" -> "ref_tbl.ref_col del"
  for (const auto& r : rows)
    live[std::string(r["tbl"].c_str()) + "." + r["col"].c_str()] =
        std::string(r["ref_tbl"].c_str()) + "." + r["ref_col"].c_str() + " " + r["del"].c_str();
  static const std::map<std::string, std::string> kDelete = {
      {"", "a"}, {"CASCADE", "c"}, {"SET NULL", "n"}, {"RESTRICT", "r"}};
  std::size_t expected_fks = 0;
  for (const auto& [table, spec] : *spec_) {
    for (const auto& ref : spec.references) {
      std::string key = table + "." + ref.column;
      if (!ref.has_foreign_key) {
        EXPECT_EQ(live.count(key), 0u) << key << " must deliberately have no foreign key";
        continue;
      }
      ++expected_fks;
      ASSERT_EQ(live.count(key), 1u) << key << " lacks its foreign key";
      EXPECT_EQ(live[key],
                ref.target_table + "." + ref.target_column + " " + kDelete.at(ref.on_delete))
          << key;
    }
  }
  EXPECT_EQ(live.size(), expected_fks) << "a foreign key the spec does not name exists";
}

TEST_F(SchemaConformance, IndexesAndUniquenessMatchTheSpec) {
  for (const auto& [table, spec] : *spec_) {
    auto live =
        LiveIndexes(Query("SELECT indexname, indexdef FROM pg_indexes WHERE "
                          "schemaname = 'public' AND tablename = '" +
                          table + "'"));
    auto find = [&](const std::string& cols, bool unique) {
      auto want = NormaliseIndexColumns(cols);
      return std::find_if(live.begin(), live.end(), [&](const LiveIndex& i) {
        return i.columns == want && i.unique == unique;
      });
    };
    std::size_t expected = 1;  // the primary key
    for (const auto& idx : spec.indexes) {
      ++expected;
      EXPECT_TRUE(find(idx.columns, idx.unique) != live.end())
          << table << ": missing " << (idx.unique ? "unique " : "") << "index (" << idx.columns
          << ")";
    }
    for (const auto& cols : spec.unique_together) {
      ++expected;
      EXPECT_TRUE(find(cols, true) != live.end()) << table << ": missing unique (" << cols << ")";
    }
    EXPECT_EQ(live.size(), expected) << table << ": index count";
  }
}

TEST_F(SchemaConformance, PartialUniqueIndexesCarryTheirPredicates) {
  auto predicate = [&](const std::string& table, const std::string& cols) {
    auto live = LiveIndexes(Query("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = '" +
                                  table + "' AND indexdef LIKE 'CREATE UNIQUE%'"));
    for (const auto& i : live)
      if (i.columns == NormaliseIndexColumns(cols)) return i.predicate;
    return std::string("<no such index>");
  };
  EXPECT_EQ(predicate("subscription", "datamodel_id, target_connector_id, target_table_name"),
            "requires_unique_destination");
  EXPECT_EQ(predicate("resource_event", "fingerprint"), "(closed_at IS NULL)");
  EXPECT_EQ(predicate("backfill_run", "source_connector_id"), "((status)::text = 'running'::text)");
}

TEST_F(SchemaConformance, OccurrenceSeqIsDrawnFromASequence) {
  auto def = Query(
      "SELECT column_default FROM information_schema.columns WHERE "
      "table_name = 'resource_event_occurrence' AND column_name = 'seq'");
  ASSERT_FALSE(def[0][0].is_null());
  EXPECT_NE(std::string(def[0][0].c_str()).find("nextval"), std::string::npos);
}

}  // namespace
}  // namespace sluice::testing
