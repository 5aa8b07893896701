#include "api/paging.h"

#include <charconv>

#include "model/json_fields.h"

namespace sluice::api {
namespace {

std::int64_t ParseInt(const std::string& name, const std::string& text) {
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size())
    InvalidField(name, "must be an integer");
  return v;
}

}  // namespace

Page ParsePage(const Request& req, int default_limit, int max_limit) {
  Page p;
  p.limit = default_limit;
  if (auto l = req.Query("limit")) {
    auto v = ParseInt("limit", *l);
    if (v < 1 || v > max_limit)
      InvalidField("limit", "must be between 1 and " + std::to_string(max_limit));
    p.limit = static_cast<int>(v);
  }
  if (auto o = req.Query("offset")) {
    p.offset = ParseInt("offset", *o);
    if (p.offset < 0) InvalidField("offset", "must not be negative");
  }
  return p;
}

Json PageBody(Json items, const Page& page) {
  bool more = items.size() > static_cast<size_t>(page.limit);
  if (more) items.erase(items.end() - 1);
  Json next = more ? Json(page.offset + page.limit) : Json(nullptr);
  return {{"items", std::move(items)},
          {"limit", page.limit},
          {"offset", page.offset},
          {"next_offset", next}};
}

}  // namespace sluice::api
