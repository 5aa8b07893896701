"""Reads a topic from the beginning to its end (no group), prints JSON list of values.

usage: consume_all.py BOOTSTRAP TOPIC [CONFIG=VALUE ...]
(extra librdkafka settings, e.g. small fetch limits)
"""
import json
import sys

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

bootstrap, topic = sys.argv[1], sys.argv[2]
config = {"bootstrap.servers": bootstrap, "group.id": "consume-all", "enable.auto.commit": False,
          "enable.partition.eof": True}
config.update(arg.split("=", 1) for arg in sys.argv[3:])
c = Consumer(config)
meta = c.list_topics(topic, timeout=10)
parts = list(meta.topics[topic].partitions.keys())
c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
values, eof = [], set()
while len(eof) < len(parts):
    m = c.poll(5)
    if m is None:
        break
    if m.error():
        eof.add(m.partition())
        continue
    values.append(m.value().decode())
c.close()
print(json.dumps(values))
