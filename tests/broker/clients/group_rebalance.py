"""Three confluent_kafka consumers in one group over a 6-partition topic.

usage: group_rebalance.py BOOTSTRAP TOPIC GROUP
Joins members one by one, waits for each rebalance to settle, consumes the
topic across the group, then closes one member and waits again. Prints JSON:
{"phases": [[sorted partitions per member]...], "consumed": [...values...]}.
"""
import json
import sys
import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap, topic, group = sys.argv[1], sys.argv[2], sys.argv[3]
admin = AdminClient({"bootstrap.servers": bootstrap})
admin.create_topics(
    [NewTopic(topic, num_partitions=6, replication_factor=1)])[topic].result(10)
producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
for i in range(60):
    producer.produce(topic, value=b"r%d" % i, partition=i % 6)
producer.flush(30)
members, assigned = [], []


def new_member(i):
    def on_assign(consumer, parts, idx=i):
        assigned[idx] = sorted(p.partition for p in parts)

    def on_revoke(consumer, parts, idx=i):
        assigned[idx] = []

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                  "partition.assignment.strategy": "range", "client.id": "member-%d" % i})
    assigned.append([])
    c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    members.append(c)


consumed = []


def poll_until(pred, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        for i, c in enumerate(members):
            if c is None:
                continue
            m = c.poll(0.05)
            if m is not None and not m.error():
                consumed.append(m.value().decode())
        if pred():
            return True
    return False


def settled(k):
    live = [assigned[i] for i, c in enumerate(members) if c is not None]
    flat = sorted(p for a in live for p in a)
    return len(live) == k and flat == list(range(6)) and all(len(a) == 6 // k for a in live)


phases = []
for k in (1, 2, 3):
    new_member(k - 1)
    ok = poll_until(lambda: settled(k))
    phases.append([list(a) for i, a in enumerate(assigned) if members[i] is not None] if ok else None)

poll_until(lambda: len(set(consumed)) >= 60, timeout=30)
described = admin.list_groups(group, timeout=10)
description = {"state": described[0].state, "members": len(described[0].members),
               "protocol": described[0].protocol} if described else None
members[2].close()
members[2] = None
ok = poll_until(lambda: settled(2))
phases.append([list(assigned[i]) for i in (0, 1)] if ok else None)
for c in members:
    if c is not None:
        c.close()
print(json.dumps({"phases": phases, "consumed": consumed, "described": description}))
