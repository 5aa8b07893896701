"""Produces N messages at a steady pace with retries, surviving broker
restarts, and prints the values the broker acknowledged as a JSON list.

usage: steady_producer.py BOOTSTRAP TOPIC N
"""
import json
import sys
import time

from confluent_kafka import Producer

bootstrap, topic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
acked = []
p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
              "message.timeout.ms": 60000, "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 200,
              "linger.ms": 2})


def done(err, msg):
    if err is None:
        acked.append(msg.value().decode())


for i in range(n):
    p.produce(topic, value=("m%06d" % i).encode(), on_delivery=done)
    p.poll(0)
    time.sleep(0.002)
p.flush(90)
print(json.dumps(acked))
