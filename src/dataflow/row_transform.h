// The shaping a datamodel's `config` or a subscription's `transform_config`
// asks for, applied to one row image:
//   {"select": ["id", "name"],          keep only these columns (keys always kept)
//    "exclude": ["secret"],             drop these
//    "rename": {"name": "full_name"},   rename after selecting
//    "cast": {"amount": "double"},      string | long | double | boolean | json
//    "computed": {"region": {"const": "eu"}, "label": {"concat": ["id", "-", "name"]}},
//    "filter": {"column": "status", "op": "eq|ne|gt|lt|in|not_null", "value": ...}}
// Invalid configuration is refused when the transform is built, with every
// problem listed, never halfway through a stream.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "connectors/targets/target_change.h"

namespace sluice::dataflow {

class RowTransform {
 public:
  static common::Result<RowTransform> Create(const nlohmann::json& config);

  // Whether the row passes the filter (deletes and truncates always pass).
  bool Keeps(const connectors::targets::TargetChange& change) const;
  // Shapes key, image and column list in place.
  void Apply(connectors::targets::TargetChange& change) const;
  bool is_identity() const { return identity_; }

 private:
  nlohmann::json ShapeImage(const nlohmann::json& image, bool is_key,
                            const nlohmann::json& key) const;

  bool identity_ = true;
  std::vector<std::string> select_;
  std::vector<std::string> exclude_;
  std::vector<std::pair<std::string, std::string>> rename_;
  std::vector<std::pair<std::string, std::string>> cast_;
  nlohmann::json computed_ = nlohmann::json::object();
  nlohmann::json filter_;
};

}  // namespace sluice::dataflow
