#include "cli/connect_flags.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <filesystem>

#include "guard/connect_policy.h"
#include "guard/jsonl_path.h"

namespace sluice::cli {

void AddConnectFlags(CLI::App& cmd, std::vector<std::string>& allow, std::vector<std::string>& deny,
                     std::string& jsonl_root) {
  cmd.add_option("--connect-allow", allow,
                 "CIDR blocks a team's connections (connectors, warehouses, backfills, the HTTP "
                 "target, env brokers) may reach; unset: any address not denied")
      ->delimiter(',');
  cmd.add_option("--connect-deny", deny,
                 "CIDR blocks a team's connections may not reach (link-local 169.254.0.0/16 and "
                 "fe80::/10 always are)")
      ->delimiter(',');
  cmd.add_option("--jsonl-root", jsonl_root,
                 "The only directory JSONL targets write under (default: <data-dir>/jsonl)");
}

common::Status ApplyConnectFlags(const std::vector<std::string>& allow,
                                 const std::vector<std::string>& deny,
                                 const std::string& jsonl_root, const std::string& data_dir) {
  auto policy = guard::ConnectPolicy::FromLists(allow, deny);
  if (!policy.ok()) return policy.status();
  guard::SetProcessPolicy(std::move(policy).value());
  std::string root =
      jsonl_root.empty() ? (std::filesystem::path(data_dir) / "jsonl").string() : jsonl_root;
  std::error_code ec;
  auto absolute = std::filesystem::absolute(root, ec);
  guard::SetProcessJsonlRoot(ec ? root : absolute.lexically_normal().string());
  if (!allow.empty() || !deny.empty())
    spdlog::info("connect policy: allow [{}], deny [{}] (and link-local)",
                 fmt::format("{}", fmt::join(allow, ", ")),
                 fmt::format("{}", fmt::join(deny, ", ")));
  return common::Status::Ok();
}

}  // namespace sluice::cli
