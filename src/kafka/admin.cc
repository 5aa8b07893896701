#include "kafka/admin.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>

#include <fmt/format.h>

namespace sluice::kafka {

using common::Result;
using common::Status;

namespace {

Status FromCode(rd_kafka_resp_err_t err, const char* msg, const std::string& what) {
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return {};
  std::string m = fmt::format("{}: {}", what, msg ? msg : rd_kafka_err2str(err));
  switch (err) {
    case RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS:
      return common::AlreadyExists(m);
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
      return common::NotFound(m);
    case RD_KAFKA_RESP_ERR_INVALID_CONFIG:
    case RD_KAFKA_RESP_ERR_INVALID_PARTITIONS:
    case RD_KAFKA_RESP_ERR_INVALID_REPLICATION_FACTOR:
    case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
      return common::InvalidArgument(m);
    default:
      return common::Unavailable(m);
  }
}

// Runs one admin call and waits for its single result event.
struct Waiter {
  rd_kafka_queue_t* q;
  explicit Waiter(rd_kafka_t* rk) : q(rd_kafka_queue_new(rk)) {}
  ~Waiter() { rd_kafka_queue_destroy(q); }
  rd_kafka_event_t* Wait(std::chrono::milliseconds t) const {
    return rd_kafka_queue_poll(q, static_cast<int>(t.count()));
  }
};

}  // namespace

Result<std::unique_ptr<Admin>> Admin::Create(const ClientConfig& config) {
  auto conf = config.ToConf({});
  if (!conf.ok()) return conf.status();
  std::string err;
  auto a = std::unique_ptr<Admin>(new Admin());
  a->config_ = config;
  a->handle_.reset(RdKafka::Producer::create(conf->get(), err));
  if (!a->handle_) return common::InvalidArgument(fmt::format("kafka admin: {}", err));
  return a;
}

Admin::~Admin() = default;

Status Admin::CreateTopic(const std::string& name, std::int32_t partitions,
                          std::map<std::string, std::string> configs) {
  if (config_.retention_ms >= 0)
    configs.emplace("retention.ms", std::to_string(config_.retention_ms));
  if (config_.retention_bytes >= 0)
    configs.emplace("retention.bytes", std::to_string(config_.retention_bytes));
  rd_kafka_t* rk = handle_->c_ptr();
  char errbuf[512];
  rd_kafka_NewTopic_t* nt =
      rd_kafka_NewTopic_new(name.c_str(), partitions, -1, errbuf, sizeof errbuf);
  if (!nt) return common::InvalidArgument(errbuf);
  for (const auto& [k, v] : configs) rd_kafka_NewTopic_set_config(nt, k.c_str(), v.c_str());
  Waiter w(rk);
  rd_kafka_CreateTopics(rk, &nt, 1, nullptr, w.q);
  rd_kafka_NewTopic_destroy(nt);
  rd_kafka_event_t* ev = w.Wait(timeout_);
  if (!ev) return common::Unavailable("create topic: timed out");
  Status st =
      FromCode(rd_kafka_event_error(ev), rd_kafka_event_error_string(ev), "create topic " + name);
  if (st.ok()) {
    size_t n = 0;
    const rd_kafka_topic_result_t** res =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
    for (size_t i = 0; i < n && st.ok(); ++i) {
      st = FromCode(rd_kafka_topic_result_error(res[i]), rd_kafka_topic_result_error_string(res[i]),
                    "create topic " + name);
    }
  }
  rd_kafka_event_destroy(ev);
  return st;
}

Status Admin::DeleteTopic(const std::string& name) {
  rd_kafka_t* rk = handle_->c_ptr();
  rd_kafka_DeleteTopic_t* dt = rd_kafka_DeleteTopic_new(name.c_str());
  Waiter w(rk);
  rd_kafka_DeleteTopics(rk, &dt, 1, nullptr, w.q);
  rd_kafka_DeleteTopic_destroy(dt);
  rd_kafka_event_t* ev = w.Wait(timeout_);
  if (!ev) return common::Unavailable("delete topic: timed out");
  Status st =
      FromCode(rd_kafka_event_error(ev), rd_kafka_event_error_string(ev), "delete topic " + name);
  if (st.ok()) {
    size_t n = 0;
    const rd_kafka_topic_result_t** res =
        rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(ev), &n);
    for (size_t i = 0; i < n && st.ok(); ++i) {
      st = FromCode(rd_kafka_topic_result_error(res[i]), rd_kafka_topic_result_error_string(res[i]),
                    "delete topic " + name);
    }
  }
  rd_kafka_event_destroy(ev);
  return st;
}

Result<std::vector<std::string>> Admin::ListTopics() {
  RdKafka::Metadata* md = nullptr;
  auto rc = handle_->metadata(true, nullptr, &md, static_cast<int>(timeout_.count()));
  if (rc != RdKafka::ERR_NO_ERROR)
    return common::Unavailable(fmt::format("metadata: {}", RdKafka::err2str(rc)));
  std::unique_ptr<RdKafka::Metadata> holder(md);
  std::vector<std::string> names;
  for (const auto* t : *md->topics()) names.push_back(t->topic());
  return names;
}

Result<std::int32_t> Admin::PartitionCount(const std::string& topic) {
  // Asks for this topic explicitly; note a broker with auto-create on would create it.
  std::string err;
  std::unique_ptr<RdKafka::Topic> t(RdKafka::Topic::create(handle_.get(), topic, nullptr, err));
  if (!t) return common::InvalidArgument(err);
  RdKafka::Metadata* md = nullptr;
  auto rc = handle_->metadata(false, t.get(), &md, static_cast<int>(timeout_.count()));
  if (rc != RdKafka::ERR_NO_ERROR)
    return common::Unavailable(fmt::format("metadata: {}", RdKafka::err2str(rc)));
  std::unique_ptr<RdKafka::Metadata> holder(md);
  for (const auto* tm : *md->topics()) {
    if (tm->topic() != topic) continue;
    if (tm->err() != RdKafka::ERR_NO_ERROR)
      return common::NotFound(fmt::format("topic {}: {}", topic, RdKafka::err2str(tm->err())));
    return static_cast<std::int32_t>(tm->partitions()->size());
  }
  return common::NotFound("topic " + topic);
}

Result<std::vector<PartitionLag>> Admin::ConsumerLag(const std::string& group,
                                                     const std::string& topic) {
  auto count = PartitionCount(topic);
  if (!count.ok()) return count.status();
  // A consumer that never subscribes: it only reads the group's committed offsets.
  auto conf = config_.ToConf({{"group.id", group}, {"enable.auto.commit", "false"}});
  if (!conf.ok()) return conf.status();
  std::string err;
  std::unique_ptr<RdKafka::KafkaConsumer> c(RdKafka::KafkaConsumer::create(conf->get(), err));
  if (!c) return common::InvalidArgument(err);
  std::vector<RdKafka::TopicPartition*> parts;
  for (std::int32_t p = 0; p < *count; ++p)
    parts.push_back(RdKafka::TopicPartition::create(topic, p));
  auto rc = c->committed(parts, static_cast<int>(timeout_.count()));
  std::vector<PartitionLag> out;
  Status st;
  if (rc != RdKafka::ERR_NO_ERROR)
    st = common::Unavailable(fmt::format("committed: {}", RdKafka::err2str(rc)));
  for (auto* tp : parts) {
    if (!st.ok()) break;
    PartitionLag l;
    l.partition = tp->partition();
    l.committed = tp->offset() >= 0 ? tp->offset() : -1;
    auto wrc = c->query_watermark_offsets(topic, tp->partition(), &l.log_start, &l.log_end,
                                          static_cast<int>(timeout_.count()));
    if (wrc != RdKafka::ERR_NO_ERROR) {
      st = common::Unavailable(fmt::format("watermarks: {}", RdKafka::err2str(wrc)));
      break;
    }
    l.lag = l.log_end - (l.committed >= 0 ? std::max(l.committed, l.log_start) : l.log_start);
    out.push_back(l);
  }
  RdKafka::TopicPartition::destroy(parts);
  c->close();
  if (!st.ok()) return st;
  return out;
}

Status Admin::ResetGroupToEarliest(const std::string& group, const std::string& topic) {
  auto count = PartitionCount(topic);
  if (!count.ok()) return count.status();
  auto conf = config_.ToConf({{"group.id", group}, {"enable.auto.commit", "false"}});
  if (!conf.ok()) return conf.status();
  std::string err;
  std::unique_ptr<RdKafka::KafkaConsumer> c(RdKafka::KafkaConsumer::create(conf->get(), err));
  if (!c) return common::InvalidArgument(err);
  std::vector<RdKafka::TopicPartition*> parts;
  Status st;
  for (std::int32_t p = 0; p < *count && st.ok(); ++p) {
    std::int64_t lo = 0, hi = 0;
    auto rc = c->query_watermark_offsets(topic, p, &lo, &hi, static_cast<int>(timeout_.count()));
    if (rc != RdKafka::ERR_NO_ERROR)
      st = common::Unavailable(fmt::format("watermarks: {}", RdKafka::err2str(rc)));
    parts.push_back(RdKafka::TopicPartition::create(topic, p, lo));
  }
  if (st.ok()) {
    auto rc = c->commitSync(parts);
    if (rc != RdKafka::ERR_NO_ERROR) {
      st = common::FailedPrecondition(fmt::format("reset {}: {}", group, RdKafka::err2str(rc)));
    }
    for (auto* tp : parts) {
      if (st.ok() && tp->err() != RdKafka::ERR_NO_ERROR) {
        st = common::FailedPrecondition(
            fmt::format("reset {}: {}", group, RdKafka::err2str(tp->err())));
      }
    }
  }
  RdKafka::TopicPartition::destroy(parts);
  c->close();
  return st;
}

}  // namespace sluice::kafka
