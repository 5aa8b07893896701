"""Reads an Avro change topic Sluice wrote, with clients we did not write.

confluent_kafka's Consumer reads the topic from the beginning to its end;
each value's Confluent wire header names a schema id, which
confluent_kafka's SchemaRegistryClient fetches from Sluice's registry, and
Apache Avro (python3-avro) decodes the body with it (confluent_kafka's own
AvroDeserializer needs fastavro, which Debian does not package). The
changes are replayed in order into {id: name} and printed as JSON, with the
ops and schema ids seen, for the C++ side to compare with the source table.

usage: avro_topic_check.py BOOTSTRAP REGISTRY_URL TOPIC
"""
import io
import json
import struct
import sys

import avro.io
import avro.schema
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient

bootstrap, registry_url, topic = sys.argv[1:4]
registry = SchemaRegistryClient({"url": registry_url})
readers = {}


def decode(value):
    magic, schema_id = struct.unpack(">bI", value[:5])
    if magic != 0:
        raise ValueError("not Confluent wire format: magic %d" % magic)
    if schema_id not in readers:
        schema = avro.schema.parse(registry.get_schema(schema_id).schema_str)
        readers[schema_id] = avro.io.DatumReader(schema)
    return schema_id, readers[schema_id].read(avro.io.BinaryDecoder(io.BytesIO(value[5:])))


c = Consumer({"bootstrap.servers": bootstrap, "group.id": "avro-topic-check",
              "enable.auto.commit": False, "enable.partition.eof": True})
parts = list(c.list_topics(topic, timeout=10).topics[topic].partitions.keys())
c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
rows, ops, ids, eof, count = {}, {}, set(), set(), 0
while len(eof) < len(parts):
    m = c.poll(10)
    if m is None:
        break
    if m.error():
        eof.add(m.partition())
        continue
    schema_id, env = decode(m.value())
    ids.add(schema_id)
    count += 1
    op = env["op"]
    ops[op] = ops.get(op, 0) + 1
    if op == "t":
        rows.clear()
        continue
    key = json.loads(m.key())["id"]
    if op == "d":
        rows.pop(key, None)
    else:
        if env["source"]["lsn"] is None and op != "r":
            raise ValueError("streamed change without an LSN")
        rows[key] = env["after"]["name"]
c.close()
print(json.dumps({"rows": {str(k): v for k, v in rows.items()}, "ops": ops,
                  "schema_ids": sorted(ids), "messages": count}))
