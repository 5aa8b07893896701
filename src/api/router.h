// Maps METHOD + path pattern ("/api/v1/envs/{env_id}") to a handler. Each
// API area adds its routes through a RouteGroup; the OpenAPI document is
// generated from the same table, so it cannot drift from what is served.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "api/http.h"

namespace sluice::api {

enum class Access {
  kPublic,         // no token needed (login, refresh, the OpenAPI document)
  kAuthenticated,  // a valid bearer token of an active user
  kWorker,         // a worker pod's scoped token (the worker protocol)
  kLoader,         // a backfill loader's token, checked by the handler against the
                   // item in the path (the loader protocol)
};

struct Route {
  std::string method;   // GET, POST, PUT, PATCH, DELETE
  std::string pattern;  // full path, {name} for a parameter segment
  std::string summary;
  std::string tag;
  Access access = Access::kAuthenticated;
  Handler handler;
  std::vector<std::string> segments;  // pattern split on '/'
};

class Router {
 public:
  void Add(Route route);

  struct Match {
    const Route* route = nullptr;
    std::map<std::string, std::string> params;
    bool path_exists = false;  // some other method serves this path: 405
  };
  Match Find(const std::string& method, const std::string& path) const;

  const std::vector<Route>& routes() const { return routes_; }

 private:
  std::vector<Route> routes_;
};

// Routes of one area under a common prefix and OpenAPI tag.
class RouteGroup {
 public:
  RouteGroup(Router& router, std::string prefix, std::string tag)
      : router_(router), prefix_(std::move(prefix)), tag_(std::move(tag)) {}

  RouteGroup& Get(const std::string& path, const std::string& summary, Handler h,
                  Access a = Access::kAuthenticated) {
    return Add("GET", path, summary, std::move(h), a);
  }
  RouteGroup& Post(const std::string& path, const std::string& summary, Handler h,
                   Access a = Access::kAuthenticated) {
    return Add("POST", path, summary, std::move(h), a);
  }
  RouteGroup& Patch(const std::string& path, const std::string& summary, Handler h,
                    Access a = Access::kAuthenticated) {
    return Add("PATCH", path, summary, std::move(h), a);
  }
  RouteGroup& Delete(const std::string& path, const std::string& summary, Handler h,
                     Access a = Access::kAuthenticated) {
    return Add("DELETE", path, summary, std::move(h), a);
  }

 private:
  RouteGroup& Add(const std::string& method, const std::string& path, const std::string& summary,
                  Handler h, Access a);
  Router& router_;
  std::string prefix_;
  std::string tag_;
};

}  // namespace sluice::api
