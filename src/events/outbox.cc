#include "events/outbox.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "store/sql_time.h"

namespace sluice::events {

nlohmann::json OutboxRecord::ToJson() const {
  nlohmann::json j = event.ToJson();
  j["event_id"] = event.id.ToString();
  j["id"] = occurrence_id.ToString();
  j["seq"] = seq;
  j["occurred_at"] = common::FormatIso8601(occurred_at);
  j["count"] = count;
  return j;
}

common::Result<std::int64_t> OutboxPublisher::Cursor() {
  try {
    return db_.Transact([&](pqxx::work& tx) -> std::int64_t {
      auto r = tx.exec_params(
          "SELECT last_seq FROM sluice_state.events_outbox_cursor WHERE name = $1", opts_.name);
      return r.empty() ? 0 : r[0][0].as<std::int64_t>();
    });
  } catch (const std::exception& e) {
    return common::Unavailable(fmt::format("reading outbox cursor: {}", e.what()));
  }
}

OutboxPublisher::OutboxPublisher(store::Database& db, PublishFn publish, OutboxOptions opts)
    : db_(db),
      publish_([publish = std::move(publish)](const std::vector<OutboxRecord>& records,
                                              common::Status* failure) -> std::size_t {
        for (std::size_t i = 0; i < records.size(); ++i) {
          common::Status st;
          try {
            st = publish(records[i]);
          } catch (const std::exception& e) {
            st = common::Unavailable(fmt::format("publisher threw: {}", e.what()));
          }
          if (!st.ok()) {
            *failure = st;
            return i;
          }
        }
        return records.size();
      }),
      opts_(std::move(opts)) {}

common::Result<PublishReport> OutboxPublisher::PublishOnce() {
  PublishReport total;
  for (;;) {
    auto batch = PublishBatch();
    if (!batch.ok()) return batch.status();
    total.published += batch->published;
    total.scanned += batch->scanned;
    total.cursor = batch->cursor;
    total.held_back = batch->held_back;
    total.failure = batch->failure;
    if (batch->scanned < opts_.batch_size || batch->held_back || !batch->failure.ok()) break;
  }
  return total;
}

common::Result<PublishReport> OutboxPublisher::PublishBatch() {
  try {
    return db_.Transact([&](pqxx::work& tx) {
      const std::int64_t db_now = common::ToEpochMicros(common::Clock::now());
      tx.exec_params(
          "INSERT INTO sluice_state.events_outbox_cursor (name, last_seq, created_at, updated_at)"
          " VALUES ($1, 0, " SLUICE_SQL_TS("$2") ", " SLUICE_SQL_TS(
              "$2") ") ON CONFLICT DO NOTHING",
          opts_.name, db_now);
      // The row lock makes concurrent publishers of one outbox take turns.
      const std::int64_t start =
          tx.exec_params(
                "SELECT last_seq FROM sluice_state.events_outbox_cursor WHERE name = $1 FOR UPDATE",
                opts_.name)[0][0]
              .as<std::int64_t>();
      // Every env's occurrences are read, so the seq order has no holes but
      // real gaps; only this env's carry their folded row's columns.
      auto rows = tx.exec_params(
          fmt::format("SELECT o.seq, o.id::text, " SLUICE_SQL_MICROS(
                          "o.ts") ", o.count,"
                                  " o.created_at < " SLUICE_SQL_DB_NOW
                                  " - $3::bigint * INTERVAL '1 millisecond',"
                                  " o.created_at < " SLUICE_SQL_DB_NOW
                                  " - $4::bigint * INTERVAL '1 millisecond',"
                                  " ($5::uuid IS NULL OR e.env_id = $5::uuid), {}"
                                  " FROM resource_event_occurrence o JOIN resource_event e ON e.id "
                                  "= o.event_id"
                                  " WHERE o.seq > $1 ORDER BY o.seq LIMIT $2",
                      internal::StoredEventColumns("e")),
          start, opts_.batch_size, static_cast<std::int64_t>(opts_.grace.count()),
          static_cast<std::int64_t>(opts_.gap_timeout.count()),
          opts_.env_id ? std::optional<std::string>(opts_.env_id->ToString()) : std::nullopt);
      PublishReport report;
      std::vector<OutboxRecord> mine;
      std::int64_t passed = start;  // the last seq read and found settled
      for (const auto& r : rows) {
        const std::int64_t seq = r[0].as<std::int64_t>();
        const bool settled = r[4].as<bool>();
        const bool gap_settled = r[5].as<bool>();
        if (!settled || (seq != passed + 1 && !gap_settled)) {
          report.held_back = true;
          break;
        }
        passed = seq;
        ++report.scanned;
        if (!r[6].as<bool>()) continue;  // another env's: its own publisher's
        OutboxRecord rec;
        rec.seq = seq;
        rec.occurrence_id = common::Uuid::Parse(r[1].c_str()).value();
        rec.occurred_at = common::FromEpochMicros(r[2].as<std::int64_t>());
        rec.count = r[3].as<std::int32_t>();
        rec.event = internal::ReadStoredEvent(r, 7);
        mine.push_back(std::move(rec));
      }
      std::int64_t cursor = passed;
      if (!mine.empty()) {
        common::Status failure;
        std::size_t accepted = 0;
        try {
          accepted = std::min(publish_(mine, &failure), mine.size());
        } catch (const std::exception& e) {
          failure = common::Unavailable(fmt::format("publisher threw: {}", e.what()));
        }
        report.published = static_cast<int>(accepted);
        if (opts_.before_cursor_commit)
          opts_.before_cursor_commit(std::vector<OutboxRecord>(
              mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(accepted)));
        if (accepted < mine.size()) {
          // Up to the first record not handed over, other envs' rows included.
          cursor = mine[accepted].seq - 1;
          report.failure = failure.ok() ? common::Unavailable("publisher stopped early") : failure;
        }
      }
      tx.exec_params(
          "UPDATE sluice_state.events_outbox_cursor SET last_seq = $2, updated_at = " SLUICE_SQL_TS(
              "$3") " WHERE name = $1",
          opts_.name, cursor, db_now);
      report.cursor = cursor;
      return report;
    });
  } catch (const std::exception& e) {
    return common::Unavailable(fmt::format("outbox {}: {}", opts_.name, e.what()));
  }
}

void OutboxPublisher::Run(std::stop_token stop, std::chrono::milliseconds interval) {
  std::mutex mu;
  std::condition_variable_any cv;
  while (!stop.stop_requested()) {
    (void)PublishOnce();
    std::unique_lock lock(mu);
    cv.wait_for(lock, stop, interval, [] { return false; });
  }
}

}  // namespace sluice::events
