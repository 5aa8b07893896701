// Heartbeats from many pods, written together (group commit). Each caller
// joins the open batch and waits for it; one caller at a time writes a
// whole batch as one statement that stamps every row whose generation still
// matches. The database then does one statement per batch instead of one per
// pod, which is what lets one back end carry thousands of pods.
#pragma once

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "common/time.h"
#include "common/uuid.h"
#include "runtime/worker_repository.h"
#include "store/database.h"

namespace sluice::runtime {

class HeartbeatBatcher {
 public:
  explicit HeartbeatBatcher(store::Database& db) : db_(db) {}

  // True when the worker row took the heartbeat (its generation matched and
  // there was no observed state to restore); false sends the caller to the
  // locked path, which words the refusal or restores the state. A database
  // error is thrown to every caller of the batch.
  bool Beat(const common::Uuid& worker_id, const common::Uuid& generation,
            std::optional<WorkerState> observed, common::TimePoint now);

  // Batches written so far (for tests: several beats share one).
  long long batches_written() const;

 private:
  using Entry = WorkerRepository::Beat;
  struct Batch {
    std::vector<Entry> entries;
    std::vector<bool> taken;
    std::exception_ptr error;
    bool done = false;
  };
  std::vector<bool> Write(const std::vector<Entry>& entries);

  store::Database& db_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<Batch> open_ = std::make_shared<Batch>();
  bool writing_ = false;
  long long batches_written_ = 0;
};

}  // namespace sluice::runtime
