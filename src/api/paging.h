// Offset paging for list endpoints: ?limit=&offset=, answered as
// {"items":[...], "limit":n, "offset":n, "next_offset":n|null}.
// Repositories fetch limit + 1 rows so the last page is known without a count.
#pragma once

#include <cstdint>

#include "api/http.h"

namespace sluice::api {

struct Page {
  int limit = 50;
  std::int64_t offset = 0;

  // Rows a repository should fetch.
  int fetch() const { return limit + 1; }
};

// 422 for a limit outside [1, max_limit] or a negative offset.
Page ParsePage(const Request& req, int default_limit = 50, int max_limit = 500);

// Trims the extra row fetched and builds the response body.
Json PageBody(Json items, const Page& page);

}  // namespace sluice::api
