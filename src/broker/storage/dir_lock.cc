#include "broker/storage/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <fmt/format.h>

namespace sluice::broker::storage {

common::Result<std::unique_ptr<DirLock>> DirLock::Acquire(const std::filesystem::path& dir) {
  const auto path = dir / "LOCK";
  // O_CLOEXEC: a child must not inherit (and so prolong) the lock.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return common::Internal(fmt::format("open {}: {}", path.string(), std::strerror(errno)));
  int rc;
  do {
    rc = ::flock(fd, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    int err = errno;
    std::string holder;
    if (err == EWOULDBLOCK) {
      char buf[32] = {};
      ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
      if (n > 0) holder = std::string(buf, static_cast<std::size_t>(n));
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    }
    ::close(fd);
    if (err != EWOULDBLOCK)
      return common::Internal(fmt::format("lock {}: {}", path.string(), std::strerror(err)));
    return common::FailedPrecondition(
        fmt::format("another broker{} holds the data directory {} (a lock on {}); not starting a "
                    "second one on it",
                    holder.empty() ? "" : " (pid " + holder + ")", dir.string(), path.string()));
  }
  // Who holds it, for the message above: written only once the lock is ours.
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, pid.data(), pid.size(), 0);
  return std::unique_ptr<DirLock>(new DirLock(fd));
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace sluice::broker::storage
