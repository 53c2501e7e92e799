#!/usr/bin/python3
"""pool_bench.py -- issue 41: several jobs in one pool under the four
arbiters (fifo, max-min, finish-time, goodput) in `simulate --workload`.

usage: pool_bench.py CTL SHARED SRC [OUTDIR]
Workloads: the shipped docs/examples/workload-*.json, and generated ones
(a fixed random seed per workload: job sizes, scalings, arrivals, pools),
on 2021 per-second windows and a 2016 legacy one, seeds 1-2.  For each it
checks the issue's bars: finish-time's max rho the lowest of the four
(ties within 0.5% count), its mean completion within 10% of the best, its
total cost within 5% of fifo's, and no limit ever past (over_limit 0 and
the peaks within the limits)."""
import json
import os
import random
import subprocess
import sys
import tempfile

ARBS = ["fifo", "max-min", "finish-time", "goodput"]
TYPES = ["c4.large", "c4.xlarge", "c4.2xlarge", "c5.xlarge", "m4.large",
         "m4.xlarge", "m4.2xlarge", "m5.xlarge", "r4.large"]
TYPES16 = ["m3.large", "m3.medium", "r3.large", "m1.large", "m1.xlarge",
           "m2.xlarge", "c1.xlarge", "d2.xlarge"]


def gen(rnd, legacy):
    n = rnd.randint(3, 7)
    types = TYPES16 if legacy else TYPES
    ref = "m3.large" if legacy else "c4.xlarge"
    jobs = []
    tiers = 0
    for i in range(n):
        big = rnd.random() < 0.3
        wh = rnd.choice([600, 900]) if big else rnd.choice([30, 60, 120, 240])
        mx = rnd.choice([24, 32, 48]) if big else rnd.choice([4, 8, 16])
        rel = rnd.choice([1, 2])
        tiers += rel
        sp = {"name": "j%d" % i, "region": "us-east-1", "work_hours": wh,
              "reference_type": ref, "instances": max(2, mx // 2),
              "reliable": {"type": ref, "count": rel},
              "spot": {"types": rnd.sample(types, rnd.randint(3, 6)),
                       "max_instances": mx},
              "scaling_efficiency": rnd.choice([0.8, 0.85, 0.9, 0.95]),
              "startup_seconds": 120, "clock_seconds": 60}
        if rnd.random() < 0.25:
            sp["restart_seconds"] = rnd.choice([120, 600])
        jobs.append({"name": "j%d-%dwh" % (i, wh),
                     "arrival_hours": round(rnd.uniform(0, 24), 2)
                     if i else 0,
                     "weight": 1, "job": sp})
    vc = 2 if legacy else 4
    pool = {"pool_spot_vcpus": "standard=%d" % (vc * rnd.choice([24, 32,
                                                               48, 64])),
            "pool_ondemand_vcpus": "standard=%d" %
            (vc * max(2, int(tiers * rnd.choice([0.6, 1.0, 1.5])))),
            "pool_lease_seconds": rnd.choice([1800, 3600])}
    if rnd.random() < 0.3:
        pool["pool_usd_per_hour"] = rnd.choice([2.0, 4.0])
    return {"pool": pool, "jobs": jobs}


def run(ctl, trace, od, wl_path, start, seed, billing):
    cmd = [ctl, "simulate", "--trace", trace, "--ondemand-prices", od,
           "--workload", wl_path, "--start", start, "--seed", seed,
           "--billing", billing, "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def limits_ok(doc, r):
    ok = r["over_limit"] == 0
    sp = doc["pool"]["pool_spot_vcpus"]
    for part in sp.split(","):
        if "=" in part:
            continue
        if part not in ("none", "") and r["peak_spot_vcpus"] > int(part):
            ok = False
    usd = doc["pool"]["pool_usd_per_hour"]
    if usd is not None and r["peak_usd_per_hour"] > usd + 1e-9:
        ok = False
    return ok


def check(doc):
    rs = {r["arbiter"]: r for r in doc["results"]}
    ft = rs["finish-time"]
    best_rho = min(r["max_rho"] for r in rs.values())
    best_mean = min(r["mean_completion_hours"] for r in rs.values())
    return {
        "rho": ft["max_rho"] <= best_rho * 1.005,
        "mean": ft["mean_completion_hours"] <= best_mean * 1.10,
        "cost": ft["cost_usd"] <= rs["fifo"]["cost_usd"] * 1.05,
        "limits": all(limits_ok(doc, r) for r in rs.values()),
    }


def main():
    ctl, shared, src = sys.argv[1:4]
    out = sys.argv[4] if len(sys.argv) > 4 else tempfile.mkdtemp()
    t21 = shared + "/traces/us-east-1_2021-03_2021-05_linux.json.gz"
    od21 = src + "/etc/ondemand/us-east-1_2021-03_2021-05.json"
    t16 = shared + "/traces/us-east-1_2016-02_2016-04_linux.json.gz"
    od16 = src + "/etc/ondemand/us-east-1_2016-02_2016-04.json"
    cases = [("shipped team", src + "/docs/examples/workload-2021-team.json",
              t21, od21, "2021-03-22T00:00:00Z", "per-second")]
    gens = int(os.environ.get("POOL_WORKLOADS", "12"))
    # base 4100: the workloads the arbiter was tuned on; 5100: held out
    # until session 25, which tuned on it too; 6100 to 9100: each held
    # out until a session looked at its failures (26, 27, 27, 27);
    # 10100 and 11100: unseen until session 27's last arbiter change;
    # 10100 to 13100: what session 29 chose ARB_GAIN on; 14100 to 16100:
    # unseen until that choice was made
    bases = [int(b) for b in os.environ.get(
        "POOL_BASES",
        "4100,5100,6100,7100,8100,9100,10100,11100,12100,13100,"
        "14100,15100,16100").split(",")]
    for base in bases:
        for k in range(gens):
            legacy = k % 4 == 3
            rnd = random.Random(base + k)
            doc = gen(rnd, legacy)
            p = os.path.join(out, "gen-%d-%02d.json" % (base, k))
            with open(p, "w") as f:
                json.dump(doc, f, indent=1)
            start = (["2021-03-20T00:00:00Z", "2021-04-05T00:00:00Z",
                      "2021-04-25T00:00:00Z"][k % 3] if not legacy
                     else "2016-03-01T00:00:00Z")
            cases.append(("%s %d-%02d (%d jobs%s)" %
                          ({4100: "tuned", 5100: "tuned2",
                            6100: "seen-6100", 7100: "seen-7100",
                            8100: "seen-8100", 9100: "seen-9100",
                            10100: "seen-10100", 11100: "seen-11100",
                            12100: "seen-12100", 13100: "seen-13100"}.get(
                                base, "held-out"),
                           base, k,
                           len(doc["jobs"]), ", 2016" if legacy else ""),
                          p, t16 if legacy else t21,
                          od16 if legacy else od21, start,
                          "legacy-hourly" if legacy else "per-second"))
    tally = {}
    print("| workload | seed | " + " | ".join(
        "%s max_rho / mean_h / cost" % a for a in ARBS) +
        " | bars (rho mean cost limits) |")
    print("|---|---|" + "---|" * (len(ARBS) + 1))
    for name, p, trace, od, start, billing in cases:
        group = name.split()[0]
        for seed in ("1", "2"):
            doc = run(ctl, trace, od, p, start, seed, billing)
            rs = {r["arbiter"]: r for r in doc["results"]}
            c = check(doc)
            t = tally.setdefault(group, {"n": 0, "rho": 0, "mean": 0,
                                         "cost": 0, "limits": 0})
            t["n"] += 1
            for k in c:
                t[k] += c[k]
            print("| %s | %s | " % (name, seed) + " | ".join(
                "%.3f / %.1f / %.1f" % (rs[a]["max_rho"],
                                        rs[a]["mean_completion_hours"],
                                        rs[a]["cost_usd"]) for a in ARBS) +
                  " | %s |" % " ".join("yes" if c[k] else "NO"
                                       for k in ("rho", "mean", "cost",
                                                 "limits")))
    print()
    for group, t in tally.items():
        print("%s: %d runs; finish-time's max rho the lowest: %d, its mean "
              "completion within 10%% of the best: %d, its cost within 5%% "
              "of fifo's: %d, no limit past: %d" %
              (group, t["n"], t["rho"], t["mean"], t["cost"], t["limits"]))


if __name__ == "__main__":
    main()
