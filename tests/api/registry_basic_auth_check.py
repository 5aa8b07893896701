"""Drives the schema registry as a Confluent client configured with basic
auth would: confluent_kafka.schema_registry.SchemaRegistryClient (Debian's
python3-confluent-kafka) with basic.auth.user.info = USER:PASSWORD.

usage: registry_basic_auth_check.py URL USERINFO SUBJECT
Prints one JSON object: what register, lookup, get and list answered (an
id/value, or {"error": http status, "code": Confluent error code}).
"""
import json
import sys

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

SCHEMA = json.dumps({
    "type": "record", "name": "orders", "namespace": "shop",
    "fields": [{"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"]}],
})


def attempt(fn):
    try:
        return fn()
    except SchemaRegistryError as e:
        return {"error": e.http_status_code, "code": e.error_code}


def main():
    url, userinfo, subject = sys.argv[1:4]
    conf = {"url": url}
    if userinfo:
        conf["basic.auth.user.info"] = userinfo
    client = SchemaRegistryClient(conf)
    out = {}
    out["register"] = attempt(lambda: client.register_schema(subject, Schema(SCHEMA, "AVRO")))
    out["subjects"] = attempt(lambda: client.get_subjects())
    # A fresh client: nothing cached, each answer comes from the server.
    fresh = SchemaRegistryClient(conf)
    out["latest"] = attempt(lambda: fresh.get_latest_version(subject).schema_id)
    print(json.dumps(out))


main()
