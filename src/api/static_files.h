// The web UI's built files (ui/dist), served by the API listener at "/".
// /api/* stays the API; any other GET path that is not a file gets
// index.html so the browser app's router handles deep links. Without a
// built UI the answer is a short page saying how to build it.
//
//   auto dir = FindUiDir(flag);          // --ui-dir, SLUICE_UI_DIR, or next to the binary
//   UiAnswer a = AnswerUiPath(dir, "/pipelines/42");
#pragma once

#include <optional>
#include <string>

namespace sluice::api {

struct UiAnswer {
  int status = 200;
  std::string content_type;
  std::string body;
  bool immutable = false;  // content-hashed asset: cache for a year
};

// The first directory holding index.html among: `flag` (when given, only
// it), $SLUICE_UI_DIR, <binary dir>/../ui/dist, <binary dir>/ui/dist,
// <binary dir>/../share/sluice/ui. nullopt when none is built.
std::optional<std::string> FindUiDir(const std::string& flag);

// What a GET of `path` answers. `dir` nullopt: the "UI not built" page.
// Paths escaping the directory (.., %2e%2e) never read outside it.
UiAnswer AnswerUiPath(const std::optional<std::string>& dir, const std::string& path);

}  // namespace sluice::api
