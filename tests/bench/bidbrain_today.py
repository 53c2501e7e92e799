#!/usr/bin/env python3
"""bidbrain_today.py -- issue 40: BidBrain on today's (2021, per-second)
market against EC2 Fleet's four strategies and the hindsight bound, and
BidBrain against Uniform Progress over a range of deadlines.

usage: bidbrain_today.py CTL SHARED SRC [PLOT.png]
Windows, jobs and seeds are fixed below; none of them was used to tune
BidBrain (docs/benchmarks.md, "BidBrain on today's market")."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sim_windows  # noqa: E402  (its run: one simulate --json)

FLEET = ["lowest-price", "capacity-optimized", "price-capacity-optimized",
         "diversified"]
# held-out per-second windows (the benchmark windows of bench_simulate
# are 2021-03-16, 04-01, 04-16; these are others)
WINDOWS = ["2021-03-22", "2021-04-08", "2021-04-28"]
SEEDS = ["1", "2", "3"]
TYPES8 = ["c4.large", "c4.xlarge", "c4.2xlarge", "c5.xlarge", "m4.large",
          "m4.xlarge", "m5.xlarge", "r4.large"]
TYPES8B = ["c4.xlarge", "c4.2xlarge", "c4.4xlarge", "c5.xlarge",
           "m4.xlarge", "m4.2xlarge", "m4.4xlarge", "m5.xlarge"]


def job(name, types, wh, cap, eff, tier=2):
    return {"name": name, "region": "us-east-1", "work_hours": wh,
            "reference_type": "c4.xlarge", "instances": 16,
            "reliable": {"type": "c4.xlarge", "count": tier},
            "spot": {"types": types, "max_instances": cap},
            "scaling_efficiency": eff, "startup_seconds": 120,
            "clock_seconds": 60}


JOBS = [job("8 small types, e 0.93", TYPES8, 900, 48, 0.93),
        job("8 types to 4xlarge, e 0.93", TYPES8B, 900, 48, 0.93),
        job("8 small types, e 0.97, 400 wh", TYPES8, 400, 32, 0.97),
        # no reliable tier: nothing to spread over a bigger fleet (session
        # 31: the runtime floor had not held for such jobs)
        job("8 small types, no tier, e 0.93", TYPES8, 900, 48, 0.93, 0)]
# part 2 also runs jobs without a tier, under e below 1 and at 1
NOTIER = [job("2021 per-second, no tier, e 0.9", TYPES8, 200, 48, 0.9, 0),
          job("2021 per-second, no tier, e 1", TYPES8, 200, 48, 1.0, 0)]


def sim(ctl, trace, od, spec, start, seed, pols, billing="per-second"):
    return sim_windows.run(ctl, trace, od, spec, billing, pols, start,
                           ("--seed", seed))


def cpw(r):
    return r["cost_usd"] / r["work_done_hours"]


def part1(ctl, shared, src):
    trace = shared + "/traces/us-east-1_2021-03_2021-05_linux.json.gz"
    od = src + "/etc/ondemand/us-east-1_2021-03_2021-05.json"
    pols = ",".join(["bidbrain"] + FLEET + ["oracle-paid"])
    print("### 1. Cost per work-hour, per-second 2021 (held-out windows)")
    print()
    print("| job | start | seed | BidBrain $/wh | h | " +
          " | ".join("vs " + f for f in FLEET) +
          " | lowest-price h | oracle-paid $/wh | x bound | any plan vs "
          "lowest-price at most |")
    print("|" + "---|" * (10 + len(FLEET) - 1))
    worst = {f: 1.0 for f in FLEET}
    worst_x = 0
    late = 0
    n = 0
    for spec in JOBS:
        for st in WINDOWS:
            for seed in SEEDS:
                r = sim(ctl, trace, od, spec, st, seed, pols)
                b = r["bidbrain"]
                if not b["completed"]:
                    print("| %s | %s | %s | not done |" % (spec["name"],
                                                           st, seed))
                    continue
                m = []
                for f in FLEET:
                    s = 1 - cpw(b) / cpw(r[f])
                    worst[f] = min(worst[f], s)
                    m.append("%.1f%%" % (100 * s))
                x = cpw(b) / cpw(r["oracle-paid"])
                worst_x = max(worst_x, x)
                lp = r["lowest-price"]["runtime_hours"]
                late += b["runtime_hours"] > lp
                n += 1
                # the most any plan that pays its hours could save
                # against lowest-price: the bound's saving
                head = 1 - cpw(r["oracle-paid"]) / cpw(r["lowest-price"])
                print("| %s | %s | %s | %.4f | %.1f | %s | %.1f | %.4f | "
                      "%.2fx | %.1f%% |" % (spec["name"], st, seed, cpw(b),
                                   b["runtime_hours"], " | ".join(m), lp,
                                   cpw(r["oracle-paid"]), x, 100 * head))
    print()
    print("runs: %d; worst saving against each Fleet strategy: %s; worst "
          "ratio to oracle-paid: %.2fx; runs later than lowest-price: %d"
          % (n, ", ".join("%s %.1f%%" % (f, 100 * worst[f])
                          for f in FLEET), worst_x, late))
    print()


def scarce(dirname):
    """A synthetic market whose spot is gone for hours at a time (as
    tests/unit/test_sim_deadline.c's scarce_market, 2 zones of c3.xlarge
    at 0.05-0.08, outages above on-demand 1 in 24 ten-minute steps, 1-8
    h long), where a deadline binds: trace, on-demand prices, job."""
    x, M, H = 42, (1 << 64) - 1, 3600
    out_until, recs = -1, []
    for ts in range(0, 6 * 86400 + 1, 600):
        x = (x * 6364136223846793005 + 1442695040888963407) & M
        if ts >= out_until and (x >> 33) % 24 == 0:
            out_until = ts + H * (1 + (x >> 45) % 8)
        p = 900000 if ts < out_until else 50000 + ((x >> 20) % 30000)
        t = time.strftime("%Y-%m-%dT%H:%M:%S.000Z",
                          time.gmtime(ts + 1600000000))
        for z, q in (("us-east-1a", p), ("us-east-1b", p + 1000)):
            recs.append({"AvailabilityZone": z, "InstanceType": "c3.xlarge",
                         "ProductDescription": "Linux/UNIX",
                         "SpotPrice": "%.6f" % (q / 1e6), "Timestamp": t})
    tr, od = dirname + "/scarce.json", dirname + "/scarce-od.json"
    json.dump({"SpotPriceHistory": recs}, open(tr, "w"))
    json.dump({"us-east-1": {"c3.xlarge": 0.5}}, open(od, "w"))
    job = {"name": "scarce", "region": "us-east-1",
           "reference_type": "c3.xlarge", "scaling_efficiency": 1,
           "startup_seconds": 120, "work_hours": 30, "instances": 2,
           "reliable": {"type": "c3.xlarge", "count": 0},
           "spot": {"types": ["c3.xlarge"], "max_instances": 2},
           "restart_seconds": 60, "interruption_rates": {"default": 0}}
    return tr, od, job


def part2(ctl, shared, src, plot):
    tmp = tempfile.mkdtemp()
    str_, sod, sjob = scarce(tmp)
    # the scarce market under scalings where a smaller fleet is cheaper
    # per work: a plan that goes slow there meets the outages late
    # (docs/benchmarks.md, session 31)
    sjob9 = dict(sjob, scaling_efficiency=0.9)
    sjob8 = dict(sjob, scaling_efficiency=0.8, instances=4,
                 spot={"types": ["c3.xlarge"], "max_instances": 4})
    cases = [
        ("synthetic scarce market", str_, sod, sjob, "per-second",
         ["2020-09-13T12:26:40Z"]),
        ("scarce, e 0.9", str_, sod, sjob9, "per-second",
         ["2020-09-13T12:26:40Z"]),
        ("scarce, e 0.8, 4 instances", str_, sod, sjob8, "per-second",
         ["2020-09-13T12:26:40Z"]),
        ("2016 legacy, m3.large job",
         shared + "/traces/us-east-1_2016-02_2016-04_linux.json.gz",
         src + "/etc/ondemand/us-east-1_2016-02_2016-04.json",
         json.load(open(src + "/docs/examples/job-2016-m3large.json")),
         "legacy-hourly", ["2016-03-12", "2016-04-02"]),
        ("2021 per-second, 8 small types",
         shared + "/traces/us-east-1_2021-03_2021-05_linux.json.gz",
         src + "/etc/ondemand/us-east-1_2021-03_2021-05.json",
         JOBS[0], "per-second", ["2021-03-22", "2021-04-28"]),
    ] + [(j["name"],
          shared + "/traces/us-east-1_2021-03_2021-05_linux.json.gz",
          src + "/etc/ondemand/us-east-1_2021-03_2021-05.json",
          j, "per-second", ["2021-03-22", "2021-04-28"]) for j in NOTIER]
    factors = [1.02, 1.1, 1.3, 1.6, 2.0, 3.0]
    print("### 2. Deadlines: BidBrain against Uniform Progress")
    print()
    print("deadline = the on-demand runtime x factor (1.02: barely "
          "feasible on demand)")
    print()
    print("| case | start | seed | factor | D h | BidBrain met | h | $ | "
          "UP met | h | $ | BB/UP cost |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    pts = []
    missed = 0
    dearer = []
    for name, trace, od, spec, billing, starts in cases:
        for st in starts:
            for seed in SEEDS[:2]:
                odh = sim(ctl, trace, od, spec, st, seed, "ondemand",
                          billing)["ondemand"]["runtime_hours"]
                for f in factors:
                    j = dict(spec)
                    j["finish_by_hours"] = round(odh * f, 2)
                    r = sim(ctl, trace, od, j, st, seed,
                            "bidbrain,uniform-progress", billing)
                    b, u = r["bidbrain"], r["uniform-progress"]
                    ratio = b["cost_usd"] / u["cost_usd"]
                    if u.get("deadline_met") and not b.get("deadline_met"):
                        missed += 1
                    if ratio > 1:
                        dearer.append(ratio)
                    pts.append((name, st, seed, f, b["cost_usd"],
                                u["cost_usd"]))
                    print("| %s | %s | %s | %.2f | %.1f | %s | %.1f | %.2f "
                          "| %s | %.1f | %.2f | %.3f |" % (
                              name, st, seed, f, j["finish_by_hours"],
                              b.get("deadline_met"), b["runtime_hours"],
                              b["cost_usd"], u.get("deadline_met"),
                              u["runtime_hours"], u["cost_usd"], ratio))
    print()
    print("runs: %d; BidBrain missed a deadline Uniform Progress met: %d; "
          "cost more than Uniform Progress: %d (at most %.1f%% more)"
          % (len(pts), missed, len(dearer),
             100 * (max(dearer) - 1) if dearer else 0))
    shutil.rmtree(tmp)
    if plot and shutil.which("gnuplot"):
        with tempfile.NamedTemporaryFile("w", suffix=".dat",
                                         delete=False) as d:
            for p in pts:
                if p[1] in ("2016-03-12", "2021-03-22",
                            "2020-09-13T12:26:40Z") and p[2] == "1" \
                        and "e 1" not in p[0]:
                    tag = "notier" if "no tier" in p[0] else p[0][:4]
                    d.write("%s %g %g %g\n" % (tag, p[3], p[4], p[5]))
            dat = d.name
        gp = ("set terminal pngcairo size 900,500; set output '%s'; "
              "set xlabel 'deadline / on-demand runtime'; "
              "set ylabel 'cost, USD'; set logscale y; set key outside; "
              "plot '< grep ^2016 %s' u 2:3 w lp t 'BidBrain 2016', "
              "'< grep ^2016 %s' u 2:4 w lp t 'Uniform Progress 2016', "
              "'< grep ^2021 %s' u 2:3 w lp t 'BidBrain 2021', "
              "'< grep ^2021 %s' u 2:4 w lp t 'Uniform Progress 2021', "
              "'< grep ^notier %s' u 2:3 w lp t 'BidBrain 2021 no tier', "
              "'< grep ^notier %s' u 2:4 w lp t 'Uniform Progress 2021 no tier', "
              "'< grep ^synt %s' u 2:3 w lp t 'BidBrain scarce', "
              "'< grep ^synt %s' u 2:4 w lp t 'Uniform Progress scarce'"
              % ((plot,) + (dat,) * 8))
        subprocess.run(["gnuplot", "-e", gp], check=False)
        os.unlink(dat)
        print("plot: %s" % plot)
    print()


def main(argv):
    ctl, shared, src = argv[1:4]
    plot = argv[4] if len(argv) > 4 else None
    part1(ctl, shared, src)
    part2(ctl, shared, src, plot)


if __name__ == "__main__":
    main(sys.argv)
