"""Produces N messages with one client library, then consumes them back.

usage: produce_consume.py BOOTSTRAP LIB TOPIC N    (LIB: confluent | kafka-python)
Prints one JSON object: {"acked": [...], "consumed": [...]} (values as strings).
"""
import json
import sys
import time

bootstrap, lib, topic, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
values = ["%s-%d" % (lib, i) for i in range(n)]
acked, consumed = [], []

if lib == "confluent":
    from confluent_kafka import Consumer, Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 5})
    for v in values:
        p.produce(topic, value=v.encode(), key=b"k",
                  on_delivery=lambda err, msg: err is None and acked.append(msg.value().decode()))
    p.flush(30)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "pc-" + topic,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    deadline = time.time() + 30
    while len(consumed) < len(acked) and time.time() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        consumed.append(m.value().decode())
    c.close()
else:
    from kafka import KafkaConsumer, KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    futures = [(v, p.send(topic, v.encode(), key=b"k")) for v in values]
    p.flush()
    for v, f in futures:
        f.get(timeout=30)
        acked.append(v)
    p.close()
    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id="pc-" + topic,
                      auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=10000)
    for m in c:
        consumed.append(m.value.decode())
        if len(consumed) >= len(acked):
            break
    c.close()

print(json.dumps({"acked": acked, "consumed": consumed}))
