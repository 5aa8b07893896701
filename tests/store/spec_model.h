// The data-plane spec (shared/spec/data-plane-data-model.txt) read as data,
// so the schema conformance test checks the live catalog against the text
// itself rather than against a second hand-written copy of it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sluice::testing {

struct SpecColumn {
  std::string name;
  std::string type;  // as the spec writes it: VARCHAR(100), DATETIME, JSON ...
  bool required = false;
  std::string description;
};

struct SpecReference {
  std::string column;
  std::string target_table;
  std::string target_column;
  bool has_foreign_key = true;
  std::string on_delete;  // "", "CASCADE", "SET NULL", "RESTRICT"
};

struct SpecIndex {
  std::string columns;  // inside the parentheses, verbatim: "connector_id, ts DESC"
  bool unique = false;
};

struct SpecTable {
  std::string name;
  std::vector<SpecColumn> columns;
  std::vector<SpecReference> references;
  std::vector<SpecIndex> indexes;
  std::vector<std::string> unique_together;  // "env_id, name"
};

// Parses the spec file; throws std::runtime_error if it cannot.
std::map<std::string, SpecTable> LoadSpec(const std::string& path);

// Path of the spec beside the checkout: $SLUICE_SOURCE_DIR/../shared/spec/...
std::string SpecPath();

}  // namespace sluice::testing
