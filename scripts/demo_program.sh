#!/bin/sh
# demo_program.sh -- `make demo-program`: the user's own program as a job
# (docs/programs.md) on the local world.
#
# proteusd on the local world (a private socket and database under
# build/demo-program), the shipped PyTorch example
# (docs/examples/programs/fashion_mnist_ddp.py: DDP over gloo on
# Fashion-MNIST) submitted with `proteusctl submit
# docs/examples/programs/job-fashion-mnist-local.json`, which runs it under
# torchrun on every node BidBrain rents (each instance a process group
# here running `proteus-trainer program-node`), elastic over the fleet,
# on a replayed week of real us-east-1 2016 spot prices where the spot
# nodes get evicted: torchrun re-forms the group and its workers resume
# from the job's latest checkpoint.  Shown: `status --watch` (its program
# and ckpt lines), the job's decisions and evictions, the nodes' last
# output lines (`proteusctl logs`), the test accuracy and the cost.  The
# daemon is stopped; no process is left behind (else it fails).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/demo_lib.sh"
demo_paths demo-program
job="$here/docs/examples/programs/job-fashion-mnist-local.json"

if [ ! -x /usr/bin/torchrun ]; then
	echo "demo-program: /usr/bin/torchrun is missing (python3-torch:" \
		"scripts/deps.sh test installs it)" >&2
	exit 1
fi
rm -rf "$run"
mkdir -p "$run/tmp"
echo "== proteusd on the local world (instances are process groups here,"
echo "   each running the node agent, proteus-trainer program-node, which"
echo "   runs the job's program: torchrun fashion_mnist_ddp.py; the market"
echo "   is a real week of us-east-1 2016 spot prices from 2016-03-02 07:54,"
echo "   a market minute a second, where a price rise evicts the spot nodes"
echo "   about 10 s in: the job file's _comment says why these values)"
printf 'db %s\ncontrol_socket %s\nlog_level notice\n' "$db" "$sock" \
	> "$run/proteusd.conf"
# the nodes' folders (and torchrun's files) under $run/tmp, not /tmp
TMPDIR="$run/tmp" nice "$BUILD/proteusd" --config "$run/proteusd.conf" \
	> "$run/proteusd.log" 2>&1 &
daemon=$!
stop() {
	kill "$daemon" 2>/dev/null || true
	wait "$daemon" 2>/dev/null || true
}
trap stop EXIT
trap 'exit 130' INT TERM
demo_wait_daemon
demo_submit_watch "$job"
echo "== the job's decisions, notices, evictions and the group's starts"
echo "   (proteusctl events $id, without progress, ready, stage, scaling and"
echo "   checkpoint lines: the first 24)"
"$ctl" --socket "$sock" events "$id" |
	grep -Ev ' (progress|ready|stage|scaling|checkpoint) ' | head -24
echo
echo "== the nodes' last lines (proteusctl logs $id --lines 5)"
"$ctl" --socket "$sock" logs "$id" --lines 5
echo
echo "== the result"
"$ctl" --socket "$sock" status "$id"
state=$("$ctl" --socket "$sock" status "$id" --json |
	sed -n 's/^  "state": *"\([a-z_]*\)".*/\1/p')
stop
trap - EXIT INT TERM

# The node agents and the programs (torchrun, its workers) of this run,
# `pgrep -af "program-node|torchrun"` less those of other runs on this
# host (the tests'): an agent names its log under $run, the programs work
# under $run/tmp.
ours() {
	for p in $(pgrep -f "program-node|torchrun|fashion_mnist_ddp" || true); do
		case "$(tr '\0' ' ' 2>/dev/null < "/proc/$p/cmdline") \
$(readlink "/proc/$p/cwd" 2>/dev/null)" in
		*"$run"*) echo "$p" ;;
		esac
	done
}
i=0
while [ -n "$(ours)" ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
left=$({ ours; pgrep -f "$run" || true; } | tr '\n' ' ' | sed 's/ *$//')
if [ -n "$left" ]; then
	echo "processes left:" >&2
	ps -o pid,pgid,args -p "$(echo "$left" | tr ' ' ,)" >&2 || true
	exit 1
fi
# an agent removes its node's folder when it ends, but not when the world
# kills its process group (an eviction, the job's end): those stay here
n=$(ls -A "$run/tmp" | wc -l)
[ "$n" -eq 0 ] || echo "($n node folders of killed agents left in $run/tmp)"
if [ "$state" != "done" ]; then
	echo "the job ended $state, not done (daemon log: $run/proteusd.log)" >&2
	exit 1
fi
echo
echo "(daemon log: $run/proteusd.log; database: $db; the nodes' logs:"
echo " $db.jobs/$id/logs)"
echo "(try: $ctl history --db $db)"
