// Where the JSONL target may write: only under the operator's root
// (--jsonl-root, default <data-dir>/jsonl). A connector's directory is a
// relative path inside it (the launcher puts each team's under its own
// <team id>/), and a table name is one file name. Refused with a 422 when a
// configuration is saved, and again by the worker before it opens a file.
#pragma once

#include <filesystem>
#include <string>

#include "common/status.h"

namespace sluice::guard {

// A relative path without "..", ".", empty or NUL components.
common::Status CheckJsonlDirectory(const std::string& directory);
// One file name: no separator, not "." or "..", no NUL, not empty.
common::Status CheckJsonlTableName(const std::string& table);
// root/directory, both checks made and the result still under root.
common::Result<std::filesystem::path> JsonlDirectory(const std::string& root,
                                                     const std::string& directory,
                                                     const std::string& table);

// This process's root: serve/up set it from --jsonl-root and hand it to the
// workers and loaders they launch. Empty until set.
void SetProcessJsonlRoot(std::string root);
std::string ProcessJsonlRoot();

// A team's JSONL directory as a worker is launched with it: under the
// team's own part of the root, so two teams naming one directory never
// share it.
std::string TeamJsonlDirectory(const std::string& team_id, const std::string& directory);

}  // namespace sluice::guard
