#include "api/http.h"

#include <cctype>
#include <cstdint>

#include "common/bounded_json.h"

namespace sluice::api {

common::Uuid Request::PathUuid(const std::string& name) const {
  auto it = params.find(name);
  std::optional<common::Uuid> id;
  if (it != params.end()) id = common::Uuid::Parse(it->second);
  if (!id) throw ApiError(404, "not_found", name + " not found");
  return *id;
}

namespace {

// Well-formed UTF-8 without NUL (what PostgreSQL text accepts).
bool ValidText(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == 0) return false;
    int extra = c < 0x80           ? 0
                : (c >> 5) == 0x6  ? 1
                : (c >> 4) == 0xE  ? 2
                : (c >> 3) == 0x1E ? 3
                                   : -1;
    if (extra < 0 || i + extra >= s.size()) return false;
    std::uint32_t cp = extra == 0 ? c : c & (0x3F >> extra);
    for (int k = 1; k <= extra; ++k) {
      auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    // Overlong forms, surrogates and beyond U+10FFFF.
    static constexpr std::uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[extra] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return false;
    i += extra + 1;
  }
  return true;
}

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// Bodies are JSON. Accepted: no Content-Type, application/json or
// application/*+json in UTF-8, and application/x-www-form-urlencoded because
// that is what `curl -d` sends (the body must still parse as JSON). Anything
// else (XML, multipart forms, text) is a client mistake: 415.
void CheckContentType(const httplib::Request& raw) {
  if (!raw.has_header("Content-Type")) return;
  std::string value = Lower(raw.get_header_value("Content-Type"));
  std::string media = Trim(value.substr(0, value.find(';')));
  bool json =
      media == "application/json" || (media.rfind("application/", 0) == 0 && media.size() > 5 &&
                                      media.compare(media.size() - 5, 5, "+json") == 0);
  if (!json && media != "application/x-www-form-urlencoded") {
    throw ApiError(415, "unsupported_media_type",
                   "request bodies are JSON: send Content-Type: application/json");
  }
  auto charset = value.find("charset=");
  if (charset != std::string::npos) {
    std::string cs = Trim(value.substr(charset + 8, value.find(';', charset) - charset - 8));
    if (!cs.empty() && cs.front() == '"' && cs.back() == '"' && cs.size() >= 2)
      cs = cs.substr(1, cs.size() - 2);
    if (cs != "utf-8" && cs != "utf8")
      throw ApiError(415, "unsupported_media_type", "request bodies are UTF-8 JSON");
  }
}

}  // namespace

std::optional<std::string> Request::Query(const std::string& name) const {
  if (!raw.has_param(name.c_str())) return std::nullopt;
  std::string value = raw.get_param_value(name.c_str());
  if (!ValidText(value)) {
    throw ApiError(422, "invalid_field", name + ": must be UTF-8 text without NUL characters");
  }
  return value;
}

Json Request::Body() const {
  CheckContentType(raw);
  // `curl -X POST .../start` sends nothing: an action without options.
  if (raw.body.find_first_not_of(" \t\r\n") == std::string::npos) return Json::object();
  auto parsed = common::ParseBoundedJson(raw.body);
  if (!parsed.ok()) {
    throw ApiError(400, "invalid_json", "request body: " + parsed.status().message());
  }
  if (!parsed->is_object())
    throw ApiError(400, "invalid_json", "request body must be a JSON object");
  return std::move(parsed).value();
}

Json ErrorBody(const std::string& code, const std::string& message) {
  return {{"error", {{"code", code}, {"message", message}}}};
}

}  // namespace sluice::api
