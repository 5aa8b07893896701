#include "kafka/consumer.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>

namespace sluice::kafka {

using common::Result;
using common::Status;

Result<std::unique_ptr<Consumer>> Consumer::Create(const ClientConfig& config,
                                                   const std::string& group_id,
                                                   ConsumerOptions options) {
  if (group_id.empty()) return common::InvalidArgument("a consumer needs a group id");
  auto overrides = options.overrides;
  overrides.emplace("group.id", group_id);
  overrides.emplace("enable.auto.commit", "false");
  overrides.emplace("enable.auto.offset.store", "false");
  overrides.emplace("auto.offset.reset", options.auto_offset_reset);
  overrides.emplace("session.timeout.ms", std::to_string(options.session_timeout.count()));
  // Prefetch bounded per partition, so memory does not grow with the
  // backlog a target catches up on. 64 MiB (librdkafka's default, set here
  // on purpose): 16 MiB cut bench/cdc's catch-up rate by a quarter.
  overrides.emplace("queued.max.messages.kbytes", "65536");
  auto conf = config.ToConf(overrides);
  if (!conf.ok()) return conf.status();
  std::string err;
  auto c = std::unique_ptr<Consumer>(new Consumer());
  c->missing_topic_grace_ = options.missing_topic_grace;
  c->consumer_.reset(RdKafka::KafkaConsumer::create(conf->get(), err));
  if (!c->consumer_) return common::InvalidArgument(fmt::format("kafka consumer: {}", err));
  return c;
}

Consumer::~Consumer() { Close(); }

void Consumer::Close() {
  if (closed_ || !consumer_) return;
  closed_ = true;
  if (woken_queue_) {
    rd_kafka_queue_io_event_enable(woken_queue_, -1, nullptr, 0);
    rd_kafka_queue_destroy(woken_queue_);
    woken_queue_ = nullptr;
  }
  consumer_->close();
}

void Consumer::WakeOnArrival(ArrivalWakeup& wakeup) {
  if (woken_queue_ || closed_) return;
  // librdkafka writes the byte when its consumer queue turns non-empty.
  woken_queue_ = rd_kafka_queue_get_consumer(consumer_->c_ptr());
  if (woken_queue_) rd_kafka_queue_io_event_enable(woken_queue_, wakeup.write_fd(), "1", 1);
}

ArrivalWakeup::ArrivalWakeup() {
  if (pipe2(fds_, O_NONBLOCK | O_CLOEXEC) != 0)
    throw std::system_error(errno, std::generic_category(), "pipe for consumer wake-ups");
}

ArrivalWakeup::~ArrivalWakeup() {
  for (int fd : fds_)
    if (fd >= 0) close(fd);
}

void ArrivalWakeup::Wait(std::chrono::milliseconds timeout) {
  pollfd pfd{fds_[0], POLLIN, 0};
  (void)poll(&pfd, 1, static_cast<int>(std::max<std::int64_t>(0, timeout.count())));
  char drain[64];
  while (read(fds_[0], drain, sizeof drain) > 0) {
  }
}

Status Consumer::Subscribe(const std::vector<std::string>& topics) {
  auto rc = consumer_->subscribe(topics);
  if (rc != RdKafka::ERR_NO_ERROR)
    return common::Unavailable(fmt::format("subscribe: {}", RdKafka::err2str(rc)));
  return {};
}

Status Consumer::CheckMissingTopics() {
  const auto now = std::chrono::steady_clock::now();
  if (missing_since_.empty() || now < next_missing_check_) return {};
  next_missing_check_ =
      now + std::min<std::chrono::milliseconds>(std::chrono::seconds(5), missing_topic_grace_);
  RdKafka::Metadata* raw = nullptr;
  if (consumer_->metadata(/*all_topics=*/true, nullptr, &raw, 2000) != RdKafka::ERR_NO_ERROR)
    return {};  // the broker is unreachable: the next poll reports that
  std::unique_ptr<RdKafka::Metadata> metadata(raw);
  for (const auto* t : *metadata->topics()) {
    if (t->err() == RdKafka::ERR_NO_ERROR) missing_since_.erase(t->topic());
  }
  for (const auto& [topic, since] : missing_since_) {
    if (now - since >= missing_topic_grace_) {
      return common::Unavailable(fmt::format(
          "consume: topic {} does not exist: nothing has written to it in {} s (is the "
          "connector producing it running?)",
          topic, std::chrono::duration_cast<std::chrono::seconds>(now - since).count()));
    }
  }
  return {};
}

Result<std::vector<Message>> Consumer::Poll(std::size_t max_messages,
                                            std::chrono::milliseconds timeout) {
  if (auto st = CheckMissingTopics(); !st.ok()) return st;
  std::vector<Message> out;
  int wait = static_cast<int>(timeout.count());
  while (out.size() < max_messages) {
    std::unique_ptr<RdKafka::Message> m(consumer_->consume(wait));
    wait = 0;  // only the first message is waited for
    if (!m) break;
    if (m->err() == RdKafka::ERR__TIMED_OUT || m->err() == RdKafka::ERR__PARTITION_EOF) break;
    if ((m->err() == RdKafka::ERR_UNKNOWN_TOPIC_OR_PART ||
         m->err() == RdKafka::ERR__UNKNOWN_TOPIC) &&
        !m->topic_name().empty()) {
      // Not created yet: topics come into being with their first message,
      // and a target may well start before its source has written one.
      if (missing_since_.emplace(m->topic_name(), std::chrono::steady_clock::now()).second) {
        spdlog::info("waiting for topic {} to be created (by its first message)", m->topic_name());
        next_missing_check_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
      }
      continue;
    }
    if (m->err() != RdKafka::ERR_NO_ERROR) {
      if (!out.empty()) break;  // hand over what we have; the error repeats next time
      return common::Unavailable(fmt::format("consume: {}", m->errstr()));
    }
    Message msg;
    msg.topic = m->topic_name();
    if (!missing_since_.empty()) missing_since_.erase(msg.topic);
    msg.partition = m->partition();
    msg.offset = m->offset();
    msg.timestamp_ms = m->timestamp().timestamp;
    if (m->key()) msg.key = *m->key();
    msg.value.assign(static_cast<const char*>(m->payload()), m->len());
    if (auto* hs = m->headers()) {
      for (const auto& h : hs->get_all()) {
        msg.headers.emplace_back(h.key(),
                                 std::string(static_cast<const char*>(h.value()), h.value_size()));
      }
    }
    out.push_back(std::move(msg));
  }
  return out;
}

Status Consumer::Commit(const std::vector<Message>& processed) {
  std::map<std::pair<std::string, std::int32_t>, std::int64_t> next;
  for (const auto& m : processed) {
    auto& n = next[{m.topic, m.partition}];
    n = std::max(n, m.offset + 1);
  }
  if (next.empty()) return {};
  std::vector<RdKafka::TopicPartition*> parts;
  for (const auto& [tp, off] : next)
    parts.push_back(RdKafka::TopicPartition::create(tp.first, tp.second, off));
  auto rc = consumer_->commitSync(parts);
  std::string failure;
  for (auto* p : parts) {
    if (p->err() != RdKafka::ERR_NO_ERROR && failure.empty()) {
      failure = fmt::format("{}-{}: {}", p->topic(), p->partition(), RdKafka::err2str(p->err()));
    }
  }
  RdKafka::TopicPartition::destroy(parts);
  if (rc != RdKafka::ERR_NO_ERROR)
    return common::Unavailable(fmt::format("commit: {}", RdKafka::err2str(rc)));
  if (!failure.empty()) return common::Unavailable("commit " + failure);
  return {};
}

Status Consumer::CommitWithMetadata(const std::map<TopicPartition, CommittedOffset>& offsets) {
  if (offsets.empty()) return {};
  // The C++ API of this librdkafka cannot set a commit's metadata: the C
  // list can (its destroy frees each metadata with free()).
  rd_kafka_topic_partition_list_t* list =
      rd_kafka_topic_partition_list_new(static_cast<int>(offsets.size()));
  for (const auto& [tp, committed] : offsets) {
    auto* p = rd_kafka_topic_partition_list_add(list, tp.first.c_str(), tp.second);
    p->offset = committed.offset;
    if (!committed.metadata.empty()) {
      p->metadata = std::malloc(committed.metadata.size());
      std::memcpy(p->metadata, committed.metadata.data(), committed.metadata.size());
      p->metadata_size = committed.metadata.size();
    }
  }
  auto rc = rd_kafka_commit(consumer_->c_ptr(), list, 0);
  std::string failure;
  for (int i = 0; i < list->cnt; ++i) {
    const auto& p = list->elems[i];
    if (p.err != RD_KAFKA_RESP_ERR_NO_ERROR && failure.empty())
      failure = fmt::format("{}-{}: {}", p.topic, p.partition, rd_kafka_err2str(p.err));
  }
  rd_kafka_topic_partition_list_destroy(list);
  if (rc != RD_KAFKA_RESP_ERR_NO_ERROR)
    return common::Unavailable(fmt::format("commit: {}", rd_kafka_err2str(rc)));
  if (!failure.empty()) return common::Unavailable("commit " + failure);
  return {};
}

Result<std::map<TopicPartition, CommittedOffset>> Consumer::Committed(
    const std::vector<TopicPartition>& partitions, std::chrono::milliseconds timeout) {
  std::map<TopicPartition, CommittedOffset> out;
  if (partitions.empty()) return out;
  rd_kafka_topic_partition_list_t* list =
      rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size()));
  for (const auto& tp : partitions)
    rd_kafka_topic_partition_list_add(list, tp.first.c_str(), tp.second);
  auto rc = rd_kafka_committed(consumer_->c_ptr(), list, static_cast<int>(timeout.count()));
  if (rc != RD_KAFKA_RESP_ERR_NO_ERROR) {
    rd_kafka_topic_partition_list_destroy(list);
    return common::Unavailable(fmt::format("committed offsets: {}", rd_kafka_err2str(rc)));
  }
  for (int i = 0; i < list->cnt; ++i) {
    const auto& p = list->elems[i];
    CommittedOffset c;
    c.offset = p.offset < 0 ? -1 : p.offset;
    if (p.metadata && p.metadata_size)
      c.metadata.assign(static_cast<const char*>(p.metadata), p.metadata_size);
    out[{p.topic, p.partition}] = c;
  }
  rd_kafka_topic_partition_list_destroy(list);
  return out;
}

}  // namespace sluice::kafka
