#include "connectors/topic_naming.h"

namespace sluice::connectors {

namespace {
constexpr std::size_t kMaxTopicLength = 249;

bool LegalTopicChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}
}  // namespace

std::string SanitizeTopicComponent(std::string_view component) {
  if (component.empty()) return std::string(1, '_');
  std::string out;
  out.reserve(component.size());
  for (char c : component) {
    // A dot inside a component would blur the prefix/schema/table split.
    out.push_back(LegalTopicChar(c) && c != '.' ? c : '_');
  }
  return out;
}

std::string TopicForTable(std::string_view prefix, const TableId& table) {
  std::string topic;
  if (!prefix.empty()) {
    for (char c : prefix) topic.push_back(LegalTopicChar(c) ? c : '_');
    topic.push_back('.');
  }
  topic += SanitizeTopicComponent(table.schema);
  topic.push_back('.');
  topic += SanitizeTopicComponent(table.name);
  if (topic.size() > kMaxTopicLength) topic.resize(kMaxTopicLength);
  return topic;
}

}  // namespace sluice::connectors
