#include "broker/protocol/wire.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sluice::broker::protocol {

std::int64_t LoadBe64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<std::uint8_t>(p[i]);
  return static_cast<std::int64_t>(v);
}

std::int32_t LoadBe32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<std::uint8_t>(p[i]);
  return static_cast<std::int32_t>(v);
}

std::int16_t LoadBe16(const char* p) {
  return static_cast<std::int16_t>((static_cast<std::uint8_t>(p[0]) << 8) |
                                   static_cast<std::uint8_t>(p[1]));
}

void StoreBe64(char* p, std::int64_t v) {
  auto u = static_cast<std::uint64_t>(v);
  for (int i = 7; i >= 0; --i) {
    p[i] = static_cast<char>(u & 0xff);
    u >>= 8;
  }
}

void StoreBe32(char* p, std::int32_t v) {
  auto u = static_cast<std::uint32_t>(v);
  for (int i = 3; i >= 0; --i) {
    p[i] = static_cast<char>(u & 0xff);
    u >>= 8;
  }
}

std::string_view Reader::Take(std::size_t n) {
  if (n > remaining()) throw DecodeError("truncated request");
  auto v = data_.substr(pos_, n);
  pos_ += n;
  return v;
}

std::int8_t Reader::Int8() { return static_cast<std::int8_t>(Take(1)[0]); }
std::int16_t Reader::Int16() { return LoadBe16(Take(2).data()); }
std::int32_t Reader::Int32() { return LoadBe32(Take(4).data()); }
std::int64_t Reader::Int64() { return LoadBe64(Take(8).data()); }

std::string Reader::String() {
  auto s = NullableString();
  if (!s) throw DecodeError("null where a string is required");
  return std::move(*s);
}

std::optional<std::string> Reader::NullableString() {
  std::int16_t len = Int16();
  if (len == -1) return std::nullopt;
  if (len < 0) throw DecodeError("negative string length");
  return std::string(Take(static_cast<std::size_t>(len)));
}

std::optional<std::string_view> Reader::NullableBytes() {
  std::int32_t len = Int32();
  if (len == -1) return std::nullopt;
  if (len < 0) throw DecodeError("negative bytes length");
  return Take(static_cast<std::size_t>(len));
}

std::string_view Reader::Bytes() {
  auto b = NullableBytes();
  if (!b) throw DecodeError("null where bytes are required");
  return *b;
}

std::int32_t Reader::ArrayLength() {
  std::int32_t n = Int32();
  if (n < -1) throw DecodeError("negative array length");
  // Every element takes at least one byte, so a longer array cannot be real.
  if (n > 0 && static_cast<std::size_t>(n) > remaining())
    throw DecodeError("array overruns request");
  return n;
}

std::vector<std::int32_t> Reader::Int32Array() {
  std::int32_t n = ArrayLength();
  std::vector<std::int32_t> v;
  for (std::int32_t i = 0; i < n; ++i) v.push_back(Int32());
  return v;
}

std::vector<std::string> Reader::StringArray() {
  std::int32_t n = ArrayLength();
  std::vector<std::string> v;
  for (std::int32_t i = 0; i < n; ++i) v.push_back(String());
  return v;
}

void Writer::Int16(std::int16_t v) {
  out_.push_back(static_cast<char>((v >> 8) & 0xff));
  out_.push_back(static_cast<char>(v & 0xff));
}

void Writer::Int32(std::int32_t v) {
  char b[4];
  StoreBe32(b, v);
  out_.append(b, 4);
}

void Writer::Int64(std::int64_t v) {
  char b[8];
  StoreBe64(b, v);
  out_.append(b, 8);
}

void Writer::String(std::string_view s) {
  Int16(static_cast<std::int16_t>(s.size()));
  out_.append(s);
}

void Writer::NullableString(const std::optional<std::string>& s) {
  if (!s) {
    Int16(-1);
  } else {
    String(*s);
  }
}

void Writer::Bytes(std::string_view b) {
  Int32(static_cast<std::int32_t>(b.size()));
  out_.append(b);
}

void Writer::Int32Array(const std::vector<std::int32_t>& v) {
  ArrayLength(v.size());
  for (auto x : v) Int32(x);
}

std::size_t Writer::Placeholder32() {
  std::size_t at = out_.size();
  Int32(0);
  return at;
}

void Writer::Patch32(std::size_t at, std::int32_t v) { StoreBe32(out_.data() + at, v); }

void Writer::FileBytes(FileSlice s) {
  Int32(static_cast<std::int32_t>(s.length));
  if (s.length == 0) return;
  sliced_bytes_ += static_cast<std::size_t>(s.length);
  files_.emplace_back(out_.size(), std::move(s));
}

Frame Writer::TakeFrame() {
  Frame f{std::move(out_), std::move(files_)};
  files_.clear();
  sliced_bytes_ = 0;
  return f;
}

std::optional<std::string> ReadSlice(const FileSlice& s) {
  std::string out(static_cast<std::size_t>(s.length), '\0');
  std::size_t done = 0;
  while (done < out.size()) {
    ssize_t r = ::pread(s.fd, out.data() + done, out.size() - done,
                        s.offset + static_cast<std::int64_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return std::nullopt;
    done += static_cast<std::size_t>(r);
  }
  return out;
}

std::size_t Frame::size() const {
  std::size_t n = bytes.size();
  for (const auto& [at, s] : files) n += static_cast<std::size_t>(s.length);
  return n;
}

std::optional<std::string> Frame::Flatten() const {
  std::string out;
  out.reserve(size());
  std::size_t done = 0;
  for (const auto& [at, s] : files) {
    out.append(bytes, done, at - done);
    auto content = ReadSlice(s);
    if (!content) return std::nullopt;
    out += *content;
    done = at;
  }
  out.append(bytes, done);
  return out;
}

}  // namespace sluice::broker::protocol
