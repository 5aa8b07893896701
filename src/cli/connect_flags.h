// The operator's side of the connect policy, shared by `serve` and `up`:
// --connect-allow / --connect-deny (CIDR blocks, repeatable or
// comma-separated) and --jsonl-root.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "common/status.h"

namespace sluice::cli {

void AddConnectFlags(CLI::App& cmd, std::vector<std::string>& allow, std::vector<std::string>& deny,
                     std::string& jsonl_root);

// Makes them this process's (guard::SetProcessPolicy, SetProcessJsonlRoot);
// an empty jsonl_root is <data_dir>/jsonl. A malformed block is an error.
common::Status ApplyConnectFlags(const std::vector<std::string>& allow,
                                 const std::vector<std::string>& deny,
                                 const std::string& jsonl_root, const std::string& data_dir);

}  // namespace sluice::cli
