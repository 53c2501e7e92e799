#!/usr/bin/python3
"""bidbrain_tiers.py -- BidBrain built one or more ways, side by side, on
jobs with and without a reliable tier (issue 40, session 31: the runtime
floor had not held for jobs with no tier to spread over a bigger fleet).

Part 1, no deadline: the 8 small types of bidbrain_today.py, 600
work-hours, reliable c4.xlarge x 0/1/2/4, (instances, spot cap) 8/24,
16/48, 32/64, scaling 0.9 and 1.0, on the 2021 windows 03-10 and 04-12
(neither a held-out window of bidbrain_today.py), seed 1.  Per build:
BidBrain's cost per work-hour and runtime against EC2 Fleet's
lowest-price.
Part 2, deadlines: reliable 0 and 2, 16/48, the same scalings, the
on-demand runtime x 1.05/1.3/2/3, 03-12 and 04-20, seeds 1-2.  Per
build: runs that missed a deadline Uniform Progress met, runs dearer
than Uniform Progress by more than 0.1%, and the worst ratio to it.

usage: bidbrain_tiers.py SHARED SRC BUILD [BUILD...]
(a BUILD is a directory with proteusctl; a build outside the checkout
 needs the checkout's etc/ beside it, e.g. ln -s SRC/etc /tmp/etc for
 /tmp/b_x)"""
import concurrent.futures as cf
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bidbrain_today as bt  # noqa: E402  (its types, job shape, cpw)
import sim_windows  # noqa: E402  (its run: one simulate --json)

TIERS = [0, 1, 2, 4]
FLEETS = [(8, 24), (16, 48), (32, 64)]
EFFS = [0.9, 1.0]
WINDOWS1 = ["2021-03-10", "2021-04-12"]
WINDOWS2 = ["2021-03-12", "2021-04-20"]
FACTORS = [1.05, 1.3, 2.0, 3.0]


def spec(tier, inst, cap, eff, wh):
    j = bt.job("t%d i%d e%g" % (tier, inst, eff), bt.TYPES8, wh, cap, eff,
               tier)
    j["instances"] = inst
    return j


def part1(ctls, trace, od, pool):
    print("### 1. No deadline: BidBrain against lowest-price")
    print()
    print("| tier | instances/cap | e | start | lowest-price $/wh | h | " +
          " | ".join("%d: $/wh | h | vs lp" % (i + 1)
                     for i in range(len(ctls))) + " |")
    print("|" + "---|" * (6 + 3 * len(ctls)))
    cases = [(t, f, e, w) for t in TIERS for f in FLEETS for e in EFFS
             for w in WINDOWS1]
    futs = []
    for t, (inst, cap), e, w in cases:
        j = spec(t, inst, cap, e, 600)
        lp = pool.submit(sim_windows.run, ctls[0], trace, od, j,
                         "per-second", "lowest-price", w, ("--seed", "1"))
        bb = [pool.submit(sim_windows.run, c, trace, od, j, "per-second",
                          "bidbrain", w, ("--seed", "1")) for c in ctls]
        futs.append((t, inst, cap, e, w, lp, bb))
    worst = [1.0] * len(ctls)
    slow = [0.0] * len(ctls)
    for t, inst, cap, e, w, lp, bb in futs:
        lr = lp.result()["lowest-price"]
        cells = []
        for i, f in enumerate(bb):
            b = f.result()["bidbrain"]
            s = 1 - bt.cpw(b) / bt.cpw(lr)
            worst[i] = min(worst[i], s)
            slow[i] = max(slow[i], b["runtime_hours"] / lr["runtime_hours"])
            cells.append("%.4f | %.1f | %.1f%%" % (
                bt.cpw(b), b["runtime_hours"], 100 * s))
        print("| %d | %d/%d | %g | %s | %.4f | %.1f | %s |" % (
            t, inst, cap, e, w, bt.cpw(lr), lr["runtime_hours"],
            " | ".join(cells)))
    print()
    for i, c in enumerate(ctls):
        print("%d (%s): worst saving against lowest-price %.1f%%, longest "
              "runtime %.2fx lowest-price's" % (i + 1, c, 100 * worst[i],
                                                slow[i]))
    print()


def part2(ctls, trace, od, pool):
    print("### 2. Deadlines: BidBrain against Uniform Progress")
    print()
    futs = []
    for t in (0, 2):
        for e in EFFS:
            j = spec(t, 16, 48, e, 200)
            for w in WINDOWS2:
                for seed in ("1", "2"):
                    odh = sim_windows.run(ctls[0], trace, od, j,
                                          "per-second", "ondemand", w,
                                          ("--seed", seed))
                    odh = odh["ondemand"]["runtime_hours"]
                    for f in FACTORS:
                        d = dict(j, finish_by_hours=round(odh * f, 2))
                        up = pool.submit(sim_windows.run, ctls[0], trace, od,
                                         d, "per-second", "uniform-progress",
                                         w, ("--seed", seed))
                        bb = [pool.submit(sim_windows.run, c, trace, od, d,
                                          "per-second", "bidbrain", w,
                                          ("--seed", seed)) for c in ctls]
                        futs.append((t, e, w, seed, f, up, bb))
    missed = [0] * len(ctls)
    bad = [0] * len(ctls)
    worst = [0.0] * len(ctls)
    by = {}
    for t, e, w, seed, f, up, bb in futs:
        u = up.result()["uniform-progress"]
        for i, fb in enumerate(bb):
            b = fb.result()["bidbrain"]
            x = b["cost_usd"] / u["cost_usd"]
            missed[i] += bool(u.get("deadline_met")) and \
                not b.get("deadline_met")
            bad[i] += x > 1.001
            worst[i] = max(worst[i], x)
            k = (i, t, e)
            lo, hi = by.get(k, (9.0, 0.0))
            by[k] = (min(lo, x), max(hi, x))
    for i, c in enumerate(ctls):
        print("%d (%s): %d runs, missed where Uniform Progress met %d, "
              "dearer than it by more than 0.1%% %d, worst ratio %.3f" % (
                  i + 1, c, len(futs), missed[i], bad[i], worst[i]))
        for (j, t, e), (lo, hi) in sorted(by.items()):
            if j == i:
                print("  tier %d, e %g: BidBrain / Uniform Progress "
                      "%.3f-%.3f" % (t, e, lo, hi))
    print()


def main():
    shared, src, builds = sys.argv[1], sys.argv[2], sys.argv[3:]
    if not builds:
        sys.exit(__doc__)
    ctls = [os.path.join(b, "proteusctl") for b in builds]
    trace = shared + "/traces/us-east-1_2021-03_2021-05_linux.json.gz"
    od = src + "/etc/ondemand/us-east-1_2021-03_2021-05.json"
    with cf.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        part1(ctls, trace, od, pool)
        part2(ctls, trace, od, pool)


if __name__ == "__main__":
    main()
