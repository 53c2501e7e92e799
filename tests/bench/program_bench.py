#!/usr/bin/python3
"""program_bench.py -- `make bench BENCH=program` (tests/bench/bench_program.sh):
the shipped PyTorch program (docs/examples/programs/fashion_mnist_ddp.py,
DDP over gloo on Fashion-MNIST, under /usr/bin/torchrun, OMP_NUM_THREADS=1)
and the same work, on one private proteusd in the local world, under the
same replayed market (a hand-made m3.large trace with price spikes past
any bid), one job after the other:

  ondemand: "policy": "ondemand", 3 on-demand m3.large, torchrun elastic
            (nothing evicts them);
  fixed:    "policy": "standard" (1 reliable + 2 spot m3.large bid at the
            on-demand price, re-acquired when the price falls back: a
            fixed fleet) with "membership": "fixed", nodes 3..3: every
            membership change stops every node's program and starts a
            new, fixed-size torchrun group on all 3 nodes from the latest
            checkpoint (SkyPilot managed jobs' recovery);
  bidbrain: the default policy, membership auto (torchrun elastic, c10d
            rendezvous on the reliable node), nodes 1..3, the checkpoint
            store and the forwarded notices.

For each: cost (status cost_usd), real seconds from submit to the end,
market hours (status market_time minus world.start), evictions, the final
test accuracy, the work redone (samples trained more than once, from the
node logs: at each start of rank 0, "rank 0/W: start at samples S", the
largest samples any earlier line or the daemon had reached minus S), and
the time from each notice (a new "warning" event or a rise of
"evictions", seen by a poll of status and events every 0.25 s) to the
first poll after it at which status program.samples rises, and to the
first rank-0 start line after it (the group training again).

Writes the run's files under --work; prints markdown on stdout.  Runs
with /usr/bin/python3 (the stdlib only; the program needs torch).
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

T0 = 1456876800  # 2016-03-02T00:00:00Z, the market's start


def write_trace(path, spikes, spike_s):
    """m3.large in us-east-1a at $0.02 every 5 minutes for two days, $5
    (past any bid, the on-demand $0.133 too) for spike_s from each spike."""
    rows = []
    for t in range(T0 - 3600, T0 + 2 * 86400, 300):
        hot = any(a <= t < a + spike_s for a in spikes)
        rows.append({"AvailabilityZone": "us-east-1a",
                     "InstanceType": "m3.large",
                     "ProductDescription": "Linux/UNIX",
                     "SpotPrice": "5.000000" if hot else "0.020000",
                     "Timestamp": "@%d" % t})
    with open(path, "w") as f:
        json.dump({"SpotPriceHistory": rows}, f)


def job_spec(mode, a):
    samples = a.epochs * 60000
    prog = {"command": ["/usr/bin/torchrun", "fashion_mnist_ddp.py",
                        "--epochs", str(a.epochs)],
            "code": os.path.join(a.work, "code"),
            "env": {"OMP_NUM_THREADS": "1"},
            "nodes": {"min": 1, "max": 3},
            "samples": samples, "grace_seconds": a.grace}
    job = {"name": "program-" + mode, "region": "us-east-1",
           "work_hours": 2, "reference_type": "m3.large",
           "instances": 3,
           "reliable": {"type": "m3.large", "count": 1},
           "spot": {"types": ["m3.large"], "zones": ["us-east-1a"],
                    "max_instances": 2},
           "scaling_explore": False, "startup_seconds": 60,
           "program": prog,
           "world": {"name": "local",
                     "trace": os.path.join(a.work, "trace.json"),
                     "start": "2016-03-02T00:00:00Z",
                     "speedup": a.speedup}}
    if mode == "ondemand":
        job["policy"] = "ondemand"      # `instances` on-demand nodes
    elif mode == "fixed":
        job["policy"] = "standard"      # reliable + `instances` spot
        job["instances"] = 2
        prog["membership"] = "fixed"
        prog["nodes"] = {"min": 3, "max": 3}
    return job


class Ctl:
    def __init__(self, ctl, sock):
        self.base = [ctl, "--socket", sock]

    def json(self, *args):
        try:
            r = subprocess.run(self.base + list(args) + ["--json"],
                               capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if r.returncode != 0:
            return None
        return r.stdout

    def status(self, job):
        out = self.json("status", str(job))
        return json.loads(out) if out else None

    def events(self, job):
        out = self.json("events", str(job))
        evs = []
        for line in (out or "").splitlines():
            line = line.strip()
            if line:
                evs.append(json.loads(line))
        return evs


NUM = r"at samples (\d+)"
START_RE = re.compile(r"rank 0/(\d+): start at samples (\d+)")
ANY_RE = re.compile(NUM)
RESUMED_RE = re.compile(r"rank 0: resumed from (\S+) at samples (\d+)")
ACC_RE = re.compile(r"test accuracy: ([0-9.]+)")


def follow_logs(ctl, job, sink, stop):
    """proteusctl logs JOB --follow --json: every line with its arrival
    time (real), until the job ends."""
    p = subprocess.Popen(ctl.base + ["logs", str(job), "--follow", "--json"],
                         stdout=subprocess.PIPE, text=True,
                         stderr=subprocess.DEVNULL)
    for line in p.stdout:
        try:
            o = json.loads(line)
        except ValueError:
            continue
        sink.append((time.time(), o.get("node"), o.get("line", "")))
    p.wait()
    stop.set()


def run_job(mode, a, ctl):
    d = os.path.join(a.work, mode)
    os.makedirs(d)
    with open(os.path.join(d, "job.json"), "w") as f:
        json.dump(job_spec(mode, a), f, indent=1)
    r = subprocess.run(ctl.base + ["submit", os.path.join(d, "job.json")],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit("%s: submit failed: %s" % (mode, r.stderr))
    job = int(r.stdout.strip())
    t0 = time.time()
    lines, done = [], threading.Event()
    th = threading.Thread(target=follow_logs, args=(ctl, job, lines, done),
                          daemon=True)
    th.start()
    polls = []          # (real t, samples, evictions, state, market_time)
    notices = []        # real t of each notice (warnings, evictions)
    seen_warn = set()
    last_evict = 0
    st = None
    while True:
        st = ctl.status(job)
        if st is None:
            time.sleep(0.25)
            continue
        now = time.time()
        prog = st.get("program") or {}
        samples = prog.get("samples") or 0
        ev = st.get("evictions") or 0
        polls.append((now, samples, ev, st["state"], st.get("market_time")))
        new = False
        for e in ctl.events(job):
            if e.get("kind") == "warning" and e["id"] not in seen_warn:
                seen_warn.add(e["id"])
                new = True
        if ev > last_evict:
            new = True
            last_evict = ev
        # warnings and evictions of one price spike (within 2 s real) are
        # one notice
        if new and (not notices or now - notices[-1] > 2.0):
            notices.append(now)
        if st["state"] not in ("running", "queued"):
            break
        if now - t0 > a.job_timeout:
            ctl.json("cancel", str(job))
            print("%s: cancelled after %d s" % (mode, a.job_timeout),
                  file=sys.stderr)
        time.sleep(0.25)
    t_end = time.time()
    done.wait(15)
    events = ctl.events(job)
    with open(os.path.join(d, "status.json"), "w") as f:
        json.dump(st, f, indent=1)
    with open(os.path.join(d, "events.json"), "w") as f:
        for e in events:
            f.write(json.dumps(e) + "\n")
    with open(os.path.join(d, "logs.txt"), "w") as f:
        for t, node, line in lines:
            f.write("%.2f [i%s] %s\n" % (t - t0, node, line))

    # work redone: at each start of rank 0 after the first, the most any
    # earlier line (or the daemon) reached, minus where it starts
    marks = [(t, int(m.group(1))) for t, _, line in lines
             for m in [ANY_RE.search(line)] if m]
    marks += [(t, s) for t, s, *_ in polls]
    marks.sort()
    starts = [(t, int(m.group(2)), int(m.group(1))) for t, _, line in lines
              for m in [START_RE.search(line)] if m]
    redone, per_restart = 0, []
    for k, (t, s, w) in enumerate(starts):
        before = max([x for u, x in marks if u < t - 0.05] or [0])
        if k > 0:
            per_restart.append((round(t - t0, 1), w, s, max(0, before - s)))
            redone += max(0, before - s)
    # notice to training: first poll with samples above the notice's, and
    # first rank-0 start line after the notice
    rise, reform = [], []
    for tn in notices:
        base = max([s for t, s, *_ in polls if t <= tn] or [0])
        later = [t for t, s, *_ in polls if t > tn and s > base]
        if later:
            rise.append(later[0] - tn)
        ls = [t for t, _, _ in starts if t > tn]
        if ls:
            reform.append(ls[0] - tn)
    acc = st.get("test_accuracy")
    kinds = {}
    for e in events:
        kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
    return {
        "mode": mode, "job": job, "state": st["state"],
        "cost": st.get("cost_usd"), "real": t_end - t0,
        "market_h": ((st.get("market_time") or T0) - T0) / 3600.0,
        "evictions": st.get("evictions"), "accuracy": acc,
        "samples": (st.get("program") or {}).get("samples"),
        "target": a.epochs * 60000, "redone": redone,
        "per_restart": per_restart, "notices": len(notices),
        "rise": rise, "reform": reform, "kinds": kinds,
        "starts": len(starts),
        "log_counts": {
            "resumed": sum(1 for _, _, l in lines if "resumed from" in l),
            "step failed": sum(1 for _, _, l in lines
                               if "step failed at" in l),
            "term": sum(1 for _, _, l in lines if "term: exiting" in l)},
        "program_events": [(e["at"] - T0, e["detail"]) for e in events
                           if e["kind"] in ("program", "error", "release",
                                            "eviction", "warning",
                                            "decision")
                           or (e["kind"] == "checkpoint"
                               and "stored" not in e["detail"])],
        "ckpts": sum(1 for e in events if e["kind"] == "checkpoint"
                     and "stored" in e["detail"]),
    }


def fmt_s(v):
    if not v:
        return "-"
    return "%.1f / %.1f" % (statistics.median(v), max(v))


LABEL = {"ondemand": "(a) ondemand, torchrun elastic (3 on-demand)",
         "fixed": "(b) standard fixed fleet, membership fixed (1 rel. + 2 spot)",
         "bidbrain": "(c) bidbrain, torchrun elastic (1 rel. + up to 2 spot)"}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", required=True)
    p.add_argument("--src", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--speedup", type=int, default=600)
    p.add_argument("--spikes", default="2.5,5.5",
                   help="market hours after the start")
    p.add_argument("--spike-minutes", type=int, default=30)
    p.add_argument("--modes", default="ondemand,fixed,bidbrain")
    p.add_argument("--job-timeout", type=int, default=240)
    p.add_argument("--grace", type=int, default=110,
                   help="program.grace_seconds of every job")
    a = p.parse_args()
    a.work = os.path.abspath(a.work)
    spikes = [T0 + int(float(h) * 3600) for h in a.spikes.split(",") if h]
    write_trace(os.path.join(a.work, "trace.json"), spikes,
                a.spike_minutes * 60)
    code = os.path.join(a.work, "code")
    os.makedirs(code)
    shutil.copy(os.path.join(a.src, "docs/examples/programs/"
                             "fashion_mnist_ddp.py"), code)
    tmp = os.path.join(a.work, "tmp")
    os.makedirs(tmp)
    # the binaries copied first: a build in the same tree while this runs
    # rewrites build/, and the run must be of one build
    bins = os.path.join(a.work, "bin")
    os.makedirs(bins)
    for _ in range(20):
        try:
            for b in ("proteusd", "proteusctl", "proteus-trainer"):
                shutil.copy2(os.path.join(a.build, b), bins)
            if subprocess.run([os.path.join(bins, "proteusctl"), "--help"],
                              capture_output=True).returncode in (0, 2):
                break
        except OSError:
            pass
        time.sleep(5)  # a link of the other build under way
    a.build = bins
    # what the binaries find beside them (BIN/../etc: on-demand prices,
    # the spot advisor; BIN/../docs: the shipped traces)
    for d in ("etc", "docs"):
        os.symlink(os.path.join(a.src, d), os.path.join(a.work, d))
    conf = os.path.join(a.work, "proteusd.conf")
    sock = os.path.join(a.work, "s.sock")
    with open(conf, "w") as f:
        f.write("db %s/p.db\ncontrol_socket %s\nlog_level notice\n"
                "trainer %s/proteus-trainer\n" % (a.work, sock, bins))
    env = dict(os.environ, TMPDIR=tmp)
    log = open(os.path.join(a.work, "proteusd.log"), "w")
    daemon = subprocess.Popen(["nice", os.path.join(a.build, "proteusd"),
                               "--config", conf], stdout=log,
                              stderr=subprocess.STDOUT, env=env)
    ctl = Ctl(os.path.join(a.build, "proteusctl"), sock)
    rows = []
    try:
        for _ in range(100):
            if subprocess.run(ctl.base + ["ping"], capture_output=True
                              ).returncode == 0:
                break
            time.sleep(0.1)
        load0 = open("/proc/loadavg").read().split()[0]
        for mode in a.modes.split(","):
            rows.append(run_job(mode, a, ctl))
            print("%s: done in %.0f s" % (mode, rows[-1]["real"]),
                  file=sys.stderr)
        load1 = open("/proc/loadavg").read().split()[0]
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()

    print("Program: fashion_mnist_ddp.py --epochs %d (%d samples) under "
          "/usr/bin/torchrun, 1 process a node, OMP_NUM_THREADS=1, no "
          "pinning, proteusd and its nodes under `nice`. Market: a hand-made "
          "m3.large us-east-1a trace, $0.02 but $5 (past every bid) for %d "
          "min at %s market h after the start (2016-03-02T00:00Z), "
          "world.speedup %d, program.grace_seconds %d. Load average %s before, %s after."
          % (a.epochs, a.epochs * 60000, a.spike_minutes,
             ", ".join(a.spikes.split(",")), a.speedup, a.grace, load0,
             load1))
    print()
    print("| policy / membership | state | cost $ | real s | market h | "
          "evictions | accuracy | work redone, samples (% of job) | "
          "notice to samples rising, median / max s | notice to group "
          "training, median / max s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print("| %s | %s | %.3f | %.0f | %.2f | %s | %s | %d (%.1f%%) | %s "
              "| %s |" % (LABEL[r["mode"]], r["state"], r["cost"] or 0,
                          r["real"], r["market_h"], r["evictions"],
                          "%.4f" % r["accuracy"] if r["accuracy"] else "-",
                          r["redone"], 100.0 * r["redone"] / r["target"],
                          fmt_s(r["rise"]), fmt_s(r["reform"])))
    print()
    for r in rows:
        print("- %s (job %d): program.samples %s of %d; %d notices; %d "
              "starts of rank 0; checkpoints stored %d; log lines: %s; "
              "restarts (real s, world, resumed at, redone): %s"
              % (r["mode"], r["job"], r["samples"], r["target"],
                 r["notices"], r["starts"], r["ckpts"],
                 json.dumps(r["log_counts"]), r["per_restart"] or "none"))
        for at, det in r["program_events"]:
            if det.startswith("{"):
                try:
                    o = json.loads(det)
                    det = " ".join(str(o.get(k)) for k in
                                   ("event", "action", "instance", "market",
                                    "reason") if o.get(k) is not None)
                except ValueError:
                    pass
            print("    - %+.2f h: %s" % (at / 3600.0, det[:200]))
    with open(os.path.join(a.work, "rows.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
