// One broker per data directory. Two brokers on one directory corrupt it:
// each compacts groups/offsets.log into a new file (the other goes on
// appending to the unlinked one, and its commits are lost) and cuts the
// other's in-flight tails as torn. So the broker holds an exclusive flock on
// <data_dir>/LOCK, as LevelDB and RocksDB do, from before it reads anything
// until it has closed everything. The kernel drops the lock when the process
// dies however it dies, so a crash never leaves a stale lock behind.
#pragma once

#include <filesystem>
#include <memory>

#include "common/status.h"

namespace sluice::broker::storage {

class DirLock {
 public:
  // Takes the lock without waiting. Another holder (another process, or
  // another DirLock in this one) is a FailedPrecondition naming the
  // directory and, when it wrote it, the holder's pid; nothing in the
  // directory is changed then but the LOCK file's creation.
  static common::Result<std::unique_ptr<DirLock>> Acquire(const std::filesystem::path& dir);
  ~DirLock();  // releases it
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  explicit DirLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace sluice::broker::storage
