#!/bin/bash
# bench_trainer_peers.sh -- our trainer against PyTorch (CPU) on the same
# machine in one run: one-worker training throughput (`proteus-trainer
# train` vs tests/bench/torch_mlp.py: same model, batch, lr schedule,
# momentum and thread count), and elastic recovery after a SIGKILLed
# worker (`proteus-trainer local` vs torch.distributed.run with
# --max-restarts).  Recovery for both: the last training step before the
# kill to the first step after it (docs/benchmarks.md).  Prints markdown.
#   env: BUILD (default build), EPOCHS (throughput epochs, default 2),
#   THREADS (default 1), REPS (runs of each, default 3; medians).
set -eu

EPOCHS=${EPOCHS:-2}
THREADS=${THREADS:-1}
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
. "$(dirname "$0")/trainer_needs.sh"
$PY -c 'import torch' 2>/dev/null || {
	echo "bench_trainer_peers: needs python3-torch (scripts/deps.sh bench)" >&2
	exit 2
}
TV=$($PY -c 'import torch; print(torch.__version__)')
# Both on the same THREADS cores: torch.set_num_threads(1) alone still
# let PyTorch use ~1.6 cores here (measured with time(1)).
PIN=
command -v taskset >/dev/null && PIN="taskset -c 0-$((THREADS - 1))"

REPS=${REPS:-3}
echo "Throughput, one worker, $EPOCHS epochs, batch 128, lr 0.05 cosine, momentum 0.9, $THREADS thread(s)${PIN:+ (both under $PIN)}; torch $TV; median of $REPS runs each, alternating (this VM's throughput swings 1.5x run to run):"
echo
echo "| model | proteus-trainer train samples/s | PyTorch samples/s | ours / torch (of the medians) | ours / torch, each pair | accuracy ours / torch | OpenBLAS kernels ours / torch |"
echo "|---|---|---|---|---|---|---|"
for m in ${MODELS:-mlr mlp}; do
	A='[]' B='[]'
	for i in $(seq "$REPS"); do
		a=$($PIN "$T" train --model $m --epochs "$EPOCHS" --batch 128 --lr 0.05 \
			--momentum 0.9 --schedule cosine --threads "$THREADS" --json 2>/dev/null)
		b=$($PIN $PY "$HERE/torch_mlp.py" --model $m --epochs "$EPOCHS" --batch 128 \
			--lr 0.05 --momentum 0.9 --threads "$THREADS")
		A=$(echo "$A" | jq -c --argjson x "$a" '. + [$x]')
		B=$(echo "$B" | jq -c --argjson x "$b" '. + [$x]')
	done
	jq -rn --argjson a "$A" --argjson b "$B" --arg m $m '
		def med: sort | .[(length / 2 | floor)];
		($a | map(.samples_per_sec) | med) as $x |
		($b | map(.samples_per_sec) | med) as $y |
		[range(0; $a | length) | ($a[.].samples_per_sec / $b[.].samples_per_sec * 100 | round) / 100 | tostring + "x"] as $pairs |
		"| \($m) | \($x|round) | \($y|round) | \(($x / $y * 100 | round) / 100)x | \($pairs | join(", ")) | \($a[0].test_accuracy*1000|round/10)% / \($b[0].test_accuracy*1000|round/10)% | \($a[0].blas.core) (\($a[0].blas.chosen)) / \($b[0].blas_core // "?") |"'
done

echo
echo "Recovery after SIGKILL of one of 2 workers (MLP, full data):"
echo
# ours: the coordinator measures last clock advance before the loss to the
# first after it
r=$("$T" local --model mlp --epochs 3 --workers 2 --ps 1 --batch 128 --lr 0.05 \
	--momentum 0.9 --schedule cosine --threads 1 --kill-worker-at 3 \
	--timeout 300 --json 2>/dev/null)
ours=$(echo "$r" | jq '.recovery_ms_max|round')
# torch: the elastic agent restarts the whole group (max-restarts), the
# workers reload the last per-epoch checkpoint; steps are traced
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
(cd "$W" && timeout 300 $PY -m torch.distributed.run --nnodes=1 \
	--nproc_per_node=2 --max_restarts=3 --redirects 2 --tee 2 \
	--log_dir "$W/logs" --rdzv_backend=c10d \
	--rdzv_endpoint=127.0.0.1:$((29500 + RANDOM % 400)) \
	"$HERE/torch_mlp.py" --model mlp --epochs 6 --batch 128 --threads 1 \
	--elastic --ckpt "$W/ck.pt" --trace "$W/trace" >"$W/out" 2>"$W/err") &
# kill one worker 3 s after its first step
for _ in $(seq 600); do [ -s "$W/trace" ] && break; sleep 0.1; done
sleep 3
pid=$(pgrep -f "torch_mlp.py --model mlp --epochs 6" | while read -r p; do
	grep -q distributed.run /proc/$p/cmdline 2>/dev/null || echo $p; done | tail -1)
$PY -c 'import time; print("kill %.6f" % time.monotonic())' >>"$W/trace"
kill -9 "$pid"
wait
# (torchrun logs its restarts at INFO, which it does not print: the
# evidence is a step by a process that did not exist before the kill)
awk '/^kill/ {k=1; next} /^step/ && k && !($5 in old) {n++} /^step/ && !k {old[$5]=1}
	END { exit !n }' "$W/trace" || echo "warning: torchrun restarted nothing" >&2
# the first step of a process that did not exist before the kill
tr=$(awk '/^kill/ {k=$2; next}
	/^step/ { if (!k) { last=$2; ls=$4; old[$5]=1 }
		  else if (!first && !($5 in old)) { first=$2; fs=$4 } }
	END { printf "%d %d\n", (first-last)*1000, ls-fs+1 }' "$W/trace")
tms=${tr% *}
redo=${tr#* }
echo "| trainer | what restarts | recovery ms | steps redone | final accuracy |"
echo "|---|---|---|---|---|"
echo "| proteus-trainer local (2 workers, 1 PS) | nothing: the survivor takes the partition, the replacement joins | $ours | 0 (the lost worker's last clock) | $(echo "$r" | jq '.test_accuracy*1000|round/10')% |"
echo "| torch.distributed.run, max-restarts 3 (2 workers, gloo) | the whole group, from the last epoch checkpoint | $tms | $redo | $(jq '.test_accuracy*1000|round/10' "$W/out")% |"
