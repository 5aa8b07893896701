#!/usr/bin/python3
"""Records the broker fuzzer's seed corpus from real client sessions.

Starts `sluice broker` with SASL/PLAIN (user fuzz, password fuzz-secret, as
the fuzzer's broker has), puts a recording TCP proxy in front of it (the
broker advertises the proxy, so every connection a client opens goes through
it), runs kcat and confluent-kafka sessions (metadata, produce, an
idempotent producer, group consumers that join, sync, fetch and commit,
admin calls), and writes what each client connection sent, size-prefixed
frames as on the wire, as one seed file per connection.

    /usr/bin/python3 tests/reliability/corpus/record_broker_seeds.py \
        build/src/cli/sluice tests/reliability/corpus/broker_request

Needs kcat and python3-confluent-kafka (Debian's, under /usr/bin/python3).
Duplicate recordings are kept once; seeds over 64 KiB are dropped.
"""
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

USER, PASSWORD = "fuzz", "fuzz-secret"
MAX_SEED = 64 << 10


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class RecordingProxy:
    """Forwards 127.0.0.1:listen_port to the broker; keeps client->broker bytes."""

    def __init__(self, listen_port, broker_port):
        self.broker_port = broker_port
        self.label = "setup"
        self.recordings = []  # (label, bytes)
        self.lock = threading.Lock()
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", listen_port))
        self.server.listen(64)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.broker_port))
            sent = bytearray()
            label = self.label
            done = threading.Event()
            threading.Thread(target=self._pump, args=(client, upstream, sent, done),
                             daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, None, None),
                             daemon=True).start()
            threading.Thread(target=self._keep, args=(label, sent, done), daemon=True).start()

    @staticmethod
    def _pump(src, dst, record, done):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if record is not None:
                    record.extend(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            if done is not None:
                done.set()

    def _keep(self, label, sent, done):
        done.wait()
        with self.lock:
            self.recordings.append((label, bytes(sent)))


def run(cmd, **kw):
    print("+", " ".join(cmd) if isinstance(cmd, list) else cmd, flush=True)
    return subprocess.run(cmd, timeout=120, check=True, **kw)


def kcat(bootstrap, *args, stdin=None):
    cmd = ["kcat", "-b", bootstrap, "-X", "security.protocol=SASL_PLAINTEXT",
           "-X", "sasl.mechanisms=PLAIN", "-X", f"sasl.username={USER}",
           "-X", f"sasl.password={PASSWORD}", *args]
    return run(cmd, input=stdin, stdout=subprocess.PIPE)


CONFLUENT_SESSION = r"""
import sys
from confluent_kafka import Producer, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, ConfigResource
bootstrap, mode = sys.argv[1], sys.argv[2]
auth = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "PLAIN", "sasl.username": "fuzz", "sasl.password": "fuzz-secret"}
if mode == "admin":
    a = AdminClient(auth)
    for f in a.create_topics([NewTopic("seeds.admin", 2, 1)]).values():
        f.result()
    for f in a.describe_configs([ConfigResource("topic", "seeds.admin")]).values():
        f.result()
    a.list_groups(timeout=10)
    for f in a.delete_topics(["seeds.admin"]).values():
        f.result()
elif mode == "produce":
    p = Producer({**auth, "enable.idempotence": True, "linger.ms": 5})
    for i in range(5):
        p.produce("seeds.ck", key=b"k%d" % i, value=b"value-%d" % i, headers=[("h", b"v")])
    assert p.flush(30) == 0
elif mode == "consume":
    c = Consumer({**auth, "group.id": "seeds-group", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 6000,
                  "heartbeat.interval.ms": 500})
    c.subscribe(["seeds.ck"])
    got = 0
    while got < 5:
        m = c.poll(10)
        if m is None:
            raise SystemExit("no message")
        if m.error():
            continue
        got += 1
    c.commit(asynchronous=False)
    c.committed([TopicPartition("seeds.ck", 0)], timeout=10)
    c.close()
"""


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sluice, out_dir = sys.argv[1], sys.argv[2]
    work = tempfile.mkdtemp(prefix="sluice-seeds-")
    broker_port, proxy_port = free_port(), free_port()
    proxy = RecordingProxy(proxy_port, broker_port)
    log = open(os.path.join(work, "broker.log"), "w")
    broker = subprocess.Popen(
        [sluice, "broker", "--listen", f"127.0.0.1:{broker_port}",
         "--advertise", f"127.0.0.1:{proxy_port}", "--data-dir", os.path.join(work, "data"),
         "--sasl-user", f"{USER}:{PASSWORD}", "--flush", "never"],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", broker_port)).close()
                break
            except OSError:
                time.sleep(0.1)
        bootstrap = f"127.0.0.1:{proxy_port}"
        script = os.path.join(work, "session.py")
        with open(script, "w") as f:
            f.write(CONFLUENT_SESSION)
        sessions = [
            ("kcat_metadata", lambda: kcat(bootstrap, "-L")),
            ("kcat_produce", lambda: kcat(bootstrap, "-P", "-t", "seeds.kcat", "-K:",
                                          stdin=b"a:one\nb:two\nc:three\n")),
            ("kcat_consume", lambda: kcat(bootstrap, "-C", "-t", "seeds.kcat", "-o",
                                          "beginning", "-c", "3", "-e", "-q")),
            ("kcat_group", lambda: kcat(bootstrap, "-G", "seeds-kcat-group", "seeds.kcat",
                                        "-o", "beginning", "-c", "3", "-q",
                                        "-X", "auto.commit.interval.ms=100")),
            ("ck_admin", lambda: run(["/usr/bin/python3", script, bootstrap, "admin"])),
            ("ck_produce", lambda: run(["/usr/bin/python3", script, bootstrap, "produce"])),
            ("ck_consume", lambda: run(["/usr/bin/python3", script, bootstrap, "consume"])),
        ]
        for label, session in sessions:
            proxy.label = label
            session()
            time.sleep(1.0)  # the session's connections close and are kept
    finally:
        broker.terminate()
        broker.wait()
    time.sleep(0.5)
    os.makedirs(out_dir, exist_ok=True)
    seen, kept = set(), 0
    counts = {}
    with proxy.lock:
        recordings = list(proxy.recordings)
    for label, data in recordings:
        digest = hashlib.sha1(data).hexdigest()
        if not data or len(data) > MAX_SEED or digest in seen:
            continue
        seen.add(digest)
        counts[label] = counts.get(label, 0) + 1
        with open(os.path.join(out_dir, f"{label}_{counts[label]}"), "wb") as f:
            f.write(data)
        kept += 1
    print(f"{kept} seeds written to {out_dir}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
