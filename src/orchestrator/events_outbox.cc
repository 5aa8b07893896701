#include "orchestrator/events_outbox.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "events/events_topic.h"
#include "kafka/client_config.h"
#include "kafka/producer.h"
#include "kafka/topic_tail.h"

#include <optional>
#include <set>

namespace sluice::orchestrator {

struct EventsOutbox::EnvPublisher {
  std::string settings;  // env.retention_configuration as read: a change restarts
  std::string topic;
  kafka::ClientConfig broker;
  std::unique_ptr<kafka::Producer> producer;  // made on the first pass, by the task
  std::unique_ptr<kafka::TopicTail> tail;     // likewise
  std::unique_ptr<events::OutboxPublisher> publisher;
  std::unique_ptr<common::PeriodicTask> task;  // last: stopped before the rest goes

  ~EnvPublisher() {
    if (task) task->Stop();
  }
};

namespace {

// The seqs of `records` already on the topic: a publisher (this one or
// another back end's) that the broker acknowledged and that died, or failed,
// before its cursor commit left them there. Each publisher sends in seq
// order, so reading each partition back from its end down to a seq before
// the batch finds all of them.
common::Result<std::set<std::int64_t>> AlreadyOnTopic(
    kafka::TopicTail& tail, const std::string& topic,
    const std::vector<events::OutboxRecord>& records, std::chrono::milliseconds timeout) {
  const std::int64_t first = records.front().seq;
  auto seq_of = [](const kafka::TailRecord& r) -> std::optional<std::int64_t> {
    auto j = nlohmann::json::parse(r.value, nullptr, false);
    if (!j.is_object() || !j.contains("seq") || !j["seq"].is_number_integer()) return std::nullopt;
    return j["seq"].get<std::int64_t>();
  };
  auto read = tail.ReadBack(
      topic,
      [&](const kafka::TailRecord& r) {
        auto seq = seq_of(r);
        return !seq || *seq < first;  // nothing but the outbox writes here
      },
      timeout);
  if (!read.ok() && read.status().code() == common::Code::kNotFound)
    return std::set<std::int64_t>{};  // the first record creates it
  if (!read.ok()) return read.status();
  std::set<std::int64_t> seqs;
  for (const auto& r : *read)
    if (auto seq = seq_of(r); seq && *seq >= first) seqs.insert(*seq);
  return seqs;
}

// Sends the records of the batch not yet on the topic, waits for the broker,
// and counts the leading records it holds (sent and acknowledged, or there
// already). Exactly once: a record on the topic is never sent again, and
// nothing is sent while an earlier send is unresolved (the broker may still
// append it, after the read back below missed it).
std::size_t PublishBatch(kafka::Producer& producer, kafka::TopicTail& tail,
                         const std::string& topic, const std::vector<events::OutboxRecord>& records,
                         std::chrono::milliseconds timeout, common::Status* failure) {
  if (producer.outstanding() > 0 && !producer.Flush(timeout).ok()) {
    *failure = common::Unavailable(fmt::format(
        "{} earlier send(s) to {} not acknowledged yet; nothing is sent before they are",
        producer.outstanding(), topic));
    return 0;
  }
  producer.TakeDeliveries();  // an earlier pass's reports: their ids are not this batch's
  auto there = AlreadyOnTopic(tail, topic, records, timeout);
  if (!there.ok()) {
    *failure = there.status();
    return 0;
  }
  if (!there->empty())
    spdlog::info(
        "connector_events outbox: {} occurrence(s) from seq {} already on {} (a publisher stopped "
        "before its cursor commit): not sent again",
        there->size(), *there->begin(), topic);
  std::vector<common::Status> acked(records.size(), common::Unavailable("no delivery report"));
  std::size_t queued = 0;  // the records up to here are sent or already there
  for (; queued < records.size(); ++queued) {
    const auto& r = records[queued];
    if (there->count(r.seq)) {
      acked[queued] = common::Status::Ok();
      continue;
    }
    auto st = producer.Send(topic, r.Key(), r.ToJson().dump(), static_cast<std::int64_t>(queued));
    if (!st.ok()) {
      *failure = st;
      break;
    }
  }
  auto deliveries = producer.Flush(timeout);
  if (!deliveries.ok()) {
    *failure = deliveries.status();
    return 0;
  }
  for (const auto& d : *deliveries)
    if (d.id >= 0 && static_cast<std::size_t>(d.id) < queued) acked[d.id] = d.status;
  for (std::size_t i = 0; i < queued; ++i) {
    if (!acked[i].ok()) {
      *failure = acked[i];
      return i;
    }
  }
  return queued;
}

}  // namespace

EventsOutbox::EventsOutbox(store::Database& db, EventsOutboxOptions options)
    : db_(db), options_(std::move(options)) {
  rescan_ = std::make_unique<common::PeriodicTask>(options_.rescan, [this] {
    if (auto st = Rescan(); !st.ok()) spdlog::warn("connector_events outbox: {}", st.message());
  });
}

EventsOutbox::~EventsOutbox() {
  rescan_->Stop();
  std::lock_guard lock(mu_);
  envs_.clear();
}

common::Status EventsOutbox::Rescan() {
  std::map<common::Uuid, std::string> found;
  try {
    db_.Transact([&](pqxx::work& tx) {
      for (const auto& r : tx.exec("SELECT id::text, retention_configuration::text FROM env")) {
        if (auto id = common::Uuid::Parse(r[0].c_str()))
          found[*id] = r[1].is_null() ? "{}" : r[1].c_str();
      }
    });
  } catch (const std::exception& e) {
    return common::Unavailable(std::string("reading envs: ") + e.what());
  }
  std::lock_guard lock(mu_);
  for (auto it = envs_.begin(); it != envs_.end();) {
    auto f = found.find(it->first);
    if (f == found.end() || f->second != it->second->settings) {
      spdlog::info("connector_events outbox: env {} {}", it->first.ToString(),
                   f == found.end() ? "is gone" : "has new broker settings");
      it = envs_.erase(it);  // joins its task
    } else {
      ++it;
    }
  }
  for (const auto& [env, settings] : found) {
    if (envs_.count(env)) continue;
    auto p = std::make_unique<EnvPublisher>();
    p->settings = settings;
    p->topic = events::EnvEventsTopic(env);
    auto parsed = nlohmann::json::parse(settings, nullptr, false);
    auto broker = kafka::ClientConfig::FromJson(parsed);
    if (!broker.ok()) {
      // Kept without a task, so the warning is said once per setting.
      spdlog::warn("connector_events outbox: env {} is not published ({})", env.ToString(),
                   broker.status().message());
      envs_[env] = std::move(p);
      continue;
    }
    p->broker = std::move(broker).value();
    auto* raw = p.get();
    const auto timeout = options_.delivery_timeout;
    events::OutboxOptions outbox = options_.outbox;
    outbox.name = events::EnvOutboxCursor(env);
    outbox.env_id = env;
    raw->publisher = std::make_unique<events::OutboxPublisher>(
        db_,
        events::PublishBatchFn([raw, timeout](const std::vector<events::OutboxRecord>& records,
                                              common::Status* failure) -> std::size_t {
          return PublishBatch(*raw->producer, *raw->tail, raw->topic, records,
                              timeout + timeout / 2, failure);
        }),
        std::move(outbox));
    raw->task = std::make_unique<common::PeriodicTask>(options_.interval, [raw, env, timeout] {
      if (!raw->producer) {
        kafka::ProducerOptions po;
        // Never given up on (see EventsOutboxOptions::delivery_timeout); a
        // request unanswered this long is resent on a new connection.
        po.delivery_timeout = std::chrono::milliseconds(0);
        po.overrides["socket.timeout.ms"] = std::to_string(timeout.count());
        auto producer = kafka::Producer::Create(raw->broker, po);
        if (!producer.ok()) {
          spdlog::warn("connector_events outbox: env {}: {}", env.ToString(),
                       producer.status().message());
          return;
        }
        raw->producer = std::move(producer).value();
      }
      if (!raw->tail) {
        auto tail = kafka::TopicTail::Create(raw->broker);
        if (!tail.ok()) {
          spdlog::warn("connector_events outbox: env {}: {}", env.ToString(),
                       tail.status().message());
          return;
        }
        raw->tail = std::move(tail).value();
      }
      auto r = raw->publisher->PublishOnce();
      if (!r.ok()) {
        spdlog::warn("connector_events outbox: env {}: {}", env.ToString(), r.status().message());
      } else if (!r->failure.ok()) {
        spdlog::warn("connector_events outbox: env {}: {} not published yet: {}", env.ToString(),
                     raw->topic, r->failure.message());
      }
    });
    spdlog::info("connector_events outbox: env {} publishes onto {} at {}", env.ToString(),
                 raw->topic, raw->broker.bootstrap_servers);
    envs_[env] = std::move(p);
  }
  return common::Status::Ok();
}

std::vector<common::Uuid> EventsOutbox::PublishingEnvs() const {
  std::lock_guard lock(mu_);
  std::vector<common::Uuid> out;
  for (const auto& [env, p] : envs_)
    if (p->task) out.push_back(env);
  return out;
}

}  // namespace sluice::orchestrator
