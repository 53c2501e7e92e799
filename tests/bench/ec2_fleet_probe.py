#!/usr/bin/env python3
"""ec2_fleet_probe.py -- the driver of bench_ec2_fleet.sh: submits the
fleet job to a running proteusd, fills and drains it against the fake EC2,
and measures the daemon's loop on the way.

    ec2_fleet_probe.py --ctl PROTEUSCTL --sock SOCK --fake URL --job FILE
                       --daemon-pid PID --fake-pid PID --fleet N --out FILE

Phases: idle (before the submit), fill (the submit until N instances run
in the fake), steady (STEADY_S more), drain (the cancel until no instance
of the fake is pending, running or shutting-down).  All along, one client
on its own connection sends `ping` every 100 ms and times the answer (how
long a request waits for the daemon's loop: a loop busy or blocked for X
ms shows as a ping of up to X ms), and another sends `job ID` every
second (an operator's view of the 500-instance job, which the loop builds).
A throttling storm (RequestLimitExceeded, HTTP 503, probability P, for S
real seconds) is set on the fake right after the submit, and another
during the drain.  Writes one JSON object to --out; fails (exit 1) only
when the daemon stops answering.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request


def cpu_s(pid):
    """utime + stime of a process, seconds (None once it is gone)."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            st = f.read()
    except OSError:
        return None
    v = st[st.rindex(')') + 2:].split()
    return (int(v[11]) + int(v[12])) / os.sysconf('SC_CLK_TCK')


class Sampler(threading.Thread):
    """Sends req on its own connection every `every` s; records (t, ms)."""

    def __init__(self, path, req, every):
        super().__init__(daemon=True)
        self.path, self.req, self.every = path, req, every
        self.samples, self.failed = [], None
        self.stop = threading.Event()

    def run(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(self.path)
        buf = b''
        line = (json.dumps(self.req) + '\n').encode()
        nxt = time.monotonic()
        while not self.stop.is_set():
            t0 = time.monotonic()
            s.sendall(line)
            while b'\n' not in buf:
                chunk = s.recv(1 << 20)
                if not chunk:
                    self.failed = 'proteusd closed the connection'
                    return
                buf += chunk
            reply, buf = buf.split(b'\n', 1)
            t1 = time.monotonic()
            if not json.loads(reply).get('ok'):
                self.failed = 'error reply: %r' % reply[:200]
                return
            self.samples.append((t0, (t1 - t0) * 1000.0, len(reply)))
            nxt += self.every
            self.stop.wait(max(0.0, nxt - time.monotonic()))
        s.close()


def fake_get(url, cmd):
    with urllib.request.urlopen(url + '_ctl?cmd=' + cmd, timeout=30) as r:
        return json.loads(r.read())


def fake_post(url, obj):
    req = urllib.request.Request(url + '_ctl', data=json.dumps(obj).encode(), method='POST',
                                 headers={'Content-Type': 'application/json'})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def storm(url, p, secs):
    fake_post(url, {'faults': [{'op': '*', 'kind': 'error', 'code': 'RequestLimitExceeded',
                                'status': 503, 'message': 'Request limit exceeded.',
                                'p': p, 'for_s': secs}]})


def stats(samples, t0, t1):
    v = sorted(ms for t, ms, _ in samples if t0 <= t < t1)
    if not v:
        return None
    q = lambda p: v[min(len(v) - 1, int(p * len(v)))]
    return {'n': len(v), 'p50_ms': q(0.5), 'p99_ms': q(0.99), 'max_ms': v[-1],
            'over_100ms': sum(1 for x in v if x > 100), 'over_1s': sum(1 for x in v if x > 1000)}


def main():
    ap = argparse.ArgumentParser()
    for k in ('ctl', 'sock', 'fake', 'job', 'out'):
        ap.add_argument('--' + k, required=True)
    ap.add_argument('--daemon-pid', type=int, required=True)
    ap.add_argument('--fake-pid', type=int, required=True)
    ap.add_argument('--fleet', type=int, required=True, help='instances the job runs when full')
    ap.add_argument('--idle-s', type=float, default=3)
    ap.add_argument('--fill-max-s', type=float, default=300)
    ap.add_argument('--steady-s', type=float, default=10)
    ap.add_argument('--drain-max-s', type=float, default=180)
    ap.add_argument('--storm-p', type=float, default=0.2)
    ap.add_argument('--storm-s', type=float, default=30)
    ap.add_argument('--drain-storm-s', type=float, default=10)
    a = ap.parse_args()
    res = {'phases': {}, 'marks': {}, 'counts': []}
    cpu = {}

    def mark(name):
        res['marks'][name] = time.monotonic()
        cpu[name] = (cpu_s(a.daemon_pid), cpu_s(a.fake_pid))

    def poll_counts():
        c = fake_get(a.fake, 'counts')
        c['t'] = time.monotonic()
        res['counts'].append(c)
        return c

    ping = Sampler(a.sock, {'v': 1, 'cmd': 'ping'}, 0.1)
    ping.start()
    mark('idle')
    time.sleep(a.idle_s)
    mark('submit')
    out = subprocess.run([a.ctl, '--socket', a.sock, 'submit', a.job], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit('submit failed: %s' % out.stderr.strip())
    job = int(out.stdout.strip())
    res['job'] = job
    storm(a.fake, a.storm_p, a.storm_s)
    view = Sampler(a.sock, {'v': 1, 'cmd': 'job', 'job': job}, 1.0)
    view.start()
    filled = False
    first_running = None
    while time.monotonic() - res['marks']['submit'] < a.fill_max_s:
        c = poll_counts()
        if c['running'] and first_running is None:
            res['marks']['first_running'] = c['t']
            first_running = c['t']
        if c['running'] >= a.fleet:
            filled = True
            break
        if ping.failed:
            break
        time.sleep(0.25)
    mark('filled')
    res['filled'] = filled
    deadline = time.monotonic() + a.steady_s
    while time.monotonic() < deadline and not ping.failed:
        poll_counts()
        time.sleep(0.5)
    storm(a.fake, a.storm_p, a.drain_storm_s)
    mark('cancel')
    out = subprocess.run([a.ctl, '--socket', a.sock, 'cancel', str(job)], capture_output=True, text=True)
    res['cancel_rc'] = out.returncode
    mark('cancelled')  # the cancel's own round trip ends here
    drained = False
    while time.monotonic() - res['marks']['cancel'] < a.drain_max_s:
        c = poll_counts()
        if not c['pending'] and not c['running'] and 'no_running' not in res['marks']:
            res['marks']['no_running'] = c['t']
        if not c['pending'] and not c['running'] and not c['shutting-down']:
            drained = True
            break
        time.sleep(0.25)
    mark('drained')
    res['drained'] = drained
    time.sleep(1)
    mark('end')
    for smp in (ping, view):
        smp.stop.set()
        smp.join(5)
    m = res['marks']
    spans = {'idle': ('idle', 'submit'), 'fill': ('submit', 'filled'), 'steady': ('filled', 'cancel'),
             'drain': ('cancel', 'drained')}
    for name, (x, y) in spans.items():
        res['phases'][name] = {
            'seconds': m[y] - m[x],
            'ping': stats(ping.samples, m[x], m[y]),
            'job_view': stats(view.samples, m[x], m[y]),
            'daemon_cpu_s': (cpu[y][0] - cpu[x][0]) if cpu[y][0] is not None and cpu[x][0] is not None else None,
            'fake_cpu_s': (cpu[y][1] - cpu[x][1]) if cpu[y][1] is not None and cpu[x][1] is not None else None,
        }
    res['daemon_cpu_total_s'] = cpu['end'][0]
    res['fake_cpu_total_s'] = cpu['end'][1]
    res['job_view_bytes_max'] = max((n for _, _, n in view.samples), default=0)
    res['ping_worst'] = sorted(((ms, t - m['submit']) for t, ms, _ in ping.samples), reverse=True)[:5]
    res['sampler_failed'] = ping.failed or view.failed
    res['marks'] = {k: v - m['submit'] for k, v in m.items()}
    for c in res['counts']:
        c['t'] -= m['submit']
    with open(a.out, 'w') as f:
        json.dump(res, f, indent=1)
    if ping.failed:
        sys.exit('proteusd stopped answering: %s' % ping.failed)


if __name__ == '__main__':
    main()
