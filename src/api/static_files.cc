#include "api/static_files.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "common/subprocess.h"

namespace sluice::api {
namespace {

namespace fs = std::filesystem;

bool HasIndex(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "index.html", ec);
}

std::string ContentType(const fs::path& file) {
  static const std::pair<const char*, const char*> kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".woff2", "font/woff2"},
      {".txt", "text/plain; charset=utf-8"},
      {".map", "application/json"}};
  std::string ext = file.extension().string();
  for (auto [e, type] : kTypes)
    if (ext == e) return type;
  return "application/octet-stream";
}

std::optional<std::string> ReadFile(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

const char kNotBuilt[] = R"(<!doctype html>
<html><head><meta charset="utf-8"><title>Sluice: web UI not built</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 4em auto">
<h1>The Sluice web UI is not built</h1>
<p>The API is running (see <a href="/api/v1/openapi.json">/api/v1/openapi.json</a>),
but no built UI was found.</p>
<p>Build it with <code>bash scripts/up.sh</code>, or <code>cd ui &amp;&amp; npm ci &amp;&amp;
npm run build</code>, then restart; or point <code>--ui-dir</code> (or
<code>SLUICE_UI_DIR</code>) at a directory holding <code>index.html</code>.</p>
</body></html>
)";

}  // namespace

std::optional<std::string> FindUiDir(const std::string& flag) {
  if (!flag.empty()) {
    if (HasIndex(flag)) return fs::absolute(flag).string();
    return std::nullopt;
  }
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("SLUICE_UI_DIR"); env && *env) candidates.emplace_back(env);
  fs::path bin = fs::path(common::SelfExecutablePath()).parent_path();
  candidates.push_back(bin / ".." / "ui" / "dist");
  candidates.push_back(bin / "ui" / "dist");
  candidates.push_back(bin / ".." / "share" / "sluice" / "ui");
  for (const auto& c : candidates) {
    std::error_code ec;
    if (HasIndex(c)) return fs::weakly_canonical(c, ec).string();
  }
  return std::nullopt;
}

UiAnswer AnswerUiPath(const std::optional<std::string>& dir, const std::string& path) {
  if (!dir) return {503, "text/html; charset=utf-8", kNotBuilt, false};
  fs::path root(*dir);
  // httplib hands us the decoded path; any ".." segment is refused outright
  // rather than normalised, so nothing outside the directory is reachable.
  fs::path rel = fs::path(path).relative_path();
  bool safe = true;
  for (const auto& part : rel)
    if (part == ".." || part == ".") safe = false;
  if (safe && !rel.empty()) {
    fs::path file = root / rel;
    std::error_code ec;
    if (fs::is_regular_file(file, ec)) {
      if (auto body = ReadFile(file)) {
        bool hashed = rel.begin() != rel.end() && *rel.begin() == "assets";
        return {200, ContentType(file), std::move(*body), hashed};
      }
    }
    // A missing asset is a 404, not the app: a stale page asking for an old
    // bundle must not get HTML back as JavaScript.
    if (rel.has_extension() && rel.extension() != ".html")
      return {404, "text/plain; charset=utf-8", "not found\n", false};
  }
  auto index = ReadFile(root / "index.html");
  if (!index) return {503, "text/html; charset=utf-8", kNotBuilt, false};
  return {200, "text/html; charset=utf-8", std::move(*index), false};
}

}  // namespace sluice::api
