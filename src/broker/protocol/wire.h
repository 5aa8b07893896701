// Big-endian primitives of the Kafka wire protocol (non-flexible encodings
// only: we never advertise a flexible version, so compact types never occur).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::broker::protocol {

// Thrown by Reader on truncated or impossible input. It never escapes the
// connection loop: a request that fails to decode closes the connection,
// as a Kafka broker does.
class DecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}

  std::int8_t Int8();
  std::int16_t Int16();
  std::int32_t Int32();
  std::int64_t Int64();
  bool Bool() { return Int8() != 0; }
  std::string String();
  std::optional<std::string> NullableString();
  // BYTES/NULLABLE_BYTES: a view into the request buffer, valid while it lives.
  std::optional<std::string_view> NullableBytes();
  std::string_view Bytes();
  // Array length; -1 (null) is returned as -1, anything absurd throws.
  std::int32_t ArrayLength();
  std::vector<std::int32_t> Int32Array();
  std::vector<std::string> StringArray();

  std::size_t remaining() const { return data_.size() - pos_; }
  std::string_view rest() const { return data_.substr(pos_); }

 private:
  std::string_view Take(std::size_t n);

  std::string_view data_;
  std::size_t pos_ = 0;
};

// A byte range of an open file (a log segment) that goes into an outgoing
// message as is. The server sends it with sendfile, so record batches travel
// from the page cache to the socket without being copied through the broker.
struct FileSlice {
  int fd = -1;
  std::int64_t offset = 0;
  std::int64_t length = 0;
  std::shared_ptr<const void> keep_open;  // owns `fd` until the slice is sent
};

// Reads a slice's bytes; nullopt when the file is shorter than the slice.
std::optional<std::string> ReadSlice(const FileSlice& s);

// An encoded message: `bytes` with file slices spliced in at the given
// positions of `bytes` (ascending), i.e. bytes[0, at1) slice1 bytes[at1, at2) ...
struct Frame {
  std::string bytes;
  std::vector<std::pair<std::size_t, FileSlice>> files;

  std::size_t size() const;
  // The whole message as one string (reads the slices): for callers without
  // a socket, such as tests and the fuzzer. Nullopt when a slice is short.
  std::optional<std::string> Flatten() const;
};

class Writer {
 public:
  void Int8(std::int8_t v) { out_.push_back(static_cast<char>(v)); }
  void Int16(std::int16_t v);
  void Int32(std::int32_t v);
  void Int64(std::int64_t v);
  void Bool(bool v) { Int8(v ? 1 : 0); }
  void String(std::string_view s);
  void NullableString(const std::optional<std::string>& s);
  void Bytes(std::string_view b);
  void NullBytes() { Int32(-1); }
  void Raw(std::string_view b) { out_.append(b); }
  // BYTES whose content is a file slice: the length is written now, the
  // content is spliced in when the frame is sent.
  void FileBytes(FileSlice s);
  void ArrayLength(std::size_t n) { Int32(static_cast<std::int32_t>(n)); }
  void Int32Array(const std::vector<std::int32_t>& v);

  // Reserves an INT32 to be patched later (e.g. a byte count not known yet).
  std::size_t Placeholder32();
  void Patch32(std::size_t at, std::int32_t v);

  // Bytes in the buffer (positions for Placeholder32/Patch32), without the
  // file slices.
  std::size_t size() const { return out_.size(); }
  // The encoded size including file slices.
  std::size_t total_size() const { return out_.size() + sliced_bytes_; }
  std::string& buffer() { return out_; }
  // The buffer alone: only for writers that were given no file slices.
  std::string Take() { return std::move(out_); }
  Frame TakeFrame();

 private:
  std::string out_;
  std::vector<std::pair<std::size_t, FileSlice>> files_;
  std::size_t sliced_bytes_ = 0;
};

// Reads/writes a big-endian integer at a raw pointer (for record batch headers).
std::int64_t LoadBe64(const char* p);
std::int32_t LoadBe32(const char* p);
std::int16_t LoadBe16(const char* p);
void StoreBe64(char* p, std::int64_t v);
void StoreBe32(char* p, std::int32_t v);

}  // namespace sluice::broker::protocol
