"""Drives Sluice's schema registry with clients we did not write.

confluent_kafka.schema_registry.SchemaRegistryClient (Debian's
python3-confluent-kafka 1.7) registers, looks up and fetches schemas; the
Apache Avro library (python3-avro) decodes a message Sluice's encoder
framed in Confluent's wire format, and encodes one for Sluice to decode.
confluent_kafka's own AvroDeserializer needs fastavro, which Debian does not
package, so the wire header is read here exactly as it documents it.

usage: confluent_client_check.py URL WORKDIR
WORKDIR holds: envelope.avsc, schema_id, message.bin, expected.json (from
the C++ side); this script writes python_message.bin and python_datum.json.
"""
import datetime
import io
import json
import os
import struct
import sys

import avro.io
import avro.schema
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError


def plain(value):
    """Apache Avro turns timestamp-micros into datetime; back to epoch micros."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, datetime.datetime):
        epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        return (value - epoch) // datetime.timedelta(microseconds=1)
    return value


def check(cond, what):
    if not cond:
        print("FAILED: " + what, file=sys.stderr)
        sys.exit(1)
    print("ok: " + what)


def main():
    url, work = sys.argv[1], sys.argv[2]
    read = lambda name: open(os.path.join(work, name), "rb").read()
    envelope = read("envelope.avsc").decode()
    schema_id = int(read("schema_id"))
    client = SchemaRegistryClient({"url": url})

    # Fetch by id what the C++ side registered.
    fetched = client.get_schema(schema_id)
    check(fetched.schema_type == "AVRO", "get_schema returns an AVRO schema")
    check(json.loads(fetched.schema_str) == json.loads(envelope), "get_schema returns the document")

    # The same schema under another subject is the same id.
    other = client.register_schema("copy-value", Schema(envelope, "AVRO"))
    check(other == schema_id, "re-registering under another subject reuses the id")
    again = client.register_schema("copy-value", Schema(envelope, "AVRO"))
    check(again == schema_id, "re-registering under the same subject is a no-op")
    check(client.get_versions("copy-value") == [1], "one version after the no-op")
    found = client.lookup_schema("copy-value", Schema(envelope, "AVRO"))
    check(found.schema_id == schema_id and found.version == 1, "lookup_schema finds the version")
    latest = client.get_latest_version("copy-value")
    check(latest.version == 1 and latest.subject == "copy-value", "get_latest_version")
    check("copy-value" in client.get_subjects(), "get_subjects lists the subject")

    # Compatibility: BACKWARD by default; FULL set per subject is honoured.
    user_v1 = '{"type":"record","name":"U","fields":[{"name":"id","type":"long"}]}'
    user_v2 = ('{"type":"record","name":"U","fields":[{"name":"id","type":"long"},'
               '{"name":"n","type":"string","default":""}]}')
    user_bad = '{"type":"record","name":"U","fields":[{"name":"id","type":"string"}]}'
    client.register_schema("users-value", Schema(user_v1, "AVRO"))
    check(client.get_compatibility() == "BACKWARD", "global level defaults to BACKWARD")
    client.set_compatibility("users-value", "FULL")
    check(client.get_compatibility("users-value") == "FULL", "subject level set to FULL")
    check(client.test_compatibility("users-value", Schema(user_v2, "AVRO")),
          "test_compatibility accepts a field added with a default")
    check(not client.test_compatibility("users-value", Schema(user_bad, "AVRO")),
          "test_compatibility refuses a type change")
    try:
        client.register_schema("users-value", Schema(user_bad, "AVRO"))
        check(False, "incompatible registration raises")
    except SchemaRegistryError as e:
        check(e.http_status_code == 409, "incompatible registration answers 409")
    try:
        client.register_schema("broken-value", Schema('{"type":"record","name":"R"}', "AVRO"))
        check(False, "invalid schema raises")
    except SchemaRegistryError as e:
        check(e.http_status_code == 422 and e.error_code == 42201,
              "invalid schema answers 422 / 42201")
    try:
        client.get_schema(987654)
        check(False, "unknown id raises")
    except SchemaRegistryError as e:
        check(e.error_code == 40403, "unknown id answers 40403")
    versions = client.delete_subject("copy-value")
    check(versions == [1], "delete_subject soft-deletes its versions")
    check("copy-value" not in client.get_subjects(), "a soft-deleted subject is hidden")

    # Decode Sluice's message: magic 0, big-endian id, Avro binary.
    message = read("message.bin")
    magic, wire_id = struct.unpack(">bI", message[:5])
    check(magic == 0 and wire_id == schema_id, "wire header is magic 0 + schema id")
    writer = avro.schema.parse(client.get_schema(wire_id).schema_str)
    datum = avro.io.DatumReader(writer).read(avro.io.BinaryDecoder(io.BytesIO(message[5:])))
    expected = json.loads(read("expected.json"))
    check(plain(datum) == expected, "Apache Avro decodes Sluice's change event: %r" % (datum,))

    # And the other way: a message framed and encoded by Apache Avro.
    buf = io.BytesIO()
    buf.write(struct.pack(">bI", 0, schema_id))
    mine = dict(datum)
    mine["op"] = "u"
    mine["before"] = dict(datum["after"])
    avro.io.DatumWriter(writer).write(mine, avro.io.BinaryEncoder(buf))
    open(os.path.join(work, "python_message.bin"), "wb").write(buf.getvalue())
    open(os.path.join(work, "python_datum.json"), "w").write(json.dumps(plain(mine)))
    print("ALL CHECKS PASSED")


if __name__ == "__main__":
    main()
