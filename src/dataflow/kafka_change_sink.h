// The source's sink on the data path: each change event becomes one Kafka
// message on its table's topic, keyed by primary key. A checkpoint (a
// transaction boundary) is acknowledged to the source only once the broker
// acknowledged every message emitted before it, so the WAL position the
// source confirms to PostgreSQL never runs ahead of what Kafka holds.
//
// With a registry, values are Avro in Confluent's wire format
// (dataflow/avro_envelope.h): each table's envelope schema is registered
// under "<topic>-value" when the source first describes it, and a new
// version whenever its columns change (a column added by DDL).
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <set>

#include "connectors/change_sink.h"
#include "dataflow/avro_envelope.h"
#include "dataflow/registry_client.h"
#include "kafka/producer.h"

namespace sluice::dataflow {

class KafkaChangeSink : public connectors::ChangeSink {
 public:
  explicit KafkaChangeSink(kafka::Producer& producer) : producer_(producer) {}
  // Avro: registers schemas through `registry`; `server` names the envelope
  // records' namespace (the topic prefix).
  KafkaChangeSink(kafka::Producer& producer, std::shared_ptr<RegistryClient> registry,
                  std::string server)
      : producer_(producer), registry_(std::move(registry)), server_(std::move(server)) {}

  common::Status Emit(const connectors::ChangeEvent& event) override;
  common::Status SchemaChanged(const connectors::TableSchema& schema) override;
  common::Status Checkpoint(connectors::Lsn lsn) override;
  common::Status Flush() override;
  bool TakesJsonText() const override { return registry_ == nullptr; }  // JSON envelopes

  // Processes the deliveries reported so far without waiting; an error once
  // any message failed (the source must restart from its confirmed LSN).
  common::Status Pump() override;
  common::Status CaughtUp() override;

  std::int64_t acknowledged_messages() const { return watermark_; }
  // Messages sent and not yet acknowledged, and how long the broker has
  // acknowledged none of them (zero when nothing is waiting): a broker that
  // answers but cannot store (a full disk) looks like this, since the client
  // retries such errors itself until its delivery timeout.
  std::int64_t unacknowledged_messages() const { return next_id_ - 1 - watermark_; }
  std::chrono::steady_clock::duration AcknowledgedNoneFor(
      std::chrono::steady_clock::time_point now) const;

 private:
  common::Status Absorb(const std::vector<kafka::Delivery>& deliveries);
  common::Result<std::string> EncodeValue(const connectors::ChangeEvent& event,
                                          const connectors::TableSchema& schema);

  kafka::Producer& producer_;
  std::map<std::string, connectors::TableSchema> schemas_;  // by topic
  std::map<std::string, std::string> columns_json_;         // by topic
  std::shared_ptr<RegistryClient> registry_;                // set: Avro
  std::string server_;
  std::map<std::string, AvroChangeWriter> writers_;  // by topic
  std::int64_t next_id_ = 1;
  std::int64_t sent_now_below_ = 1;  // ids below were sent by CaughtUp
  std::int64_t watermark_ = 0;       // every id <= watermark_ is acknowledged
  std::set<std::int64_t> acked_above_;
  // The last acknowledgement, or the send that ended an idle spell.
  std::chrono::steady_clock::time_point last_progress_ = std::chrono::steady_clock::now();
  std::deque<std::pair<std::int64_t, connectors::Lsn>> checkpoints_;  // (last id, lsn)
  common::Status failure_;
  // Debug log: how long after the start the first change was sent and acknowledged.
  std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
  bool first_acknowledged_ = false;
};

}  // namespace sluice::dataflow
