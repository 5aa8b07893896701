#include "connectors/postgres/transaction_spool.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace sluice::connectors::postgres {

using common::Status;

namespace {

// A record: u64 wal_start, u32 length, the message bytes (host order: the
// file never leaves this process).
constexpr std::size_t kHeader = sizeof(std::uint64_t) + sizeof(std::uint32_t);
constexpr std::size_t kReadChunk = std::size_t{1} << 20;

Status Errno(const std::string& what) {
  return common::Unavailable(fmt::format("{}: {}", what, std::strerror(errno)));
}

// Calls `each` for every whole record at the front of `data`; returns how
// many bytes those records took.
common::Result<std::size_t> Records(std::string_view data,
                                    const std::function<Status(Lsn, std::string_view)>& each) {
  std::size_t at = 0;
  while (data.size() - at >= kHeader) {
    std::uint64_t lsn;
    std::uint32_t len;
    std::memcpy(&lsn, data.data() + at, sizeof lsn);
    std::memcpy(&len, data.data() + at + sizeof lsn, sizeof len);
    if (data.size() - at - kHeader < len) break;
    SLUICE_RETURN_IF_ERROR(each(lsn, data.substr(at + kHeader, len)));
    at += kHeader + len;
  }
  return at;
}

}  // namespace

TransactionSpool::TransactionSpool(std::string dir, std::size_t memory_limit)
    : dir_(std::move(dir)), memory_limit_(memory_limit) {}

TransactionSpool::~TransactionSpool() {
  if (fd_ >= 0) ::close(fd_);
}

Status TransactionSpool::Append(Lsn wal_start, std::string_view message) {
  if (message.size() > UINT32_MAX) return common::InvalidArgument("pgoutput message over 4 GiB");
  std::uint64_t lsn = wal_start;
  auto len = static_cast<std::uint32_t>(message.size());
  buffer_.append(reinterpret_cast<const char*>(&lsn), sizeof lsn);
  buffer_.append(reinterpret_cast<const char*>(&len), sizeof len);
  buffer_.append(message);
  ++messages_;
  if (buffer_.size() >= memory_limit_) return Spill();
  return Status::Ok();
}

Status TransactionSpool::Spill() {
  if (fd_ < 0) {
    fd_ = ::open(dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd_ < 0) {
      // Filesystems without O_TMPFILE: a named file, unlinked at once.
      std::string path = dir_ + "/sluice-txn-XXXXXX";
      std::vector<char> name(path.begin(), path.end());
      name.push_back('\0');
      fd_ = ::mkostemp(name.data(), O_CLOEXEC);
      if (fd_ < 0) return Errno("creating a spool file for a large transaction in " + dir_);
      ::unlink(name.data());
    }
  }
  std::size_t done = 0;
  while (done < buffer_.size()) {
    ssize_t n = ::pwrite(fd_, buffer_.data() + done, buffer_.size() - done,
                         static_cast<off_t>(file_size_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Errno("writing a large transaction's spool file in " + dir_);
    done += static_cast<std::size_t>(n);
  }
  file_size_ += done;
  buffer_.clear();
  return Status::Ok();
}

Status TransactionSpool::ForEach(const std::function<Status(Lsn, std::string_view)>& each) {
  if (fd_ >= 0) {
    std::string chunk;
    std::uint64_t offset = 0;
    while (offset < file_size_) {
      // Whatever a previous read left over (a record cut by the chunk's
      // end) stays at the front; a record longer than a chunk grows it.
      std::size_t kept = chunk.size();
      std::size_t want = std::max(kReadChunk, kept * 2);
      want = static_cast<std::size_t>(std::min<std::uint64_t>(want, file_size_ - offset + kept));
      chunk.resize(want);
      std::size_t got = kept;
      while (got < want) {
        ssize_t n = ::pread(fd_, chunk.data() + got, want - got, static_cast<off_t>(offset));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return Errno("reading a large transaction's spool file");
        got += static_cast<std::size_t>(n);
        offset += static_cast<std::uint64_t>(n);
      }
      auto used = Records(chunk, each);
      if (!used.ok()) return used.status();
      chunk.erase(0, *used);
    }
    if (!chunk.empty()) return common::Internal("a large transaction's spool file ends mid-record");
  }
  auto used = Records(buffer_, each);
  if (!used.ok()) return used.status();
  if (*used != buffer_.size())
    return common::Internal("a large transaction's spool ends mid-record");
  return Status::Ok();
}

}  // namespace sluice::connectors::postgres
