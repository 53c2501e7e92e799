#!/bin/sh
# bench_ec2_world.sh -- the ec2 world against the fake EC2 (make demo-ec2's
# run: 1 reliable + up to 3 spot instances, MLR, the fake's and the
# daemon's clocks at 60x): acquire to the node's first update (launch event
# to ready event: boot, the user data, the node's registration), EC2 API
# calls per job-hour at steady state, and the daemon's CPU per
# instance-hour.  Times are market (fake) seconds unless said; divide by 60
# for real seconds.  No BLAS kernel matters here (the trainer's own
# benchmarks say which ran).
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
: "${BUILD:=$here/build}"
BUILD="$BUILD" sh "$here/scripts/demo_ec2.sh" > /dev/null
run="$BUILD/demo-ec2"
python3 - "$run" <<'PY'
import json, os, sqlite3, sys
run = sys.argv[1]
db = sqlite3.connect(os.path.join(run, "proteus.db"))
ev = db.execute("SELECT kind, instance_id, at_us FROM events WHERE kind IN "
                "('launch','ready','start','end')").fetchall()
launch = {i: t for k, i, t in ev if k == 'launch'}
ready = {i: t for k, i, t in ev if k == 'ready' and i in launch}
lat = sorted((ready[i] - launch[i]) / 1e6 for i in ready)
t0 = min(t for k, i, t in ev if k == 'start')
t1 = max(t for k, i, t in ev if k == 'end')
hours = (t1 - t0) / 3.6e9
inst_h = db.execute("SELECT coalesce(sum(to_us - from_us), 0) / 3.6e9 FROM "
                    "ledger WHERE instance_id IS NOT NULL").fetchone()[0]
st = json.load(open(os.path.join(run, "fake_state.json")))
calls = st.get("calls", {})
total = sum(calls.values())
ticks = int(open(os.path.join(run, "daemon_cpu_ticks")).read())
cpu_s = ticks / os.sysconf("SC_CLK_TCK")
print("| measure | value |")
print("|---|---|")
print("| instances | %d |" % len(launch))
if lat:
    print("| acquire to first update, market s (min / median / max) | %.0f / %.0f / %.0f |"
          % (lat[0], lat[len(lat) // 2], lat[-1]))
    print("| the same in real s at 60x | %.2f / %.2f / %.2f |"
          % (lat[0] / 60, lat[len(lat) // 2] / 60, lat[-1] / 60))
print("| job length, market hours | %.2f |" % hours)
print("| EC2 calls in all | %d (%s) |" % (total, ", ".join(
    "%s %d" % kv for kv in sorted(calls.items()))))
print("| EC2 calls per job-hour, market time | %.0f |" % (total / hours if hours else 0))
print("| EC2 calls per real minute | %.0f |" % (total / (hours * 60) * 60 if hours else 0))
print("| daemon CPU, s (whole run) | %.2f |" % cpu_s)
print("| daemon CPU per instance-hour (market), s | %.2f |" % (cpu_s / inst_h if inst_h else 0))
PY
