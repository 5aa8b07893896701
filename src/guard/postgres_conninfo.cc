#include "guard/postgres_conninfo.h"

#include <fmt/format.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <unistd.h>

#include <set>

namespace sluice::guard {

namespace {

// Keywords a team's connection string may carry. Left out: those naming
// files or services on the machine that connects (service, passfile,
// sslkey, sslcert, sslrootcert, sslcrl, ...), and requirepeer (sockets).
const std::set<std::string>& AllowedKeywords() {
  static const std::set<std::string> k = {"host",
                                          "hostaddr",
                                          "port",
                                          "dbname",
                                          "user",
                                          "password",
                                          "sslmode",
                                          "connect_timeout",
                                          "application_name",
                                          "options",
                                          "keepalives",
                                          "keepalives_idle",
                                          "keepalives_interval",
                                          "keepalives_count",
                                          "tcp_user_timeout",
                                          "target_session_attrs",
                                          "channel_binding",
                                          "gssencmode",
                                          "client_encoding",
                                          "fallback_application_name",
                                          "replication",
                                          "sslcompression",
                                          "sslsni",
                                          "require_auth",
                                          "load_balance_hosts"};
  return k;
}

std::string OsUser() {
  if (passwd* pw = getpwuid(geteuid())) return pw->pw_name;
  return "";
}

std::string Text(const nlohmann::json& config, const char* field, const std::string& fallback) {
  if (!config.contains(field)) return fallback;
  const auto& v = config[field];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  return fallback;
}

}  // namespace

std::string QuoteConninfoValue(const std::string& value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\\' || c == '\'') out.push_back('\\');
    out.push_back(c);
  }
  return out + "'";
}

std::string BuildConninfo(const std::vector<std::pair<std::string, std::string>>& keywords) {
  std::string out;
  for (const auto& [k, v] : keywords) {
    if (v.empty()) continue;
    if (!out.empty()) out.push_back(' ');
    out += k + "=" + QuoteConninfoValue(v);
  }
  return out;
}

std::string ConninfoFromConfig(const nlohmann::json& config) {
  if (config.contains("url") && config["url"].is_string()) return config["url"].get<std::string>();
  return BuildConninfo({{"host", Text(config, "host", "127.0.0.1")},
                        {"port", Text(config, "port", "5432")},
                        {"dbname", Text(config, "database", "")},
                        {"user", Text(config, "user", "postgres")},
                        {"password", Text(config, "password", "")},
                        {"sslmode", Text(config, "sslmode", "")}});
}

common::Result<std::map<std::string, std::string>> ParseConninfo(const std::string& conninfo) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &error);
  if (!options) {
    std::string why = error ? error : "out of memory";
    if (error) PQfreemem(error);
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    return common::InvalidArgument("connection string: " + why);
  }
  std::map<std::string, std::string> out;
  for (PQconninfoOption* o = options; o->keyword; ++o)
    if (o->val) out[o->keyword] = o->val;
  PQconninfoFree(options);
  return out;
}

common::Result<Destination> PostgresDestination(const std::string& conninfo) {
  auto parsed = ParseConninfo(conninfo);
  if (!parsed.ok()) return parsed.status();
  auto& kw = *parsed;
  for (const auto& [k, v] : kw)
    if (!AllowedKeywords().count(k))
      return Refused("libpq-keyword",
                     fmt::format("the connection parameter {} is not allowed (it reads files or "
                                 "services of the machine that connects)",
                                 k));
  Destination d;
  d.host = kw.count("host") ? kw["host"] : "";
  std::string hostaddr = kw.count("hostaddr") ? kw["hostaddr"] : "";
  // A given hostaddr is where libpq connects; the host is then only a name.
  if (!hostaddr.empty()) d.host = hostaddr;
  if (d.host.find(',') != std::string::npos)
    return Refused("one-host", "a connection names one host (no list of hosts)");
  if (d.host.empty() || d.host[0] == '/' || d.host[0] == '@')
    return Refused("unix-socket",
                   "a team's connection goes over TCP to a named host, not a local socket");
  std::string port = kw.count("port") && !kw["port"].empty() ? kw["port"] : "5432";
  if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5)
    return Refused("one-host", fmt::format("the port {} is not one port number", port));
  d.port = std::stoi(port);
  std::string user = kw.count("user") && !kw["user"].empty() ? kw["user"] : OsUser();
  d.database = kw.count("dbname") && !kw["dbname"].empty() ? kw["dbname"] : user;
  return d;
}

ProtectedEndpoint ControlDatabaseEndpoint(const std::string& conninfo) {
  auto parsed = ParseConninfo(conninfo);
  std::map<std::string, std::string> kw =
      parsed.ok() ? *parsed : std::map<std::string, std::string>{};
  auto get = [&](const char* k) { return kw.count(k) ? kw[k] : std::string(); };
  std::string host = !get("hostaddr").empty() ? get("hostaddr") : get("host");
  if (!host.empty() && (host[0] == '/' || host[0] == '@')) host.clear();  // a socket: local
  std::string port = get("port").empty() ? "5432" : get("port");
  if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5) port = "5432";
  std::string user = get("user").empty() ? OsUser() : get("user");
  std::string dbname = get("dbname").empty() ? user : get("dbname");
  return ProtectedEndpoint::Make("control-database", "the data-plane's control database",
                                 host.find(',') == std::string::npos ? host : "", std::stoi(port),
                                 dbname);
}

common::Status CheckPostgres(const ConnectPolicy& policy, const std::string& conninfo) {
  auto d = PostgresDestination(conninfo);
  if (!d.ok()) return d.status();
  return CheckConfigured(policy, *d);
}

common::Result<std::string> PinPostgres(const ConnectPolicy& policy, const std::string& conninfo) {
  auto d = PostgresDestination(conninfo);
  if (!d.ok()) return d.status();
  auto addresses = ResolveChecked(policy, *d);
  if (!addresses.ok()) return addresses.status();
  auto kw = *ParseConninfo(conninfo);
  std::vector<std::pair<std::string, std::string>> out;
  // host stays what was written (TLS verifies that name); hostaddr is where
  // the connection goes.
  out.emplace_back("host", kw.count("host") && !kw["host"].empty() ? kw["host"] : d->host);
  out.emplace_back("hostaddr", addresses->front().ToString());
  out.emplace_back("port", std::to_string(d->port));
  out.emplace_back("dbname", *d->database);
  for (const auto& [k, v] : kw)
    if (k != "host" && k != "hostaddr" && k != "port" && k != "dbname") out.emplace_back(k, v);
  return BuildConninfo(out);
}

common::Result<std::string> PinPostgres(const std::string& conninfo) {
  return PinPostgres(*ProcessPolicy(), conninfo);
}

}  // namespace sluice::guard
