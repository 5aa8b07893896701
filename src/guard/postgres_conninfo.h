// PostgreSQL connection parameters as libpq keywords. A connection string is
// built from keyword/value pairs with every value quoted, never by pasting a
// user's text into a URL, so a host such as "h?sslmode=disable&host=x" or
// "x dbname=sluice" stays one (bad) host name and adds no parameter.
//
// Pin() is the connect-time half of the connect policy for libpq: it parses
// a connection string (keyword or URL form), refuses what the policy
// refuses, and returns a keyword string whose hostaddr is the checked
// address, so libpq connects exactly where the check looked.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "guard/connect_policy.h"

namespace sluice::guard {

// 'value' with backslash and single quote escaped, as libpq reads it.
std::string QuoteConninfoValue(const std::string& value);
// "k1='v1' k2='v2'" in the given order; empty values are left out.
std::string BuildConninfo(const std::vector<std::pair<std::string, std::string>>& keywords);

// A connector's or warehouse's settings (host, port, database, user,
// password, sslmode) as a keyword connection string; a configuration that
// carries a whole "url" (rows written by Sluice itself) keeps it as is.
std::string ConninfoFromConfig(const nlohmann::json& config);

// The keywords of a connection string in either form (PQconninfoParse).
common::Result<std::map<std::string, std::string>> ParseConninfo(const std::string& conninfo);

// Where a connection string points: its one TCP host, its port (default
// 5432) and the database it opens (dbname, else the user name, else the OS
// user's, as libpq decides). Refused: Unix sockets, several hosts, and
// keywords that read files or services on this machine.
common::Result<Destination> PostgresDestination(const std::string& conninfo);

// The data-plane's own database, from its connection string: protected from
// every team's connection (same server, same database). A Unix-socket host
// protects every local address at that port.
ProtectedEndpoint ControlDatabaseEndpoint(const std::string& conninfo);

// When a configuration is saved (see CheckConfigured).
common::Status CheckPostgres(const ConnectPolicy& policy, const std::string& conninfo);

// At connect time: the connection string to hand libpq, host resolved once,
// every address checked, hostaddr set to the first one, port and dbname
// explicit (so no environment default changes where it goes).
common::Result<std::string> PinPostgres(const ConnectPolicy& policy, const std::string& conninfo);
// With the process policy.
common::Result<std::string> PinPostgres(const std::string& conninfo);

}  // namespace sluice::guard
