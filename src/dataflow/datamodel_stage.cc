#include "dataflow/datamodel_stage.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "dataflow/envelope.h"
#include "events/events_topic.h"

namespace sluice::dataflow {

using connectors::targets::TargetChange;
using connectors::targets::TargetColumn;
using nlohmann::json;

namespace {

std::string TypeOfJson(const json& v) {
  if (v.is_boolean()) return "bool";
  if (v.is_number_integer()) return "int8";
  if (v.is_number()) return "float8";
  if (v.is_object() || v.is_array()) return "jsonb";
  return "text";
}

// The shaped change as the source's event form, so the source's encoders
// (JSON envelope, Avro) write it exactly as they write a CDC event.
std::pair<connectors::ChangeEvent, connectors::TableSchema> AsEvent(const TargetChange& change,
                                                                    const std::string& topic) {
  connectors::TableSchema schema;
  schema.table = {"datamodel", topic};
  schema.topic = topic;
  for (const auto& c : change.columns)
    schema.columns.push_back({c.name, 0, -1, c.source_type, c.key});
  connectors::ChangeEvent e;
  e.op = change.op;
  e.table = schema.table;
  e.topic = topic;
  e.key = change.op == common::ChangeOp::kTruncate ? json(nullptr) : change.key;
  e.text_columns = change.as_text;
  // The old key of a key change travels as the before image, as from the source.
  if (change.op == common::ChangeOp::kUpdate && change.old_key.is_object())
    e.before = change.old_key;
  if (change.op == common::ChangeOp::kDelete) {
    e.before = change.key;
  } else if (change.op != common::ChangeOp::kTruncate) {
    e.after = change.after;
    // Columns the change did not carry (unchanged TOASTed values) stay so.
    for (const auto& c : change.columns)
      if (!change.after.contains(c.name)) e.unchanged_columns.push_back(c.name);
  }
  if (change.source.is_object()) {
    auto number = [&](const char* field) -> std::int64_t {
      auto it = change.source.find(field);
      return it != change.source.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
    };
    e.lsn = static_cast<connectors::Lsn>(number("lsn"));
    e.commit_lsn = static_cast<connectors::Lsn>(number("commit_lsn"));
    e.commit_time_micros = number("ts_ms") * 1000;
  }
  return {std::move(e), std::move(schema)};
}

}  // namespace

common::Result<TargetChange> ChangeFromJsonValue(const std::string& key, const std::string& value,
                                                 const std::vector<std::string>& key_columns) {
  TargetChange change;
  json parsed_key = key.empty() ? json(nullptr) : json::parse(key, nullptr, false);
  if (value.empty()) {  // a tombstone: the key's row is gone
    if (!parsed_key.is_object())
      return common::InvalidArgument("tombstone without a JSON object key");
    change.op = common::ChangeOp::kDelete;
    change.key = parsed_key;
    for (const auto& [k, v] : parsed_key.items())
      change.columns.push_back({k, TypeOfJson(v), true});
    return change;
  }
  json row = json::parse(value, nullptr, false);
  if (row.is_discarded() || !row.is_object())
    return common::InvalidArgument("message value is not a JSON object");
  change.op = common::ChangeOp::kCreate;
  change.after = row;
  if (!key_columns.empty()) {
    change.key = json::object();
    for (const auto& k : key_columns) {
      if (!row.contains(k) || row[k].is_null())
        return common::InvalidArgument(fmt::format("key column '{}' is missing", k));
      change.key[k] = row[k];
    }
  } else if (parsed_key.is_object() && !parsed_key.empty()) {
    change.key = parsed_key;
    for (const auto& [k, v] : parsed_key.items())
      if (!change.after.contains(k)) change.after[k] = v;
  } else {
    return common::InvalidArgument(
        "no key: set the datamodel's config.key or key the messages by a JSON object");
  }
  for (const auto& [k, v] : change.after.items())
    change.columns.push_back({k, TypeOfJson(v), change.key.contains(k)});
  return change;
}

void MergeSkipped(std::vector<SkippedRecords>& into, const std::vector<SkippedRecords>& more) {
  static constexpr std::size_t kMaxReason = 500;
  for (SkippedRecords m : more) {
    if (m.reason.size() > kMaxReason) m.reason = m.reason.substr(0, kMaxReason) + "...";
    auto same = [&](const SkippedRecords& s) {
      return s.datamodel_id == m.datamodel_id && s.topic == m.topic && s.reason == m.reason;
    };
    auto it = std::find_if(into.begin(), into.end(), same);
    if (it == into.end()) {
      const auto reasons = std::count_if(into.begin(), into.end(), [&](const SkippedRecords& s) {
        return s.datamodel_id == m.datamodel_id;
      });
      if (static_cast<std::size_t>(reasons) >= kMaxSkipReasons) {
        m.reason = fmt::format("other reasons (more than {} kinds)", kMaxSkipReasons);
        it = std::find_if(into.begin(), into.end(), same);
      }
    }
    if (it == into.end()) {
      into.push_back(std::move(m));
    } else {
      it->count += m.count;
    }
  }
}

DatamodelStage::DatamodelStage(DatamodelSpec spec, RowTransform transform,
                               std::shared_ptr<RegistryClient> registry)
    : spec_(std::move(spec)),
      transform_(std::move(transform)),
      registry_(registry),
      avro_in_(std::move(registry)) {}

common::Result<std::unique_ptr<DatamodelStage>> DatamodelStage::Create(
    const kafka::ClientConfig& broker, DatamodelSpec spec,
    std::shared_ptr<RegistryClient> registry) {
  auto transform = RowTransform::Create(spec.transform);
  if (!transform.ok()) return transform.status();
  if (spec.format == "avro" && !registry)
    return common::InvalidArgument("datamodel " + spec.id + ": Avro output needs the registry");
  if (spec.consumer_group.empty()) spec.consumer_group = "datamodel-" + spec.id;
  // An env's connector_events records are keyed by connector (for order),
  // which is no row key; each record's own id is. Without it every record
  // would be skipped for want of a key.
  if (spec.input == "json" && spec.key_columns.empty() &&
      events::ReservedForEvents(spec.source_topic))
    spec.key_columns = {"id"};
  std::unique_ptr<DatamodelStage> stage(
      new DatamodelStage(std::move(spec), std::move(transform).value(), std::move(registry)));
  auto producer = kafka::Producer::Create(broker);
  if (!producer.ok()) return producer.status();
  stage->producer_ = std::move(producer).value();
  auto consumer = kafka::Consumer::Create(broker, stage->spec_.consumer_group);
  if (!consumer.ok()) return consumer.status();
  stage->consumer_ = std::move(consumer).value();
  SLUICE_RETURN_IF_ERROR(stage->consumer_->Subscribe({stage->spec_.source_topic}));
  return stage;
}

common::Result<TargetChange> DatamodelStage::Decode(const kafka::Message& m) {
  if (spec_.input == "json") return ChangeFromJsonValue(m.key, m.value, spec_.key_columns);
  if (IsWireFramed(m.value)) return avro_in_.Decode(m.key, m.value);
  return DecodeEnvelope(m.key, m.value);
}

common::Result<std::string> DatamodelStage::EncodeValue(const TargetChange& change) {
  auto [event, schema] = AsEvent(change, spec_.target_topic);
  if (spec_.format != "avro") return EnvelopeValue(event, ColumnsJson(schema));
  // A new column set is a new schema version (a truncate carries the
  // current one, so it never flips the writer back and forth).
  if (!avro_out_ || (change.op != common::ChangeOp::kTruncate && change.columns != avro_columns_)) {
    auto encoder = registry::ChangeEventEncoder::Create(AvroTableSpec(schema, "sluice"),
                                                        registry::EventFormat::kAvro);
    if (!encoder.ok()) return encoder.status();
    auto id = registry_->Register(spec_.target_topic + "-value", encoder->schema_text());
    if (!id.ok()) return id.status();
    avro_out_.emplace(std::move(encoder).value());
    avro_schema_id_ = *id;
    avro_columns_ = change.columns;
  }
  if (change.op == common::ChangeOp::kTruncate) {
    // The writer's table, not the truncate's (possibly empty) column list.
    connectors::TableSchema current;
    for (const auto& c : avro_columns_)
      current.columns.push_back({c.name, 0, -1, c.source_type, c.key});
    return avro_out_->Encode(AvroChange(event, current), avro_schema_id_);
  }
  return avro_out_->Encode(AvroChange(event, schema), avro_schema_id_);
}

common::Status DatamodelStage::RunOnce(std::chrono::milliseconds poll_timeout) {
  auto polled = consumer_->Poll(2000, poll_timeout);
  found_nothing_ = !polled.ok() || polled->empty();
  if (!polled.ok()) {
    // Nothing was consumed (e.g. the raw topic does not exist until the
    // source's first event): wait and poll again.
    spdlog::debug("datamodel {}: {}", spec_.id, polled.status().message());
    std::this_thread::sleep_for(poll_timeout);
    return common::Status::Ok();
  }
  if (polled->empty()) return common::Status::Ok();
  std::int64_t sent = 0;
  for (const auto& m : *polled) {
    if (spec_.only_team && !events::EventRecordOfTeam(m.value, *spec_.only_team)) {
      ++other_teams_;
      continue;
    }
    auto change = Decode(m);
    if (!change.ok() && change.status().code() == common::Code::kUnavailable)
      return change.status();
    if (!change.ok()) {
      // Nothing downstream could read it either; it stays on the raw topic.
      spdlog::warn("datamodel {}: skipping {}/{}/{}: {}", spec_.id, m.topic, m.partition, m.offset,
                   change.status().message());
      ++skipped_;
      MergeSkipped(unreadable_,
                   {{spec_.id, m.topic, change.status().message(), 1, m.partition, m.offset}});
      continue;
    }
    if (!transform_.Keeps(*change)) {
      ++skipped_;
      continue;
    }
    transform_.Apply(*change);
    auto value = EncodeValue(*change);
    if (!value.ok()) return value.status();
    std::string key = change->op == common::ChangeOp::kTruncate || change->key.is_null()
                          ? std::string()
                          : change->key.dump();
    SLUICE_RETURN_IF_ERROR(producer_->Send(spec_.target_topic, key, *value, next_id_++));
    ++sent;
  }
  // Commit only what the broker holds: a failure replays the batch.
  auto deliveries = producer_->Flush(std::chrono::milliseconds(60000));
  if (!deliveries.ok()) return deliveries.status();
  for (const auto& d : *deliveries) {
    if (!d.status.ok())
      return common::Unavailable(fmt::format("datamodel {}: broker refused a message for {}: {}",
                                             spec_.id, d.topic, d.status.message()));
  }
  SLUICE_RETURN_IF_ERROR(consumer_->Commit(*polled));
  republished_ += sent;
  return common::Status::Ok();
}

}  // namespace sluice::dataflow
