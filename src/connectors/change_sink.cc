#include "connectors/change_sink.h"

#include <utility>

namespace sluice::connectors {

std::vector<std::string> TableSchema::KeyColumns() const {
  std::vector<std::string> keys;
  for (const auto& c : columns) {
    if (c.key) keys.push_back(c.name);
  }
  return keys;
}

ChangeEvent ChangeEvent::TruncateOf(const TableSchema& schema) {
  ChangeEvent e;
  e.op = common::ChangeOp::kTruncate;
  e.table = schema.table;
  e.topic = schema.topic;
  e.schema_version = schema.version;
  return e;
}

void ChangeSink::SetAckCallback(AckCallback callback) {
  std::lock_guard lock(mu_);
  callback_ = std::move(callback);
}

void ChangeSink::Acknowledge(Lsn lsn) {
  // Called under the lock, so once SetAckCallback(nullptr) returns no call
  // into a source that is going away can still be running.
  std::lock_guard lock(mu_);
  if (callback_) callback_(lsn);
}

}  // namespace sluice::connectors
