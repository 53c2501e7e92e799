#!/bin/sh
# bench_daemon.sh -- proteusd running jobs (issue 10): its own CPU time
# and peak RSS over a local-world job of DAEMON_JOB_SECONDS (default 600)
# real seconds, and the control latency (p50, p99) of `status` requests
# from 100 concurrent clients while that job runs
# (tests/bench/control_clients.py).
set -eu
: "${BUILD:?}"
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
: "${DAEMON_JOB_SECONDS:=600}"
: "${DAEMON_CLIENTS:=100}"
work=$(mktemp -d /tmp/pxbench-daemon.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
printf 'db %s/p.db\ncontrol_socket %s/s.sock\nmax_clients 256\n' \
	"$work" "$work" > "$work/p.conf"
"$BUILD/proteusd" --config "$work/p.conf" > "$work/log" 2>&1 &
pid=$!
until "$BUILD/proteusctl" --socket "$work/s.sock" ping >/dev/null 2>&1; do
	sleep 0.1
done
# MLR: an epoch takes 0.6-1 s of real time on the job's 5 instances here;
# as many epochs as a job may have (1000), cancelled after
# DAEMON_JOB_SECONDS.  The daemon's default speedup (60): 10 market hours
# in 600 s, inside the shipped 7-day trace.
sed -e "s/\"epochs\": [0-9]*/\"epochs\": 1000/" -e 's/, "speedup": [0-9]*//' \
	"$src/docs/examples/job-local-mlr.json" > "$work/job.json"
grep -q '"epochs": 1000' "$work/job.json"
id=$("$BUILD/proteusctl" --socket "$work/s.sock" submit "$work/job.json")
t0=$(date +%s)
sleep 5
lat=$(python3 "$here/control_clients.py" "$work/s.sock" "$id" \
	"$DAEMON_CLIENTS" 10)
while :; do
	now=$(date +%s)
	[ $((now - t0)) -ge "$DAEMON_JOB_SECONDS" ] && break
	state=$("$BUILD/proteusctl" --socket "$work/s.sock" status "$id" \
		--json | sed -n 's/.*"state": "\([a-z]*\)".*/\1/p')
	[ "$state" = running ] || [ "$state" = queued ] || break
	sleep 5
done
elapsed=$(( $(date +%s) - t0 ))
tick=$(getconf CLK_TCK)
cpu=$(awk -v t="$tick" '{printf "%.2f", ($14 + $15) / t}' "/proc/$pid/stat")
hwm=$(awk '/VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$pid/status")
"$BUILD/proteusctl" --socket "$work/s.sock" cancel "$id" >/dev/null 2>&1 || true
echo
echo "\`make bench BENCH=daemon\` (DAEMON_JOB_SECONDS=$DAEMON_JOB_SECONDS): one MLR job on the local world"
echo
echo "| job wall s | proteusd CPU s | CPU share | peak RSS MiB | status clients | requests | p50 ms | p99 ms | max ms |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
echo "$elapsed $cpu $hwm $lat" | awk '{printf "| %d | %s | %.2f%% | %s | %s | %s | %s | %s | %s |\n", $1, $2, 100 * $2 / $1, $3, $4, $5, $6, $7, $8}'
