#include "connectors/types/config_validation.h"

namespace sluice::connectors::types {
namespace {

size_t Utf8Chars(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

void CheckField(const FieldDef& f, const nlohmann::json& v, std::vector<FieldError>& errors) {
  auto fail = [&](const std::string& m) { errors.push_back({f.name, m}); };
  switch (f.type) {
    case FieldType::kString: {
      if (!v.is_string()) return fail("must be a string");
      const auto& s = v.get_ref<const std::string&>();
      if (f.required && s.empty()) return fail("must not be empty");
      if (f.max_length != 0 && Utf8Chars(s) > f.max_length) {
        return fail("longer than " + std::to_string(f.max_length) + " characters");
      }
      if (!f.allowed.empty()) {
        bool ok = false;
        std::string list;
        for (const auto& a : f.allowed) {
          ok = ok || a == s;
          list += (list.empty() ? "" : ", ") + a;
        }
        if (!ok) return fail("must be one of: " + list);
      }
      return;
    }
    case FieldType::kInteger: {
      if (!v.is_number_integer()) return fail("must be an integer");
      auto n = v.get<std::int64_t>();
      if (n < f.min || (f.max != 0 && n > f.max)) {
        return fail("must be between " + std::to_string(f.min) + " and " +
                    (f.max != 0 ? std::to_string(f.max) : std::string("any")));
      }
      return;
    }
    case FieldType::kBoolean:
      if (!v.is_boolean()) fail("must be true or false");
      return;
    case FieldType::kObject:
      if (!v.is_object()) return fail("must be an object");
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!it->is_string()) {
          errors.push_back({f.name + "." + it.key(), "must be a string"});
        }
      }
      return;
  }
}

}  // namespace

std::vector<FieldError> Validate(const ConnectorType& type, const nlohmann::json& config) {
  std::vector<FieldError> errors;
  if (!config.is_object()) return {{"configuration", "must be an object"}};
  for (const auto& f : type.fields) {
    auto it = config.find(f.name);
    if (it == config.end() || it->is_null()) {
      if (f.required) errors.push_back({f.name, "is required"});
      continue;
    }
    CheckField(f, *it, errors);
  }
  for (auto it = config.begin(); it != config.end(); ++it) {
    if (!type.Field(it.key())) errors.push_back({it.key(), "is not a field of " + type.id});
  }
  return errors;
}

nlohmann::json ApplyDefaults(const ConnectorType& type, const nlohmann::json& config) {
  nlohmann::json out = config;
  for (const auto& f : type.fields) {
    if (!f.default_value.is_null() && (!out.contains(f.name) || out[f.name].is_null())) {
      out[f.name] = f.default_value;
    }
  }
  return out;
}

nlohmann::json Redact(const ConnectorType* type, const nlohmann::json& config) {
  if (!config.is_object()) return config;
  nlohmann::json out = config;
  for (auto it = out.begin(); it != out.end(); ++it) {
    const FieldDef* f = type ? type->Field(it.key()) : nullptr;
    // A field the registry does not know may hold anything: hide it too.
    bool secret = f == nullptr || f->secret;
    if (!secret || it->is_null()) continue;
    if (it->is_object()) {
      for (auto h = it->begin(); h != it->end(); ++h) *h = kRedacted;
    } else {
      *it = kRedacted;
    }
  }
  return out;
}

nlohmann::json KeepUnchangedSecrets(const ConnectorType& type, const nlohmann::json& update,
                                    const nlohmann::json& stored) {
  nlohmann::json out = update;
  if (!out.is_object() || !stored.is_object()) return out;
  for (const auto& f : type.fields) {
    if (!f.secret || !out.contains(f.name) || !stored.contains(f.name)) continue;
    auto& v = out[f.name];
    if (v.is_string() && v == kRedacted) {
      v = stored[f.name];
    } else if (v.is_object() && stored[f.name].is_object()) {
      for (auto h = v.begin(); h != v.end(); ++h) {
        if (*h == kRedacted && stored[f.name].contains(h.key())) *h = stored[f.name][h.key()];
      }
    }
  }
  return out;
}

namespace {
bool LegalTopicChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}
std::string Component(const std::string& s) {
  if (s.empty()) return "_";
  std::string out;
  for (char c : s) out.push_back(LegalTopicChar(c) && c != '.' ? c : '_');
  return out;
}
}  // namespace

std::string TopicForTable(const std::string& prefix, const std::string& schema,
                          const std::string& table) {
  std::string topic;
  if (!prefix.empty()) {
    for (char c : prefix) topic.push_back(LegalTopicChar(c) ? c : '_');
    topic.push_back('.');
  }
  topic += Component(schema) + "." + Component(table);
  if (topic.size() > 249) topic.resize(249);
  return topic;
}

}  // namespace sluice::connectors::types
