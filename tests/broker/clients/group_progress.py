"""Consumes COUNT messages as group GROUP, commits synchronously, prints JSON
{"offsets": [...consumed offsets...], "committed": offset-after-commit}.

usage: group_progress.py BOOTSTRAP TOPIC GROUP COUNT LIB
"""
import json
import sys
import time

bootstrap, topic, group, count, lib = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
offsets = []
if lib == "confluent":
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    deadline = time.time() + 30
    last = None
    while len(offsets) < count and time.time() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        offsets.append(m.offset())
        last = m
    c.commit(message=last, asynchronous=False)
    committed = c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
    c.close()
else:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False, max_poll_records=1, consumer_timeout_ms=15000)
    for m in c:
        offsets.append(m.offset)
        if len(offsets) >= count:
            break
    c.commit()
    committed = c.committed(TopicPartition(topic, 0))
    c.close()
print(json.dumps({"offsets": offsets, "committed": committed}))
