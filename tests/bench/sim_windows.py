#!/usr/bin/env python3
"""sim_windows.py -- BidBrain against the baselines and the oracle over
many windows and job sizes of one trace (issue 12): runs `proteusctl
simulate --json` for every (start, work_hours, spot cap) and prints one
JSON line per run, then a summary (mean and worst saving against
standard, runtime ratios, ratio to the oracle).

usage: sim_windows.py CTL TRACE OD JOB BILLING POLICIES START[,START..]
                      SIZES CAPS [--set key=value ...]
  START: YYYY-MM-DD; SIZES, CAPS: comma-separated numbers
  --set: a job field to override, e.g. --set scaling_efficiency=0.95
"""
import json
import os
import subprocess
import sys
import tempfile


def run(ctl, trace, od, job, billing, pols, start, extra=()):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(job, f)
        path = f.name
    try:
        out = subprocess.run(
            [ctl, "simulate", "--trace", trace, "--ondemand-prices", od,
             "--job", path, "--start", start, "--billing", billing,
             "--policy", pols, "--json", *extra],
            check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(path)
    return {r["policy"]: r for r in json.loads(out)["results"]}


def main(argv):
    ctl, trace, od, jobf, billing, pols, starts, sizes, caps = argv[1:10]
    sets = {}
    rest = argv[10:]
    while rest:
        if rest[0] == "--set":
            k, v = rest[1].split("=", 1)
            sets[k] = json.loads(v)
            rest = rest[2:]
        else:
            sys.exit("unknown argument " + rest[0])
    base = json.load(open(jobf))
    # files the job names are relative to it, not to the temporary copy
    for k in ("scaling_profile", "spot_advisor"):
        if isinstance(base.get(k), str):
            base[k] = os.path.join(os.path.dirname(os.path.abspath(jobf)),
                                   base[k])
    rows = []
    for start in starts.split(","):
        for wh in sizes.split(","):
            for cap in caps.split(","):
                job = dict(base)
                job["work_hours"] = float(wh)
                job["spot"] = dict(job["spot"], max_instances=int(cap))
                for k, v in sets.items():
                    job[k] = v
                res = run(ctl, trace, od, job, billing, pols, start)
                row = {"start": start, "work_hours": float(wh),
                       "cap": int(cap)}
                for p, r in res.items():
                    row[p] = {k: r.get(k) for k in (
                        "cost_usd", "runtime_hours", "cost_per_work_usd",
                        "completed", "evictions", "free_hours",
                        "ratio_to_oracle")}
                rows.append(row)
                print(json.dumps(row), flush=True)
    summary(rows)


def summary(rows):
    pols = [p for p in rows[0] if isinstance(rows[0][p], dict)]
    print("summary over %d runs" % len(rows))
    for p in pols:
        sv = [1 - r[p]["cost_per_work_usd"] / r["standard"]["cost_per_work_usd"]
              for r in rows if "standard" in r and r[p]["cost_per_work_usd"]]
        rt = [r[p]["runtime_hours"] / r["standard"]["runtime_hours"]
              for r in rows if "standard" in r]
        ro = [r[p]["ratio_to_oracle"] for r in rows
              if r[p].get("ratio_to_oracle")]
        nd = sum(1 for r in rows if not r[p]["completed"])
        line = "%-26s vs standard mean %6.1f%% worst %6.1f%% best %6.1f%%" % (
            p, 100 * sum(sv) / len(sv), 100 * min(sv), 100 * max(sv))
        line += "  runtime/std max %.2f mean %.2f" % (max(rt), sum(rt) / len(rt))
        if ro:
            line += "  x oracle mean %.2f" % (sum(ro) / len(ro))
        if nd:
            line += "  NOT DONE %d" % nd
        print(line)


if __name__ == "__main__":
    main(sys.argv)
