#!/usr/bin/env python3
"""sim_ceiling.py -- where BidBrain's money goes, and what the 43% target
of issue 12 would need, for one window (docs/benchmarks.md, "BidBrain
against the limit").

Runs `proteusctl simulate --policy bidbrain,standard --db` on the window
and reads the ledger back: the reliable tier's bill, the spot bill, spot
instance-hours paid and free (an evicted partial hour), each weighted by
its type's speed (vCPUs over reference_type's, the simulator's own rule,
read from bidbrain/instances.c).  Then, holding BidBrain's fleet, work
and runtime as they were:

  need  = 0.57 x standard's cost per work x work - the tier's bill
          (the spot bill that would make it 43% cheaper than standard)
  floor = the lowest price per speed-hour of any of the job's spot
          markets at any moment of BidBrain's run (no paid spot hour of
          any plan in that window costs less per speed-hour)
  free share needed = 1 - need / (floor x spot speed-hours run): the
          share of the spot speed-hours run that must be free (an evicted
          partial hour) even if every paid one cost the floor.

usage: sim_ceiling.py CTL SRC TRACE OD JOB STARTS SIZES CAPS
  STARTS: YYYY-MM-DD,...; SIZES, CAPS: comma-separated numbers
Prints a JSON line per run on stderr and a markdown table on stdout.
"""
import datetime as dt
import gzip
import json
import math
import os
import re
import sqlite3
import subprocess
import sys
import tempfile


def vcpus(src):
    text = open(os.path.join(src, "bidbrain", "instances.c")).read()
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r'\{"([a-z0-9.]+)", (\d+),', text)}


def parse_t(s):
    return int(dt.datetime.strptime(s[:19], "%Y-%m-%dT%H:%M:%S")
               .replace(tzinfo=dt.timezone.utc).timestamp())


def load_trace(trace):
    op = gzip.open if trace.endswith(".gz") else open
    with op(trace, "rt") as f:
        recs = json.load(f)["SpotPriceHistory"]
    return [(r["InstanceType"], r["AvailabilityZone"],
             r.get("ProductDescription", "Linux/UNIX"),
             parse_t(r["Timestamp"]), float(r["SpotPrice"])) for r in recs]


def floors_per_speed(recs, types, zones, speed, t0, t1):
    """Per type, the lowest price / speed of its markets over [t0, t1]:
    the price holding at t0 (the last record at or before it) and every
    record in the window."""
    before = {}
    best = {}
    for ty, z, prod, t, price in recs:
        if ty not in types or z not in zones or prod != "Linux/UNIX":
            continue
        p = price / speed[ty]
        if t <= t0:
            k = (ty, z)
            if k not in before or t > before[k][0]:
                before[k] = (t, p)
        elif t <= t1:
            best[ty] = min(best.get(ty, p), p)
    for (ty, _), (_, p) in before.items():
        best[ty] = min(best.get(ty, p), p)
    return best


def one(ctl, trace, od, base, speed, recs, start, wh, cap):
    job = dict(base)
    job["work_hours"] = float(wh)
    job["spot"] = dict(job["spot"], max_instances=int(cap))
    with tempfile.TemporaryDirectory() as d:
        jp = os.path.join(d, "job.json")
        db = os.path.join(d, "run.db")
        json.dump(job, open(jp, "w"))
        subprocess.run([ctl, "simulate", "--trace", trace,
                        "--ondemand-prices", od, "--job", jp,
                        "--start", start, "--billing", "legacy-hourly",
                        "--policy", "bidbrain,standard", "--db", db],
                       check=True, capture_output=True)
        c = sqlite3.connect(db)
        res = {}
        for jid, in c.execute("SELECT id FROM jobs"):
            pol = json.loads(c.execute(
                "SELECT detail FROM events WHERE job_id = ? AND "
                "kind = 'simulate'", (jid,)).fetchone()[0])["policy"]
            r = json.loads(c.execute(
                "SELECT detail FROM events WHERE job_id = ? AND "
                "kind = 'result'", (jid,)).fetchone()[0])
            acc = {"tier": 0.0, "spot": 0.0, "run_sh": 0.0, "free_sh": 0.0,
                   "billed_sh": 0.0}
            # a ledger row is an instance's whole life: its hours run,
            # the last (partial) one free when it was evicted, else paid
            for tier, ty, amt, us, note in c.execute(
                    "SELECT a.tier, a.type, l.amount_uusd, "
                    "l.to_us - l.from_us, l.note FROM ledger l "
                    "JOIN instances i ON l.instance_id = i.id "
                    "JOIN allocations a ON i.alloc_id = a.id "
                    "WHERE l.job_id = ?", (jid,)):
                if tier == "reliable":
                    acc["tier"] += amt / 1e6
                    continue
                secs = us / 1e6
                whole, part = divmod(secs, 3600.0)
                acc["spot"] += amt / 1e6
                acc["run_sh"] += speed[ty] * secs / 3600
                if note.endswith("evicted"):
                    acc["free_sh"] += speed[ty] * part / 3600
                    acc["billed_sh"] += speed[ty] * whole
                else:
                    acc["billed_sh"] += speed[ty] * (whole + (part > 0))
            res[pol] = dict(acc, cpw=r["cost_per_work_usd"],
                            work=r["work_done_hours"],
                            runtime_h=r["runtime_hours"])
    bb, std = res["bidbrain"], res["standard"]
    t0 = parse_t(start + "T00:00:00")
    fls = floors_per_speed(recs, set(job["spot"]["types"]),
                           set(job["spot"]["zones"]), speed, t0,
                           t0 + int(bb["runtime_h"] * 3600))
    fl = min(fls.values())
    run = bb["run_sh"]
    need = 0.57 * std["cpw"] * bb["work"] - bb["tier"]
    out = {
        "start": start, "work_hours": float(wh), "cap": int(cap),
        "saving_vs_standard": 1 - bb["cpw"] / std["cpw"],
        "tier_share_of_standard": std["tier"] / (std["tier"] + std["spot"]),
        "tier_share_of_bidbrain": bb["tier"] / (bb["tier"] + bb["spot"]),
        "floor_usd_per_speed_h": fl,
        "bb_usd_per_billed_speed_h": bb["spot"] / bb["billed_sh"]
        if bb["billed_sh"] else None,
        "std_usd_per_billed_speed_h": std["spot"] / std["billed_sh"]
        if std["billed_sh"] else None,
        "bb_usd_per_run_speed_h": bb["spot"] / run if run else None,
        "bb_free_share": bb["free_sh"] / run if run else 0,
        "need_usd_per_run_speed_h": need / run if run else None,
        "need_free_share_at_floor": max(0.0, 1 - need / (fl * run))
        if run else None,
    }
    # any fleet: the tier (rate T USD/h, speed S_R) and k <= cap spot
    # instances, every paid spot hour at its type's floor and a share f
    # of the spot time free.  For a fixed k, cost per work is a ratio of
    # two linear functions of the instances' types, so one type for all
    # k is best: (T + (1 - f) floor_t k s_t) / ((S_R + k s_t)
    # e^log2(R + k)).  No startup, no lost clock, no rounding of hours:
    # an upper bound on the saving any fleet gets at free share f.
    if "scaling_profile" not in job:
        odp = json.load(open(od))[job["region"]]
        rel = job["reliable"]
        R = rel["count"]
        T = R * odp[rel["type"]]
        S_R = R * speed[rel["type"]]
        e = job.get("scaling_efficiency", 0.9)

        def best_cpw(f):
            return min((T + (1 - f) * fls[t] * k * speed[t]) /
                       ((S_R + k * speed[t]) * e ** math.log2(R + k))
                       for t in fls for k in range(1, int(cap) + 1))

        out["ceiling_saving_at_bb_free_share"] = \
            1 - best_cpw(out["bb_free_share"]) / std["cpw"]
        lo, hi = 0.0, 1.0
        if best_cpw(0.0) <= 0.57 * std["cpw"]:
            hi = 0.0
        for _ in range(50):
            mid = (lo + hi) / 2
            if best_cpw(mid) <= 0.57 * std["cpw"]:
                hi = mid
            else:
                lo = mid
        out["need_free_share_any_fleet"] = hi
    return out


def main(argv):
    ctl, src, trace, od, jobf, starts, sizes, caps = argv[1:9]
    base = json.load(open(jobf))
    cpu = vcpus(src)
    speed = {t: cpu[t] / cpu[base["reference_type"]] for t in cpu}
    recs = load_trace(trace)
    rows = []
    for start in starts.split(","):
        for wh in sizes.split(","):
            for cap in caps.split(","):
                r = one(ctl, trace, od, base, speed, recs, start, wh, cap)
                print(json.dumps(r), file=sys.stderr)
                rows.append(r)

    def pct(x):
        return "-" if x is None else "%.1f%%" % (100 * x)

    def usd(x):
        return "-" if x is None else "%.4f" % x
    print("| start | work-h | cap | BB vs std | tier share std / BB | "
          "floor $/speed-h | BB $/billed speed-h | std $/billed speed-h | "
          "BB free share | 43% needs $/run speed-h | free share needed, "
          "BB's fleet at the floor | any fleet: ceiling at BB's free share "
          "| any fleet: free share needed |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print("| %s | %g | %d | %s | %s / %s | %s | %s | %s | %s | %s | %s "
              "| %s | %s |" % (
                  r["start"], r["work_hours"], r["cap"],
                  pct(r["saving_vs_standard"]),
                  pct(r["tier_share_of_standard"]),
                  pct(r["tier_share_of_bidbrain"]),
                  usd(r["floor_usd_per_speed_h"]),
                  usd(r["bb_usd_per_billed_speed_h"]),
                  usd(r["std_usd_per_billed_speed_h"]),
                  pct(r["bb_free_share"]),
                  usd(r["need_usd_per_run_speed_h"]),
                  pct(r["need_free_share_at_floor"]),
                  pct(r.get("ceiling_saving_at_bb_free_share")),
                  pct(r.get("need_free_share_any_fleet"))))


if __name__ == "__main__":
    main(sys.argv)
