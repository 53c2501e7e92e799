#!/bin/sh
# demo.sh -- `make demo`: the main job on the embedded default world.
#
# The offline half first, briefly: a shipped week of real us-east-1 2016
# spot prices replayed for a small job under each policy (proteusctl
# simulate).  Then the product: proteusd on the local world (a private
# socket and database under build/), a Fashion-MNIST MLR job submitted
# with `proteusctl submit`, its progress live (clock, accuracy, fleet,
# evictions, joins, cost so far) while BidBrain rents spot instances that
# the replayed market evicts (each instance is a process group running a
# trainer node here), and at the end the test accuracy, the job's cost and
# what on-demand would have cost.  The daemon is stopped; no process is
# left behind.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/demo_lib.sh"
demo_paths demo
trace="$here/docs/examples/traces/us-east-1_2016-03-01_7d_linux.json.gz"
od="$here/etc/ondemand/us-east-1_2016-02_2016-04.json"

rm -rf "$run"
mkdir -p "$run"
echo "== offline: replaying a week of us-east-1 spot prices (2016-03-01..08)"
echo "   for a 96 work-hour job under each policy (proteusctl simulate)"
"$ctl" simulate --trace "$trace" --ondemand-prices "$od" \
	--job "$here/docs/examples/job-2016-7d-m3large.json" \
	--start 2016-03-03T00:00:00Z
echo
echo "== online: proteusd on the local world (instances are process groups"
echo "   here, each running a trainer node: a parameter server and a worker;"
echo "   the market is the same trace replayed at 4 market minutes per second:"
echo "   the job's world.speedup, 240)"
printf 'db %s\ncontrol_socket %s\nlog_level notice\n' "$db" "$sock" \
	> "$run/proteusd.conf"
"$BUILD/proteusd" --config "$run/proteusd.conf" > "$run/proteusd.log" 2>&1 &
daemon=$!
stop() {
	kill "$daemon" 2>/dev/null || true
	wait "$daemon" 2>/dev/null || true
}
trap stop EXIT INT TERM
demo_wait_daemon
demo_submit_watch "$here/docs/examples/job-local-mlr.json"
echo "== the job's decisions and evictions (proteusctl events $id, first lines)"
"$ctl" --socket "$sock" events "$id" | grep -v ' progress ' | head -12
echo
echo "== the result"
"$ctl" --socket "$sock" status "$id"
stop
trap - EXIT INT TERM
left=$(pgrep -f "$run" || true)
if [ -n "$left" ]; then
	echo "processes left: $left" >&2
	exit 1
fi
echo
echo "(daemon log: $run/proteusd.log; database: $db)"
echo "(try: $ctl history --db $db)"
