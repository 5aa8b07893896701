#include "orchestrator/events_outbox.h"

#include <spdlog/spdlog.h>

#include "events/events_topic.h"
#include "kafka/client_config.h"
#include "kafka/producer.h"

namespace sluice::orchestrator {

struct EventsOutbox::EnvPublisher {
  std::string settings;  // env.retention_configuration as read: a change restarts
  std::string topic;
  kafka::ClientConfig broker;
  std::unique_ptr<kafka::Producer> producer;  // made on the first pass, by the task
  std::unique_ptr<events::OutboxPublisher> publisher;
  std::unique_ptr<common::PeriodicTask> task;  // last: stopped before the rest goes

  ~EnvPublisher() {
    if (task) task->Stop();
  }
};

namespace {

// Sends the batch, waits for the broker, and counts the leading records it
// acknowledged.
std::size_t PublishBatch(kafka::Producer& producer, const std::string& topic,
                         const std::vector<events::OutboxRecord>& records,
                         std::chrono::milliseconds timeout, common::Status* failure) {
  std::size_t sent = 0;
  for (; sent < records.size(); ++sent) {
    const auto& r = records[sent];
    auto st = producer.Send(topic, r.Key(), r.ToJson().dump(), static_cast<std::int64_t>(sent));
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
  std::vector<common::Status> acked(sent, common::Unavailable("no delivery report"));
  for (const auto& d : *deliveries)
    if (d.id >= 0 && static_cast<std::size_t>(d.id) < sent) acked[d.id] = d.status;
  for (std::size_t i = 0; i < sent; ++i) {
    if (!acked[i].ok()) {
      *failure = acked[i];
      return i;
    }
  }
  return sent;
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
          return PublishBatch(*raw->producer, raw->topic, records, timeout + timeout / 2, failure);
        }),
        std::move(outbox));
    raw->task = std::make_unique<common::PeriodicTask>(options_.interval, [raw, env, timeout] {
      if (!raw->producer) {
        kafka::ProducerOptions po;
        po.delivery_timeout = timeout;
        auto producer = kafka::Producer::Create(raw->broker, po);
        if (!producer.ok()) {
          spdlog::warn("connector_events outbox: env {}: {}", env.ToString(),
                       producer.status().message());
          return;
        }
        raw->producer = std::move(producer).value();
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
