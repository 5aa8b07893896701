"""Topic admin through kafka-python's KafkaAdminClient; prints JSON.

usage: kafka_python_admin.py BOOTSTRAP TOPIC
"""
import json
import sys

from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

bootstrap, topic = sys.argv[1], sys.argv[2]
a = KafkaAdminClient(bootstrap_servers=bootstrap)
a.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1,
                          topic_configs={"retention.bytes": "1048576"})])
out = {"topics": topic in a.list_topics()}
desc = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
entries = {e[0]: e[1] for e in desc[0].resources[0][4]}
out["retention.bytes"] = entries.get("retention.bytes")
out["groups"] = a.list_consumer_groups()
a.delete_topics([topic])
out["after_delete"] = topic in a.list_topics()
a.close()
print(json.dumps(out))
