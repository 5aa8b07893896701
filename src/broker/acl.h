// Who may do what on the broker: SASL/PLAIN principals with the topics they
// may produce to or consume from and the consumer groups they may use, read
// from a JSON file the back end writes (`sluice up` writes one entry per
// worker launch). The file is re-read when it changes, so a new worker's
// credentials work as soon as the file is renamed into place:
//
//   {"principals": {
//      "sluice-backend": {"password": "...", "admin": true},
//      "worker-<id>": {"password": "...", "produce": ["t1"], "consume": ["t0"],
//                      "groups": ["g"]}}}
//
// Only an admin principal creates, deletes or grows topics; a topic it may
// produce to is one a principal may auto-create (the back end chose the name).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace sluice::broker {

struct Grant {
  bool admin = false;
  std::set<std::string> produce, consume, groups;

  bool MayProduce(const std::string& topic) const { return admin || produce.count(topic) > 0; }
  bool MayConsume(const std::string& topic) const { return admin || consume.count(topic) > 0; }
  // Knowing a topic exists (Metadata, DescribeConfigs).
  bool MayDescribe(const std::string& topic) const {
    return MayProduce(topic) || MayConsume(topic);
  }
  bool MayUseGroup(const std::string& group) const { return admin || groups.count(group) > 0; }
};

class AclTable {
 public:
  static common::Result<std::shared_ptr<const AclTable>> FromJson(const nlohmann::json& j);

  const std::map<std::string, std::string>& passwords() const { return passwords_; }
  // The principal's grant; one that allows nothing for a principal not listed.
  std::shared_ptr<const Grant> GrantOf(const std::string& principal) const;

 private:
  std::map<std::string, std::string> passwords_;
  std::map<std::string, std::shared_ptr<const Grant>> grants_;
};

// The table in a file, re-read when its modification time or size changes
// (looked at no more than every `recheck`). A file that does not parse keeps
// the table last read; there is none at first, which allows nobody.
class AclFile {
 public:
  explicit AclFile(std::filesystem::path path,
                   std::chrono::milliseconds recheck = std::chrono::milliseconds(200));

  // `force`: look at the file now (an unknown user may be one just added).
  std::shared_ptr<const AclTable> Current(bool force = false);
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::chrono::milliseconds recheck_;
  std::mutex mu_;
  std::chrono::steady_clock::time_point checked_{};
  std::filesystem::file_time_type mtime_{};
  std::uintmax_t size_ = 0;
  std::shared_ptr<const AclTable> table_;
};

// The file's JSON for `principals` (what the back end writes).
nlohmann::json AclJson(const std::map<std::string, std::pair<std::string, Grant>>& principals);

}  // namespace sluice::broker
