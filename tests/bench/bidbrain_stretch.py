#!/usr/bin/python3
"""bidbrain_stretch.py -- BidBrain built one or more ways (e.g. with
-DBB_DL_SLACK=0.5/0.6/0.75), side by side, on the cases that chose the
stretched runtime floor of a deadline job (issue 40, session 31;
docs/benchmarks.md, "A loose deadline buys a slower, cheaper run"):

1. the shipped 7-day 2016 slice (legacy-hourly), 96 work-hours of 16
   m3.large, no tier, scaling 0.9, from 2016-03-02, 03-03 and 03-04, at
   deadlines 9.6 to 40 h;
2. bidbrain_today.py's scarce market (spot gone for hours at a time) from
   its third day, at 1.6, 2 and 3 times the on-demand runtime: 30 work-hours
   on 4 instances at 0.8 and on 2 at 0.9, 60 on 4 at 0.8.

Each row: Uniform Progress's cost, then each build's BidBrain cost/hours
(MISS where it missed the deadline).  The builds' proteusctl need etc/
beside their folder (ln -s SRC/etc /tmp/etc for /tmp/b_x).

usage: bidbrain_stretch.py SRC BUILD [BUILD...]"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bidbrain_today as bt  # noqa: E402  (its scarce market)
import sim_windows  # noqa: E402  (its run: one simulate --json)

SLICE_JOB = {"name": "slice", "region": "us-east-1", "work_hours": 96,
             "instances": 16, "reference_type": "m3.large",
             "reliable": {"type": "m3.large", "count": 0},
             "spot": {"types": ["m1.large", "m3.large", "r3.large",
                                "c1.xlarge"], "max_instances": 16},
             "scaling_efficiency": 0.9, "startup_seconds": 120}


def cell(r):
    b = r["bidbrain"]
    return "%.3f/%.1fh%s" % (b["cost_usd"], b["runtime_hours"],
                             "" if b.get("deadline_met") else " MISS")


def row(ctls, trace, od, spec, billing, start, label):
    out = [sim_windows.run(c, trace, od, spec, billing,
                           "bidbrain,uniform-progress", start)
           for c in ctls]
    print("%s | UP %.3f | %s" % (label,
                                 out[0]["uniform-progress"]["cost_usd"],
                                 " | ".join(cell(r) for r in out)))


def main():
    src, builds = sys.argv[1], sys.argv[2:]
    if not builds:
        sys.exit(__doc__)
    ctls = [os.path.join(b, "proteusctl") for b in builds]
    print("builds: " + ", ".join(builds))
    tr = src + "/docs/examples/traces/us-east-1_2016-03-01_7d_linux.json.gz"
    od = src + "/etc/ondemand/us-east-1_2016-02_2016-04.json"
    for st in ("2016-03-02", "2016-03-03", "2016-03-04"):
        for by in (9.6, 10, 12, 16, 20, 30, 40):
            row(ctls, tr, od, dict(SLICE_JOB, finish_by_hours=by),
                "legacy-hourly", st, "slice %s by %g h" % (st, by))
    with tempfile.TemporaryDirectory() as tmp:
        tr, od, job = bt.scarce(tmp)
        st = time.strftime("%Y-%m-%dT%H:%M:%SZ",
                           time.gmtime(1600000000 + 2 * 86400))
        for e, inst, wh in ((0.8, 4, 30), (0.9, 2, 30), (0.8, 4, 60)):
            j = dict(job, scaling_efficiency=e, instances=inst,
                     work_hours=wh, spot={"types": ["c3.xlarge"],
                                          "max_instances": inst})
            odh = sim_windows.run(ctls[0], tr, od, j, "per-second",
                                  "ondemand", st)
            odh = odh["ondemand"]["runtime_hours"]
            for f in (1.6, 2, 3):
                row(ctls, tr, od, dict(j, finish_by_hours=odh * f),
                    "per-second", st, "scarce e %g, %d instances, %g wh, "
                    "x%g" % (e, inst, wh, f))


if __name__ == "__main__":
    main()
