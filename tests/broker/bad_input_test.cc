// Raw wire behaviour. Hostile bytes: each case asserts the broker answers with
// a protocol error or closes that one connection, and keeps serving others.
// Fetch long-poll: a waiting fetch is answered by the append it waited for.
// Fetch from files: batches sent straight from segment files arrive byte for
// byte as stored, whatever the limits, segment boundaries and topic count.
#include <gtest/gtest.h>

#include <random>

#include "batch_builder.h"
#include "broker/protocol/api.h"
#include "broker/protocol/record_batch.h"
#include "broker/protocol/wire.h"
#include "broker_harness.h"
#include "raw_client.h"

namespace sluice::testing {
namespace {

namespace p = sluice::broker::protocol;

std::int16_t ApiVersionsError(Conn& c, std::int16_t version) {
  c.Send(static_cast<std::int16_t>(p::ApiKey::kApiVersions), version, "");
  auto r = c.Receive();
  if (!r) return -999;
  p::Reader in(*r);
  return in.Int16();
}

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override { broker_.Start(); }
  // The broker is still alive and serving a fresh connection.
  void ExpectStillServing() {
    Conn c(broker_.port());
    ASSERT_TRUE(c.connected());
    EXPECT_EQ(ApiVersionsError(c, 2), p::error::kNone);
  }
  BrokerProcess broker_{{"--max-request-bytes", "65536"}};
};

TEST_F(BadInput, UnsupportedApiVersionsVersionIsAnsweredWithUnsupportedVersion) {
  Conn c(broker_.port());
  EXPECT_EQ(ApiVersionsError(c, 99), p::error::kUnsupportedVersion);
  EXPECT_EQ(ApiVersionsError(c, 0), p::error::kNone) << "the connection stays usable";
}

TEST_F(BadInput, UnknownApiKeyClosesTheConnection) {
  Conn c(broker_.port());
  c.Send(999, 0, "");
  EXPECT_FALSE(c.Receive().has_value());
  ExpectStillServing();
}

TEST_F(BadInput, UnsupportedVersionOfAnotherApiClosesTheConnection) {
  Conn c(broker_.port());
  c.Send(static_cast<std::int16_t>(p::ApiKey::kProduce), 42, "");
  EXPECT_FALSE(c.Receive().has_value());
  ExpectStillServing();
}

TEST_F(BadInput, OversizedRequestClosesTheConnection) {
  Conn c(broker_.port());
  p::Writer w;
  w.Int32(1 << 30);
  c.SendRaw(w.Take());
  EXPECT_FALSE(c.Receive().has_value());
  ExpectStillServing();
}

TEST_F(BadInput, NegativeFrameSizeClosesTheConnection) {
  Conn c(broker_.port());
  c.SendRaw(std::string("\xff\xff\xff\xfe", 4));
  EXPECT_FALSE(c.Receive().has_value());
  ExpectStillServing();
}

TEST_F(BadInput, TruncatedMetadataBodyClosesTheConnection) {
  Conn c(broker_.port());
  p::Writer body;
  body.Int32(5);  // five topics announced, none sent
  c.Send(static_cast<std::int16_t>(p::ApiKey::kMetadata), 1, body.Take());
  EXPECT_FALSE(c.Receive().has_value());
  ExpectStillServing();
}

TEST_F(BadInput, ProduceWithBadCrcIsRejectedAsCorruptMessage) {
  Conn c(broker_.port());
  std::string batch = BuildBatch({{"hello"}});
  batch[batch.size() - 2] ^= 0x40;
  c.Send(static_cast<std::int16_t>(p::ApiKey::kProduce), 7, ProduceBody("crc", batch));
  auto r = c.Receive();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(ProducePartitionError(*r), p::error::kCorruptMessage);
  // A good batch on the same connection is accepted at offset 0: nothing of the bad one was stored.
  c.Send(static_cast<std::int16_t>(p::ApiKey::kProduce), 7,
         ProduceBody("crc", BuildBatch({{"hello"}})));
  r = c.Receive();
  ASSERT_TRUE(r.has_value());
  p::Reader in(*r);
  in.ArrayLength();
  in.String();
  in.ArrayLength();
  in.Int32();
  EXPECT_EQ(in.Int16(), p::error::kNone);
  EXPECT_EQ(in.Int64(), 0);
}

TEST_F(BadInput, ProduceWithInvalidAcksIsRejected) {
  Conn c(broker_.port());
  c.Send(static_cast<std::int16_t>(p::ApiKey::kProduce), 7,
         ProduceBody("acks", BuildBatch({{"x"}}), 5));
  auto r = c.Receive();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(ProducePartitionError(*r), p::error::kInvalidRequiredAcks);
}

TEST_F(BadInput, ProduceWithAcksZeroGetsNoResponseButIsStored) {
  Conn c(broker_.port());
  c.Send(static_cast<std::int16_t>(p::ApiKey::kProduce), 7,
         ProduceBody("fire", BuildBatch({{"x"}}), 0), 1);
  // The next response on the connection answers the next request.
  c.Send(static_cast<std::int16_t>(p::ApiKey::kProduce), 7,
         ProduceBody("fire", BuildBatch({{"y"}}), 1), 2);
  auto r = c.Receive();
  ASSERT_TRUE(r.has_value());
  p::Reader in(*r);
  in.ArrayLength();
  in.String();
  in.ArrayLength();
  in.Int32();
  EXPECT_EQ(in.Int16(), p::error::kNone);
  EXPECT_EQ(in.Int64(), 1) << "the acks=0 batch took offset 0";
}

TEST_F(BadInput, IdempotentProducerSequenceGapIsRejectedAndRetryIsDeduplicated) {
  Conn c(broker_.port());
  BatchSpec s{{"a"}};
  s.producer_id = 1000;
  s.producer_epoch = 0;
  s.base_sequence = 0;
  auto send = [&](const BatchSpec& spec) {
    c.Send(static_cast<std::int16_t>(p::ApiKey::kProduce), 7,
           ProduceBody("idem", BuildBatch(spec)));
    auto r = c.Receive();
    p::Reader in(*r);
    in.ArrayLength();
    in.String();
    in.ArrayLength();
    in.Int32();
    std::int16_t e = in.Int16();
    return std::make_pair(e, in.Int64());
  };
  EXPECT_EQ(send(s), std::make_pair(p::error::kNone, std::int64_t{0}));
  EXPECT_EQ(send(s), std::make_pair(p::error::kNone, std::int64_t{0}))
      << "a retry gets the original offset";
  s.base_sequence = 5;
  EXPECT_EQ(send(s).first, p::error::kOutOfOrderSequence);
  s.base_sequence = 1;
  EXPECT_EQ(send(s), std::make_pair(p::error::kNone, std::int64_t{1}));
}

TEST_F(BadInput, RandomGarbageNeverTakesTheBrokerDown) {
  std::mt19937 rng(1234);
  for (int i = 0; i < 200; ++i) {
    Conn c(broker_.port());
    ASSERT_TRUE(c.connected()) << "iteration " << i;
    std::string body(rng() % 200, '\0');
    for (auto& ch : body) ch = static_cast<char>(rng());
    // Valid API key and version, random body: the decoder must cope.
    auto api = p::SupportedApis()[rng() % p::SupportedApis().size()];
    if (api.key == p::ApiKey::kJoinGroup || api.key == p::ApiKey::kSyncGroup ||
        api.key == p::ApiKey::kFetch) {
      continue;  // valid-looking random requests there may legitimately wait
    }
    c.Send(static_cast<std::int16_t>(api.key), api.max_version, body);
    c.Receive();
  }
  ExpectStillServing();
}

class FetchLongPoll : public BadInput {};

// Requests written back to back in one go, as clients pipeline them.
class Pipelining : public BadInput {};

TEST_F(Pipelining, ProducesSentTogetherAreAllAnsweredInOrder) {
  Conn c(broker_.port());
  std::string burst;
  for (int i = 0; i < 50; ++i) {
    burst += RequestFrame(static_cast<std::int16_t>(p::ApiKey::kProduce), 7,
                          ProduceBody("pipe", BuildBatch({{"m" + std::to_string(i)}})), 100 + i);
  }
  c.SendRaw(burst);
  for (int i = 0; i < 50; ++i) {
    std::int32_t corr = -1;
    auto r = c.Receive(&corr);
    ASSERT_TRUE(r.has_value()) << "response " << i;
    EXPECT_EQ(corr, 100 + i);
    EXPECT_EQ(ProducePartitionError(*r), p::error::kNone);
  }
}

TEST_F(Pipelining, ProduceAheadOfALongPollIsAnsweredWithoutWaitingForIt) {
  Conn c(broker_.port()), other(broker_.port());
  // The fetch waits up to 60 s for offset 1; the socket gives up after 3 s.
  c.SendRaw(RequestFrame(static_cast<std::int16_t>(p::ApiKey::kProduce), 7,
                         ProduceBody("ahead", BuildBatch({{"first"}})), 1) +
            RequestFrame(static_cast<std::int16_t>(p::ApiKey::kFetch), 4,
                         FetchBody("ahead", 1, 60000, 1), 2));
  std::int32_t corr = -1;
  auto produced = c.Receive(&corr);
  ASSERT_TRUE(produced.has_value()) << "the produce reply waited behind the long poll";
  EXPECT_EQ(corr, 1);
  other.Send(static_cast<std::int16_t>(p::ApiKey::kProduce), 7,
             ProduceBody("ahead", BuildBatch({{"second"}})));
  ASSERT_TRUE(other.Receive().has_value());
  ASSERT_TRUE(c.Receive(&corr).has_value());
  EXPECT_EQ(corr, 2);
}

TEST_F(Pipelining, RepliesBeforeABadRequestStillArriveBeforeTheClose) {
  Conn c(broker_.port());
  std::string burst;
  for (int i = 0; i < 3; ++i) {
    burst += RequestFrame(static_cast<std::int16_t>(p::ApiKey::kProduce), 7,
                          ProduceBody("bad-after", BuildBatch({{"ok"}})), i);
  }
  // A produce that does not decode: the broker hangs up, after the three replies
  // it may have held back while this one was already waiting.
  burst += RequestFrame(static_cast<std::int16_t>(p::ApiKey::kProduce), 7, "\x01", 3);
  c.SendRaw(burst);
  for (int i = 0; i < 3; ++i) {
    std::int32_t corr = -1;
    ASSERT_TRUE(c.Receive(&corr).has_value()) << "reply " << i;
    EXPECT_EQ(corr, i);
  }
  EXPECT_FALSE(c.Receive().has_value());
}

TEST_F(FetchLongPoll, WaitingFetchIsAnsweredByTheAppendItWaitedFor) {
  Conn producer(broker_.port()), consumer(broker_.port());
  producer.Send(static_cast<std::int16_t>(p::ApiKey::kProduce), 7,
                ProduceBody("poll", BuildBatch({{"first"}})));
  ASSERT_TRUE(producer.Receive().has_value());
  // Waits up to 60 s for data past offset 1; the socket gives up after 3 s,
  // so an answer means the append woke the fetch.
  consumer.Send(static_cast<std::int16_t>(p::ApiKey::kFetch), 4, FetchBody("poll", 1, 60000, 1));
  producer.Send(static_cast<std::int16_t>(p::ApiKey::kProduce), 7,
                ProduceBody("poll", BuildBatch({{"second"}})));
  ASSERT_TRUE(producer.Receive().has_value());
  auto r = consumer.Receive();
  ASSERT_TRUE(r.has_value());
  auto f = ParseFetchV4(*r);
  EXPECT_EQ(f.error, p::error::kNone);
  EXPECT_EQ(f.high_watermark, 2);
  EXPECT_NE(f.records.find("second"), std::string::npos);
  EXPECT_EQ(f.records.find("first"), std::string::npos);
}

TEST_F(FetchLongPoll, FetchBelowMinBytesReturnsEmptyAtMaxWait) {
  Conn c(broker_.port());
  c.Send(static_cast<std::int16_t>(p::ApiKey::kProduce), 7,
         ProduceBody("minb", BuildBatch({{"tiny"}})));
  ASSERT_TRUE(c.Receive().has_value());
  c.Send(static_cast<std::int16_t>(p::ApiKey::kFetch), 4, FetchBody("minb", 1, 100, 1));
  auto r = c.Receive();
  ASSERT_TRUE(r.has_value());
  auto f = ParseFetchV4(*r);
  EXPECT_EQ(f.error, p::error::kNone);
  EXPECT_TRUE(f.records.empty());
}

TEST_F(FetchLongPoll, FetchPastTheEndIsOffsetOutOfRange) {
  Conn c(broker_.port());
  c.Send(static_cast<std::int16_t>(p::ApiKey::kProduce), 7,
         ProduceBody("oor", BuildBatch({{"x"}})));
  ASSERT_TRUE(c.Receive().has_value());
  c.Send(static_cast<std::int16_t>(p::ApiKey::kFetch), 4, FetchBody("oor", 50, 100, 1));
  auto r = c.Receive();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(ParseFetchV4(*r).error, p::error::kOffsetOutOfRange);
}

struct FetchPart {
  std::string topic;
  std::int64_t offset;
  std::int32_t max_bytes;
};

// Fetch v4, one partition (0) per topic, no waiting.
std::string FetchBodyFor(const std::vector<FetchPart>& parts, std::int32_t max_bytes) {
  p::Writer w;
  w.Int32(-1);  // replica_id
  w.Int32(0);   // max_wait_ms
  w.Int32(1);   // min_bytes
  w.Int32(max_bytes);
  w.Int8(0);  // isolation_level
  w.ArrayLength(parts.size());
  for (const auto& part : parts) {
    w.String(part.topic);
    w.ArrayLength(1);
    w.Int32(0);
    w.Int64(part.offset);
    w.Int32(part.max_bytes);
  }
  return w.Take();
}

// Records of each topic of a Fetch v4 response, in order.
std::vector<std::string> ParseFetchV4Records(const std::string& r) {
  p::Reader in(r);
  in.Int32();  // throttle
  std::vector<std::string> out;
  std::int32_t topics = in.ArrayLength();
  for (std::int32_t t = 0; t < topics; ++t) {
    in.String();
    std::int32_t parts = in.ArrayLength();
    for (std::int32_t i = 0; i < parts; ++i) {
      in.Int32();                      // partition
      EXPECT_EQ(in.Int16(), 0);        // error
      in.Int64();                      // high watermark
      in.Int64();                      // last stable offset
      EXPECT_EQ(in.ArrayLength(), 0);  // aborted transactions
      out.emplace_back(in.Bytes());
    }
  }
  EXPECT_EQ(in.remaining(), 0u) << "the frame length covers exactly the encoded response";
  return out;
}

// What the broker stores for a one-record batch at `offset`: the producer's
// bytes with the base offset filled in.
std::string StoredBatch(const std::string& value, std::int64_t offset) {
  std::string b = BuildBatch({{value}});
  p::StoreBe64(b.data(), offset);
  return b;
}

class FetchFromFile : public ::testing::Test {
 protected:
  void SetUp() override { broker_.Start(); }
  // Appends `n` one-record batches of different sizes; returns them as stored.
  std::vector<std::string> ProduceBatches(const std::string& topic, int n) {
    Conn c(broker_.port());
    std::vector<std::string> stored;
    for (int i = 0; i < n; ++i) {
      std::string value = topic + "-" + std::to_string(i) + std::string(50 + (i * 37) % 400, 'v');
      c.Send(static_cast<std::int16_t>(p::ApiKey::kProduce), 7,
             ProduceBody(topic, BuildBatch({{value}})));
      auto r = c.Receive();
      EXPECT_TRUE(r.has_value());
      stored.push_back(StoredBatch(value, i));
    }
    return stored;
  }
  // Segments of about 2 KiB: a few batches each.
  BrokerProcess broker_{{"--segment-bytes", "2048"}};
};

TEST_F(FetchFromFile, ConsumingWithSmallLimitsReturnsEveryStoredByteAcrossSegments) {
  auto stored = ProduceBatches("files", 40);
  for (std::int32_t limit : {1, 300, 700, 5000}) {
    Conn c(broker_.port());
    std::string got, want;
    for (const auto& b : stored) want += b;
    std::int64_t offset = 0;
    int fetches = 0;
    while (offset < 40 && fetches++ < 100) {
      c.Send(static_cast<std::int16_t>(p::ApiKey::kFetch), 4,
             FetchBodyFor({{"files", offset, limit}}, 1 << 20));
      auto r = c.Receive();
      ASSERT_TRUE(r.has_value()) << "limit " << limit << " offset " << offset;
      auto records = ParseFetchV4Records(*r);
      ASSERT_EQ(records.size(), 1u);
      // Whole batches starting at `offset`, at least one, within the limit unless one.
      const std::string& first = stored[static_cast<std::size_t>(offset)];
      ASSERT_EQ(records[0].substr(0, first.size()), first) << "limit " << limit;
      auto batches = p::SplitBatches(records[0]);
      ASSERT_TRUE(batches.ok()) << batches.status().ToString();
      if (batches->size() > 1) {
        EXPECT_LE(records[0].size(), static_cast<std::size_t>(limit));
      }
      got += records[0];
      offset = batches->back().last_offset() + 1;
    }
    EXPECT_EQ(got, want) << "limit " << limit;
  }
}

TEST_F(FetchFromFile, OneResponseCarriesSeveralTopicsEachFromItsOwnFile) {
  auto a = ProduceBatches("left", 12);
  auto b = ProduceBatches("right", 12);
  Conn c(broker_.port());
  // Offsets inside later segments, limits that cut after a batch or two.
  c.Send(static_cast<std::int16_t>(p::ApiKey::kFetch), 4,
         FetchBodyFor({{"left", 5, 1}, {"right", 9, 900}, {"left", 0, 1}}, 1 << 20));
  auto r = c.Receive();
  ASSERT_TRUE(r.has_value());
  auto records = ParseFetchV4Records(*r);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0], a[5]);
  EXPECT_EQ(records[1].substr(0, b[9].size()), b[9]);
  EXPECT_EQ(records[2], a[0]);
  // The connection still frames correctly after a multi-slice response.
  EXPECT_EQ(ApiVersionsError(c, 2), p::error::kNone);
}

TEST_F(FetchFromFile, ConsumerHangingUpMidResponseLeavesTheBrokerServing) {
  // One ~1 MiB batch, so a response is still being sent when the peer is gone.
  const std::string batch = BuildBatch({std::vector<std::string>(1000, std::string(1000, 'h'))});
  Conn producer(broker_.port());
  producer.Send(static_cast<std::int16_t>(p::ApiKey::kProduce), 7, ProduceBody("hangup", batch));
  ASSERT_TRUE(producer.Receive().has_value());
  for (int i = 0; i < 40; ++i) {  // the race goes either way: many tries
    Conn c(broker_.port());
    c.Send(static_cast<std::int16_t>(p::ApiKey::kFetch), 4,
           FetchBodyFor({{"hangup", 0, 64 << 20}}, 64 << 20));
    // Closing at once, unread: the broker's sends fail (EPIPE), which must
    // close that connection only, not raise SIGPIPE in the broker.
  }
  Conn c(broker_.port());
  ASSERT_TRUE(c.connected());
  EXPECT_EQ(ApiVersionsError(c, 2), p::error::kNone);
  c.Send(static_cast<std::int16_t>(p::ApiKey::kFetch), 4,
         FetchBodyFor({{"hangup", 0, 64 << 20}}, 64 << 20));
  auto r = c.Receive();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(ParseFetchV4Records(*r).at(0), batch);  // stored at offset 0, as built
}

}  // namespace
}  // namespace sluice::testing
