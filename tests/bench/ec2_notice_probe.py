#!/usr/bin/env python3
"""ec2_notice_probe.py -- the driver of bench_ec2_notice.sh,
bench_ec2_acquire.sh and bench_ec2_rebalance.sh (through ec2_notice.sh):
submits one ec2 job to a running proteusd on the fake EC2, perturbs it
as the mode says, watches it to its end and writes what it saw as one
JSON object.

    ec2_notice_probe.py --mode notice|acquire|rebalance --ctl PROTEUSCTL
        --sock SOCK --fake URL --job FILE --run DIR --origin T0
        --speedup K --out FILE [--count N --apart S --lead L --warning W]

Nothing here has a timestamp of its own (the node's and the
coordinator's log lines carry none): a thread reads every instance's
console.log, the job's trainer.log (the coordinator) and the daemon's log
every POLL_S real seconds and stamps each new line with the real time it
first saw it.  A time is therefore late by up to POLL_S (20 ms: 1.2
market s at 60x).  Market times are T0 + (real - T0) * K, the fake's own
clock; the daemon's events are in market time already (its `enrolled`
events in real time) and are read from the database at the end.

Modes:
  notice     once the fleet runs, N times (every APART real s): the
             interruption of one running spot instance whose node has
             joined (the fake's {"interrupt": ...}, WARNING market s).
  acquire    no perturbation: the job runs to its end.
  rebalance  once the fleet runs: a rebalance recommendation to one
             running spot instance; LEAD market s later (LEAD < 0: never,
             a false alarm) an interruption of the same instance, if EC2
             still runs it.
"""
import argparse
import glob
import json
import os
import re
import socket
import sqlite3
import sys
import threading
import time
import urllib.error

import ec2_fleet_probe
from ec2_fleet_probe import fake_get

POLL_S = 0.02


class Tail(threading.Thread):
    """Stamps each new line of the files the globs name: (real t, path,
    line) in self.lines, in the order seen."""

    def __init__(self, globs):
        super().__init__(daemon=True)
        self.globs, self.pos, self.part = globs, {}, {}
        self.lines, self.lock = [], threading.Lock()
        self.stop = threading.Event()

    def scan(self):
        now = time.time()
        for g in self.globs:
            for path in glob.glob(g):
                try:
                    with open(path, 'rb') as f:
                        f.seek(self.pos.get(path, 0))
                        chunk = f.read()
                except OSError:
                    continue
                if not chunk:
                    continue
                self.pos[path] = self.pos.get(path, 0) + len(chunk)
                text = self.part.get(path, b'') + chunk
                *done, rest = text.split(b'\n')
                self.part[path] = rest
                with self.lock:
                    for ln in done:
                        self.lines.append((now, path, ln.decode('utf-8', 'replace')))

    def run(self):
        while not self.stop.is_set():
            self.scan()
            self.stop.wait(POLL_S)
        self.scan()

    def find(self, pat, path_pat=None, after=0.0):
        """The first (t, path, match) of regex pat (in files matching
        path_pat) seen at or after real time `after`, or None."""
        rx = re.compile(pat)
        with self.lock:
            lines = list(self.lines)
        for t, path, ln in lines:
            if t < after or (path_pat and not re.search(path_pat, path)):
                continue
            m = rx.search(ln)
            if m:
                return t, path, m
        return None


def fake_post(url, obj):
    """The fake's answer to a ctl command; {'error': ...} if it refused
    it (e.g. "is shutting-down, not running")."""
    try:
        return ec2_fleet_probe.fake_post(url, obj)
    except urllib.error.HTTPError as e:
        return {'error': e.read().decode('utf-8', 'replace')}


def job_view(sock, job):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(sock)
    s.sendall((json.dumps({'v': 1, 'cmd': 'job', 'job': job}) + '\n').encode())
    buf = b''
    while b'\n' not in buf:
        c = s.recv(1 << 20)
        if not c:
            break
        buf += c
    s.close()
    return json.loads(buf.split(b'\n', 1)[0])


def submit(ctl, sock, path):
    import subprocess
    out = subprocess.run([ctl, '--socket', sock, 'submit', path], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit('submit failed: %s' % out.stderr.strip())
    return int(out.stdout.strip())


def main():
    ap = argparse.ArgumentParser()
    for k in ('ctl', 'sock', 'fake', 'job', 'run', 'out', 'mode'):
        ap.add_argument('--' + k, required=True)
    ap.add_argument('--origin', type=float, required=True)
    ap.add_argument('--speedup', type=float, required=True)
    ap.add_argument('--count', type=int, default=5)
    ap.add_argument('--apart', type=float, default=7.0, help='real s between interruptions')
    ap.add_argument('--lead', type=float, default=-1, help='market s, rebalance -> interruption')
    ap.add_argument('--warning', type=float, default=120.0, help='market s, notice -> end')
    ap.add_argument('--max-s', type=float, default=400)
    a = ap.parse_args()
    k, t0 = a.speedup, a.origin
    market = lambda real: t0 + (real - t0) * k    # noqa: E731
    res = {'mode': a.mode, 'speedup': k, 'origin': t0, 'perturb': [], 'samples': []}

    job = submit(a.ctl, a.sock, a.job)
    res['job'] = job
    jdir = os.path.join(a.run, 'proteus.db.jobs', str(job))
    tail = Tail([os.path.join(a.run, 'instances', '*', 'console.log'),
                 os.path.join(jdir, 'trainer.log'), os.path.join(a.run, 'proteusd.log')])
    tail.start()
    t_submit = time.time()
    res['t_submit'] = t_submit

    state = {'target': None, 'steady_at': None}
    pending = []           # rebalance: (real t, iid) of interruptions to post
    next_at = None
    done_perturb = 0
    view = {}
    while time.time() - t_submit < a.max_s:
        view = job_view(a.sock, job)
        now = time.time()
        res['samples'].append((now, view.get('workers', 0), view.get('clock', 0)))
        st = view.get('state')
        if st not in ('queued', 'running'):
            break
        # the fleet is steady once the workers stop growing for 2 s
        w = view.get('workers', 0) or 0
        if state['target'] is None and w >= 2:
            if state.get('w') != w:
                state['w'], state['w_since'] = w, now
            elif now - state['w_since'] >= 2.0:
                state['target'], state['steady_at'] = w, now
                next_at = now
        if a.mode != 'acquire' and next_at is not None and now >= next_at and \
                done_perturb < (a.count if a.mode == 'notice' else 1):
            iid = pick(a.fake, tail)
            if iid:
                rec = {'iid': iid, 'node': node_of(a.fake, iid)}
                if a.mode == 'notice':
                    rec['t_post0'] = time.time()
                    r = fake_post(a.fake, {'interrupt': {'id': iid, 'warning': a.warning}})
                    rec['t_post'] = time.time()
                    rec['posted'] = iid in r.get('interrupted', [])
                    next_at = rec['t_post'] + a.apart
                else:
                    rec['t_post0'] = time.time()
                    r = fake_post(a.fake, {'rebalance': {'id': iid}})
                    rec['t_post'] = time.time()
                    rec['posted'] = 'error' not in r
                    if a.lead >= 0:
                        pending.append((rec['t_post'] + a.lead / k, iid, rec))
                res['perturb'].append(rec)
                done_perturb += 1
        for p in list(pending):
            if time.time() >= p[0]:
                pending.remove(p)
                rec = p[2]
                rec['t_int_post0'] = time.time()
                r = fake_post(a.fake, {'interrupt': {'id': p[1], 'warning': a.warning}})
                rec['t_int_post'] = time.time()
                rec['int_posted'] = p[1] in r.get('interrupted', [])
                rec['int_answer'] = r.get('error', '')[:200]
        time.sleep(0.1)
    res['t_end'] = time.time()
    res['view_end'] = view
    # the bills end where EC2's did a few seconds after the job
    for _ in range(600):
        view = job_view(a.sock, job)
        if view.get('bills_final'):
            break
        time.sleep(0.1)
    res['view_final'] = view
    time.sleep(0.5)
    tail.stop.set()
    tail.join(5)
    res['lines'] = tail.lines
    res['instances'] = fake_get(a.fake, 'instances')
    res['target'] = state['target']
    res['steady_at'] = state['steady_at']
    db = sqlite3.connect(os.path.join(a.run, 'proteus.db'))
    res['events'] = db.execute('SELECT kind, instance_id, at_us, detail FROM events WHERE job_id = ? '
                               "AND kind != 'progress' ORDER BY id", (job,)).fetchall()
    res['instances_db'] = db.execute('SELECT id, cloud_id FROM instances WHERE job_id = ?', (job,)).fetchall() \
        if has_col(db, 'instances', 'job_id') else []
    json.dump(res, open(a.out, 'w'))
    _ = market


def has_col(db, table, col):
    return any(r[1] == col for r in db.execute('PRAGMA table_info(%s)' % table))


def node_of(url, iid):
    """The controller's id of instance iid (its proteus:id tag)."""
    for v in fake_get(url, 'instances'):
        if v['id'] == iid:
            return int(v['tags'].get('proteus:id', 0))
    return 0


def pick(url, tail):
    """A running spot instance with no notice whose node's PS joined."""
    for v in reversed(fake_get(url, 'instances')):
        if v['market'] != 'spot' or v['state'] != 'running' or v['notice'] or v['rebalance']:
            continue
        nid = int(v['tags'].get('proteus:id', 0))
        if nid and tail.find(r'^node %d registered as ps' % (nid * 100), r'trainer\.log$'):
            return v['id']
    return None


if __name__ == '__main__':
    if len(sys.argv) > 2 and sys.argv[1] == '--report':
        import ec2_notice_report
        ec2_notice_report.main(sys.argv[2:])
    else:
        main()
