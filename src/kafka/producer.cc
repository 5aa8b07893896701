#include "kafka/producer.h"

#include <librdkafka/rdkafkacpp.h>

#include <fmt/format.h>

namespace sluice::kafka {

using common::Result;
using common::Status;

class Producer::Reporter : public RdKafka::DeliveryReportCb {
 public:
  void dr_cb(RdKafka::Message& m) override {
    Delivery d;
    d.id = reinterpret_cast<std::intptr_t>(m.msg_opaque());
    d.topic = m.topic_name();
    d.partition = m.partition();
    d.offset = m.offset();
    if (m.err() != RdKafka::ERR_NO_ERROR) d.status = common::Unavailable(m.errstr());
    std::lock_guard lock(mu_);
    done_.push_back(std::move(d));
  }
  std::vector<Delivery> Take() {
    std::lock_guard lock(mu_);
    return std::exchange(done_, {});
  }

 private:
  std::mutex mu_;
  std::vector<Delivery> done_;
};

Result<std::unique_ptr<Producer>> Producer::Create(const ClientConfig& config,
                                                   ProducerOptions options) {
  auto overrides = options.overrides;
  overrides.emplace("acks", "all");
  overrides.emplace("enable.idempotence", options.idempotent ? "true" : "false");
  overrides.emplace("linger.ms", std::to_string(options.linger.count()));
  overrides.emplace("delivery.timeout.ms", std::to_string(options.delivery_timeout.count()));
  // A bounded send queue (librdkafka's default is 1 GiB): a worker's memory
  // must not grow with the backlog; a full queue is back-pressure (Send).
  overrides.emplace("queue.buffering.max.kbytes", "16384");
  // One change may be large (a LONGBLOB, a long TEXT): up to 15 MiB, within
  // that queue and the embedded broker's limit (librdkafka's default is
  // 1 MB, and a larger row stopped its whole source). A Kafka cluster's own
  // message.max.bytes still applies.
  overrides.emplace("message.max.bytes", std::to_string(15 << 20));
  auto conf = config.ToConf(overrides);
  if (!conf.ok()) return conf.status();
  auto p = std::unique_ptr<Producer>(new Producer());
  p->reporter_ = std::make_unique<Reporter>();
  std::string err;
  if ((*conf)->set("dr_cb", p->reporter_.get(), err) != RdKafka::Conf::CONF_OK)
    return common::Internal(err);
  p->producer_.reset(RdKafka::Producer::create(conf->get(), err));
  if (!p->producer_) return common::InvalidArgument(fmt::format("kafka producer: {}", err));
  return p;
}

Producer::~Producer() {
  if (producer_) producer_->flush(5000);
}

Status Producer::Send(const std::string& topic, std::string_view key, std::string_view value,
                      std::int64_t id, std::optional<std::int32_t> partition,
                      const std::vector<std::pair<std::string, std::string>>& headers) {
  RdKafka::Headers* hs = nullptr;
  if (!headers.empty()) {
    hs = RdKafka::Headers::create();
    for (const auto& [k, v] : headers) hs->add(k, v.data(), v.size());
  }
  LearnTopic(topic);
  while (true) {
    auto rc = producer_->produce(topic, partition.value_or(RdKafka::Topic::PARTITION_UA),
                                 RdKafka::Producer::RK_MSG_COPY, const_cast<char*>(value.data()),
                                 value.size(), key.data(), key.size(), 0, hs,
                                 reinterpret_cast<void*>(static_cast<std::intptr_t>(id)));
    if (rc == RdKafka::ERR_NO_ERROR) return {};
    if (rc == RdKafka::ERR__QUEUE_FULL) {
      producer_->poll(100);  // back-pressure: let deliveries drain
      continue;
    }
    delete hs;  // ownership passes to librdkafka only on success
    return common::Unavailable(fmt::format("produce to {}: {}", topic, RdKafka::err2str(rc)));
  }
}

void Producer::LearnTopic(const std::string& topic) {
  // librdkafka asks for a topic's partitions on its first message only at
  // its next one-second topic scan, so every worker's first change (after
  // each restart) waited up to a second before it was even sent. One
  // metadata request per topic, here, answers in a round trip; if it does
  // not answer within the bound, the scan does as before.
  std::lock_guard lock(topics_mu_);
  if (topics_.count(topic)) return;
  std::string err;
  auto& handle = topics_[topic];
  handle.reset(RdKafka::Topic::create(producer_.get(), topic, nullptr, err));
  if (!handle) return;
  RdKafka::Metadata* metadata = nullptr;
  if (producer_->metadata(false, handle.get(), &metadata, 1000) == RdKafka::ERR_NO_ERROR)
    delete metadata;
}

std::vector<Delivery> Producer::TakeDeliveries() {
  producer_->poll(0);
  return reporter_->Take();
}

Result<std::vector<Delivery>> Producer::Flush(std::chrono::milliseconds timeout) {
  // librdkafka treats linger as elapsed while a flush is under way.
  auto rc = producer_->flush(static_cast<int>(timeout.count()));
  producer_->poll(0);
  if (rc != RdKafka::ERR_NO_ERROR) {
    return common::Unavailable(
        fmt::format("flush: {} messages still unacknowledged", producer_->outq_len()));
  }
  return reporter_->Take();
}

int Producer::outstanding() const { return producer_->outq_len(); }

}  // namespace sluice::kafka
