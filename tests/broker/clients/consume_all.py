"""Reads a topic from the beginning to its end (no group), prints JSON list of values.

usage: consume_all.py BOOTSTRAP TOPIC
"""
import json
import sys

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

bootstrap, topic = sys.argv[1], sys.argv[2]
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "consume-all", "enable.auto.commit": False,
              "enable.partition.eof": True})
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
