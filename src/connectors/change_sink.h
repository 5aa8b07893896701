// Where a source sends its change events. The data path plugs the Kafka
// producer in here; tests use an in-memory sink. The sink, not the source,
// knows when an event is durable, so acknowledgement flows back through it:
// the source only confirms a WAL position to PostgreSQL once the sink says
// everything before it is safe, so a crash replays rather than loses.
#pragma once

#include <functional>
#include <mutex>

#include "common/status.h"
#include "connectors/change_event.h"

namespace sluice::connectors {

class ChangeSink {
 public:
  using AckCallback = std::function<void(Lsn)>;

  virtual ~ChangeSink() = default;

  // Queues one event; may return before it is durable.
  virtual common::Status Emit(const ChangeEvent& event) = 0;
  // A table's column set is new or changed; called before the first event
  // carrying the new schema, so the registry can register a new version.
  virtual common::Status SchemaChanged(const TableSchema& schema) = 0;
  // A transaction boundary: once every event emitted before this call is
  // durable, the sink reports `lsn` through the ack callback (in order).
  virtual common::Status Checkpoint(Lsn lsn) = 0;
  // Returns once everything emitted so far is durable downstream (and the
  // checkpoints among it have been reported).
  virtual common::Status Flush() = 0;
  // Takes in the acknowledgements that arrived so far without waiting (a
  // sink whose bookkeeping of them grows until taken in must do it here). A
  // source calls it now and then while it emits a long run of events
  // without returning to its caller, e.g. replaying a large transaction.
  virtual common::Status Pump() { return common::Status::Ok(); }
  // The source has read everything its database has written so far. A sink
  // that batches sends what it holds now: batches stay small while the
  // source keeps up, and grow to their limit only under a backlog.
  virtual common::Status CaughtUp() { return common::Status::Ok(); }
  // Whether this sink reads row images as JSON text (ChangeEvent::key_json,
  // before_json and after_json) instead of trees: a source may then skip
  // building them.
  virtual bool TakesJsonText() const { return false; }

  // The source registers itself here. The callback runs on whatever thread
  // acknowledges and must be quick; passing nullptr waits out a running call.
  void SetAckCallback(AckCallback callback);

 protected:
  // For implementations: report that events up to checkpoint `lsn` are durable.
  void Acknowledge(Lsn lsn);

 private:
  std::mutex mu_;
  AckCallback callback_;
};

}  // namespace sluice::connectors
