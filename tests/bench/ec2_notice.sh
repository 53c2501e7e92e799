#!/bin/sh
# ec2_notice.sh MODE -- what bench_ec2_notice.sh, bench_ec2_acquire.sh and
# bench_ec2_rebalance.sh share: the fake EC2 (as `make demo-ec2` runs it:
# its clock and the daemon's at 60x, 20 market s of boot, instances that
# run their user data and enroll) and proteusd's ec2 world on it, then
# jobs like docs/examples/job-ec2-mlr.json (1 reliable on-demand m4.large,
# up to 3 spot), each driven by tests/bench/ec2_notice_probe.py, and its
# report (markdown) over every run.  MODE:
#   notice     EC2_NOTICE_RUNS (2) jobs, each with EC2_NOTICE_N (5) spot
#              interruptions EC2_NOTICE_APART (7) real s apart
#   acquire    EC2_ACQUIRE_RUNS (3) jobs, nothing perturbed
#   rebalance  for world.rebalance "ignore" and "leave": a rebalance
#              recommendation followed by an interruption L market s
#              later, for each L of EC2_REBALANCE_LEADS ("120 600 1800"),
#              and one with none (a false alarm); EC2_REBALANCE_RUNS (1)
#              rounds
# EC2_NOTICE_EPOCHS (200) sets the jobs' length.  Runs in $BUILD/bench-ec2-MODE.
set -eu
mode=$1
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/demo_lib.sh"
: "${BUILD:=$here/build}"
: "${EC2_NOTICE_RUNS:=2}"
: "${EC2_NOTICE_N:=5}"
: "${EC2_NOTICE_APART:=7}"
: "${EC2_ACQUIRE_RUNS:=3}"
: "${EC2_REBALANCE_LEADS:=120 600 1800}"
: "${EC2_REBALANCE_RUNS:=1}"
: "${EC2_NOTICE_EPOCHS:=200}"
speedup=60
ctl="$BUILD/proteusctl"
run="$BUILD/bench-ec2-$mode"
sock="$run/proteusd.sock"
od="$here/etc/ondemand/us-east-1_2021-03_2021-05.json"
probe="$here/tests/bench/ec2_notice_probe.py"

rm -rf "$run"
mkdir -p "$run/instances" "$run/out"
fake= daemon=
# the daemon, then the fake (its stdin's end ends every instance), then
# anything still working in the instances' directories
cleanup() {
	set +e
	if [ -n "$daemon" ]; then
		kill "$daemon" 2>/dev/null
		wait "$daemon" 2>/dev/null
	fi
	exec 3>&- 2>/dev/null
	if [ -n "$fake" ]; then
		i=0
		while kill -0 "$fake" 2>/dev/null && [ $i -lt 100 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -9 "$fake" 2>/dev/null
		wait "$fake" 2>/dev/null
	fi
	for p in /proc/[0-9]*; do
		case $(readlink "$p/cwd" 2>/dev/null) in
		"$run/instances"/*) kill -9 "${p#/proc/}" 2>/dev/null ;;
		esac
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

origin=$(date +%s)
day=$((origin - 86400))
hour=$((origin - 3600))
cat > "$run/market.json" <<JSON
[{"type": "c4.large", "zone": "*", "price": 0.031, "ts": $day},
 {"type": "m4.large", "zone": "*", "price": 0.037, "ts": $day},
 {"type": "c4.large", "zone": "us-east-1b", "price": 0.029, "ts": $hour}]
JSON
demo_start_fake --timeout 3600 \
	--region us-east-1 --speedup "$speedup" --clock-origin "$origin" \
	--bill-from launch --boot-seconds 20 --market "$run/market.json" \
	--ondemand "$od" --instance-dir "$run/instances" \
	--identity-cert "$run/identity.pem"
url="http://127.0.0.1:$port/"
cat > "$run/proteusd.conf" <<CONF
db $run/proteus.db
control_socket $sock
log_level notice
region us-east-1
ec2_endpoint $url
ec2_ami ami-0123456789abcdef0
ec2_subnets us-east-1a=subnet-0000000000000000a,us-east-1b=subnet-0000000000000000b
ec2_security_groups sg-0123456789abcdef0
ec2_instance_profile proteus-node
head_address 127.0.0.1
trainer_ports 29300-29599
ec2_node_trainer $BUILD/proteus-trainer
ec2_clock_speedup $speedup
ec2_clock_origin $origin
ec2_identity_cert $run/identity.pem
ec2_price_poll_s 60
CONF
demo_start_ec2_daemon
demo_wait_daemon

# job_file NAME REBALANCE: a job like docs/examples/job-ec2-mlr.json
job_file() {
	cat > "$run/$1.json" <<JSON
{"name": "$1", "region": "us-east-1", "work_hours": 8,
 "reference_type": "m4.large", "instances": 2,
 "reliable": {"type": "m4.large", "count": 1},
 "spot": {"types": ["c4.large", "m4.large"], "zones": ["us-east-1a", "us-east-1b"], "max_instances": 3},
 "scaling_efficiency": 0.9, "startup_seconds": 60, "clock_seconds": 60,
 "trainer": {"model": "mlr", "epochs": $EC2_NOTICE_EPOCHS, "batch": 128, "lr": 0.05},
 "world": {"name": "ec2", "ondemand_prices": "$od", "rebalance": "$2"}}
JSON
}

# probe NAME MODE REBALANCE [ARGS...]: one job, its record in out/NAME.json
probe() {
	name=$1 pmode=$2
	job_file "$name" "$3"
	shift 3
	python3 "$probe" --mode "$pmode" --ctl "$ctl" --sock "$sock" \
		--fake "$url" --job "$run/$name.json" --run "$run" \
		--origin "$origin" --speedup "$speedup" \
		--out "$run/out/$name.json" "$@"
}

case $mode in
notice)
	for r in $(seq 1 "$EC2_NOTICE_RUNS"); do
		probe "notice-$r" notice ignore --count "$EC2_NOTICE_N" \
			--apart "$EC2_NOTICE_APART"
	done ;;
acquire)
	for r in $(seq 1 "$EC2_ACQUIRE_RUNS"); do
		probe "acquire-$r" acquire ignore
	done ;;
rebalance)
	for r in $(seq 1 "$EC2_REBALANCE_RUNS"); do
		for set in ignore leave; do
			for lead in $EC2_REBALANCE_LEADS none; do
				l=$lead
				[ "$lead" = none ] && l=-1
				probe "rebalance-$set-$lead-$r" rebalance "$set" \
					--lead "$l"
			done
		done
	done ;;
*)
	echo "ec2_notice.sh: mode '$mode': notice, acquire or rebalance" >&2
	exit 2 ;;
esac
curl -sf "${url}_ctl?cmd=state" > "$run/fake_state.json" || true
kill "$daemon"
wait "$daemon" 2>/dev/null || true
daemon=
exec 3>&-
wait "$fake" 2>/dev/null || true
fake=
grep '^{' "$run/fake.out" | tail -1 > "$run/fake_summary.json" || true
python3 "$probe" --report "$mode" --run "$run" "$run"/out/*.json
