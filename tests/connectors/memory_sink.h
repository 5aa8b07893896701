// Test double for the broker: keeps everything emitted in memory and
// acknowledges checkpoints either at once or only when the test says so,
// which is how the tests hold back or grant "durably acknowledged".
#pragma once

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "connectors/change_sink.h"

namespace sluice::connectors::testing {

class MemorySink : public ChangeSink {
 public:
  explicit MemorySink(bool auto_ack = true) : auto_ack_(auto_ack) {}

  common::Status Emit(const ChangeEvent& event) override {
    if (fail_emits_from && events.size() >= *fail_emits_from)
      return common::Unavailable("memory sink: failing as told");
    events.push_back(event);
    return common::Status::Ok();
  }
  common::Status SchemaChanged(const TableSchema& schema) override {
    schemas.push_back(schema);
    return common::Status::Ok();
  }
  common::Status Checkpoint(Lsn lsn) override {
    checkpoints.push_back(lsn);
    if (auto_ack_) {
      Acknowledge(lsn);
    } else {
      pending_.push_back(lsn);
    }
    return common::Status::Ok();
  }
  common::Status Flush() override {
    ++flushes;
    AckAll();
    return common::Status::Ok();
  }
  common::Status CaughtUp() override {
    caught_up_after.push_back(events.size());
    return common::Status::Ok();
  }
  // Grants durability for everything checkpointed so far.
  void AckAll() {
    for (Lsn lsn : pending_) Acknowledge(lsn);
    pending_.clear();
  }
  void set_auto_ack(bool on) { auto_ack_ = on; }

  // Applies the events in order, the way an idempotent target would:
  // key -> row (with unchanged columns kept from the previous row).
  std::map<std::string, nlohmann::json> Materialize(const std::string& topic) const {
    std::map<std::string, nlohmann::json> rows;
    for (const auto& e : events) {
      if (e.topic != topic) continue;
      if (e.op == common::ChangeOp::kTruncate) {
        rows.clear();
        continue;
      }
      std::string key = e.key.dump();
      if (e.op == common::ChangeOp::kDelete) {
        rows.erase(key);
        continue;
      }
      if (e.before.is_object() && e.key.is_object()) {
        // A key-changing update moves the row: drop it under its old key.
        nlohmann::json old_key = nlohmann::json::object();
        for (const auto& [col, _] : e.key.items()) {
          if (e.before.contains(col)) old_key[col] = e.before[col];
        }
        if (old_key != e.key) rows.erase(old_key.dump());
      }
      nlohmann::json row = e.after;
      auto old = rows.find(key);
      for (const auto& col : e.unchanged_columns) {
        if (old != rows.end() && old->second.contains(col)) row[col] = old->second[col];
      }
      rows[key] = row;
    }
    return rows;
  }

  std::vector<ChangeEvent> events;
  std::vector<TableSchema> schemas;
  std::vector<Lsn> checkpoints;
  int flushes = 0;
  std::vector<std::size_t> caught_up_after;  // events.size() at each CaughtUp
  // Tests: every Emit fails once this many events are held (a source dying
  // mid-way, its later events never delivered).
  std::optional<std::size_t> fail_emits_from;

 private:
  bool auto_ack_;
  std::vector<Lsn> pending_;
};

}  // namespace sluice::connectors::testing
