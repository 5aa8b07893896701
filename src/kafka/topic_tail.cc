#include "kafka/topic_tail.h"

#include <librdkafka/rdkafkacpp.h>

#include <fmt/format.h>

#include <algorithm>

namespace sluice::kafka {

using common::Result;

Result<std::unique_ptr<TopicTail>> TopicTail::Create(const ClientConfig& config) {
  // No group, no commit; asking about a topic never creates it.
  auto conf = config.ToConf({{"allow.auto.create.topics", "false"},
                             {"enable.partition.eof", "true"},
                             {"auto.offset.reset", "error"}});
  if (!conf.ok()) return conf.status();
  std::string err;
  auto t = std::unique_ptr<TopicTail>(new TopicTail());
  t->consumer_.reset(RdKafka::Consumer::create(conf->get(), err));
  if (!t->consumer_) return common::InvalidArgument(fmt::format("kafka tail reader: {}", err));
  return t;
}

TopicTail::~TopicTail() = default;

Result<std::vector<TailRecord>> TopicTail::ReadRange(const std::string& topic,
                                                     std::int32_t partition, std::int64_t from,
                                                     std::int64_t to,
                                                     std::chrono::milliseconds timeout) {
  std::string err;
  std::unique_ptr<RdKafka::Topic> t(RdKafka::Topic::create(consumer_.get(), topic, nullptr, err));
  if (!t) return common::InvalidArgument(err);
  if (auto rc = consumer_->start(t.get(), partition, from); rc != RdKafka::ERR_NO_ERROR)
    return common::Unavailable(
        fmt::format("read {}/{} from {}: {}", topic, partition, from, RdKafka::err2str(rc)));
  std::vector<TailRecord> out;
  common::Status failure;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::int64_t next = from;
  while (next < to) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      failure = common::Unavailable(fmt::format("read {}/{}: no record at offset {} within {} ms",
                                                topic, partition, next, timeout.count()));
      break;
    }
    std::unique_ptr<RdKafka::Message> m(consumer_->consume(
        t.get(), partition, static_cast<int>(std::min<long long>(left.count(), 1000))));
    if (!m || m->err() == RdKafka::ERR__TIMED_OUT) continue;
    if (m->err() == RdKafka::ERR__PARTITION_EOF) {
      // The partition ends before `to` (it was truncated since the end
      // offsets were read): nothing more to read in this range.
      if (m->offset() <= next) break;
      continue;
    }
    if (m->err() != RdKafka::ERR_NO_ERROR) {
      failure = common::Unavailable(fmt::format("read {}/{}: {}", topic, partition, m->errstr()));
      break;
    }
    if (m->offset() < next) continue;
    next = m->offset() + 1;
    if (m->offset() >= to) break;
    TailRecord r;
    r.partition = partition;
    r.offset = m->offset();
    if (m->key()) r.key = *m->key();
    r.value.assign(static_cast<const char*>(m->payload()), m->len());
    out.push_back(std::move(r));
  }
  consumer_->stop(t.get(), partition);
  if (!failure.ok()) return failure;
  return out;
}

Result<std::vector<TailRecord>> TopicTail::ReadBack(
    const std::string& topic, const std::function<bool(const TailRecord&)>& enough,
    std::chrono::milliseconds timeout) {
  std::string err;
  std::unique_ptr<RdKafka::Topic> t(RdKafka::Topic::create(consumer_.get(), topic, nullptr, err));
  if (!t) return common::InvalidArgument(err);
  RdKafka::Metadata* raw = nullptr;
  auto rc = consumer_->metadata(false, t.get(), &raw, static_cast<int>(timeout.count()));
  if (rc != RdKafka::ERR_NO_ERROR)
    return common::Unavailable(fmt::format("metadata of {}: {}", topic, RdKafka::err2str(rc)));
  std::unique_ptr<RdKafka::Metadata> md(raw);
  std::int32_t partitions = -1;
  for (const auto* tm : *md->topics()) {
    if (tm->topic() != topic) continue;
    if (tm->err() == RdKafka::ERR_UNKNOWN_TOPIC_OR_PART)
      return common::NotFound(fmt::format("topic {} does not exist", topic));
    if (tm->err() != RdKafka::ERR_NO_ERROR)
      return common::Unavailable(fmt::format("topic {}: {}", topic, RdKafka::err2str(tm->err())));
    partitions = static_cast<std::int32_t>(tm->partitions()->size());
  }
  if (partitions < 0) return common::NotFound(fmt::format("topic {} does not exist", topic));
  t.reset();
  std::vector<TailRecord> out;
  for (std::int32_t p = 0; p < partitions; ++p) {
    std::int64_t lo = 0, hi = 0;
    rc = consumer_->query_watermark_offsets(topic, p, &lo, &hi, static_cast<int>(timeout.count()));
    if (rc != RdKafka::ERR_NO_ERROR)
      return common::Unavailable(
          fmt::format("end offsets of {}/{}: {}", topic, p, RdKafka::err2str(rc)));
    // Backward in chunks of 1, 2, 4, … records, each read forward.
    std::int64_t chunk = 1;
    for (std::int64_t end = hi; end > lo; chunk = std::min<std::int64_t>(chunk * 2, 1024)) {
      const std::int64_t begin = std::max(lo, end - chunk);
      auto range = ReadRange(topic, p, begin, end, timeout);
      if (!range.ok()) return range.status();
      bool done = false;
      for (auto it = range->rbegin(); it != range->rend() && !done; ++it) {
        done = enough(*it);
        out.push_back(std::move(*it));
      }
      if (done) break;
      end = begin;
    }
  }
  return out;
}

}  // namespace sluice::kafka
