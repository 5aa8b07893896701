#include "connectors/targets/target.h"

#include <fmt/format.h>

#include "connectors/targets/http_target.h"
#include "connectors/targets/jsonl_target.h"
#include "connectors/targets/postgres_target.h"
#include "guard/jsonl_path.h"

namespace sluice::connectors::targets {

namespace {
class PostgresAdapter : public Target {
 public:
  explicit PostgresAdapter(PostgresTargetOptions o) : target_(std::move(o)) {}
  common::Result<std::vector<RejectedChange>> Apply(
      const std::vector<TargetChange>& batch) override {
    return target_.Apply(batch);
  }
  common::Result<std::unique_ptr<PreparedRows>> PrepareJsonRows(
      const std::vector<JsonRow>& rows, const std::vector<TargetColumn>& columns) override {
    return target_.PrepareJsonRows(rows, columns);
  }
  common::Result<bool> StartPrepared(std::unique_ptr<PreparedRows> prepared) override {
    return target_.StartPrepared(std::move(prepared));
  }
  common::Result<bool> FinishPrepared() override { return target_.FinishPrepared(); }

 private:
  PostgresTarget target_;
};
}  // namespace

common::Result<std::unique_ptr<Target>> MakeTarget(const std::string& type,
                                                   const nlohmann::json& config,
                                                   const std::string& schema,
                                                   const std::string& table) {
  if (type == "postgresql") {
    auto url = config.value("url", std::string());
    if (url.empty()) return common::InvalidArgument("postgresql target: url is required");
    PostgresTargetOptions o{url, schema, table, true};
    // Only a backfill loader turns the fence off (it holds it shared itself).
    if (config.contains("backfill_fence") && config["backfill_fence"].is_boolean())
      o.backfill_fence = config["backfill_fence"].get<bool>();
    return std::unique_ptr<Target>(new PostgresAdapter(std::move(o)));
  }
  if (type == "jsonl") {
    auto dir = config.value("directory", std::string());
    if (dir.empty()) return common::InvalidArgument("jsonl target: directory is required");
    auto root = config.value("root", std::string());
    if (root.empty())
      return common::InvalidArgument("jsonl target: no JSONL root (--jsonl-root) was given");
    // Refused here already, before any batch: a directory or table name
    // that leads out of the root.
    if (auto where = guard::JsonlDirectory(root, dir, table); !where.ok()) return where.status();
    JsonlTargetOptions o{root, dir, table};
    if (config.contains("rotate_bytes")) o.rotate_bytes = config["rotate_bytes"].get<std::size_t>();
    return std::unique_ptr<Target>(new JsonlTarget(o));
  }
  if (type == "http") {
    HttpTargetOptions o;
    o.url = config.value("url", std::string());
    if (o.url.empty()) return common::InvalidArgument("http target: url is required");
    o.table = table;
    if (config.contains("headers") && config["headers"].is_object())
      for (const auto& [k, v] : config["headers"].items())
        if (v.is_string()) o.headers[k] = v.get<std::string>();
    if (config.contains("timeout_ms"))
      o.timeout = std::chrono::milliseconds(config["timeout_ms"].get<int>());
    return std::unique_ptr<Target>(new HttpTarget(o));
  }
  return common::InvalidArgument(fmt::format("no target runtime for type '{}'", type));
}

}  // namespace sluice::connectors::targets
