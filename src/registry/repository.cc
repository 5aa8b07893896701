#include "registry/repository.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <exception>

#include "common/time.h"
#include "common/uuid.h"

namespace sluice::registry {

namespace ec = error_code;

namespace {

// pg_advisory_xact_lock key ("sluicreg"): serializes DDL and registrations.
constexpr long long kRegistryLockKey = 0x736c'7569'6372'6567LL;
constexpr const char* kGlobal = "";

// The registry's tables come from migration 0002; schemas written without
// the registry (a worker's first registration races none) get their int ids.
constexpr const char* kAssignIds = R"sql(
INSERT INTO sluice_state.registry_schema_id (schema_id)
  SELECT s.id FROM schema s
  WHERE NOT EXISTS (SELECT 1 FROM sluice_state.registry_schema_id m WHERE m.schema_id = s.id)
  ORDER BY s.created_at NULLS FIRST, s.id;
)sql";

// Every version row of a subject, oldest first.
constexpr const char* kSelectVersions = R"sql(
SELECT v.id, v.version, m.id, s.type, s.schema, d.schema_version_id IS NOT NULL
FROM schema_version v
JOIN schema s ON s.id = v.schema_id
JOIN sluice_state.registry_schema_id m ON m.schema_id = s.id
LEFT JOIN sluice_state.registry_deleted_version d ON d.schema_version_id = v.id
WHERE v.subject = $1
ORDER BY v.version
)sql";

struct Row {
  std::string uuid;  // schema_version.id
  SchemaVersion v;
};

std::string Now() { return common::FormatUtc(common::Clock::now()); }

SchemaType TypeFromColumn(const std::string& c) {
  return c == "json" ? SchemaType::kJson : SchemaType::kAvro;
}

std::vector<Row> LoadVersions(pqxx::work& tx, const std::string& subject) {
  std::vector<Row> out;
  for (const auto& r : tx.exec_params(kSelectVersions, subject)) {
    Row row;
    row.uuid = r[0].as<std::string>();
    row.v.subject = subject;
    row.v.version = r[1].as<int>();
    row.v.id = r[2].as<int>();
    row.v.type = TypeFromColumn(r[3].as<std::string>());
    row.v.schema = r[4].as<std::string>();
    row.v.deleted = r[5].as<bool>();
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<Row> Live(std::vector<Row> rows, bool include_deleted) {
  if (include_deleted) return rows;
  rows.erase(std::remove_if(rows.begin(), rows.end(), [](const Row& r) { return r.v.deleted; }),
             rows.end());
  return rows;
}

RegistryError SubjectNotFound(const std::string& subject) {
  return {ec::kSubjectNotFound, fmt::format("Subject '{}' not found.", subject)};
}

RegistryError VersionNotFound(const std::string& subject, int version) {
  return {ec::kVersionNotFound,
          fmt::format("Version {} not found for subject '{}'.", version, subject)};
}

// -1 means latest.
Outcome<int> ParseVersion(const std::string& text) {
  if (text == "latest" || text == "-1") return -1;
  int v = 0;
  auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (err != std::errc() || end != text.data() + text.size() || v < 1) {
    return RegistryError{ec::kInvalidVersion,
                         fmt::format("The specified version '{}' is not a valid version id. "
                                     "Allowed values are between [1, 2^31-1] and the string "
                                     "\"latest\"",
                                     text)};
  }
  return v;
}

// Finds `version` (-1: latest) among rows already filtered for deletion.
Outcome<Row> FindVersion(const std::vector<Row>& rows, const std::string& subject, int version) {
  if (rows.empty()) return SubjectNotFound(subject);
  if (version == -1) return rows.back();
  for (const auto& r : rows) {
    if (r.v.version == version) return r;
  }
  return VersionNotFound(subject, version);
}

std::optional<Compatibility> StoredLevel(pqxx::work& tx, const std::string& subject) {
  auto r = tx.exec_params("SELECT compatibility FROM sluice_state.registry_config WHERE subject = $1", subject);
  if (r.empty()) return std::nullopt;
  return ParseCompatibility(r[0][0].as<std::string>());
}

Compatibility EffectiveLevel(pqxx::work& tx, const std::string& subject) {
  if (auto l = StoredLevel(tx, subject)) return *l;
  if (auto g = StoredLevel(tx, kGlobal)) return *g;
  return kDefaultCompatibility;
}

Outcome<ParsedSchema> ParseOrExplain(SchemaType type, const std::string& text) {
  auto parsed = ParsedSchema::Parse(type, text);
  if (!parsed.ok()) {
    return RegistryError{ec::kInvalidSchema,
                         fmt::format("Invalid schema {}", parsed.status().message())};
  }
  return std::move(parsed).value();
}

// Parses stored versions for a compatibility check; they parsed when stored.
std::vector<ParsedSchema> ParseAll(const std::vector<Row>& rows) {
  std::vector<ParsedSchema> out;
  for (const auto& r : rows) {
    auto p = ParsedSchema::Parse(r.v.type, r.v.schema);
    if (p.ok()) out.push_back(std::move(p).value());
  }
  return out;
}

void Lock(pqxx::work& tx) { tx.exec_params("SELECT pg_advisory_xact_lock($1)", kRegistryLockKey); }

// Runs fn in a transaction; a database failure becomes Confluent's 50001.
template <typename T, typename Fn>
Outcome<T> Guard(store::Database& db, Fn&& fn) {
  try {
    return db.Transact([&](pqxx::work& tx) -> Outcome<T> { return fn(tx); });
  } catch (const std::exception& e) {
    return RegistryError{ec::kStoreError,
                         fmt::format("Error in the backend data store: {}", e.what())};
  }
}

}  // namespace

common::Status SchemaRepository::EnsureTables() {
  try {
    db_.Transact([&](pqxx::work& tx) {
      Lock(tx);
      tx.exec(kAssignIds);
    });
    return common::Status::Ok();
  } catch (const std::exception& e) {
    return common::Unavailable(std::string("registry tables: ") + e.what());
  }
}

Outcome<int> SchemaRepository::Register(const std::string& subject, SchemaType type,
                                        const std::string& text) {
  auto parsed = ParseOrExplain(type, text);
  if (!parsed.ok()) return parsed.error();
  return Guard<int>(db_, [&](pqxx::work& tx) -> Outcome<int> {
    Lock(tx);
    std::vector<Row> all = LoadVersions(tx, subject);
    std::vector<Row> live = Live(all, false);
    for (const auto& r : live) {
      auto existing = tx.exec_params(
          "SELECT 1 FROM schema s JOIN sluice_state.registry_schema_id m ON m.schema_id = s.id "
          "WHERE m.id = $1 AND s.hash = $2 AND s.type = $3",
          r.v.id, parsed->hash(), SchemaTypeColumn(type));
      if (!existing.empty()) return r.v.id;  // identical content: a no-op
    }
    auto reasons = CheckSchemaCompatibility(EffectiveLevel(tx, subject), *parsed, ParseAll(live));
    if (!reasons.empty()) {
      return RegistryError{
          ec::kIncompatibleSchema,
          fmt::format("Schema being registered is incompatible with an earlier schema for "
                      "subject \"{}\", details: [{}]",
                      subject, fmt::join(reasons, ", "))};
    }
    std::string now = Now();
    auto found = tx.exec_params(
        "SELECT s.id, m.id FROM schema s JOIN sluice_state.registry_schema_id m ON m.schema_id = s.id "
        "WHERE s.hash = $1 AND s.type = $2 ORDER BY m.id LIMIT 1",
        parsed->hash(), SchemaTypeColumn(type));
    std::string schema_uuid;
    int id = 0;
    if (!found.empty()) {
      schema_uuid = found[0][0].as<std::string>();
      id = found[0][1].as<int>();
    } else {
      schema_uuid = common::Uuid::V4().ToString();
      tx.exec_params(
          "INSERT INTO schema (id, type, hash, schema, created_at, updated_at) "
          "VALUES ($1::uuid, $2, $3, $4, $5::timestamp, $5::timestamp)",
          schema_uuid, SchemaTypeColumn(type), parsed->hash(), text, now);
      id = tx.exec_params1(
                 "INSERT INTO sluice_state.registry_schema_id (schema_id) VALUES ($1::uuid) RETURNING id",
                 schema_uuid)[0]
               .as<int>();
    }
    int next = all.empty() ? 1 : all.back().v.version + 1;
    tx.exec_params(
        "INSERT INTO schema_version (id, \"timestamp\", version, subject, schema_id, created_at, "
        "updated_at) VALUES ($1::uuid, $2::timestamp, $3, $4, $5::uuid, $2::timestamp, "
        "$2::timestamp)",
        common::Uuid::V4().ToString(), now, next, subject, schema_uuid);
    return id;
  });
}

Outcome<SchemaVersion> SchemaRepository::Lookup(const std::string& subject, SchemaType type,
                                                const std::string& text, bool include_deleted) {
  auto parsed = ParseOrExplain(type, text);
  if (!parsed.ok()) return parsed.error();
  return Guard<SchemaVersion>(db_, [&](pqxx::work& tx) -> Outcome<SchemaVersion> {
    std::vector<Row> rows = Live(LoadVersions(tx, subject), include_deleted);
    if (rows.empty()) return SubjectNotFound(subject);
    auto ids = tx.exec_params(
        "SELECT m.id FROM schema s JOIN sluice_state.registry_schema_id m ON m.schema_id = s.id "
        "WHERE s.hash = $1 AND s.type = $2",
        parsed->hash(), SchemaTypeColumn(type));
    // Newest matching version first, as Confluent answers.
    for (auto it = rows.rbegin(); it != rows.rend(); ++it) {
      for (const auto& id : ids) {
        if (id[0].as<int>() == it->v.id) return it->v;
      }
    }
    return RegistryError{ec::kSchemaNotFound, "Schema not found"};
  });
}

Outcome<std::vector<std::string>> SchemaRepository::Subjects(bool include_deleted) {
  return Guard<std::vector<std::string>>(db_, [&](pqxx::work& tx) {
    std::vector<std::string> out;
    auto rows = tx.exec_params(
        "SELECT DISTINCT v.subject FROM schema_version v "
        "LEFT JOIN sluice_state.registry_deleted_version d ON d.schema_version_id = v.id "
        "WHERE $1 OR d.schema_version_id IS NULL ORDER BY v.subject",
        include_deleted);
    for (const auto& r : rows) out.push_back(r[0].as<std::string>());
    return out;
  });
}

Outcome<std::vector<int>> SchemaRepository::Versions(const std::string& subject,
                                                     bool include_deleted) {
  return Guard<std::vector<int>>(db_, [&](pqxx::work& tx) -> Outcome<std::vector<int>> {
    std::vector<Row> rows = Live(LoadVersions(tx, subject), include_deleted);
    if (rows.empty()) return SubjectNotFound(subject);
    std::vector<int> out;
    for (const auto& r : rows) out.push_back(r.v.version);
    return out;
  });
}

Outcome<SchemaVersion> SchemaRepository::GetVersion(const std::string& subject,
                                                    const std::string& version,
                                                    bool include_deleted) {
  auto v = ParseVersion(version);
  if (!v.ok()) return v.error();
  return Guard<SchemaVersion>(db_, [&](pqxx::work& tx) -> Outcome<SchemaVersion> {
    auto row = FindVersion(Live(LoadVersions(tx, subject), include_deleted), subject, *v);
    if (!row.ok()) return row.error();
    return row->v;
  });
}

Outcome<StoredSchema> SchemaRepository::GetSchema(int id) {
  return Guard<StoredSchema>(db_, [&](pqxx::work& tx) -> Outcome<StoredSchema> {
    auto r = tx.exec_params(
        "SELECT s.type, s.schema FROM sluice_state.registry_schema_id m JOIN schema s ON s.id = m.schema_id "
        "WHERE m.id = $1",
        id);
    if (r.empty())
      return RegistryError{ec::kSchemaNotFound, fmt::format("Schema {} not found", id)};
    return StoredSchema{id, TypeFromColumn(r[0][0].as<std::string>()), r[0][1].as<std::string>()};
  });
}

Outcome<std::vector<int>> SchemaRepository::DeleteSubject(const std::string& subject,
                                                          bool permanent) {
  return Guard<std::vector<int>>(db_, [&](pqxx::work& tx) -> Outcome<std::vector<int>> {
    Lock(tx);
    std::vector<Row> all = LoadVersions(tx, subject);
    if (all.empty()) return SubjectNotFound(subject);
    std::vector<int> out;
    if (permanent) {
      for (const auto& r : all) {
        if (!r.v.deleted) {
          return RegistryError{ec::kSubjectNotSoftDeleted,
                               fmt::format("Subject '{}' was not deleted first before being "
                                           "permanently deleted",
                                           subject)};
        }
      }
      for (const auto& r : all) out.push_back(r.v.version);
      tx.exec_params("DELETE FROM schema_version WHERE subject = $1", subject);
      tx.exec_params("DELETE FROM sluice_state.registry_config WHERE subject = $1", subject);
      return out;
    }
    std::string now = Now();
    for (const auto& r : all) {
      if (r.v.deleted) continue;
      tx.exec_params(
          "INSERT INTO sluice_state.registry_deleted_version (schema_version_id, deleted_at) "
          "VALUES ($1::uuid, $2::timestamp)",
          r.uuid, now);
      out.push_back(r.v.version);
    }
    if (out.empty()) {
      return RegistryError{ec::kSubjectSoftDeleted,
                           fmt::format("Subject '{}' was soft deleted. Set permanent=true to "
                                       "delete permanently",
                                       subject)};
    }
    return out;
  });
}

Outcome<int> SchemaRepository::DeleteVersion(const std::string& subject, const std::string& version,
                                             bool permanent) {
  auto v = ParseVersion(version);
  if (!v.ok()) return v.error();
  return Guard<int>(db_, [&](pqxx::work& tx) -> Outcome<int> {
    Lock(tx);
    // Permanent deletes address soft-deleted versions; soft deletes live ones.
    std::vector<Row> all = LoadVersions(tx, subject);
    auto row = FindVersion(permanent ? all : Live(all, false), subject, *v);
    if (!row.ok()) {
      // A soft delete of an already soft-deleted version says so.
      if (!permanent && row.error().code == ec::kVersionNotFound) {
        for (const auto& r : all) {
          if (r.v.version == *v) {
            return RegistryError{ec::kVersionSoftDeleted,
                                 fmt::format("Version {} of subject '{}' was soft deleted. Set "
                                             "permanent=true to delete permanently",
                                             *v, subject)};
          }
        }
      }
      if (!permanent && row.error().code == ec::kSubjectNotFound && !all.empty()) {
        return RegistryError{ec::kSubjectSoftDeleted,
                             fmt::format("Subject '{}' was soft deleted.", subject)};
      }
      return row.error();
    }
    if (permanent) {
      if (!row->v.deleted) {
        return RegistryError{ec::kVersionNotSoftDeleted,
                             fmt::format("Version {} of subject '{}' was not deleted first before "
                                         "being permanently deleted",
                                         row->v.version, subject)};
      }
      tx.exec_params("DELETE FROM schema_version WHERE id = $1::uuid", row->uuid);
    } else {
      tx.exec_params(
          "INSERT INTO sluice_state.registry_deleted_version (schema_version_id, deleted_at) "
          "VALUES ($1::uuid, $2::timestamp)",
          row->uuid, Now());
    }
    return row->v.version;
  });
}

Outcome<Compatibility> SchemaRepository::GetCompatibility(const std::optional<std::string>& subject,
                                                          bool default_to_global) {
  return Guard<Compatibility>(db_, [&](pqxx::work& tx) -> Outcome<Compatibility> {
    if (!subject) return EffectiveLevel(tx, kGlobal);
    if (auto l = StoredLevel(tx, *subject)) return *l;
    if (default_to_global) return EffectiveLevel(tx, kGlobal);
    return RegistryError{ec::kSubjectLevelCompatibilityNotConfigured,
                         fmt::format("Subject '{}' does not have subject-level compatibility "
                                     "configured",
                                     *subject)};
  });
}

Outcome<Compatibility> SchemaRepository::SetCompatibility(const std::optional<std::string>& subject,
                                                          Compatibility level) {
  return Guard<Compatibility>(db_, [&](pqxx::work& tx) -> Outcome<Compatibility> {
    tx.exec_params(
        "INSERT INTO sluice_state.registry_config (subject, compatibility, updated_at) "
        "VALUES ($1, $2, $3::timestamp) ON CONFLICT (subject) DO UPDATE "
        "SET compatibility = EXCLUDED.compatibility, updated_at = EXCLUDED.updated_at",
        subject.value_or(kGlobal), CompatibilityName(level), Now());
    return level;
  });
}

Outcome<Compatibility> SchemaRepository::DeleteCompatibility(
    const std::optional<std::string>& subject) {
  return Guard<Compatibility>(db_, [&](pqxx::work& tx) -> Outcome<Compatibility> {
    std::string key = subject.value_or(kGlobal);
    auto old = StoredLevel(tx, key);
    if (!old) {
      if (!subject) return kDefaultCompatibility;
      if (LoadVersions(tx, key).empty()) return SubjectNotFound(key);
      return RegistryError{ec::kSubjectLevelCompatibilityNotConfigured,
                           fmt::format("Subject '{}' does not have subject-level compatibility "
                                       "configured",
                                       key)};
    }
    tx.exec_params("DELETE FROM sluice_state.registry_config WHERE subject = $1", key);
    return *old;
  });
}

Outcome<std::vector<std::string>> SchemaRepository::TestCompatibility(const std::string& subject,
                                                                      const std::string& version,
                                                                      SchemaType type,
                                                                      const std::string& text) {
  auto v = ParseVersion(version);
  if (!v.ok()) return v.error();
  auto parsed = ParseOrExplain(type, text);
  if (!parsed.ok()) return parsed.error();
  using Reasons = std::vector<std::string>;
  return Guard<Reasons>(db_, [&](pqxx::work& tx) -> Outcome<Reasons> {
    std::vector<Row> live = Live(LoadVersions(tx, subject), false);
    Compatibility level = EffectiveLevel(tx, subject);
    if (*v == -1) {
      if (live.empty()) return Reasons{};
      return CheckSchemaCompatibility(level, *parsed, ParseAll(live));
    }
    auto row = FindVersion(live, subject, *v);
    if (!row.ok()) return row.error();
    return CheckSchemaCompatibility(level, *parsed, ParseAll({*row}));
  });
}

}  // namespace sluice::registry
