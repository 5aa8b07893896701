#include "broker/acl.h"

#include <fstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace sluice::broker {

namespace fs = std::filesystem;

namespace {

common::Status ReadNames(const nlohmann::json& entry, const char* key, std::set<std::string>* out) {
  auto it = entry.find(key);
  if (it == entry.end()) return {};
  if (!it->is_array()) return common::InvalidArgument(fmt::format("{} must be a list", key));
  for (const auto& v : *it) {
    if (!v.is_string()) return common::InvalidArgument(fmt::format("{}: strings only", key));
    out->insert(v.get<std::string>());
  }
  return {};
}

}  // namespace

common::Result<std::shared_ptr<const AclTable>> AclTable::FromJson(const nlohmann::json& j) {
  auto table = std::make_shared<AclTable>();
  auto principals = j.find("principals");
  if (!j.is_object() || principals == j.end() || !principals->is_object())
    return common::InvalidArgument("an ACL file is {\"principals\": {name: {...}}}");
  for (const auto& [name, entry] : principals->items()) {
    if (!entry.is_object() || !entry.contains("password") || !entry["password"].is_string())
      return common::InvalidArgument(fmt::format("principal {}: a password is required", name));
    auto grant = std::make_shared<Grant>();
    grant->admin = entry.value("admin", false);
    SLUICE_RETURN_IF_ERROR(ReadNames(entry, "produce", &grant->produce));
    SLUICE_RETURN_IF_ERROR(ReadNames(entry, "consume", &grant->consume));
    SLUICE_RETURN_IF_ERROR(ReadNames(entry, "groups", &grant->groups));
    table->passwords_[name] = entry["password"].get<std::string>();
    table->grants_[name] = std::move(grant);
  }
  return std::shared_ptr<const AclTable>(std::move(table));
}

std::shared_ptr<const Grant> AclTable::GrantOf(const std::string& principal) const {
  static const auto nothing = std::make_shared<const Grant>();
  auto it = grants_.find(principal);
  return it == grants_.end() ? nothing : it->second;
}

AclFile::AclFile(fs::path path, std::chrono::milliseconds recheck)
    : path_(std::move(path)), recheck_(recheck) {}

std::shared_ptr<const AclTable> AclFile::Current(bool force) {
  std::lock_guard lock(mu_);
  auto now = std::chrono::steady_clock::now();
  if (!force && table_ && now - checked_ < recheck_) return table_;
  checked_ = now;
  std::error_code ec;
  auto mtime = fs::last_write_time(path_, ec);
  auto size = ec ? 0 : fs::file_size(path_, ec);
  if (ec) {
    if (!table_) spdlog::warn("broker ACL file {}: {}", path_.string(), ec.message());
    return table_;
  }
  if (table_ && mtime == mtime_ && size == size_) return table_;
  std::ifstream in(path_);
  auto j = nlohmann::json::parse(in, nullptr, false);
  auto table =
      j.is_discarded()
          ? common::Result<std::shared_ptr<const AclTable>>(common::InvalidArgument("not JSON"))
          : AclTable::FromJson(j);
  if (!table.ok()) {
    spdlog::warn("broker ACL file {}: {}; keeping the last one read", path_.string(),
                 table.status().message());
    return table_;
  }
  table_ = *table;
  mtime_ = mtime;
  size_ = size;
  return table_;
}

nlohmann::json AclJson(const std::map<std::string, std::pair<std::string, Grant>>& principals) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, entry] : principals) {
    const auto& [password, grant] = entry;
    nlohmann::json e = {{"password", password}};
    if (grant.admin) e["admin"] = true;
    e["produce"] = grant.produce;
    e["consume"] = grant.consume;
    e["groups"] = grant.groups;
    out[name] = std::move(e);
  }
  return {{"principals", std::move(out)}};
}

}  // namespace sluice::broker
