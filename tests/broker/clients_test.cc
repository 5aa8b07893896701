// Unmodified Kafka clients against the real `sluice broker` process: kcat and
// librdkafka (confluent_kafka) and kafka-python, an independent implementation.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "broker_harness.h"

namespace sluice::testing {
namespace {

using nlohmann::json;

json ParseOut(const CommandResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.out;
  try {
    return json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "client printed no JSON: " << r.out;
    return json::object();
  }
}

TEST(BrokerClients, KcatProducesAndConsumesInOrder) {
  BrokerProcess broker;
  broker.Start();
  auto p = RunShell("printf 'one\\ntwo\\nthree\\n' | timeout 30 kcat -P -b " + broker.bootstrap() +
                    " -t kc -X acks=all");
  ASSERT_EQ(p.exit_code, 0);
  auto c = RunShell("timeout 30 kcat -C -b " + broker.bootstrap() +
                    " -t kc -o beginning -e -q -f '%o:%s\\n'");
  ASSERT_EQ(c.exit_code, 0);
  EXPECT_EQ(c.out, "0:one\n1:two\n2:three\n");
}

TEST(BrokerClients, KcatListsAutoCreatedTopicInMetadata) {
  BrokerProcess broker;
  broker.Start();
  ASSERT_EQ(RunShell("echo x | timeout 30 kcat -P -b " + broker.bootstrap() + " -t auto.created")
                .exit_code,
            0);
  auto l = RunShell("timeout 30 kcat -L -b " + broker.bootstrap() + " -t auto.created");
  EXPECT_NE(l.out.find("topic \"auto.created\" with 1 partitions"), std::string::npos) << l.out;
}

TEST(BrokerClients, AutoCreateOffLeavesUnknownTopicUnknown) {
  BrokerProcess broker({"--auto-create-topics", "false"});
  broker.Start();
  auto l = RunShell("timeout 30 kcat -L -b " + broker.bootstrap() + " -t nope 2>&1");
  EXPECT_EQ(l.out.find("topic \"nope\" with 1 partitions"), std::string::npos) << l.out;
}

TEST(BrokerClients, ConfluentKafkaIdempotentProduceThenGroupConsume) {
  BrokerProcess broker;
  broker.Start();
  auto out = ParseOut(RunPython("produce_consume.py", broker.bootstrap() + " confluent ck 200"));
  ASSERT_EQ(out["acked"].size(), 200u);
  EXPECT_EQ(out["consumed"], out["acked"]);
}

TEST(BrokerClients, KafkaPythonProduceThenGroupConsume) {
  BrokerProcess broker;
  broker.Start();
  auto out = ParseOut(RunPython("produce_consume.py", broker.bootstrap() + " kafka-python kp 200"));
  ASSERT_EQ(out["acked"].size(), 200u);
  EXPECT_EQ(out["consumed"], out["acked"]);
}

TEST(BrokerClients, KcatReadsWhatKafkaPythonWrote) {
  BrokerProcess broker;
  broker.Start();
  ParseOut(RunPython("produce_consume.py", broker.bootstrap() + " kafka-python mixed 5"));
  auto c = RunShell("timeout 30 kcat -C -b " + broker.bootstrap() +
                    " -t mixed -o beginning -e -q -f '%s\\n'");
  EXPECT_EQ(c.out,
            "kafka-python-0\nkafka-python-1\nkafka-python-2\nkafka-python-3\nkafka-python-4\n");
}

// Fetches are answered from the segment files (sendfile); librdkafka must get
// every message byte for byte across many small segments, fetch after fetch
// cut short by tiny limits.
TEST(BrokerClients, KcatAndConfluentReadEveryByteAcrossSegmentsWithTinyFetchLimits) {
  BrokerProcess broker({"--segment-bytes", "65536"});
  broker.Start();
  // 3000 lines of 7 to 906 bytes.
  const std::string lines =
      "awk 'BEGIN{for(i=0;i<3000;i++){s=sprintf(\"%06d-\",i);n=(i*37)%900;"
      "for(j=0;j<n;j++)s=s \"x\";print s}}'";
  auto want = RunShell(lines);
  ASSERT_EQ(want.exit_code, 0);
  ASSERT_EQ(RunShell(lines + " | timeout 60 kcat -P -b " + broker.bootstrap() +
                     " -t seg -X acks=all -X batch.num.messages=20")
                .exit_code,
            0);
  const std::string tiny =
      " -X message.max.bytes=1000 -X fetch.max.bytes=1000 -X max.partition.fetch.bytes=1000";
  auto got = RunShell("timeout 60 kcat -C -b " + broker.bootstrap() +
                      " -t seg -o beginning -e -q -f '%s\\n'" + tiny);
  ASSERT_EQ(got.exit_code, 0);
  EXPECT_TRUE(got.out == want.out)
      << "kcat read " << got.out.size() << " bytes, want " << want.out.size();
  auto values = ParseOut(RunPython(
      "consume_all.py", broker.bootstrap() + " seg fetch.max.bytes=1000 message.max.bytes=1000 " +
                            "max.partition.fetch.bytes=1000"));
  std::string joined;
  for (const auto& v : values) joined += v.get<std::string>() + "\n";
  EXPECT_TRUE(joined == want.out) << "confluent_kafka read " << values.size() << " messages";
  int segments = 0;
  for (const auto& e : std::filesystem::directory_iterator(broker.data_dir() / "topics/seg/0"))
    segments += e.path().extension() == ".log";
  EXPECT_GT(segments, 10);
}

TEST(BrokerGroups, ThreeMemberGroupRebalancesOnJoinAndLeave) {
  BrokerProcess broker;
  broker.Start();
  auto out = ParseOut(RunPython("group_rebalance.py", broker.bootstrap() + " reb grp"));
  json expected = json::parse(
      R"([[[0,1,2,3,4,5]], [[0,1,2],[3,4,5]], [[0,1],[2,3],[4,5]], [[0,1,2],[3,4,5]]])");
  EXPECT_EQ(out["phases"], expected) << broker.log();
  std::set<std::string> unique;
  for (const auto& v : out["consumed"]) unique.insert(v.get<std::string>());
  EXPECT_EQ(unique.size(), 60u);
  // DescribeGroups (via librdkafka's list_groups) while all three are in.
  EXPECT_EQ(out["described"],
            json::parse(R"({"state": "Stable", "members": 3, "protocol": "range"})"));
}

TEST(BrokerGroups, CommittedOffsetsSurviveRestart) {
  BrokerProcess broker;
  broker.Start();
  ASSERT_EQ(
      RunShell("seq 1 30 | timeout 30 kcat -P -b " + broker.bootstrap() + " -t commits").exit_code,
      0);
  auto first =
      ParseOut(RunPython("group_progress.py", broker.bootstrap() + " commits cg 10 confluent"));
  EXPECT_EQ(first["offsets"].front(), 0);
  EXPECT_EQ(first["committed"], 10);
  broker.Restart();
  auto second =
      ParseOut(RunPython("group_progress.py", broker.bootstrap() + " commits cg 10 confluent"));
  EXPECT_EQ(second["offsets"].front(), 10);
  EXPECT_EQ(second["committed"], 20);
  broker.Kill();  // a crash, too, keeps commits: they are fsynced before the ack
  broker.Start();
  auto third =
      ParseOut(RunPython("group_progress.py", broker.bootstrap() + " commits cg 5 kafka-python"));
  EXPECT_EQ(third["offsets"].front(), 20);
  EXPECT_EQ(third["committed"], 25);
}

TEST(BrokerStorage, BrokerKilledMidStreamLosesNoAcknowledgedMessage) {
  BrokerProcess broker;
  broker.Start();
  // The producer runs on while the broker is killed (SIGKILL) and restarted.
  auto producer = std::async(std::launch::async, [&] {
    return RunPython("steady_producer.py", broker.bootstrap() + " stream 1500");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  broker.Kill();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  broker.Start();
  auto acked = ParseOut(producer.get());
  auto stored = ParseOut(RunPython("consume_all.py", broker.bootstrap() + " stream"));
  ASSERT_GT(acked.size(), 0u);
  std::set<std::string> have;
  for (const auto& v : stored) have.insert(v.get<std::string>());
  std::size_t missing = 0;
  for (const auto& v : acked) missing += have.count(v.get<std::string>()) ? 0 : 1;
  EXPECT_EQ(missing, 0u) << acked.size() << " acked, " << stored.size() << " stored";
}

TEST(BrokerAdmin, ConfluentAdminCreatesDescribesGrowsAndDeletesTopics) {
  BrokerProcess broker;
  broker.Start();
  auto out = ParseOut(RunPython("admin_ops.py", broker.bootstrap() + " adm"));
  EXPECT_EQ(out["duplicate_create"], "TOPIC_ALREADY_EXISTS");
  EXPECT_EQ(out["partitions_after_create"], 3);
  EXPECT_EQ(out["retention.ms"], "3600000");
  EXPECT_EQ(out["partitions_after_grow"], 5);
  EXPECT_EQ(out["listed_after_delete"], false);
}

TEST(BrokerAdmin, KafkaPythonAdminCreatesDescribesAndDeletesTopics) {
  BrokerProcess broker;
  broker.Start();
  auto out = ParseOut(RunPython("kafka_python_admin.py", broker.bootstrap() + " kpadm"));
  EXPECT_EQ(out["topics"], true);
  EXPECT_EQ(out["retention.bytes"], "1048576");
  EXPECT_EQ(out["after_delete"], false);
}

TEST(BrokerAdmin, TopicsAndConfigsSurviveRestart) {
  BrokerProcess broker;
  broker.Start();
  ASSERT_EQ(
      RunShell("seq 1 5 | timeout 30 kcat -P -b " + broker.bootstrap() + " -t keep").exit_code, 0);
  broker.Restart();
  auto c = RunShell("timeout 30 kcat -C -b " + broker.bootstrap() +
                    " -t keep -o beginning -e -q -f '%s,'");
  EXPECT_EQ(c.out, "1,2,3,4,5,");
}

}  // namespace
}  // namespace sluice::testing
