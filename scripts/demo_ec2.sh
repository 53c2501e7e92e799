#!/bin/sh
# demo_ec2.sh -- `make demo-ec2`: proteusd's ec2 world against the fake EC2
# on loopback (tests/fake_ec2/fake_ec2.py: the EC2 Query API with every
# request's SigV4 checked, instances that are process groups here running
# their user data, per-instance metadata, per-zone spot prices, per-second
# bills).  This is not AWS: no instance is rented and nothing is paid.
#
# The fake and the daemon run their clocks 60 times faster from the same
# origin (ec2_clock_speedup / --speedup).  The example job is submitted,
# watched with `status --watch`, and at the end the fake prints one JSON
# line: {"instances_launched": N, "still_running": 0, "bad_signatures": 0,
# "billed_usd": X}, X being what the fake billed, which the demo checks
# against the job's cost.  Nothing is left running.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/demo_lib.sh"
demo_paths demo-ec2
od="$here/etc/ondemand/us-east-1_2021-03_2021-05.json"
speedup=60

rm -rf "$run"
mkdir -p "$run/instances"
origin=$(date +%s)
demo_ec2_market "$run/market.json"

echo "== the fake EC2 (loopback only; a clock $speedup times faster)"
fake= daemon=
stop() {
	[ -n "$daemon" ] && kill "$daemon" 2>/dev/null || true
	[ -n "$daemon" ] && wait "$daemon" 2>/dev/null || true
	exec 3>&- 2>/dev/null || true
	[ -n "$fake" ] && wait "$fake" 2>/dev/null || true
}
trap stop EXIT INT TERM
demo_start_fake --timeout 900 \
	--region us-east-1 --speedup "$speedup" --clock-origin "$origin" \
	--bill-from launch --boot-seconds 20 --market "$run/market.json" \
	--ondemand "$od" --instance-dir "$run/instances" \
	--identity-cert "$run/identity.pem"
echo "   http://127.0.0.1:$port/"

echo "== proteusd on the ec2 world (its config: $run/proteusd.conf)"
demo_ec2_conf 29000-29299
demo_start_ec2_daemon
demo_wait_daemon
demo_submit_watch "$here/docs/examples/job-ec2-mlr.json"
echo "== the job's launches and ends (proteusctl events $id)"
"$ctl" --socket "$sock" events "$id" | grep -E ' (launch|adopt|reject|eviction|release|end) ' | head -16 || true
echo
echo "== the result"
"$ctl" --socket "$sock" status "$id"
# the bills end where EC2's did once its listing said when (a few
# seconds after the job): the cost is read then
cost=
for _ in $(seq 1 120); do
	cost=$("$ctl" --socket "$sock" status "$id" --json | python3 -c \
		'import json,sys; o = json.load(sys.stdin)
print("%s %d" % (o["cost_usd"], o["enrolled"]) if o.get("bills_final") else "")')
	[ -n "$cost" ] && break
	sleep 0.5
done
[ -n "$cost" ] || { echo "demo-ec2: the bills are not final a minute after the job" >&2; exit 1; }
# for the benchmark (tests/bench/bench_ec2_world.sh): the daemon's CPU and
# the calls the fake served
awk '{print $14 + $15}' "/proc/$daemon/stat" > "$run/daemon_cpu_ticks" \
	2>/dev/null || true
curl -sf "http://127.0.0.1:$port/_ctl?cmd=state" > "$run/fake_state.json" \
	2>/dev/null || true
kill "$daemon"
wait "$daemon" 2>/dev/null || true
daemon=
# the fake's closing line: what EC2 would have billed
sleep 1
exec 3>&-
wait "$fake" 2>/dev/null || true
summary=$(grep '^{' "$run/fake.out" | tail -1)
echo
echo "== the fake EC2's closing line"
echo "$summary"
python3 - "$summary" $cost <<'PY'
import json, sys
s, cost, enrolled = json.loads(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
bad = []
# every node got the job key by enrollment (none was in its user data):
# the instances whose disk holds it, and the daemon's count
if s["enrolled"] < 2 or s["enrolled"] != enrolled:
    bad.append("%d instances enrolled, the daemon counts %d" % (s["enrolled"], enrolled))
if s["still_running"]:
    bad.append("%d instances still running" % s["still_running"])
if s["bad_signatures"]:
    bad.append("%d bad signatures" % s["bad_signatures"])
# equal to the micro-dollar: each bill ends where EC2's did
if abs(s["billed_usd"] - cost) > 0.5e-6:
    bad.append("the fake billed $%.6f, the job cost $%.6f" % (s["billed_usd"], cost))
print("the job's cost $%.6f; the fake billed $%.6f; %d nodes enrolled" % (cost, s["billed_usd"], s["enrolled"]))
if bad:
    sys.exit("demo-ec2: " + "; ".join(bad))
PY
trap - EXIT INT TERM
echo "(daemon log: $run/proteusd.log; database: $db; instances: $run/instances)"
