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
  BinlogPosition p{j["file"].get<std::string>(), j["pos"].get<std::uint64_t>(), ""};
  if (j.contains("gtid")) {
    if (!j["gtid"].is_string() || !ParseGtidSet(j["gtid"].get<std::string>()).ok())
      return common::InvalidArgument("binlog position: gtid is a GTID list like \"0-1-100\"");
    p.gtid = j["gtid"].get<std::string>();
  }
  return p;
}

common::Result<GtidSet> ParseGtidSet(std::string_view text) {
  GtidSet out;
  auto bad = [&] {
    return common::InvalidArgument(
        fmt::format("GTID position '{}' is not a list of domain-server-sequence", text));
  };
  std::size_t at = 0;
  while (at < text.size()) {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\n')) ++at;
    if (at >= text.size()) break;
    auto comma = text.find(',', at);
    auto item = text.substr(at, comma == std::string_view::npos ? text.size() - at : comma - at);
    at = comma == std::string_view::npos ? text.size() : comma + 1;
    while (!item.empty() && (item.back() == ' ' || item.back() == '\n')) item.remove_suffix(1);
    Gtid g;
    const char* p = item.data();
    const char* end = item.data() + item.size();
    auto r1 = std::from_chars(p, end, g.domain);
    if (r1.ec != std::errc() || r1.ptr == end || *r1.ptr != '-') return bad();
    auto r2 = std::from_chars(r1.ptr + 1, end, g.server);
    if (r2.ec != std::errc() || r2.ptr == end || *r2.ptr != '-') return bad();
    auto r3 = std::from_chars(r2.ptr + 1, end, g.seq);
    if (r3.ec != std::errc() || r3.ptr != end) return bad();
    if (out.count(g.domain)) return bad();
    out[g.domain] = g;
  }
  return out;
}

std::string FormatGtidSet(const GtidSet& set) {
  std::string out;
  for (const auto& [domain, g] : set)
    out += fmt::format("{}{}-{}-{}", out.empty() ? "" : ",", g.domain, g.server, g.seq);
  return out;
}

}  // namespace sluice::connectors::mysql
