#!/usr/bin/python3
"""bidbrain_variants.py -- BidBrain built several ways, side by side on the
2021 per-second tuning windows (03-16, 04-01, 04-05, 04-16, 04-20; not the
held-out windows of bidbrain_today.py), seed 1: the three jobs of
bidbrain_today.py and the shipped docs/examples/job-2021-c4xlarge.json.
Prints each run's BidBrain cost per work-hour and its saving against
EC2 Fleet's lowest-price, then the sum of the costs per build.

usage: bidbrain_variants.py SHARED SRC BUILD [BUILD...]
(a BUILD is a directory with proteusctl, e.g. one made with
 make BUILD=/tmp/b_x CFLAGS=-D... /tmp/b_x/proteusctl; docs/benchmarks.md,
 issue 40, session 30)"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bidbrain_today as bt  # noqa: E402  (its jobs)

WINDOWS = ["2021-03-16", "2021-04-01", "2021-04-05", "2021-04-16",
           "2021-04-20"]


def main():
    shared, src, builds = sys.argv[1], sys.argv[2], sys.argv[3:]
    trace = shared + "/traces/us-east-1_2021-03_2021-05_linux.json.gz"
    od = src + "/etc/ondemand/us-east-1_2021-03_2021-05.json"
    with open(src + "/docs/examples/job-2021-c4xlarge.json") as f:
        jobs = bt.JOBS + [json.load(f)]
    tot = {b: 0.0 for b in builds}
    worst = {b: 1.0 for b in builds}
    with tempfile.TemporaryDirectory() as tmp:
        spec_path = os.path.join(tmp, "job.json")
        for spec in jobs:
            with open(spec_path, "w") as f:
                json.dump(spec, f)
            for st in WINDOWS:
                row = []
                for b in builds:
                    out = subprocess.run(
                        [b + "/proteusctl", "simulate", "--trace", trace,
                         "--ondemand-prices", od, "--job", spec_path,
                         "--policy", "bidbrain,lowest-price", "--start",
                         st + "T00:00:00Z", "--seed", "1", "--json"],
                        check=True, capture_output=True, text=True)
                    rs = {r["policy"]: r
                          for r in json.loads(out.stdout)["results"]}
                    bb, lp = rs["bidbrain"], rs["lowest-price"]
                    cpw = bb["cost_per_work_usd"]
                    sv = 1 - cpw / lp["cost_per_work_usd"]
                    tot[b] += cpw
                    worst[b] = min(worst[b], sv)
                    row.append("%.4f (%.1f%%)" % (cpw, 100 * sv))
                print("%s | %s | %s" % (spec["name"], st, " | ".join(row)))
    for b in builds:
        print("%s: sum of $/wh %.4f, worst saving vs lowest-price %.1f%%" %
              (b, tot[b], 100 * worst[b]))


if __name__ == "__main__":
    main()
