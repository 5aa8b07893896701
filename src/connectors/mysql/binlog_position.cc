#include "connectors/mysql/binlog_position.h"

#include <fmt/format.h>

#include <charconv>

namespace sluice::connectors::mysql {

std::optional<std::uint32_t> BinlogSequence(std::string_view file) {
  auto dot = file.rfind('.');
  if (dot == std::string_view::npos || dot + 1 >= file.size()) return std::nullopt;
  std::uint32_t seq = 0;
  auto digits = file.substr(dot + 1);
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), seq);
  if (ec != std::errc() || p != digits.data() + digits.size()) return std::nullopt;
  return seq;
}

std::string BinlogPosition::ToString() const { return fmt::format("{}:{}", file, pos); }

Lsn BinlogPosition::ToLsn() const {
  auto seq = BinlogSequence(file);
  if (!seq) return 0;
  return (static_cast<Lsn>(*seq) << 32) | (pos & 0xffffffffu);
}

BinlogPosition BinlogPosition::FromLsn(Lsn lsn, std::string_view like) {
  BinlogPosition p;
  p.pos = lsn & 0xffffffffu;
  auto dot = like.rfind('.');
  std::size_t width = dot == std::string_view::npos ? 6 : like.size() - dot - 1;
  std::string base(dot == std::string_view::npos ? like : like.substr(0, dot));
  p.file = fmt::format("{}.{:0{}}", base, lsn >> 32, width);
  return p;
}

common::Result<BinlogPosition> BinlogPosition::Parse(std::string_view text) {
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0)
    return common::InvalidArgument(fmt::format("binlog position '{}' is not file:pos", text));
  BinlogPosition p;
  p.file = std::string(text.substr(0, colon));
  auto digits = text.substr(colon + 1);
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), p.pos);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty())
    return common::InvalidArgument(fmt::format("binlog position '{}' is not file:pos", text));
  return p;
}

common::Result<BinlogPosition> BinlogPosition::FromJson(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("file") || !j["file"].is_string() || !j.contains("pos") ||
      !j["pos"].is_number_unsigned())
    return common::InvalidArgument("binlog position: {\"file\": string, \"pos\": integer}");
  return BinlogPosition{j["file"].get<std::string>(), j["pos"].get<std::uint64_t>()};
}

}  // namespace sluice::connectors::mysql
