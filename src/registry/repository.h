// The registry's state in PostgreSQL, and the rules that change it.
//
// The spec's tables hold the content: `schema` (one row per distinct
// document, keyed by a content hash over its normalized form) and
// `schema_version` (subject, version from 1, schema_id). The same schema
// under twenty subjects is one schema row and twenty versions, and
// re-registering identical content under a subject is a no-op returning the
// existing id.
//
// Confluent's API needs three things those tables lack, so the repository
// keeps them in its own tables, OUTSIDE THE SPEC'S 30, in schema sluice_state,
// created by migration 0002 (EnsureTables() only gives int ids to schemas that have none):
//   registry_schema_id       integer id (the wire format's) <-> schema.id
//   registry_deleted_version soft-deleted schema_version rows
//   registry_config          compatibility level per subject ('' = global)
//
// Every method is one transaction; registrations are serialized by an
// advisory lock so version numbers and compatibility checks never race.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "registry/compatibility.h"
#include "registry/parsed_schema.h"
#include "registry/registry_error.h"
#include "store/database.h"

namespace sluice::registry {

struct SchemaVersion {
  std::string subject;
  int version = 0;
  int id = 0;  // the integer schema id
  SchemaType type = SchemaType::kAvro;
  std::string schema;  // the document as first registered
  bool deleted = false;
};

struct StoredSchema {
  int id = 0;
  SchemaType type = SchemaType::kAvro;
  std::string schema;
};

class SchemaRepository {
 public:
  explicit SchemaRepository(store::Database& db) : db_(db) {}

  // Creates the registry_ tables if missing and gives every schema row
  // without an integer id one. Safe to run concurrently.
  common::Status EnsureTables();

  // Registers `text` under `subject`; returns the schema id. Refuses an
  // unparsable schema (42201) or one the subject's compatibility level
  // rejects (409, listing the reasons).
  Outcome<int> Register(const std::string& subject, SchemaType type, const std::string& text);

  // Non-deleted versions matching `text`'s content (42201, 40401, 40403).
  Outcome<SchemaVersion> Lookup(const std::string& subject, SchemaType type,
                                const std::string& text, bool include_deleted);

  Outcome<std::vector<std::string>> Subjects(bool include_deleted);
  Outcome<std::vector<int>> Versions(const std::string& subject, bool include_deleted);
  // `version`: "latest", "-1" or 1..2^31-1 (42202 otherwise; 40401, 40402).
  Outcome<SchemaVersion> GetVersion(const std::string& subject, const std::string& version,
                                    bool include_deleted);
  Outcome<StoredSchema> GetSchema(int id);  // 40403

  // Soft delete marks; permanent delete needs a soft delete first (40405,
  // 40407) and removes the schema_version rows. Schema rows stay, so ids
  // remain resolvable by messages already written.
  Outcome<std::vector<int>> DeleteSubject(const std::string& subject, bool permanent);
  Outcome<int> DeleteVersion(const std::string& subject, const std::string& version,
                             bool permanent);

  // Compatibility levels; no subject means global. GetCompatibility for a
  // subject without its own level answers 40408 unless default_to_global.
  Outcome<Compatibility> GetCompatibility(const std::optional<std::string>& subject,
                                          bool default_to_global);
  Outcome<Compatibility> SetCompatibility(const std::optional<std::string>& subject,
                                          Compatibility level);
  // Removes a subject's level (or resets the global one); returns the old level.
  Outcome<Compatibility> DeleteCompatibility(const std::optional<std::string>& subject);

  // Reasons `text` is incompatible with `version` of `subject` under the
  // subject's level ("latest": the versions the level covers); empty means
  // compatible. A subject with no versions is compatible with "latest".
  Outcome<std::vector<std::string>> TestCompatibility(const std::string& subject,
                                                      const std::string& version, SchemaType type,
                                                      const std::string& text);

 private:
  store::Database& db_;
};

}  // namespace sluice::registry
