"""Topic admin through confluent_kafka's AdminClient; prints JSON of what it saw.

usage: admin_ops.py BOOTSTRAP TOPIC
"""
import json
import sys

from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

bootstrap, topic = sys.argv[1], sys.argv[2]
a = AdminClient({"bootstrap.servers": bootstrap})
out = {}
fs = a.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1,
                               config={"retention.ms": "3600000"})])
fs[topic].result(10)
try:
    a.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])[topic].result(10)
    out["duplicate_create"] = "ok"
except Exception as e:  # noqa: BLE001 - we report what the client raised
    out["duplicate_create"] = e.args[0].name()
out["partitions_after_create"] = len(a.list_topics(topic, timeout=10).topics[topic].partitions)
res = ConfigResource(ConfigResource.Type.TOPIC, topic)
configs = a.describe_configs([res])[res].result(10)
out["retention.ms"] = configs["retention.ms"].value
a.create_partitions([NewPartitions(topic, 5)])[topic].result(10)
out["partitions_after_grow"] = len(a.list_topics(topic, timeout=10).topics[topic].partitions)
a.delete_topics([topic])[topic].result(10)
out["listed_after_delete"] = topic in a.list_topics(timeout=10).topics
print(json.dumps(out))
