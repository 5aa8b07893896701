"""One operation as one SASL/PLAIN principal; prints JSON {"result": "ok" or the Kafka error name}.

usage: acl_probe.py BOOTSTRAP USER PASSWORD OP TOPIC [GROUP]
With KAFKA_SSL_CA set in the environment: SASL_SSL, verifying the broker with that file.
OP: produce (one record), consume (join GROUP, read TOPIC from the start, commit),
    create (CreateTopics), delete (DeleteTopics), list (the topics Metadata shows),
    committed (GROUP's committed offset of TOPIC partition 0)
"""
import json
import os
import sys

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap, user, password, op, topic = sys.argv[1:6]
group = sys.argv[6] if len(sys.argv) > 6 else "probe"
auth = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "PLAIN", "sasl.username": user, "sasl.password": password}
if os.environ.get("KAFKA_SSL_CA"):
    auth["security.protocol"] = "SASL_SSL"
    auth["ssl.ca.location"] = os.environ["KAFKA_SSL_CA"]
errors = []


def on_error(e):
    errors.append(e.name())


auth["error_cb"] = on_error


def name(e):
    return e.args[0].name() if e.args and isinstance(e.args[0], KafkaError) else str(e)


def produce():
    p = Producer(dict(auth, **{"message.timeout.ms": 10000}))
    out = {}

    def delivered(err, _msg):
        out["result"] = err.name() if err else "ok"

    p.produce(topic, b"probe", callback=delivered)
    p.flush(15)
    return out.get("result", errors[-1] if errors else "timeout")


def consume():
    c = Consumer(dict(auth, **{"group.id": group, "auto.offset.reset": "earliest",
                               "enable.auto.commit": False}))
    c.subscribe([topic])
    result = "timeout"
    for _ in range(30):
        m = c.poll(1)
        if m is None:
            if errors:
                result = errors[-1]
                break
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                continue
            result = m.error().name()
            break
        try:
            c.commit(message=m, asynchronous=False)
            result = "ok"
        except KafkaException as e:
            result = name(e)
        break
    c.close()
    return result


def committed():
    c = Consumer(dict(auth, **{"group.id": group}))
    try:
        c.committed([TopicPartition(topic, 0)], timeout=5)
        return "ok"
    except KafkaException as e:
        # A refused coordinator lookup times the call out; the refusal
        # itself is delivered as a consumer error on the next poll.
        for _ in range(5):
            m = c.poll(1)
            if m is not None and m.error():
                return m.error().name()
        return errors[-1] if errors else name(e)
    finally:
        c.close()


def admin(kind):
    a = AdminClient(auth)
    try:
        if kind == "create":
            a.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(15)
        else:
            a.delete_topics([topic])[topic].result(15)
        return "ok"
    except KafkaException as e:
        return name(e)


def listed():
    a = AdminClient(auth)
    try:
        return sorted(a.list_topics(timeout=10).topics.keys())
    except KafkaException as e:
        return name(e)


ops = {"produce": produce, "consume": consume, "committed": committed,
       "create": lambda: admin("create"), "delete": lambda: admin("delete"), "list": listed}
print(json.dumps({"result": ops[op]()}))
