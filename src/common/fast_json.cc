#include "common/fast_json.h"

#include <simdjson.h>

namespace sluice::common {

namespace {

using nlohmann::json;

json Convert(simdjson::dom::element e) {
  switch (e.type()) {
    case simdjson::dom::element_type::OBJECT: {
      json out = json::object();
      auto& members = out.get_ref<json::object_t&>();
      // Hinted at the end: our own encoder writes members in sorted order,
      // so each insert costs no search. Any order stays correct, and a
      // repeated key keeps its last value as nlohmann's parser does.
      for (auto field : simdjson::dom::object(e))
        members.insert_or_assign(members.end(), std::string(field.key), Convert(field.value));
      return out;
    }
    case simdjson::dom::element_type::ARRAY: {
      json out = json::array();
      for (auto item : simdjson::dom::array(e)) out.push_back(Convert(item));
      return out;
    }
    case simdjson::dom::element_type::STRING:
      return json(std::string(std::string_view(e)));
    case simdjson::dom::element_type::INT64: {
      std::int64_t v = int64_t(e);
      if (v >= 0) return json(static_cast<std::uint64_t>(v));
      return json(v);
    }
    case simdjson::dom::element_type::UINT64:
      return json(std::uint64_t(e));
    case simdjson::dom::element_type::DOUBLE:
      return json(double(e));
    case simdjson::dom::element_type::BOOL:
      return json(bool(e));
    case simdjson::dom::element_type::NULL_VALUE:
      return json(nullptr);
  }
  return json(nullptr);
}

}  // namespace

nlohmann::json ParseJsonFast(std::string_view text) {
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element root;
  auto error = parser.parse(text.data(), text.size()).get(root);
  // What simdjson refuses (not JSON, or an integer beyond 64 bits) is
  // nlohmann's to judge, so both parsers agree on every text.
  if (error) return json::parse(text, nullptr, false);
  return Convert(root);
}

}  // namespace sluice::common
