#include "cli/api_client.h"

#include <httplib.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace sluice::cli {

std::string CredentialsPath() {
  if (const char* p = std::getenv("SLUICE_CREDENTIALS"); p != nullptr && *p != '\0') return p;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.config/sluice/credentials.json";
}

std::optional<Credentials> LoadCredentials() {
  std::ifstream in(CredentialsPath());
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  auto j = nlohmann::json::parse(text.str(), nullptr, false);
  if (!j.is_object()) return std::nullopt;
  return Credentials{j.value("url", ""), j.value("access_token", ""), j.value("refresh_token", ""),
                     j.value("ca_file", "")};
}

bool SaveCredentials(const Credentials& c) {
  std::string path = CredentialsPath();
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  // Written aside and renamed over: refresh tokens are single-use, so a torn
  // file would lose the only live one and force a new login.
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return false;
    ::chmod(tmp.c_str(), 0600);  // tokens are credentials
    out << nlohmann::json{{"url", c.url},
                          {"access_token", c.access_token},
                          {"refresh_token", c.refresh_token},
                          {"ca_file", c.ca_file}}
               .dump(2)
        << "\n";
    out.flush();
    if (!out) return false;
  }
  std::filesystem::rename(tmp, path, ec);
  return !ec;
}

ApiReply CallApi(const std::string& url, const std::string& method, const std::string& path,
                 const nlohmann::json& body, const std::string& token, const std::string& ca_file) {
  httplib::Client cli(url);
  if (!ca_file.empty()) cli.set_ca_cert_path(ca_file.c_str());
  cli.set_connection_timeout(10);
  cli.set_read_timeout(60);
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  std::string text = body.is_null() ? "" : body.dump();
  auto send = [&]() -> httplib::Result {
    if (method == "POST") return cli.Post(path.c_str(), headers, text, "application/json");
    if (method == "PATCH") return cli.Patch(path.c_str(), headers, text, "application/json");
    if (method == "DELETE") return cli.Delete(path.c_str(), headers);
    return cli.Get(path.c_str(), headers);
  };
  httplib::Result res = send();
  ApiReply r;
  if (!res) {
    r.error = "cannot reach " + url + ": " + httplib::to_string(res.error());
    return r;
  }
  r.status = res->status;
  if (!res->body.empty()) r.body = nlohmann::json::parse(res->body, nullptr, false);
  return r;
}

std::optional<nlohmann::json> CallOrReport(const std::string& method, const std::string& path,
                                           const nlohmann::json& body) {
  auto creds = LoadCredentials();
  if (!creds || creds->url.empty()) {
    std::fprintf(stderr, "sluice: not logged in; run `sluice login --url ...` first\n");
    return std::nullopt;
  }
  ApiReply r = CallApi(creds->url, method, path, body, creds->access_token, creds->ca_file);
  if (r.status == 401 && !creds->refresh_token.empty()) {
    // One silent refresh, then the original call again. The refresh token
    // is single-use: the rotated one is saved at once.
    ApiReply fresh = CallApi(creds->url, "POST", "/api/v1/auth/refresh",
                             {{"refresh_token", creds->refresh_token}}, "", creds->ca_file);
    if (fresh.status == 200 && fresh.body.is_object()) {
      creds->access_token = fresh.body.value("access_token", "");
      creds->refresh_token = fresh.body.value("refresh_token", creds->refresh_token);
      SaveCredentials(*creds);
      r = CallApi(creds->url, method, path, body, creds->access_token, creds->ca_file);
    } else if (fresh.status == 401) {
      std::fprintf(stderr,
                   "sluice: the session has ended (logged out, revoked or expired); run `sluice "
                   "login` again\n");
      return std::nullopt;
    }
  }
  if (r.status == 0) {
    std::fprintf(stderr, "sluice: %s\n", r.error.c_str());
    return std::nullopt;
  }
  if (r.status >= 400) {
    std::string msg = r.body.is_object() && r.body.contains("error")
                          ? r.body["error"].value("message", "")
                          : std::string("HTTP ") + std::to_string(r.status);
    std::fprintf(stderr, "sluice: %d: %s\n", r.status, msg.c_str());
    return std::nullopt;
  }
  return r.body.is_discarded() ? nlohmann::json() : r.body;
}

void PrintTable(const nlohmann::json& rows, const std::vector<std::string>& columns) {
  auto cell = [](const nlohmann::json& row, const std::string& c) {
    if (!row.contains(c) || row[c].is_null()) return std::string("-");
    return row[c].is_string() ? row[c].get<std::string>() : row[c].dump();
  };
  std::vector<size_t> width;
  for (const auto& c : columns) width.push_back(c.size());
  for (const auto& row : rows) {
    for (size_t i = 0; i < columns.size(); ++i)
      width[i] = std::max(width[i], cell(row, columns[i]).size());
  }
  auto line = [&](const std::vector<std::string>& values) {
    std::string out;
    for (size_t i = 0; i < values.size(); ++i) {
      out += values[i];
      if (i + 1 < values.size()) out += std::string(width[i] - values[i].size() + 2, ' ');
    }
    std::printf("%s\n", out.c_str());
  };
  std::vector<std::string> header;
  for (const auto& c : columns) {
    std::string h = c;
    for (auto& ch : h) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    header.push_back(h);
  }
  line(header);
  for (const auto& row : rows) {
    std::vector<std::string> v;
    for (const auto& c : columns) v.push_back(cell(row, c));
    line(v);
  }
}

}  // namespace sluice::cli
