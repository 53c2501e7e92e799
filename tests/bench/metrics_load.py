#!/usr/bin/env python3
"""metrics_load.py -- load for proteusd's /metrics (bench_metrics.sh).

  metrics_load.py scrape PORT N SECONDS
      N threads, each scraping http://127.0.0.1:PORT/metrics back to back
      (a new connection each time, as Prometheus after a close) for
      SECONDS; prints "scrapes p50_ms p99_ms max_ms bytes failed" (failed:
      not a 200, or the connection failed).
  metrics_load.py hostile PORT SECONDS
      one connection that sends a GET and never reads, and one that sends
      nothing and reconnects each time the server drops it (the daemon
      counts them: proteus_metrics_timeouts_total).
  metrics_load.py ping SOCKET SECONDS
      `ping` on proteusd's control socket every 10 ms, a new connection
      each time (as proteusctl ping); prints "pings p50_ms p99_ms max_ms".
"""
import json
import socket
import sys
import threading
import time


def pct(xs, p):
    return xs[min(len(xs) - 1, int(p * len(xs)))] * 1000


def scrape_once(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    buf = b""
    while True:
        c = s.recv(65536)
        if not c:
            break
        buf += c
    s.close()
    return len(buf) if buf.startswith(b"HTTP/1.1 200 ") else -1


def scrape(port, n, secs):
    until = time.monotonic() + secs
    lats = [[] for _ in range(n)]
    size = [0]
    bad = [0]

    def run(out):
        while time.monotonic() < until:
            t0 = time.perf_counter()
            try:
                n = scrape_once(port)
            except OSError:
                n = -1
            out.append(time.perf_counter() - t0)
            if n < 0:
                bad[0] += 1
            else:
                size[0] = n
    ts = [threading.Thread(target=run, args=(lats[i],)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    a = sorted(x for l in lats for x in l)
    print("%d %.2f %.2f %.2f %d %d" % (len(a), pct(a, 0.5), pct(a, 0.99),
                                       a[-1] * 1000, size[0], bad[0]))


def hostile(port, secs):
    until = time.monotonic() + secs

    def hold(send):
        while time.monotonic() < until:
            s = socket.create_connection(("127.0.0.1", port))
            if send:
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            # never read (the answer waits in our buffer); the silent one
            # sees the server's close and comes back at once
            s.settimeout(max(0.1, until - time.monotonic()))
            try:
                if send:
                    time.sleep(max(0, until - time.monotonic()))
                else:
                    s.recv(1, socket.MSG_PEEK)
            except (socket.timeout, ConnectionResetError):
                pass
            s.close()
    ts = [threading.Thread(target=hold, args=(b,)) for b in (True, False)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def ping(path, secs):
    until = time.monotonic() + secs
    req = (json.dumps({"v": 1, "cmd": "ping"}) + "\n").encode()
    lats = []
    while time.monotonic() < until:
        t0 = time.perf_counter()
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        s.sendall(req)
        buf = b""
        while b"\n" not in buf:
            c = s.recv(4096)
            if not c:
                raise SystemExit("proteusd closed the connection")
            buf += c
        s.close()
        lats.append(time.perf_counter() - t0)
        if not json.loads(buf).get("ok"):
            raise SystemExit("error reply: %r" % buf)
        time.sleep(0.01)
    a = sorted(lats)
    print("%d %.2f %.2f %.2f" % (len(a), pct(a, 0.5), pct(a, 0.99),
                                 a[-1] * 1000))


def main():
    mode = sys.argv[1]
    if mode == "scrape":
        scrape(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
    elif mode == "hostile":
        hostile(int(sys.argv[2]), float(sys.argv[3]))
    elif mode == "ping":
        ping(sys.argv[2], float(sys.argv[3]))
    else:
        raise SystemExit(__doc__)


main()
