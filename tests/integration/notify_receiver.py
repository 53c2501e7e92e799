#!/usr/bin/python3
"""notify_receiver.py -- a loopback webhook receiver for the notification
tests (test_notify.c): each POST's body, one line, appended to OUT.

    notify_receiver.py PORT OUT [--fail N | --endless]

Listens on 127.0.0.1:PORT (0: the kernel's pick); writes the port it got
to OUT.port once listening.  --fail N: the first N requests are answered
500 (and not written).  --endless: each request is written, then answered
200 with a body that never ends (64 KiB chunks until the client goes);
the bytes each answer got out are appended to OUT.sent, one line each.
Ends on SIGTERM or when its parent goes.
"""
import http.server
import os
import signal
import sys
import threading
import time


def main():
    port, out = int(sys.argv[1]), sys.argv[2]
    fail = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--fail" else 0
    endless = len(sys.argv) > 3 and sys.argv[3] == "--endless"
    state = {"seen": 0}

    class H(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(min(n, 1 << 20))
            state["seen"] += 1
            if state["seen"] <= fail:
                self.send_response(500)
                self.end_headers()
                return
            with open(out, "ab") as f:
                f.write(body.replace(b"\n", b" ") + b"\n")
            if endless:
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.end_headers()
                chunk, sent = b"x" * 65536, 0
                try:
                    while True:
                        self.wfile.write(chunk)
                        sent += len(chunk)
                except OSError:
                    pass
                with open(out + ".sent", "a") as f:
                    f.write("%d\n" % sent)
                self.close_connection = True
                return
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", port), H)
    with open(out + ".port.tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(out + ".port.tmp", out + ".port")
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
