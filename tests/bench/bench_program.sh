#!/bin/sh
# bench_program.sh -- program jobs (issue 39): the shipped PyTorch example
# (docs/examples/programs/fashion_mnist_ddp.py under torchrun, 1 thread a
# process) and the same work under the same replayed market (a hand-made
# m3.large trace with two price spikes past every bid), on one private
# proteusd in the local world, one job after the other:
#   (a) "policy": "ondemand": 3 on-demand nodes, nothing evicted;
#   (b) "policy": "standard" (1 reliable + 2 spot bid at the on-demand
#       price, re-acquired when the price falls back: a fixed fleet) with
#       "membership": "fixed", nodes 3..3: each preemption stops every
#       node's program and restarts all 3 from the latest checkpoint, a
#       fixed-size torchrun per start (SkyPilot managed jobs' recovery);
#   (c) BidBrain (default policy), torchrun elastic (membership auto),
#       the checkpoint store and the forwarded notices.
# Cost, real seconds and market hours to the end, evictions, accuracy,
# work redone (from the node logs), notice to training again (status
# polled every 0.25 s).  tests/bench/program_bench.py does the work.
#   env: BUILD, EPOCHS (default 3), SPEEDUP (default 600), SPIKES (market
#   hours after the start, default 2.5,5.5), SPIKE_MIN (default 30),
#   MODES (default ondemand,fixed,bidbrain), GRACE (every job's
#   program.grace_seconds, default 110).
set -eu
: "${BUILD:?}"
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
EPOCHS=${EPOCHS:-3}
SPEEDUP=${SPEEDUP:-600}
SPIKES=${SPIKES:-2.5,5.5}
SPIKE_MIN=${SPIKE_MIN:-30}
MODES=${MODES:-ondemand,fixed,bidbrain}
GRACE=${GRACE:-110}
py=/usr/bin/python3
if ! [ -x /usr/bin/torchrun ] || ! "$py" -c 'import torch' 2>/dev/null; then
	echo "needs /usr/bin/torchrun and torch for /usr/bin/python3 (python3-torch): skipped"
	exit 0
fi
[ -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || {
	echo "needs Fashion-MNIST in /usr/share/datasets/fashion-mnist: skipped"
	exit 0
}
mkdir -p "$BUILD/bench-program"
work=$(mktemp -d "$BUILD/bench-program/run.XXXXXX")
echo
echo "\`make bench BENCH=program\` (EPOCHS=$EPOCHS SPEEDUP=$SPEEDUP SPIKES=$SPIKES SPIKE_MIN=$SPIKE_MIN MODES=$MODES GRACE=$GRACE); CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; commit $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?'); run folder $work"
echo
status=0
nice "$py" "$here/program_bench.py" --build "$BUILD" --src "$src" \
	--work "$work" --epochs "$EPOCHS" --speedup "$SPEEDUP" \
	--spikes "$SPIKES" --spike-minutes "$SPIKE_MIN" --modes "$MODES" --grace "$GRACE" ||
	status=$?
# nothing of this run may be left: its node agents name the run's folder
# (--hub ipc://$work/...), torchrun's cwd is under $work/tmp
sleep 1
left=""
for p in $(pgrep -f "program-node|torchrun|proteusd" || true); do
	if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q "$work" ||
		readlink "/proc/$p/cwd" 2>/dev/null | grep -q "^$work"; then
		left="$left $p"
	fi
done
echo
if [ -n "$left" ]; then
	echo "processes left behind:$left"
	ps -o pid,args -p $(echo $left | tr ' ' ,) || true
	exit 1
fi
echo "No process left (checked \`pgrep -f \"program-node|torchrun|proteusd\"\` against the run's folder)."
exit $status
