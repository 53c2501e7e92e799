#!/usr/bin/env python3
"""control_clients.py SOCKET JOB N SECONDS -- N threads, each on its own
connection to proteusd's control socket, send `job` (status) requests back
to back for SECONDS; prints "N requests p50_ms p99_ms max_ms"."""
import json
import socket
import sys
import threading
import time


def client(path, job, until, out):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    req = (json.dumps({"v": 1, "cmd": "job", "job": job}) + "\n").encode()
    buf = b""
    while time.monotonic() < until:
        t0 = time.perf_counter()
        s.sendall(req)
        while b"\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                raise SystemExit("proteusd closed the connection")
            buf += chunk
        line, buf = buf.split(b"\n", 1)
        out.append(time.perf_counter() - t0)
        if not json.loads(line).get("ok"):
            raise SystemExit("error reply: %r" % line)
    s.close()


def main():
    path, job, n, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
        float(sys.argv[4])
    until = time.monotonic() + secs
    lats = [[] for _ in range(n)]
    ts = [threading.Thread(target=client, args=(path, job, until, lats[i]))
          for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    all_ = sorted(x for l in lats for x in l)
    if not all_:
        raise SystemExit("no request answered")
    q = lambda p: all_[min(len(all_) - 1, int(p * len(all_)))] * 1000
    print("%d %d %.2f %.2f %.2f" % (n, len(all_), q(0.5), q(0.99),
                                    all_[-1] * 1000))


main()
