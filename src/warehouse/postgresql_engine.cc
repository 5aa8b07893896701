#include "warehouse/postgresql_engine.h"

#include <libpq-fe.h>

#include <cstring>

#include "guard/postgres_conninfo.h"

namespace sluice::warehouse {
namespace {

using nlohmann::json;

std::string FirstLine(const char* text) {
  std::string s = text ? text : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string ConfigText(const json& config, const char* key, const std::string& def = "") {
  if (!config.contains(key) || config[key].is_null()) return def;
  if (config[key].is_string()) return config[key].get<std::string>();
  return config[key].dump();
}

class PostgresqlEngine final : public Engine {
 public:
  PostgresqlEngine(PGconn* conn, size_t max_rows) : conn_(conn), max_rows_(max_rows) {}
  ~PostgresqlEngine() override { PQfinish(conn_); }

  common::Result<std::string> Test() override {
    if (in_flight_) return common::FailedPrecondition("a statement is running");
    PGresult* res = PQexec(conn_,
                           "SELECT 'PostgreSQL ' || current_setting('server_version') || "
                           "', database ' || current_database() || ' as ' || current_user");
    std::unique_ptr<PGresult, decltype(&PQclear)> guard(res, &PQclear);
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
      return common::Unavailable(FirstLine(PQerrorMessage(conn_)));
    return "connected: " + std::string(PQgetvalue(res, 0, 0));
  }

  common::Result<std::string> Submit(const std::string& sql) override {
    if (in_flight_) return common::FailedPrecondition("a statement is already running");
    if (PQstatus(conn_) != CONNECTION_OK)
      return common::Unavailable(FirstLine(PQerrorMessage(conn_)));
    if (!PQsendQuery(conn_, sql.c_str()))
      return common::Unavailable(FirstLine(PQerrorMessage(conn_)));
    PQsetSingleRowMode(conn_);
    ++counter_;
    handle_ = "pg-" + std::to_string(counter_);
    in_flight_ = true;
    cancel_sent_ = false;
    state_ = {};
    result_ = {};
    have_columns_ = false;
    return handle_;
  }

  common::Result<StatementState> Poll(const std::string& handle) override {
    if (handle != handle_) return common::NotFound("unknown statement " + handle);
    if (!in_flight_) return state_;
    if (!PQconsumeInput(conn_)) {
      in_flight_ = false;
      state_ = {StatementPhase::kFailed, FirstLine(PQerrorMessage(conn_))};
      return state_;
    }
    while (!PQisBusy(conn_)) {
      PGresult* res = PQgetResult(conn_);
      if (!res) {  // every result of the statement has been read
        in_flight_ = false;
        if (state_.phase == StatementPhase::kRunning) state_.phase = StatementPhase::kSucceeded;
        return state_;
      }
      Absorb(res);
      PQclear(res);
    }
    return state_;
  }

  common::Status Cancel(const std::string& handle) override {
    if (handle != handle_ || !in_flight_) return common::Status::Ok();
    PGcancel* cancel = PQgetCancel(conn_);
    if (!cancel) return common::Unavailable("cannot cancel: no connection");
    char err[256] = {0};
    int ok = PQcancel(cancel, err, sizeof err);
    PQfreeCancel(cancel);
    if (!ok) return common::Unavailable(std::string("cancel refused: ") + err);
    cancel_sent_ = true;
    return common::Status::Ok();
  }

  common::Result<ResultSet> FetchResult(const std::string& handle, size_t max_rows) override {
    if (handle != handle_) return common::NotFound("unknown statement " + handle);
    if (state_.phase != StatementPhase::kSucceeded)
      return common::FailedPrecondition("the statement has not succeeded");
    ResultSet out = result_;
    if (out.rows.size() > max_rows) {
      out.rows.resize(max_rows);
      out.truncated = true;
    }
    return out;
  }

 private:
  void Absorb(PGresult* res) {
    switch (PQresultStatus(res)) {
      case PGRES_SINGLE_TUPLE:
      case PGRES_TUPLES_OK: {
        if (!have_columns_) {
          result_.columns.clear();
          for (int c = 0; c < PQnfields(res); ++c) {
            result_.columns.push_back({PQfname(res, c), TypeName(PQftype(res, c))});
          }
          have_columns_ = true;
        }
        for (int r = 0; r < PQntuples(res); ++r) {
          if (result_.rows.size() >= max_rows_) {
            result_.truncated = true;
            continue;
          }
          std::vector<json> row;
          for (int c = 0; c < PQnfields(res); ++c) {
            row.push_back(PQgetisnull(res, r, c) ? json(nullptr) : json(PQgetvalue(res, r, c)));
          }
          result_.rows.push_back(std::move(row));
        }
        break;
      }
      case PGRES_COMMAND_OK: {
        const char* n = PQcmdTuples(res);
        if (n && *n) result_.rows_affected = std::stoll(n);
        break;
      }
      case PGRES_EMPTY_QUERY:
        break;
      case PGRES_COPY_IN:
        // No client data to stream from a script: end the COPY with an error
        // so the server answers with a failed statement instead of waiting.
        PQputCopyEnd(conn_, "COPY FROM STDIN is not supported in a script run");
        break;
      case PGRES_COPY_OUT: {
        // Drained and dropped: a script's COPY TO STDOUT has no client file.
        char* buffer = nullptr;
        while (PQgetCopyData(conn_, &buffer, 0) > 0) PQfreemem(buffer);
        break;
      }
      default: {
        const char* sqlstate = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        bool cancelled = cancel_sent_ && sqlstate && std::strcmp(sqlstate, "57014") == 0;
        if (state_.phase == StatementPhase::kRunning) {
          state_ = {cancelled ? StatementPhase::kCancelled : StatementPhase::kFailed,
                    FirstLine(PQresultErrorMessage(res))};
        }
        break;
      }
    }
  }

  // No second query can run mid-statement to read pg_type, so the names of
  // the common built-ins come from this table; other types show their oid.
  static std::string TypeName(Oid oid) {
    switch (oid) {
      case 16:
        return "boolean";
      case 17:
        return "bytea";
      case 20:
        return "bigint";
      case 21:
        return "smallint";
      case 23:
        return "integer";
      case 25:
        return "text";
      case 114:
        return "json";
      case 700:
        return "real";
      case 701:
        return "double precision";
      case 1042:
        return "character";
      case 1043:
        return "character varying";
      case 1082:
        return "date";
      case 1083:
        return "time";
      case 1114:
        return "timestamp";
      case 1184:
        return "timestamptz";
      case 1700:
        return "numeric";
      case 2950:
        return "uuid";
      case 3802:
        return "jsonb";
      default:
        return "oid " + std::to_string(oid);
    }
  }

  PGconn* conn_;
  size_t max_rows_;
  std::uint64_t counter_ = 0;
  std::string handle_;
  bool in_flight_ = false;
  bool cancel_sent_ = false;
  bool have_columns_ = false;
  StatementState state_;
  ResultSet result_;
};

}  // namespace

common::Result<std::unique_ptr<Engine>> ConnectPostgresql(const json& config,
                                                          size_t max_rows_kept) {
  std::string host = ConfigText(config, "host"), port = ConfigText(config, "port", "5432"),
              dbname = ConfigText(config, "database"), user = ConfigText(config, "user"),
              password = ConfigText(config, "password"),
              sslmode = ConfigText(config, "sslmode", "prefer");
  // Keywords, each value quoted; then the connect policy at connect time:
  // the host resolved once, every address checked, libpq sent to the
  // checked one (hostaddr).
  auto pinned =
      guard::PinPostgres(guard::BuildConninfo({{"host", host},
                                               {"port", port},
                                               {"dbname", dbname},
                                               {"user", user},
                                               {"password", password},
                                               {"sslmode", sslmode},
                                               {"connect_timeout", "10"},
                                               {"application_name", "sluice-warehouse"}}));
  if (!pinned.ok()) return pinned.status();
  PGconn* conn = PQconnectdb(pinned->c_str());
  if (!conn) return common::Unavailable("out of memory connecting to PostgreSQL");
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string message = FirstLine(PQerrorMessage(conn));
    PQfinish(conn);
    return common::Unavailable(message);
  }
  return std::unique_ptr<Engine>(new PostgresqlEngine(conn, max_rows_kept));
}

}  // namespace sluice::warehouse
