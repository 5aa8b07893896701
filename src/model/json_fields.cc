#include "model/json_fields.h"

#include <algorithm>
#include <cctype>

namespace sluice::model {
namespace {

// VARCHAR(n) counts characters; the JSON parser already refused bad UTF-8.
size_t Utf8Chars(const std::string& s) {
  return std::count_if(s.begin(), s.end(),
                       [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

}  // namespace

void InvalidField(const std::string& key, const std::string& why) {
  throw ApiError(422, "invalid_field", key + ": " + why);
}

bool FieldReader::IsNull(const std::string& key) const {
  return object_.contains(key) && object_.at(key).is_null();
}

const Json* FieldReader::Get(const std::string& key) {
  read_.insert(key);
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<std::string> FieldReader::OptionalString(const std::string& key, size_t max_chars) {
  const Json* v = Get(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) InvalidField(key, "must be a string");
  std::string s = v->get<std::string>();
  // PostgreSQL text cannot hold NUL: refused here rather than failing the insert.
  if (s.find('\0') != std::string::npos) InvalidField(key, "must not contain NUL characters");
  if (Utf8Chars(s) > max_chars) {
    InvalidField(key, "longer than " + std::to_string(max_chars) + " characters");
  }
  return s;
}

std::string FieldReader::RequiredString(const std::string& key, size_t max_chars) {
  auto s = OptionalString(key, max_chars);
  if (!s) InvalidField(key, "is required");
  if (s->empty()) InvalidField(key, "must not be empty");
  return *s;
}

std::optional<bool> FieldReader::OptionalBool(const std::string& key) {
  const Json* v = Get(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) InvalidField(key, "must be true or false");
  return v->get<bool>();
}

std::optional<common::Uuid> FieldReader::OptionalUuid(const std::string& key) {
  const Json* v = Get(key);
  if (!v) return std::nullopt;
  std::optional<common::Uuid> id;
  if (v->is_string()) id = common::Uuid::Parse(v->get<std::string>());
  if (!id) InvalidField(key, "must be a UUID");
  return id;
}

common::Uuid FieldReader::RequiredUuid(const std::string& key) {
  auto id = OptionalUuid(key);
  if (!id) InvalidField(key, "is required");
  return *id;
}

std::optional<std::int64_t> FieldReader::OptionalInt(const std::string& key, std::int64_t min,
                                                     std::int64_t max) {
  const Json* v = Get(key);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) InvalidField(key, "must be an integer");
  auto n = v->get<std::int64_t>();
  if (n < min || n > max) {
    InvalidField(key, "must be between " + std::to_string(min) + " and " + std::to_string(max));
  }
  return n;
}

std::optional<Json> FieldReader::OptionalObject(const std::string& key) {
  const Json* v = Get(key);
  if (!v) return std::nullopt;
  if (!v->is_object()) InvalidField(key, "must be an object");
  return *v;
}

std::optional<Json> FieldReader::OptionalArray(const std::string& key) {
  const Json* v = Get(key);
  if (!v) return std::nullopt;
  if (!v->is_array()) InvalidField(key, "must be an array");
  return *v;
}

void FieldReader::Finish() const {
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    if (!read_.count(it.key())) throw ApiError(400, "unknown_field", "unknown field: " + it.key());
  }
}

std::string NormalizeEmail(const std::string& email) {
  std::string e = email;
  auto not_space = [](unsigned char c) { return !std::isspace(c); };
  e.erase(e.begin(), std::find_if(e.begin(), e.end(), not_space));
  e.erase(std::find_if(e.rbegin(), e.rend(), not_space).base(), e.end());
  std::transform(e.begin(), e.end(), e.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // One '@', something either side, a dot in the domain, no spaces or
  // control characters: enough to refuse typos without pretending to be RFC 5322.
  size_t at = e.find('@');
  bool ok = at != std::string::npos && at > 0 && at + 1 < e.size() &&
            e.find('@', at + 1) == std::string::npos && e.find('.', at + 1) != std::string::npos &&
            e.back() != '.' && e[at + 1] != '.' &&
            std::none_of(e.begin(), e.end(), [](unsigned char c) {
              return std::isspace(c) || std::iscntrl(c) || c == ',' || c == ';';
            });
  if (!ok) InvalidField("email", "is not a valid email address");
  if (e.size() > 320) InvalidField("email", "longer than 320 characters");
  return e;
}

}  // namespace sluice::model
