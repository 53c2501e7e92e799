#!/usr/bin/python3
"""risk_calibration.py -- is the price-based eviction estimate biased on
the 2021 trace?  For each market of the issue-40 jobs' types (64 in
us-east-1), a sample every 5 minutes: does the price rise above the price
then within the hour (a bid at the price evicted by price), split by
whether the price came there by a rise.  The trailing 14 days' frequency
(what risk.c learns from) against the next day's, summed over days
15-69 of the trace.  docs/benchmarks.md, issue 40, session 30.

usage: risk_calibration.py SHARED"""
import bisect
import collections
import datetime
import gzip
import json
import sys

TYPES = {"c4.large", "c4.xlarge", "c4.2xlarge", "c4.4xlarge", "c5.xlarge",
         "m4.large", "m4.xlarge", "m4.2xlarge", "m4.4xlarge", "m5.xlarge",
         "r4.large"}


def ts(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")) \
        .timestamp()


def samples(t, p):
    out = []
    s = t[0] + 86400
    while s < t[-1] - 3600:
        i = bisect.bisect_right(t, s) - 1
        j = i
        while j > 0 and p[j - 1] == p[i]:
            j -= 1
        up = j > 0 and p[j - 1] < p[i]
        k = bisect.bisect_right(t, s + 3600)
        out.append((s, up, any(x > p[i] for x in p[i + 1:k])))
        s += 300
    return out


def main():
    with gzip.open(sys.argv[1] + "/traces/us-east-1_2021-03_2021-05_"
                   "linux.json.gz") as f:
        d = json.load(f)
    recs = d["SpotPriceHistory"] if isinstance(d, dict) else d
    ser = collections.defaultdict(list)
    for r in recs:
        if r["InstanceType"] in TYPES:
            ser[(r["InstanceType"], r["AvailabilityZone"])].append(
                (ts(r["Timestamp"]), float(r["SpotPrice"])))
    agg = collections.defaultdict(lambda: [0.0, 0, 0])
    n = 0
    for v in ser.values():
        v.sort()
        if len(v) < 10:
            continue
        n += 1
        sm = samples([x[0] for x in v], [x[1] for x in v])
        at = [x[0] for x in sm]
        for day in range(15, 70):
            a = sm[0][0] + day * 86400
            lo = bisect.bisect_left(at, a - 14 * 86400)
            mid = bisect.bisect_left(at, a)
            hi = bisect.bisect_left(at, a + 86400)
            for up in (True, False):
                tr = [x[2] for x in sm[lo:mid] if x[1] == up]
                nx = [x[2] for x in sm[mid:hi] if x[1] == up]
                if tr and nx:
                    g = agg[up]
                    g[0] += sum(tr) / len(tr) * len(nx)
                    g[1] += sum(nx)
                    g[2] += len(nx)
    for up, g in sorted(agg.items(), reverse=True):
        print("%s: predicted %.4f realised %.4f over %d samples" %
              ("after a rise" if up else "otherwise", g[0] / g[2],
               g[1] / g[2], g[2]))
    print("%d markets" % n)


if __name__ == "__main__":
    main()
