#include "runtime/heartbeat_batcher.h"

#include <pqxx/pqxx>

namespace sluice::runtime {

bool HeartbeatBatcher::Beat(const common::Uuid& worker_id, const common::Uuid& generation,
                            std::optional<WorkerState> observed, common::TimePoint now) {
  std::unique_lock lock(mu_);
  auto batch = open_;
  std::size_t index = batch->entries.size();
  batch->entries.push_back({worker_id, generation, observed, now});
  for (;;) {
    if (batch->done) {
      if (batch->error) std::rethrow_exception(batch->error);
      return batch->taken[index];
    }
    if (!writing_ && open_ == batch) {
      // This caller writes the batch; later arrivals gather in the next one.
      writing_ = true;
      open_ = std::make_shared<Batch>();
      lock.unlock();
      std::vector<bool> taken;
      std::exception_ptr error;
      try {
        taken = Write(batch->entries);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      batch->taken = std::move(taken);
      batch->error = error;
      batch->done = true;
      writing_ = false;
      ++batches_written_;
      cv_.notify_all();
      continue;
    }
    cv_.wait(lock);
  }
}

long long HeartbeatBatcher::batches_written() const {
  std::lock_guard lock(mu_);
  return batches_written_;
}

std::vector<bool> HeartbeatBatcher::Write(const std::vector<Entry>& entries) {
  auto stamped = db_.Direct(
      [&](pqxx::nontransaction& tx) { return WorkerRepository::QuickHeartbeats(tx, entries); });
  std::vector<bool> taken;
  taken.reserve(entries.size());
  for (const auto& e : entries) taken.push_back(stamped.count(e.worker_id.ToString()) > 0);
  return taken;
}

}  // namespace sluice::runtime
