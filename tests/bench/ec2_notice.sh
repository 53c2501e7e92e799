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
trap demo_stop_all EXIT
trap 'exit 130' INT TERM

origin=$(date +%s)
demo_ec2_market "$run/market.json"
demo_start_fake --timeout 3600 \
	--region us-east-1 --speedup "$speedup" --clock-origin "$origin" \
	--bill-from launch --boot-seconds 20 --market "$run/market.json" \
	--ondemand "$od" --instance-dir "$run/instances" \
	--identity-cert "$run/identity.pem"
url="http://127.0.0.1:$port/"
demo_ec2_conf 29300-29599
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
demo_end_run
grep '^{' "$run/fake.out" | tail -1 > "$run/fake_summary.json" || true
python3 "$probe" --report "$mode" --run "$run" "$run"/out/*.json
if [ "$mode" = notice ]; then
	# the replacements' acquire to first update (hot-added nodes)
	echo
	python3 "$probe" --report acquire "$run"/out/*.json
fi
