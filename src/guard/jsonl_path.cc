#include "guard/jsonl_path.h"

#include <fmt/format.h>

#include <mutex>

namespace sluice::guard {

namespace fs = std::filesystem;

namespace {

common::Status Refuse(const std::string& why) {
  return common::InvalidArgument("refused by the JSONL root (jsonl-root): " + why);
}

}  // namespace

common::Status CheckJsonlDirectory(const std::string& directory) {
  if (directory.empty()) return Refuse("the directory is empty");
  if (directory.find('\0') != std::string::npos) return Refuse("the directory contains NUL");
  if (directory.front() == '/' || directory.front() == '\\')
    return Refuse(
        fmt::format("{} is an absolute path; give a directory under the JSONL root", directory));
  std::size_t start = 0;
  while (start <= directory.size()) {
    auto end = directory.find_first_of("/\\", start);
    if (end == std::string::npos) end = directory.size();
    std::string part = directory.substr(start, end - start);
    if (part == "..") return Refuse(fmt::format("{} climbs out with ..", directory));
    if (part == "." || (part.empty() && end != directory.size()))
      return Refuse(fmt::format("{}: empty or . path components", directory));
    start = end + 1;
  }
  return common::Status::Ok();
}

common::Status CheckJsonlTableName(const std::string& table) {
  if (table.empty()) return Refuse("the table name is empty");
  if (table.find_first_of(std::string("/\\\0", 3)) != std::string::npos)
    return Refuse(fmt::format("the table name {} contains a path separator", table));
  if (table == "." || table == "..")
    return Refuse(fmt::format("the table name {} is not a file name", table));
  return common::Status::Ok();
}

common::Result<fs::path> JsonlDirectory(const std::string& root, const std::string& directory,
                                        const std::string& table) {
  if (root.empty()) return Refuse("no JSONL root is set (--jsonl-root)");
  SLUICE_RETURN_IF_ERROR(CheckJsonlDirectory(directory));
  SLUICE_RETURN_IF_ERROR(CheckJsonlTableName(table));
  fs::path base = fs::path(root).lexically_normal();
  fs::path dir = (base / directory).lexically_normal();
  auto rel = dir.lexically_relative(base);
  if (rel.empty() || *rel.begin() == "..")
    return Refuse(fmt::format("{} is outside the JSONL root {}", dir.string(), base.string()));
  return dir;
}

namespace {
std::mutex& RootMutex() {
  static std::mutex m;
  return m;
}
std::string& RootSlot() {
  static std::string root;
  return root;
}
}  // namespace

void SetProcessJsonlRoot(std::string root) {
  std::lock_guard lock(RootMutex());
  RootSlot() = std::move(root);
}

std::string ProcessJsonlRoot() {
  std::lock_guard lock(RootMutex());
  return RootSlot();
}

std::string TeamJsonlDirectory(const std::string& team_id, const std::string& directory) {
  return (team_id.empty() ? std::string("no-team") : team_id) + "/" + directory;
}

}  // namespace sluice::guard
