#include "connectors/targets/jsonl_target.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/time.h"
#include "guard/jsonl_path.h"

namespace sluice::connectors::targets {

namespace fs = std::filesystem;

common::Result<std::vector<RejectedChange>> JsonlTarget::Apply(
    const std::vector<TargetChange>& batch) {
  auto dir = guard::JsonlDirectory(options_.root, options_.directory, options_.table);
  if (!dir.ok()) return dir.status();
  std::error_code ec;
  fs::create_directories(*dir, ec);
  fs::path path = *dir / (options_.table + ".jsonl");
  if (fs::exists(path, ec) && fs::file_size(path, ec) >= options_.rotate_bytes) {
    fs::rename(path, *dir / fmt::format("{}.{}.jsonl", options_.table, common::NowEpochMillis()),
               ec);
  }
  std::string lines;
  for (const auto& c : batch) {
    // A key change is a delete of the old key, then the upsert of the new.
    if (c.old_key.is_object()) {
      nlohmann::json gone = {{"op", "d"}, {"key", c.old_key}, {"after", nullptr}};
      if (!c.position.empty()) gone["position"] = c.position;
      lines += gone.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    }
    nlohmann::json line = {{"op", std::string(1, c.op)}, {"key", c.key}, {"after", c.after}};
    if (!c.as_text.empty()) line["as_text"] = c.as_text;
    if (!c.position.empty()) line["position"] = c.position;
    lines += line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  // Not through a link planted in the directory; 0640 whatever the umask.
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (fd < 0)
    return common::Unavailable(fmt::format("cannot open {}: {}", path.string(), strerror(errno)));
  fchmod(fd, 0640);
  std::size_t written = 0;
  while (written < lines.size()) {
    ssize_t n = write(fd, lines.data() + written, lines.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string why = strerror(errno);
      close(fd);
      return common::Unavailable(fmt::format("cannot write {}: {}", path.string(), why));
    }
    written += static_cast<std::size_t>(n);
  }
  // Durable before the offsets are committed.
  int synced = fsync(fd);
  close(fd);
  if (synced != 0) return common::Unavailable(fmt::format("cannot fsync {}", path.string()));
  return std::vector<RejectedChange>{};
}

}  // namespace sluice::connectors::targets
