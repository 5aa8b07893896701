#include "runtime/heartbeat_batcher.h"

#include <fmt/format.h>

#include <pqxx/pqxx>
#include <set>
#include <string>

#include "runtime/worker_repository.h"

namespace sluice::runtime {

bool HeartbeatBatcher::Beat(const common::Uuid& worker_id, const common::Uuid& generation,
                            common::TimePoint now) {
  std::unique_lock lock(mu_);
  auto batch = open_;
  std::size_t index = batch->entries.size();
  batch->entries.push_back({worker_id, generation, now});
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
  if (entries.size() == 1) {
    const auto& e = entries[0];
    return {db_.Direct([&](pqxx::nontransaction& tx) {
      return WorkerRepository::QuickHeartbeat(tx, e.worker_id, e.generation, e.now);
    })};
  }
  // UUIDs and integers only, so the arrays are written as literals and the
  // whole batch is one simple-query text: one round trip, its own implicit
  // transaction with a relaxed commit. Rows are locked in id order, so two
  // back ends writing overlapping batches cannot deadlock on each other.
  std::string ids, generations, stamps;
  for (const auto& e : entries) {
    const char* sep = ids.empty() ? "" : ",";
    ids += sep + e.worker_id.ToString();
    generations += sep + e.generation.ToString();
    stamps += fmt::format("{}{}", sep, common::ToEpochMicros(e.now));
  }
  std::set<std::string> stamped;
  db_.Direct([&](pqxx::nontransaction& tx) {
    auto rows = tx.exec(fmt::format(
        "SET LOCAL synchronous_commit = off; "
        "WITH beat AS (SELECT * FROM unnest('{{{}}}'::uuid[], '{{{}}}'::uuid[], "
        "'{{{}}}'::bigint[]) "
        "AS b(id, generation, at)), "
        "locked AS (SELECT w.id FROM worker w JOIN beat b ON w.id = b.id "
        "AND w.launch_generation = b.generation ORDER BY w.id FOR UPDATE OF w) "
        "UPDATE worker w SET last_heartbeat_at = (to_timestamp(b.at / 1e6) AT TIME ZONE 'UTC'), "
        "updated_at = now() AT TIME ZONE 'UTC' FROM (SELECT DISTINCT ON (id) * FROM beat "
        "ORDER BY id, at DESC) b WHERE w.id = b.id AND w.launch_generation = b.generation "
        "AND w.id IN (SELECT id FROM locked) RETURNING w.id::text",
        ids, generations, stamps));
    for (const auto& row : rows) stamped.insert(row[0].c_str());
  });
  std::vector<bool> taken;
  taken.reserve(entries.size());
  for (const auto& e : entries) taken.push_back(stamped.count(e.worker_id.ToString()) > 0);
  return taken;
}

}  // namespace sluice::runtime
