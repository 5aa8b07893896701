// Writes monitoring events. Record() folds an occurrence into the open
// resource_event row of its fingerprint (count + 1, latest ts and wording,
// first_ts kept) and appends a resource_event_occurrence row carrying the
// count reached, in one transaction. An open row whose last occurrence is
// older than the dedup window is closed first, so a situation that returns
// after it starts a new row.
#pragma once

#include <chrono>
#include <cstdint>

#include "common/status.h"
#include "common/time.h"
#include "common/uuid.h"
#include "events/resource_event.h"
#include "events/stored_event.h"
#include "store/database.h"

namespace sluice::events {

struct EventStoreOptions {
  std::chrono::seconds dedup_window{3600};
};

struct RecordResult {
  common::Uuid event_id;  // the folded row
  common::Uuid occurrence_id;
  std::int32_t count = 0;  // what the fold reached with this occurrence
  std::int64_t seq = 0;    // the occurrence's publication cursor value
  bool opened = false;     // this occurrence started a new row
};

class EventStore {
 public:
  explicit EventStore(store::Database& db, EventStoreOptions opts = {}) : db_(db), opts_(opts) {}

  common::Result<RecordResult> Record(const ResourceEvent& ev);

  // Inside the caller's transaction (e.g. beside the state change the event
  // reports). Throws what the database throws; validation errors are values.
  static common::Result<RecordResult> Record(pqxx::work& tx, const ResourceEvent& ev,
                                             const EventStoreOptions& opts);

  // Closes every open row whose last occurrence is older than the window
  // relative to `now`, so the listing shows a quiet situation as over.
  common::Result<std::int64_t> CloseExpired(common::TimePoint now);

  common::Result<StoredEvent> Get(const common::Uuid& id);

 private:
  store::Database& db_;
  EventStoreOptions opts_;
};

}  // namespace sluice::events
