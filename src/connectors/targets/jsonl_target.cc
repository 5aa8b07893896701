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

namespace {

// The directory entry of a file created or renamed is durable only once
// the directory itself is synced.
common::Status SyncDirectory(const fs::path& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return common::Unavailable(fmt::format("cannot open {}: {}", dir.string(), strerror(errno)));
  int synced = fsync(fd);
  std::string why = synced != 0 ? strerror(errno) : "";
  close(fd);
  if (synced != 0)
    return common::Unavailable(fmt::format("cannot fsync {}: {}", dir.string(), why));
  return common::Status::Ok();
}

}  // namespace

common::Result<std::vector<RejectedChange>> JsonlTarget::Apply(
    const std::vector<TargetChange>& batch) {
  // Every failure here is the file system's (no space, no permission, an
  // I/O error): an outage. A line is never refused, and nothing counts as
  // delivered until it is fsynced. Where the file may be is the guard's.
  auto resolved = guard::JsonlDirectory(options_.root, options_.directory, options_.table);
  if (!resolved.ok()) return resolved.status();
  fs::path dir = *resolved;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec)
      return common::Unavailable(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  }
  fs::path path = dir / (options_.table + ".jsonl");
  // Only a regular file rotates (a FIFO or a device stays as it is).
  if (fs::is_regular_file(path, ec) && fs::file_size(path, ec) >= options_.rotate_bytes && !ec) {
    fs::rename(path, dir / fmt::format("{}.{}.jsonl", options_.table, common::NowEpochMillis()),
               ec);
    if (ec)
      return common::Unavailable(fmt::format("cannot rotate {}: {}", path.string(), ec.message()));
    SLUICE_RETURN_IF_ERROR(SyncDirectory(dir));
  }
  std::string lines;
  for (const auto& c : batch) {
    // A key change is a delete of the old key, then the upsert of the new.
    if (c.old_key.is_object()) {
      nlohmann::json gone = {{"op", "d"}, {"key", c.old_key}, {"after", nullptr}};
      if (!c.position.empty()) gone["position"] = c.position;
      lines += gone.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    }
    nlohmann::json line = {
        {"op", std::string(1, common::Letter(c.op))}, {"key", c.key}, {"after", c.after}};
    if (!c.as_text.empty()) line["as_text"] = c.as_text;
    if (!c.position.empty()) line["position"] = c.position;
    lines += line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  bool fresh = !fs::exists(path, ec);
  // Not through a link planted in the directory; 0640 whatever the umask.
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (fd < 0)
    return common::Unavailable(fmt::format("cannot open {}: {}", path.string(), strerror(errno)));
  fchmod(fd, 0640);
  // Where this batch starts: a failed append is cut back to it, so a retry
  // never follows half a line.
  off_t start = lseek(fd, 0, SEEK_END);
  std::size_t written = 0;
  while (written < lines.size()) {
    ssize_t n = write(fd, lines.data() + written, lines.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string why = strerror(errno);
      if (start >= 0 && written > 0) (void)!ftruncate(fd, start);
      close(fd);
      return common::Unavailable(fmt::format("cannot write {}: {}", path.string(), why));
    }
    written += static_cast<std::size_t>(n);
  }
  // Durable before the offsets are committed.
  int synced = fsync(fd);
  std::string why = synced != 0 ? strerror(errno) : "";
  close(fd);
  if (synced != 0)
    return common::Unavailable(fmt::format("cannot fsync {}: {}", path.string(), why));
  if (fresh) SLUICE_RETURN_IF_ERROR(SyncDirectory(dir));
  return std::vector<RejectedChange>{};
}

}  // namespace sluice::connectors::targets
