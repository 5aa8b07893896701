// The connector_events outbox publisher. Tails resource_event_occurrence by
// seq, joins each occurrence to its folded row for the display fields and
// hands it to a publish callback (the Kafka producer for the env's
// connector_events topic). The durable cursor advances only past records
// the callback accepted, so on its own this is at least once: a callback
// that accepted a batch whose cursor commit then failed (or whose process
// died) is handed the batch again. The connector_events callback
// (orchestrator/events_outbox) makes it exactly once by not sending what is
// already on its topic.
//
// Sequence values are drawn before commit, so a committed seq can be visible
// while a lower one is still in flight. Two guards keep the reader from
// passing it: rows younger than `grace` are left alone, and at a gap in seq
// the reader waits until the row after the gap is older than `gap_timeout`
// (a gap that old is a rolled-back insert, not a slow commit).
//
// One publisher per env (OutboxOptions::env_id): it reads every occurrence
// after its cursor, so another env's rows are never mistaken for a gap, hands
// over only its env's, and moves its cursor past the others. Each env's
// publisher has its own cursor, so an env whose broker is down holds back
// only itself.
//
// The cursor lives in sluice_state.events_outbox_cursor (name PK, last_seq),
// created by migration 0002: the spec's tables have no column for it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "common/time.h"
#include "common/uuid.h"
#include "events/stored_event.h"
#include "store/database.h"

namespace sluice::events {

struct OutboxRecord {
  std::int64_t seq = 0;
  common::Uuid occurrence_id;
  common::TimePoint occurred_at;  // this occurrence's ts
  std::int32_t count = 0;         // the fold's count at this occurrence
  StoredEvent event;              // the folded row as it is now

  // Kafka key: the connector, so one connector's events stay in order.
  std::string Key() const { return event.resource.connector_id.ToString(); }
  // The record value: the event's display fields plus the occurrence's.
  nlohmann::json ToJson() const;
};

// Returns Ok once the record is durably handed over (e.g. the broker acked).
using PublishFn = std::function<common::Status(const OutboxRecord&)>;
// Hands over a batch, in seq order; returns how many leading records were
// durably handed over (all of them, or up to the first refused one, whose
// reason goes to `*failure`).
using PublishBatchFn =
    std::function<std::size_t(const std::vector<OutboxRecord>&, common::Status* failure)>;

struct OutboxOptions {
  std::string name = "connector_events";  // cursor key; one per destination
  // Set: only this env's occurrences are handed over (the others are passed).
  std::optional<common::Uuid> env_id;
  std::chrono::milliseconds grace{2000};
  std::chrono::milliseconds gap_timeout{60000};
  int batch_size = 200;
  // A failpoint for tests: called after the callback accepted a batch and
  // before the cursor update commits. Throwing from it rolls the cursor
  // update back, as a process killed right there would.
  std::function<void(const std::vector<OutboxRecord>& accepted)> before_cursor_commit;
};

struct PublishReport {
  int published = 0;
  int scanned = 0;          // occurrences passed, this env's or not
  std::int64_t cursor = 0;  // last seq published, after this pass
  bool held_back = false;   // stopped at a row too young or behind a fresh gap
  common::Status failure;   // the callback's refusal, if it refused
};

class OutboxPublisher {
 public:
  OutboxPublisher(store::Database& db, PublishFn publish, OutboxOptions opts = {});
  OutboxPublisher(store::Database& db, PublishBatchFn publish, OutboxOptions opts = {})
      : db_(db), publish_(std::move(publish)), opts_(std::move(opts)) {}

  // Publishes every settled record after the cursor, batch by batch, until
  // none is left, one is held back, or the callback refuses one.
  common::Result<PublishReport> PublishOnce();

  common::Result<std::int64_t> Cursor();

  // PublishOnce every `interval` until `stop` is requested.
  void Run(std::stop_token stop, std::chrono::milliseconds interval);

 private:
  common::Result<PublishReport> PublishBatch();

  store::Database& db_;
  PublishBatchFn publish_;
  OutboxOptions opts_;
};

}  // namespace sluice::events
