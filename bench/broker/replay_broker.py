"""A stand-in broker that measures a Kafka client's own consume limit.

It sits in front of the real broker (started with --advertise pointing here,
so the client's broker connections come here too). A request it has not seen
is forwarded and its response is kept in a file, keyed by the request's bytes
without the correlation id. A request seen before is answered from that file
with sendfile: the second consume of the same topic gets the very same bytes
with no work behind them, so its time is the client's (plus loopback TCP).
Only a fetch the broker held for its whole max_wait_ms (nothing to return:
the end of the partition) is held as long again, as any broker would, so a
client at the end polls at the same pace as against the real broker.

usage: replay_broker.py LISTEN_PORT UPSTREAM_PORT CACHE_FILE STATS_FILE
STATS_FILE gets one "hits misses" line per closed client connection.
"""
import os
import socket
import struct
import sys
import threading
import time

listen_port, upstream_port = int(sys.argv[1]), int(sys.argv[2])
cache_path, stats_path = sys.argv[3], sys.argv[4]
cache = open(cache_path, "w+b")
index = {}  # request bytes without correlation id -> (file position, length, hold seconds)
lock = threading.Lock()


def read_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def read_frame(sock):
    size = read_exact(sock, 4)
    if size is None:
        return None
    return read_exact(sock, struct.unpack(">i", size)[0])


def fetch_max_wait(req):
    """max_wait_ms of a Fetch request (API key 1, non-flexible header), else None."""
    if struct.unpack(">h", req[:2])[0] != 1:
        return None
    client_id_len = struct.unpack(">h", req[8:10])[0]
    body = 10 + max(client_id_len, 0)
    return struct.unpack(">i", req[body + 4:body + 8])[0] / 1000.0


def serve(client):
    upstream = socket.create_connection(("127.0.0.1", upstream_port))
    hits = misses = 0
    while True:
        req = read_frame(client)
        if req is None:
            break
        correlation = req[4:8]
        key = req[:4] + req[8:]
        with lock:
            cached = index.get(key)
        if cached is None:
            misses += 1
            started = time.monotonic()
            upstream.sendall(struct.pack(">i", len(req)) + req)
            resp = read_frame(upstream)
            if resp is None:
                break
            max_wait = fetch_max_wait(req)
            held = max_wait if max_wait and time.monotonic() - started >= max_wait else 0
            with lock:
                cache.seek(0, os.SEEK_END)
                index[key] = (cache.tell() + 4, len(resp) - 4, held)  # past correlation id
                cache.write(resp)
                cache.flush()
            client.sendall(struct.pack(">i", len(resp)) + resp)
            continue
        hits += 1
        pos, length, held = cached
        if held:
            time.sleep(held)
        client.sendall(struct.pack(">i", length + 4) + correlation, socket.MSG_MORE)
        sent = 0
        while sent < length:
            sent += os.sendfile(client.fileno(), cache.fileno(), pos + sent, length - sent)
    with lock:
        with open(stats_path, "a") as f:
            f.write("%d %d\n" % (hits, misses))
    client.close()
    upstream.close()


server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", listen_port))
server.listen(16)
while True:
    conn, _ = server.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
