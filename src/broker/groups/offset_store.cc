#include "broker/groups/offset_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "broker/storage/durable_file.h"

namespace sluice::broker::groups {

namespace fs = std::filesystem;
using common::Internal;
using common::Result;
using common::Status;

namespace {
nlohmann::json Entry(const std::string& group, const OffsetKey& k, const CommittedOffset& o) {
  return {{"g", group},    {"t", k.topic},    {"p", k.partition},
          {"o", o.offset}, {"m", o.metadata}, {"ts", o.commit_ms}};
}
}  // namespace

Result<std::unique_ptr<OffsetStore>> OffsetStore::Open(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Internal(fmt::format("create {}: {}", dir.string(), ec.message()));
  auto s = std::unique_ptr<OffsetStore>(new OffsetStore());
  s->path_ = dir / "offsets.log";
  {
    std::ifstream in(s->path_);
    std::string line;
    while (std::getline(in, line)) {
      try {
        auto j = nlohmann::json::parse(line);
        if (j.contains("deleted")) {
          s->offsets_.erase(j["deleted"].get<std::string>());
          continue;
        }
        s->offsets_[j["g"]][{j["t"], j["p"]}] = {j["o"], j["m"], j["ts"]};
      } catch (const std::exception&) {
        spdlog::warn("offsets.log: skipping torn line");  // only the last line can be torn
      }
    }
  }
  // Compact: rewrite the latest value of every key, then swap the file in.
  fs::path tmp = dir / "offsets.log.tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const auto& [g, m] : s->offsets_) {
      for (const auto& [k, o] : m) out << Entry(g, k, o).dump() << "\n";
    }
    out.flush();
    if (!out) return Internal("write " + tmp.string());
  }
  // The compacted copy is durable before it replaces the log, and so is
  // the rename, or a power cut could leave neither.
  {
    int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Internal(fmt::format("open {}: {}", tmp.string(), std::strerror(errno)));
    Status synced = storage::SyncFile(fd, tmp.string());
    ::close(fd);
    SLUICE_RETURN_IF_ERROR(synced);
  }
  fs::rename(tmp, s->path_, ec);
  if (ec) return Internal(fmt::format("rename {}: {}", tmp.string(), ec.message()));
  SLUICE_RETURN_IF_ERROR(storage::SyncDirectory(dir));
  s->fd_ = ::open(s->path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (s->fd_ < 0)
    return Internal(fmt::format("open {}: {}", s->path_.string(), std::strerror(errno)));
  SLUICE_RETURN_IF_ERROR(storage::SyncFile(s->fd_, s->path_.string()));  // for the journal
  return s;
}

OffsetStore::~OffsetStore() {
  if (fd_ >= 0) ::close(fd_);
}

Status OffsetStore::Append(const std::string& text) {
  const char* p = text.data();
  std::size_t n = text.size();
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Internal(fmt::format("write {}: {}", path_.string(), std::strerror(errno)));
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return storage::SyncFile(fd_, path_.string());
}

Status OffsetStore::Commit(const std::string& group,
                           const std::vector<std::pair<OffsetKey, CommittedOffset>>& offsets) {
  std::string text;
  for (const auto& [k, o] : offsets) text += Entry(group, k, o).dump() + "\n";
  std::lock_guard lock(mu_);
  SLUICE_RETURN_IF_ERROR(Append(text));
  for (const auto& [k, o] : offsets) offsets_[group][k] = o;
  return {};
}

std::optional<CommittedOffset> OffsetStore::Get(const std::string& group,
                                                const OffsetKey& key) const {
  std::lock_guard lock(mu_);
  auto g = offsets_.find(group);
  if (g == offsets_.end()) return std::nullopt;
  auto it = g->second.find(key);
  if (it == g->second.end()) return std::nullopt;
  return it->second;
}

std::map<OffsetKey, CommittedOffset> OffsetStore::All(const std::string& group) const {
  std::lock_guard lock(mu_);
  auto g = offsets_.find(group);
  if (g == offsets_.end()) return {};
  return g->second;
}

std::vector<std::string> OffsetStore::Groups() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [g, m] : offsets_) out.push_back(g);
  return out;
}

void OffsetStore::DeleteGroup(const std::string& group) {
  std::lock_guard lock(mu_);
  if (!offsets_.erase(group)) return;
  auto st = Append(nlohmann::json{{"deleted", group}}.dump() + "\n");
  if (!st.ok()) spdlog::warn("delete group offsets: {}", st.ToString());
}

}  // namespace sluice::broker::groups
