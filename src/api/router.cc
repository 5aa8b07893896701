#include "api/router.h"

namespace sluice::api {
namespace {

std::vector<std::string> Split(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    if (slash > start) out.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

bool IsParam(const std::string& seg) {
  return seg.size() > 2 && seg.front() == '{' && seg.back() == '}';
}

}  // namespace

void Router::Add(Route route) {
  route.segments = Split(route.pattern);
  routes_.push_back(std::move(route));
}

Router::Match Router::Find(const std::string& method, const std::string& path) const {
  Match match;
  const auto segs = Split(path);
  for (const auto& r : routes_) {
    if (r.segments.size() != segs.size()) continue;
    std::map<std::string, std::string> params;
    bool ok = true;
    for (size_t i = 0; i < segs.size() && ok; ++i) {
      if (IsParam(r.segments[i])) {
        params[r.segments[i].substr(1, r.segments[i].size() - 2)] = segs[i];
      } else {
        ok = r.segments[i] == segs[i];
      }
    }
    if (!ok) continue;
    if (r.method != method) {
      match.path_exists = true;
      continue;
    }
    match.route = &r;
    match.params = std::move(params);
    return match;
  }
  return match;
}

RouteGroup& RouteGroup::Add(const std::string& method, const std::string& path,
                            const std::string& summary, Handler h, Access a) {
  Route r;
  r.method = method;
  r.pattern = prefix_ + path;
  r.summary = summary;
  r.tag = tag_;
  r.access = a;
  r.handler = std::move(h);
  router_.Add(std::move(r));
  return *this;
}

}  // namespace sluice::api
