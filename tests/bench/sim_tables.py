#!/usr/bin/env python3
"""sim_tables.py -- markdown tables (and a gnuplot plot) of the runs that
sim_windows.py prints (issue 12's simulate benchmark).

usage: sim_tables.py TITLE BILLING RUNS.jsonl [PLOT.png]
  BILLING legacy-hourly: BidBrain against ondemand and standard;
  per-second: against standard and each EC2 Fleet strategy.
Per run: cost per work-hour of every policy and of the oracle, BidBrain's
savings, its multiple of the oracle, runtime ratio to standard; then the
means and worst cases, per job size and over all; the plot is the mean
cost per work-hour over the windows against the job size, one line per
policy, at the largest spot cap.
"""
import json
import os
import subprocess
import sys
import tempfile

FLEET = ["lowest-price", "capacity-optimized", "price-capacity-optimized",
         "diversified"]
SHORT = {"lowest-price": "lowest", "capacity-optimized": "cap-opt",
         "price-capacity-optimized": "pco", "diversified": "divers",
         "oracle-paid": "or-paid", "bidbrain": "bidbrain",
         "standard": "standard", "ondemand": "ondemand", "spread": "spread",
         "oracle": "oracle"}


def cpw(r, p):
    x = r.get(p)
    return x["cost_per_work_usd"] if x and x["cost_per_work_usd"] else None


def sv(r, a, b):
    x, y = cpw(r, a), cpw(r, b)
    return None if x is None or y is None else 1 - x / y


def pct(x):
    return "-" if x is None else "%.1f%%" % (100 * x)


def f4(x):
    return "-" if x is None else "%.4f" % x


def main(argv):
    title, billing, path = argv[1:4]
    plot = argv[4] if len(argv) > 4 else None
    rows = [json.loads(l) for l in open(path) if l.startswith("{")]
    if not rows:
        sys.exit("no runs in " + path)
    pols = [p for p in rows[0] if isinstance(rows[0][p], dict)]
    legacy = billing == "legacy-hourly"
    base = ["ondemand", "standard"] if legacy else \
        ["standard"] + [p for p in FLEET if p in pols]
    print("### " + title)
    print()
    if os.environ.get("SUMMARY_ONLY"):
        summary(rows, base)
        return
    print("Cost per work-hour (USD) of every policy; BidBrain's saving against "
          "%s; its cost per work-hour as a multiple of the oracle's bound (x "
          "oracle); its runtime over standard's." % ", ".join(base))
    print()
    head = ["start", "work-h", "cap"] + [SHORT.get(p, p) for p in pols] + \
        ["BB vs " + SHORT[b] for b in base] + ["BB x oracle", "BB rt/std"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * 3 + "---:|" * (len(head) - 3))
    for r in rows:
        cells = [r["start"], "%g" % r["work_hours"], str(r["cap"])]
        for p in pols:
            c = f4(cpw(r, p))
            if not r[p]["completed"] and not p.startswith("oracle"):
                c += " (not done)"
            cells.append(c)
        cells += [pct(sv(r, "bidbrain", b)) for b in base]
        o = r["bidbrain"].get("ratio_to_oracle")
        cells.append("-" if o is None else "%.2f" % o)
        cells.append("%.2f" % (r["bidbrain"]["runtime_hours"] /
                               r["standard"]["runtime_hours"]))
        print("| " + " | ".join(cells) + " |")
    print()
    summary(rows, base)
    if plot:
        draw(title, rows, pols, sorted({r["work_hours"] for r in rows}),
             plot)


def summary(rows, base):
    sizes = sorted({r["work_hours"] for r in rows})
    print("| work-h | runs | " + " | ".join(
        "BB vs %s mean (worst)" % SHORT[b] for b in base) +
        " | BB x oracle mean | BB x oracle-paid mean | BB rt/std max |")
    print("|---:|---:|" + "---:|" * (len(base) + 3))
    for wh in sizes + [None]:
        sel = [r for r in rows if wh is None or r["work_hours"] == wh]
        cells = ["all" if wh is None else "%g" % wh, str(len(sel))]
        for b in base:
            v = [sv(r, "bidbrain", b) for r in sel]
            v = [x for x in v if x is not None]
            cells.append("%s (%s)" % (pct(sum(v) / len(v)), pct(min(v)))
                         if v else "-")
        for o in ("oracle", "oracle-paid"):
            v = [cpw(r, "bidbrain") / cpw(r, o) for r in sel
                 if cpw(r, o) and cpw(r, "bidbrain")]
            cells.append("%.2f" % (sum(v) / len(v)) if v else "-")
        cells.append("%.2f" % max(r["bidbrain"]["runtime_hours"] /
                                  r["standard"]["runtime_hours"]
                                  for r in sel))
        print("| " + " | ".join(cells) + " |")


def draw(title, rows, pols, sizes, out):
    cap = max(r["cap"] for r in rows)
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "cpw.dat")
        with open(data, "w") as f:
            for p in pols:
                f.write("# %s\n" % p)
                for wh in sizes:
                    v = [cpw(r, p) for r in rows
                         if r["work_hours"] == wh and r["cap"] == cap]
                    v = [x for x in v if x]
                    if v:
                        f.write("%g %g\n" % (wh, sum(v) / len(v)))
                f.write("\n\n")
        plots = ", ".join(
            "'%s' index %d with linespoints title '%s'" % (data, i, p)
            for i, p in enumerate(pols))
        script = """
set terminal pngcairo size 900,600
set output '%s'
set title "%s\\nmean cost per work-hour over the windows, spot cap %d" font ",10"
set xlabel 'job size (work-hours)'
set ylabel 'USD per work-hour'
set logscale xy
set key outside right
set grid
plot %s
""" % (out, title.replace('"', "'"), cap, plots)
        subprocess.run(["gnuplot"], input=script, text=True, check=True)


if __name__ == "__main__":
    main(sys.argv)
