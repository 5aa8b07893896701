#include "broker/storage/durable_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

namespace sluice::broker::storage {

namespace {
int journal_fd = -1;                     // set once at startup, before any storage thread runs
std::string disk_full_marker;            // likewise
std::chrono::milliseconds slow_sync{0};  // likewise
}  // namespace

void SimulateSlowSync(std::chrono::milliseconds delay) { slow_sync = delay; }

void SimulateDiskFullWhileExists(const std::filesystem::path& marker) {
  disk_full_marker = marker.string();
}

bool SimulatedDiskFull() {
  return !disk_full_marker.empty() && ::access(disk_full_marker.c_str(), F_OK) == 0;
}

void RecordSyncedLengthsTo(const std::filesystem::path& journal) {
  journal_fd = ::open(journal.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

common::Status SyncFile(int fd, const std::string& path) {
  // The length is taken before the sync: every byte below it was written
  // before the sync began, so the sync covers it.
  struct stat st {};
  if (journal_fd >= 0 && ::fstat(fd, &st) != 0)
    return common::Internal(fmt::format("stat {}: {}", path, std::strerror(errno)));
  if (slow_sync.count() > 0) std::this_thread::sleep_for(slow_sync);
  if (::fdatasync(fd) != 0)
    return common::Internal(fmt::format("fsync {}: {}", path, std::strerror(errno)));
  if (journal_fd >= 0) {
    // One write per line on an O_APPEND descriptor: lines from concurrent
    // syncs do not interleave.
    std::string line = fmt::format("{} {}\n", static_cast<long long>(st.st_size), path);
    if (::write(journal_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
      return common::Internal(fmt::format("synced-lengths journal: {}", std::strerror(errno)));
  }
  return {};
}

common::Status SyncDirectory(const std::filesystem::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return common::Internal(fmt::format("open {}: {}", dir.string(), std::strerror(errno)));
  int rc = ::fsync(fd);
  int saved = errno;
  ::close(fd);
  if (rc != 0)
    return common::Internal(fmt::format("fsync {}: {}", dir.string(), std::strerror(saved)));
  return {};
}

}  // namespace sluice::broker::storage
