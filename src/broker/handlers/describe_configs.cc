#include <algorithm>

#include "broker/handlers/handlers.h"
#include "broker/protocol/api.h"

namespace sluice::broker::handlers {

namespace err = protocol::error;

namespace {
constexpr std::int8_t kTopicResource = 2;
constexpr std::int8_t kBrokerResource = 4;
constexpr std::int8_t kSourceDynamicTopic = 1;
constexpr std::int8_t kSourceDefault = 5;
constexpr std::int8_t kTypeLong = 5;
}  // namespace

Reply DescribeConfigs(Broker& b, const RequestContext& ctx, Reader& in, Writer& out) {
  const int v = ctx.api_version;
  struct Res {
    std::int8_t type;
    std::string name;
    std::optional<std::vector<std::string>> keys;
  };
  std::vector<Res> resources;
  std::int32_t nr = in.ArrayLength();
  for (std::int32_t i = 0; i < nr; ++i) {
    Res r;
    r.type = in.Int8();
    r.name = in.String();
    std::int32_t nk = in.ArrayLength();
    if (nk >= 0) {
      r.keys.emplace();
      for (std::int32_t k = 0; k < nk; ++k) r.keys->push_back(in.String());
    }
    resources.push_back(std::move(r));
  }
  if (v >= 1) in.Bool();  // include_synonyms
  if (v >= 3) in.Bool();  // include_documentation

  storage::TopicConfig defaults;
  defaults.retention_ms = b.options().retention_ms;
  defaults.retention_bytes = b.options().retention_bytes;
  defaults.segment_bytes = b.options().segment_bytes;
  auto default_map = defaults.AsMap();

  out.Int32(0);
  out.ArrayLength(resources.size());
  for (const auto& r : resources) {
    std::int16_t code = err::kNone;
    std::optional<std::string> message;
    std::map<std::string, std::string> values;
    if (r.type == kTopicResource) {
      auto cfg = b.logs().Config(r.name);
      if (!ctx.MayDescribe(r.name)) {
        code = err::kTopicAuthorizationFailed;
        message = "not authorized for this topic";
      } else if (!cfg) {
        code = err::kUnknownTopicOrPartition;
        message = "no such topic";
      } else {
        values = cfg->AsMap();
      }
    } else if (r.type == kBrokerResource) {
      values = default_map;
    } else {
      code = err::kInvalidRequest;
      message = "only TOPIC and BROKER resources are described";
    }
    out.Int16(code);
    out.NullableString(message);
    out.Int8(r.type);
    out.String(r.name);
    std::vector<std::pair<std::string, std::string>> rows;
    for (const auto& [k, val] : values) {
      if (!r.keys || std::find(r.keys->begin(), r.keys->end(), k) != r.keys->end())
        rows.emplace_back(k, val);
    }
    out.ArrayLength(rows.size());
    for (const auto& [k, val] : rows) {
      bool is_default = r.type == kBrokerResource || default_map[k] == val;
      out.String(k);
      out.NullableString(val);
      out.Bool(false);  // read_only
      if (v == 0) out.Bool(is_default);
      if (v >= 1) out.Int8(is_default ? kSourceDefault : kSourceDynamicTopic);
      out.Bool(false);                 // is_sensitive
      if (v >= 1) out.ArrayLength(0);  // synonyms
      if (v >= 3) {
        out.Int8(kTypeLong);
        out.NullableString(std::nullopt);
      }
    }
  }
  return Reply::kSend;
}

}  // namespace sluice::broker::handlers
