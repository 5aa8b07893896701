// Builds pgoutput messages byte by byte for the decoder tests, following the
// documented "Logical Replication Message Formats".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sluice::connectors::testing {

class MessageBuilder {
 public:
  explicit MessageBuilder(char type) { out_.push_back(type); }
  MessageBuilder& U8(std::uint8_t v) {
    out_.push_back(static_cast<char>(v));
    return *this;
  }
  MessageBuilder& U16(std::uint16_t v) { return Be(v, 2); }
  MessageBuilder& U32(std::uint32_t v) { return Be(v, 4); }
  MessageBuilder& U64(std::uint64_t v) { return Be(v, 8); }
  MessageBuilder& Str(const std::string& s) {
    out_ += s;
    out_.push_back('\0');
    return *this;
  }
  MessageBuilder& Raw(const std::string& s) {
    out_ += s;
    return *this;
  }
  // TupleData: nullopt is 'n', "\x01u" is the unchanged-TOAST marker, else 't'.
  MessageBuilder& Tuple(const std::vector<std::optional<std::string>>& values) {
    U16(static_cast<std::uint16_t>(values.size()));
    for (const auto& v : values) {
      if (!v) {
        U8('n');
      } else if (*v == kUnchanged) {
        U8('u');
      } else {
        U8('t').U32(static_cast<std::uint32_t>(v->size())).Raw(*v);
      }
    }
    return *this;
  }
  std::string Build() const { return out_; }

  static constexpr const char* kUnchanged = "\x01u";

 private:
  MessageBuilder& Be(std::uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return *this;
  }
  std::string out_;
};

}  // namespace sluice::connectors::testing
