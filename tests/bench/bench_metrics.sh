#!/bin/sh
# bench_metrics.sh -- proteusd's /metrics under load (issue 28): while a
# local-world job runs, METRICS_SCRAPERS (50) threads scrape /metrics back
# to back, one client sends a GET and never reads and another sends
# nothing (each dropped at metrics_timeout_ms, 2000 here, and back at
# once), for METRICS_SECONDS (30); the control socket's `ping` latency
# (a new connection each, every 10 ms, as proteusctl ping) then and
# without the scrapers, and the scrapes' own latency
# (tests/bench/metrics_load.py).
set -eu
: "${BUILD:?}"
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
: "${METRICS_SECONDS:=30}"
: "${METRICS_SCRAPERS:=50}"
work=$(mktemp -d /tmp/pxbench-metrics.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'db %s/p.db\ncontrol_socket %s/s.sock\nmetrics_listen 127.0.0.1:%s\nmetrics_timeout_ms 2000\n' \
	"$work" "$work" "$port" > "$work/p.conf"
"$BUILD/proteusd" --config "$work/p.conf" > "$work/log" 2>&1 &
pid=$!
until "$BUILD/proteusctl" --socket "$work/s.sock" ping >/dev/null 2>&1; do
	sleep 0.1
done
# a job that outlasts the measurement (cancelled after it)
sed -e "s/\"epochs\": [0-9]*/\"epochs\": 1000/" -e 's/, "speedup": [0-9]*//' \
	"$src/docs/examples/job-local-mlr.json" > "$work/job.json"
id=$("$BUILD/proteusctl" --socket "$work/s.sock" submit "$work/job.json")
sleep 5
quiet=$(python3 "$here/metrics_load.py" ping "$work/s.sock" "$METRICS_SECONDS")
python3 "$here/metrics_load.py" scrape "$port" "$METRICS_SCRAPERS" \
	"$METRICS_SECONDS" > "$work/scrape" &
s1=$!
python3 "$here/metrics_load.py" hostile "$port" "$METRICS_SECONDS" &
s2=$!
loaded=$(python3 "$here/metrics_load.py" ping "$work/s.sock" "$METRICS_SECONDS")
wait $s1 $s2
sleep 1.5 # the text is rebuilt each second
drops=$(curl -s "http://127.0.0.1:$port/metrics" |
	sed -n 's/^proteus_metrics_timeouts_total //p')
state=$("$BUILD/proteusctl" --socket "$work/s.sock" status "$id" --json |
	sed -n 's/.*"state": "\([a-z]*\)".*/\1/p')
"$BUILD/proteusctl" --socket "$work/s.sock" cancel "$id" >/dev/null 2>&1 || true
echo
echo "\`make bench BENCH=metrics\` (METRICS_SECONDS=$METRICS_SECONDS, METRICS_SCRAPERS=$METRICS_SCRAPERS): one MLR job running (state after: $state)"
echo
echo "| load | pings | ping p50 ms | ping p99 ms | ping max ms |"
echo "|---|---:|---:|---:|---:|"
echo "$quiet" | awk '{printf "| no scrapers | %s | %s | %s | %s |\n", $1, $2, $3, $4}'
echo "$loaded" | awk -v n="$METRICS_SCRAPERS" '{printf "| %s scrapers + 2 hostile | %s | %s | %s | %s |\n", n, $1, $2, $3, $4}'
echo
echo "| scrapers | scrapes | scrapes/s | p50 ms | p99 ms | max ms | answer bytes | not 200 | dropped at a deadline |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
awk -v n="$METRICS_SCRAPERS" -v s="$METRICS_SECONDS" -v h="$drops" \
	'{printf "| %s | %s | %.0f | %s | %s | %s | %s | %s | %s |\n", n, $1, $1 / s, $2, $3, $4, $5, $6, h}' "$work/scrape"
