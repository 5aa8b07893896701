#include "metrics/retention.h"

#include <cxxabi.h>
#include <fmt/format.h>

#include <memory>
#include <typeinfo>

#include "common/uuid.h"
#include "store/sql_time.h"

namespace sluice::metrics {

using common::FromEpochMicros;
using common::ToEpochMicros;

namespace {

constexpr const char* kTables[] = {"production_metric", "consumption_metric"};
constexpr int kStateLockClass = 0x534C5503;

std::string IndexName(const std::string& table) { return "ix_" + table + "_created_at"; }

std::optional<common::TimePoint> OptTime(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return FromEpochMicros(f.as<std::int64_t>());
}

std::optional<std::string> OptText(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<std::string>();
}

// Creates the table's state row on first sight; tracked_since is then.
// table_name has no unique index, so creation is serialised by a lock.
void EnsureStateRow(pqxx::work& tx, const std::string& table, std::int64_t at) {
  tx.exec_params("SELECT pg_advisory_xact_lock($1, hashtext($2))", kStateLockClass, table);
  auto found =
      tx.exec_params("SELECT 1 FROM raw_metric_retention_state WHERE table_name = $1", table);
  if (!found.empty()) return;
  tx.exec_params(
      "INSERT INTO raw_metric_retention_state (id, table_name, tracked_since, created_at,"
      " updated_at) VALUES ($1, $2, " SLUICE_SQL_TS("$3") ", " SLUICE_SQL_TS(
          "$3") ", " SLUICE_SQL_TS("$3") ")",
      common::Uuid::V4().ToString(), table, at);
}

}  // namespace

std::string RawRetention::DescribeError(const std::exception& e) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(
      abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status), std::free);
  std::string type = status == 0 && name ? name.get() : typeid(e).name();
  std::string what = e.what();
  if (auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
  std::string text = type + ": " + what;
  if (text.size() > kMaxErrorChars) text.resize(kMaxErrorChars);
  return text;
}

std::vector<TableRetention> RawRetention::RunOnce(common::TimePoint now) {
  std::vector<TableRetention> out;
  for (const char* t : kTables) out.push_back(RunTable(t, now));
  return out;
}

TableRetention RawRetention::RunTable(const std::string& table, common::TimePoint now) {
  TableRetention result;
  result.table = table;
  const std::int64_t at = ToEpochMicros(now);
  try {
    db_.Transact([&](pqxx::work& tx) { EnsureStateRow(tx, table, at); });
    if (opts_.retention.count() <= 0) {
      // Disabled: nothing is deletable, so the cycle caught up and nothing
      // is overdue; an old failure no longer applies.
      db_.Transact([&](pqxx::work& tx) {
        tx.exec_params(
            "UPDATE raw_metric_retention_state SET failed_at = NULL, error = NULL,"
            " caught_up_at = " SLUICE_SQL_TS("$2") ", updated_at = " SLUICE_SQL_TS(
                "$2") " WHERE table_name = $1",
            table, at);
      });
      result.caught_up = true;
      return result;
    }
    result.index_rebuilt = EnsureIndex(table, now);
    const std::int64_t cutoff = ToEpochMicros(now - opts_.retention);
    // Oldest first, through the created_at index, batch by batch.
    const std::string del = fmt::format(
        "DELETE FROM {0} WHERE id IN (SELECT id FROM {0} WHERE created_at < " SLUICE_SQL_TS(
            "$1") " ORDER BY created_at LIMIT $2)",
        table);
    for (int b = 0; b < opts_.max_batches; ++b) {
      auto n = db_.Transact([&](pqxx::work& tx) {
        return tx.exec_params(del, cutoff, opts_.batch_size).affected_rows();
      });
      result.deleted += static_cast<std::int64_t>(n);
      if (static_cast<int>(n) < opts_.batch_size) {
        result.caught_up = true;
        break;
      }
    }
    if (result.caught_up) {
      db_.Transact([&](pqxx::work& tx) {
        tx.exec_params("UPDATE raw_metric_retention_state SET caught_up_at = " SLUICE_SQL_TS(
                           "$2") ", updated_at = " SLUICE_SQL_TS("$2") " WHERE table_name = $1",
                       table, at);
      });
    }
  } catch (const std::exception& e) {
    const std::string text = DescribeError(e);
    result.status = common::Unavailable(text);
    try {
      db_.Transact([&](pqxx::work& tx) {
        EnsureStateRow(tx, table, at);
        tx.exec_params(
            "UPDATE raw_metric_retention_state SET failed_at = " SLUICE_SQL_TS(
                "$2") ", error = $3, updated_at = " SLUICE_SQL_TS("$2") " WHERE table_name = $1",
            table, at, text);
      });
    } catch (const std::exception&) {
      // The database itself is gone; the returned status says so.
    }
  }
  return result;
}

bool RawRetention::EnsureIndex(const std::string& table, common::TimePoint now) {
  const std::string index = IndexName(table);
  const std::int64_t at = ToEpochMicros(now);
  bool valid = db_.Transact([&](pqxx::work& tx) {
    auto r =
        tx.exec_params("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)", index);
    return !r.empty() && r[0][0].as<bool>();
  });
  if (valid) {
    db_.Transact([&](pqxx::work& tx) {
      tx.exec_params(
          "UPDATE raw_metric_retention_state SET index_invalid_since = NULL,"
          " index_error = NULL WHERE table_name = $1 AND"
          " (index_invalid_since IS NOT NULL OR index_error IS NOT NULL)",
          table);
    });
    return false;
  }
  db_.Transact([&](pqxx::work& tx) {
    tx.exec_params(
        "UPDATE raw_metric_retention_state SET index_invalid_since ="
        " COALESCE(index_invalid_since, " SLUICE_SQL_TS("$2") ") WHERE table_name = $1",
        table, at);
  });
  try {
    // CONCURRENTLY cannot run inside a transaction block: a plain
    // autocommit connection, one statement at a time.
    pqxx::connection conn(db_.url());
    pqxx::nontransaction nt(conn);
    nt.exec(fmt::format("DROP INDEX CONCURRENTLY IF EXISTS {}", index));
    nt.exec(fmt::format("CREATE INDEX CONCURRENTLY {} ON {} (created_at)", index, table));
  } catch (const std::exception& e) {
    const std::string text = DescribeError(e);
    db_.Transact([&](pqxx::work& tx) {
      tx.exec_params("UPDATE raw_metric_retention_state SET index_error = $2 WHERE table_name = $1",
                     table, text);
    });
    return false;
  }
  db_.Transact([&](pqxx::work& tx) {
    tx.exec_params(
        "UPDATE raw_metric_retention_state SET index_invalid_since = NULL,"
        " index_error = NULL WHERE table_name = $1",
        table);
  });
  return true;
}

std::vector<RetentionState> RawRetention::ReadStates(pqxx::transaction_base& tx) {
  auto res = tx.exec(
      "SELECT table_name, " SLUICE_SQL_MICROS("tracked_since") ", " SLUICE_SQL_MICROS(
          "caught_up_at") ", " SLUICE_SQL_MICROS("failed_at") ", " SLUICE_SQL_MICROS("index_invalid_since") ","
      " error, index_error FROM raw_metric_retention_state ORDER BY table_name");
  std::vector<RetentionState> out;
  for (const auto& r : res) {
    RetentionState s;
    s.table = r[0].as<std::string>();
    s.tracked_since = FromEpochMicros(r[1].as<std::int64_t>());
    s.caught_up_at = OptTime(r[2]);
    s.failed_at = OptTime(r[3]);
    s.index_invalid_since = OptTime(r[4]);
    s.error = OptText(r[5]);
    s.index_error = OptText(r[6]);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace sluice::metrics
