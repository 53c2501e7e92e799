#!/bin/sh
# bench_ec2_fleet.sh -- 500 spot instances across 20 markets against the
# fake EC2 (issue 24): proteusd's ec2 world fills a fleet of 500 spot
# instances (5 types x 4 zones, the "diversified" policy) plus the job's
# one on-demand reliable instance, while some markets refuse
# (InsufficientInstanceCapacity: one always, four past 10 instances each)
# and a throttling storm (RequestLimitExceeded, p = 0.2, for 30 s) hits
# every call; then the job is cancelled (another 10 s storm) and the fleet
# drains.  Measured: the time to fill and to drain, the daemon's loop
# latency (a `ping` every 100 ms on its own connection) and the latency of
# the job's view (`job ID` every second) in each phase, the calls by
# action and their attempts, the throttled attempts, the capacity
# refusals, the daemon's (and the fake's) CPU, and that nothing is left
# running.
#
# The spot instances run `proteus-trainer node --stub` (register with the
# job's coordinator, then only heartbeat: docs/trainer.md); the reliable
# one runs the real node (MLR, niced), so that the job's clock moves and
# neither the daemon's stall watchdog nor the coordinator's (which wait
# for a clock) ends the job.  Both clocks at 60x (ec2_clock_speedup).
# Tunables (environment): FLEET_SPOT (500), FLEET_SPEEDUP (60),
# FLEET_STORM_P (0.2), FLEET_STORM_S (30), FLEET_FILL_MAX_S (300),
# FLEET_STEADY_S (10: how long the full fleet runs before the cancel).
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/demo_lib.sh"
: "${BUILD:=$here/build}"
: "${FLEET_SPOT:=500}"
: "${FLEET_SPEEDUP:=60}"
: "${FLEET_STORM_P:=0.2}"
: "${FLEET_STORM_S:=30}"
: "${FLEET_FILL_MAX_S:=300}"
: "${FLEET_STEADY_S:=10}"
ctl="$BUILD/proteusctl"
run="$BUILD/bench-ec2-fleet"
sock="$run/proteusd.sock"
od="$here/etc/ondemand/us-east-1_2021-03_2021-05.json"

rm -rf "$run"
mkdir -p "$run/instances"
fake= daemon=
trap demo_stop_all EXIT
trap 'exit 130' INT TERM

origin=$(date +%s)
day=$((origin - 86400))
types="c4.large m3.large m4.large r3.large r4.large"
python3 - "$run/market.json" "$day" $types <<'PY'
import json, sys
path, ts, types = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
zones = ['us-east-1a', 'us-east-1b', 'us-east-1c', 'us-east-1d']
# a little apart, so that the policy's ties are broken by price
json.dump([{'type': t, 'zone': z, 'price': round(0.025 + 0.002 * i + 0.0005 * k, 4), 'ts': ts}
           for i, t in enumerate(types) for k, z in enumerate(zones)], open(path, 'w'))
PY
cat > "$run/job.json" <<JSON
{
	"_comment": "bench_ec2_fleet.sh: 500 spot instances across 5 types x 4 zones and one reliable on-demand one; a job that does not end by itself (it is cancelled)",
	"name": "fleet-$FLEET_SPOT",
	"region": "us-east-1",
	"work_hours": 100000,
	"reference_type": "m4.large",
	"instances": $FLEET_SPOT,
	"reliable": {"type": "m4.large", "count": 1},
	"spot": {
		"types": ["c4.large", "m3.large", "m4.large", "r3.large", "r4.large"],
		"zones": ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"],
		"max_instances": $FLEET_SPOT
	},
	"policy": "diversified",
	"tick_seconds": 60,
	"startup_seconds": 60,
	"trainer": {"model": "mlr", "epochs": 1000, "batch": 128, "lr": 0.05},
	"world": {"name": "ec2", "ondemand_prices": "$od"}
}
JSON
# what the instances run: the reliable node trains (niced: the daemon's
# loop is what is measured), every spot node is a stub
cat > "$run/node.sh" <<SH
#!/bin/sh
for a; do
	[ "\$a" = --reliable ] && exec nice -n 10 "$BUILD/proteus-trainer" "\$@"
done
exec "$BUILD/proteus-trainer" "\$@" --stub
SH
chmod 0755 "$run/node.sh"

demo_start_fake --timeout 1200 \
	--region us-east-1 --zones a,b,c,d --speedup "$FLEET_SPEEDUP" \
	--clock-origin "$origin" --bill-from launch --boot-seconds 20 \
	--market "$run/market.json" --ondemand "$od" \
	--instance-dir "$run/instances" --identity-cert "$run/identity.pem"
url="http://127.0.0.1:$port/"
# capacity: (r4.large, us-east-1d) never has any; each zone of r3.large
# holds 10 spot instances at most
curl -sf -X POST --data-binary @- "${url}_ctl" > /dev/null <<'JSON'
{"capacity": [
 {"type": "r4.large", "zone": "us-east-1d", "market": "spot"},
 {"type": "r3.large", "zone": "us-east-1a", "market": "spot", "limit": 10},
 {"type": "r3.large", "zone": "us-east-1b", "market": "spot", "limit": 10},
 {"type": "r3.large", "zone": "us-east-1c", "market": "spot", "limit": 10},
 {"type": "r3.large", "zone": "us-east-1d", "market": "spot", "limit": 10}]}
JSON

# trainer_ports: 1003 slots of 3 ports (the coordinator's and 2 per
# instance: a PS and a worker), below Linux's ephemeral range (32768 on):
# the daemon's and the 500 stubs' outgoing connections take ports there,
# and in an earlier range the reliable node's PS found its port taken
cat > "$run/proteusd.conf" <<CONF
db $run/proteus.db
control_socket $sock
log_level notice
region us-east-1
ec2_endpoint $url
ec2_ami ami-0123456789abcdef0
ec2_subnets us-east-1a=subnet-0000000000000000a,us-east-1b=subnet-0000000000000000b,us-east-1c=subnet-0000000000000000c,us-east-1d=subnet-0000000000000000d
ec2_security_groups sg-0123456789abcdef0
ec2_instance_profile proteus-node
head_address 127.0.0.1
trainer_ports 20000-25999
ec2_node_trainer $run/node.sh
ec2_clock_speedup $FLEET_SPEEDUP
ec2_clock_origin $origin
ec2_identity_cert $run/identity.pem
ec2_price_poll_s 300
CONF
demo_start_ec2_daemon
demo_wait_daemon

rc=0
python3 "$here/tests/bench/ec2_fleet_probe.py" --ctl "$ctl" --sock "$sock" \
	--fake "$url" --job "$run/job.json" --daemon-pid "$daemon" \
	--fake-pid "$fake" --fleet $((FLEET_SPOT + 1)) \
	--storm-p "$FLEET_STORM_P" --storm-s "$FLEET_STORM_S" \
	--fill-max-s "$FLEET_FILL_MAX_S" --steady-s "$FLEET_STEADY_S" --out "$run/probe.json" || rc=$?
demo_end_run
left=0
for p in /proc/[0-9]*; do
	case $(readlink "$p/cwd" 2>/dev/null) in
	"$run/instances"/*) left=$((left + 1)) ;;
	esac
done
grep '^{' "$run/fake.out" | tail -1 > "$run/fake_summary.json" || true
[ "$rc" = 0 ] || { echo "the probe failed ($rc); see $run" >&2; exit 1; }

python3 - "$run" "$left" "$FLEET_SPEEDUP" "$FLEET_SPOT" <<'PY'
import json, os, sqlite3, sys
run, left, k, spot = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
p = json.load(open(os.path.join(run, 'probe.json')))
st = json.load(open(os.path.join(run, 'fake_state.json')))
summ = json.load(open(os.path.join(run, 'fake_summary.json')))
db = sqlite3.connect(os.path.join(run, 'proteus.db'))
job = p['job']
ev = dict(db.execute('SELECT kind, count(*) FROM events WHERE job_id = ? GROUP BY kind', (job,)).fetchall())
req = dict(db.execute('SELECT state, count(*) FROM ec2_requests WHERE job_id = ? GROUP BY state', (job,)).fetchall())
rej = db.execute("SELECT detail FROM events WHERE job_id = ? AND kind = 'reject'", (job,)).fetchall()
why = {}
for (d,) in rej:
    r = json.loads(d).get('reason', '')
    key = ('resting after ' + r.split('resting after: ')[1].split(':')[0] if 'resting after: ' in r
           else r.split(':')[0][:40])
    why[key] = why.get(key, 0) + 1
t_start = db.execute("SELECT min(at_us) FROM events WHERE job_id = ? AND kind = 'start'", (job,)).fetchone()[0]
ready = sorted(t for (t,) in db.execute("SELECT at_us FROM events WHERE job_id = ? AND kind = 'ready'", (job,)))
fails = db.execute("SELECT count(*) FROM events WHERE job_id = ? AND kind = 'node_failed'", (job,)).fetchone()[0]
m, ph = p['marks'], p['phases']
calls, att, flt = st['calls'], st['attempts'], st.get('faulted', {})
cap = sum(c['hits'] for c in st['capacity'])
fleet = max((c['running'] for c in p['counts']), default=0)
def lat(x):
    return '%.1f / %.1f / %.0f' % (x['p50_ms'], x['p99_ms'], x['max_ms']) if x else '-'
print('| measure | value |')
print('|---|---|')
print('| fleet asked | %d spot in 20 markets + 1 on-demand reliable |' % spot)
print('| most running at once (fake) | %d |' % fleet)
print('| filled (all running), real s after the submit | %s |' % ('%.1f' % m['filled'] if p['filled'] else 'not within %.0f s' % m['filled']))
print('| first instance running, real s | %.1f |' % m.get('first_running', float('nan')))
if ready and t_start:
    print('| nodes ready (joined): count; last, real s after the job start | %d; %.1f |'
          % (len(ready), (ready[-1] - t_start) / 1e6 / k))
print('| drain: cancel to none pending or running / to none left (processes gone), real s | %.1f / %.1f |'
      % (m.get('no_running', float('nan')) - m['cancel'], m['drained'] - m['cancel']))
print('| `proteusctl cancel` round trip, real s | %.2f |' % (m['cancelled'] - m['cancel']))
for name in ('idle', 'fill', 'steady', 'drain'):
    x = ph[name]
    print('| %s: real s; ping p50 / p99 / max ms; pings over 100 ms, over 1 s | %.1f; %s; %d, %d |'
          % (name, x['seconds'], lat(x['ping']), x['ping']['over_100ms'] if x['ping'] else 0,
             x['ping']['over_1s'] if x['ping'] else 0))
for name in ('fill', 'steady', 'drain'):
    print('| %s: `job` view p50 / p99 / max ms | %s |' % (name, lat(ph[name]['job_view'])))
print('| `job` view size, bytes (largest) | %d |' % p['job_view_bytes_max'])
print('| EC2 calls served (by action) | %d (%s) |' % (sum(calls.values()), ', '.join('%s %d' % kv for kv in sorted(calls.items()))))
print('| HTTP attempts (by action) | %d (%s) |' % (sum(att.values()), ', '.join('%s %d' % kv for kv in sorted(att.items()))))
print('| throttled attempts (RequestLimitExceeded injected) | %d (%s) |' % (
    sum(v.get('RequestLimitExceeded', 0) for v in flt.values()),
    ', '.join('%s %d' % (op, v.get('RequestLimitExceeded', 0)) for op, v in sorted(flt.items()))))
print('| RunInstances attempts per launch request (store) | %.2f (%d / %d) |' % (
    att.get('RunInstances', 0) / max(1, sum(req.values())), att.get('RunInstances', 0), sum(req.values())))
print('| InsufficientInstanceCapacity answers (attempts) | %d |' % cap)
gave_up = {}
for line in open(os.path.join(run, 'proteusd.log')):
    if 'warning' in line and 'RequestLimitExceeded' in line:
        for op in ('DescribeInstances', 'TerminateInstances', 'DescribeSpotPriceHistory', 'CreateTags'):
            if op in line:
                gave_up[op] = gave_up.get(op, 0) + 1
print('| calls throttled after every retry: RunInstances (rejects) / others (daemon log warnings) | %d / %s |'
      % (why.get('RequestLimitExceeded', 0), ', '.join('%s %d' % kv for kv in sorted(gave_up.items())) or '0'))
print('| launch requests (store: ec2_requests by state) | %s |' % ', '.join('%s %d' % kv for kv in sorted(req.items())))
print('| controller events | %s |' % ', '.join('%s %d' % kv for kv in sorted(ev.items()) if kv[0] != 'progress'))
print('| rejects by reason | %s |' % ', '.join('%s %d' % kv for kv in sorted(why.items(), key=lambda kv: -kv[1])))
print('| nodes failed (not joined in 900 market s) | %d |' % fails)
print('| daemon CPU s: idle / fill / steady / drain / whole run | %s / %s / %s / %s / %.1f |' % tuple(
    ['%.1f' % ph[n]['daemon_cpu_s'] for n in ('idle', 'fill', 'steady', 'drain')] + [p['daemon_cpu_total_s']]))
print('| fake EC2 CPU s: fill / steady / drain | %.1f / %.1f / %.1f |' % tuple(ph[n]['fake_cpu_s'] for n in ('fill', 'steady', 'drain')))
print('| worst pings (ms at real s after the submit) | %s |' % ', '.join('%.0f at %.1f' % tuple(x) for x in p['ping_worst']))
print('| fake summary | instances_launched %d, still_running %d, bad_signatures %d |'
      % (summ['instances_launched'], summ['still_running'], summ['bad_signatures']))
print('| processes left in the instances\' directories | %d |' % left)
bad = []
if not p['filled']:
    bad.append('the fleet did not fill')
if len(ready) < fleet or fails:
    bad.append('%d nodes of %d joined, %d failed to' % (len(ready), fleet, fails))
if not p['drained'] or p.get('cancel_rc'):
    bad.append('the fleet did not drain after the cancel')
if summ['still_running']:
    bad.append('%d instances still running' % summ['still_running'])
if summ['bad_signatures']:
    bad.append('%d bad signatures' % summ['bad_signatures'])
if left:
    bad.append('%d processes left' % left)
if bad:
    sys.exit('bench_ec2_fleet: ' + '; '.join(bad))
PY
