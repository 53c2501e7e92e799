"""How the loopback fakes (tests/fake_ec2, tests/fake_s3) live and end.

Each fake prints "PORT <n>" once it listens and ends by itself: when its
stdin reaches end of file (the test that started it died or closed the
pipe), on SIGTERM/SIGINT/SIGHUP, or after its --timeout seconds, so that no
fake outlives the test that started it.
"""

import signal
import sys
import threading


def serve(srv, timeout, finish, *, threads=()):
    """Run srv (an HTTPServer on 127.0.0.1) until one of the ends above.

    finish() ends the process; it runs on its own thread when a signal
    asks (a handler must not block the thread serving requests).  threads
    are further callables started as daemon threads (a fake's clocks).
    """
    def watchdog():
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except Exception:
            pass
        finish()

    def on_signal(signum, frame):
        threading.Thread(target=finish, daemon=True).start()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    for target in (watchdog,) + tuple(threads):
        threading.Thread(target=target, daemon=True).start()
    threading.Timer(timeout, finish).start()
    sys.stdout.write('PORT %d\n' % srv.server_address[1])
    sys.stdout.flush()
    srv.serve_forever()
