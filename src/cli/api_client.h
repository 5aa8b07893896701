// The CLI side of the HTTP API: saved credentials (`sluice login`) and one
// call helper that prints API errors the way the server worded them.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sluice::cli {

struct Credentials {
  std::string url;  // http://host:port
  std::string access_token;
  std::string refresh_token;
  // The CA file an https API is verified with (`login --ca-file`, e.g. the
  // server's --tls-cert); empty: the system's CAs.
  std::string ca_file;
};

// $SLUICE_CREDENTIALS, else ~/.config/sluice/credentials.json.
std::string CredentialsPath();
std::optional<Credentials> LoadCredentials();
bool SaveCredentials(const Credentials& c);

struct ApiReply {
  int status = 0;  // 0: the server could not be reached
  nlohmann::json body;
  std::string error;  // transport error, when status == 0
};

ApiReply CallApi(const std::string& url, const std::string& method, const std::string& path,
                 const nlohmann::json& body, const std::string& token,
                 const std::string& ca_file = "");

// With saved credentials; prints the error and returns nullopt on failure.
std::optional<nlohmann::json> CallOrReport(const std::string& method, const std::string& path,
                                           const nlohmann::json& body = nullptr);

// Prints rows as an aligned table of `columns` (missing values as "-").
void PrintTable(const nlohmann::json& rows, const std::vector<std::string>& columns);

}  // namespace sluice::cli
