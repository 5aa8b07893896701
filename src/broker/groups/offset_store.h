// Committed consumer-group offsets, durable across restarts: every commit is
// appended (and fdatasync'ed) to <data-dir>/groups/offsets.log before it is
// acknowledged; the log is replayed and compacted on open.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace sluice::broker::groups {

struct CommittedOffset {
  std::int64_t offset = -1;
  std::string metadata;
  std::int64_t commit_ms = 0;
};

struct OffsetKey {
  std::string topic;
  std::int32_t partition = 0;
  friend auto operator<=>(const OffsetKey&, const OffsetKey&) = default;
};

class OffsetStore {
 public:
  static common::Result<std::unique_ptr<OffsetStore>> Open(const std::filesystem::path& dir);
  ~OffsetStore();

  common::Status Commit(const std::string& group,
                        const std::vector<std::pair<OffsetKey, CommittedOffset>>& offsets);
  std::optional<CommittedOffset> Get(const std::string& group, const OffsetKey& key) const;
  std::map<OffsetKey, CommittedOffset> All(const std::string& group) const;
  std::vector<std::string> Groups() const;
  void DeleteGroup(const std::string& group);

 private:
  OffsetStore() = default;
  common::Status Append(const std::string& line);

  std::filesystem::path path_;
  int fd_ = -1;
  mutable std::mutex mu_;
  std::map<std::string, std::map<OffsetKey, CommittedOffset>> offsets_;
};

}  // namespace sluice::broker::groups
