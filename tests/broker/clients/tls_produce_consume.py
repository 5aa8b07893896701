"""confluent-kafka over SASL_SSL: produces N messages, then consumes them back.

usage: tls_produce_consume.py BOOTSTRAP CA_FILE USER PASSWORD TOPIC N
Prints one JSON object: {"acked": [...], "consumed": [...], "errors": [...]}.
"""
import json
import sys
import time

from confluent_kafka import Consumer, Producer

bootstrap, ca, user, password, topic, n = sys.argv[1:7]
n = int(n)
common = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL",
          "ssl.ca.location": ca, "sasl.mechanisms": "PLAIN", "sasl.username": user,
          "sasl.password": password}
values = ["tls-%d-%s" % (i, "x" * 200) for i in range(n)]
acked, consumed, errors = [], [], []


def delivered(err, msg):
    if err is None:
        acked.append(msg.value().decode())
    else:
        errors.append(str(err))


p = Producer(dict(common, **{"acks": "all", "enable.idempotence": True, "linger.ms": 5,
                             "error_cb": lambda e: errors.append(str(e))}))
for v in values:
    p.produce(topic, value=v.encode(), key=b"k", on_delivery=delivered)
    p.poll(0)
p.flush(30)
c = Consumer(dict(common, **{"group.id": "tls-" + topic, "auto.offset.reset": "earliest",
                             "enable.auto.commit": False}))
c.subscribe([topic])
deadline = time.time() + 30
while len(consumed) < len(acked) and time.time() < deadline:
    m = c.poll(0.5)
    if m is None:
        continue
    if m.error():
        errors.append(str(m.error()))
        continue
    consumed.append(m.value().decode())
c.close()
print(json.dumps({"acked": acked, "consumed": consumed, "errors": errors[:5]}))
