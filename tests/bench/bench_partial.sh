#!/bin/sh
# bench_partial.sh -- partial recovery against a full restart (issue 27):
# the MLP on Fashion-MNIST, `proteus-trainer local`, 2 workers and PS PS in
# stage 1 (no backups: each shard has one copy), a checkpoint (the state
# both recoveries go back to: the file, and the coordinator's snapshot of
# the same pull) every CKPT clocks, a test every EVERY clocks to measure;
# one PS SIGKILLed once the job reaches a clock of KILLS (one a run: a
# failure early, midway and late in a checkpoint interval).  With partial
# recovery the coordinator reloads the dead PS's shards alone from the
# last state it pulled and the job goes on; with --no-partial-recovery the
# job fails and `local --max-restarts 1` restarts it from the same
# checkpoint.  For each: the clocks trained after the kill until the test
# loss is back to the last ones evaluated before it (recover_clocks.py),
# the final accuracy and the wall time; the work lost over all the kill
# clocks together (failures spread over the interval).  Prints markdown.
#   env: BUILD (default build), EPOCHS (8), EVERY (1), CKPT (80),
#   KILLS ("90 110 130 150"), PS (4)
set -eu

EPOCHS=${EPOCHS:-8}
EVERY=${EVERY:-1}
CKPT=${CKPT:-80}
PS=${PS:-4}
KILLS=${KILLS:-90 110 130 150}
. "$(dirname "$0")/trainer_needs.sh"

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
JOB="--model mlp --epochs $EPOCHS --workers 2 --ps $PS --stage 1 --batch 128 \
 --lr 0.05 --momentum 0.9 --schedule cosine --threads 1 --timeout 900 --json \
 --eval-every $EVERY --checkpoint-every $CKPT"

med() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }

for mode in partial full; do
	for f in clocks acc wall; do : > "$W/$mode.$f"; done
	for k in $KILLS; do
		rm -f "$W/ck.pxc" "$W/ck.pxc.delta"
		extra=
		[ "$mode" = full ] && extra="--no-partial-recovery --max-restarts 1"
		t0=$(date +%s.%N)
		out=$("$T" local $JOB --kill-ps-at-clock "$k" --checkpoint "$W/ck.pxc" $extra 2>"$W/$mode.$k.log") || out={}
		t1=$(date +%s.%N)
		python3 "$(dirname "$0")/recover_clocks.py" "$W/$mode.$k.log" >> "$W/$mode.clocks"
		echo "$out" | jq '(.test_accuracy // 0) * 10000 | round / 100' >> "$W/$mode.acc"
		awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", b - a }' >> "$W/$mode.wall"
	done
done

echo "MLP, $EPOCHS epochs, 2 workers, $PS PS in stage 1, a checkpoint every $CKPT clocks, a test every $EVERY clock(s), a PS SIGKILLed at clock $(echo $KILLS | tr ' ' '/') (one a run); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1 /proc/loadavg), not pinned."
echo
echo "| killed at clock | partial: clocks to get the loss back | full restart: clocks | partial accuracy / wall s | full accuracy / wall s |"
echo "|---|---|---|---|---|"
i=1
for k in $KILLS; do
	row() { sed -n "${i}p" "$W/$1.$2"; }
	echo "| $k ($((k % CKPT)) past the checkpoint) | $(row partial clocks) | $(row full clocks) | $(row partial acc)% / $(row partial wall) | $(row full acc)% / $(row full wall) |"
	i=$((i + 1))
done
echo
paste "$W/partial.clocks" "$W/full.clocks" | awk '
	$1 == "never" || $2 == "never" { bad++; next }
	{ p += $1; f += $2 }
	END { if (f > 0) printf "Over the %d kills together: partial recovery redid %d clocks, the full restart %d: %.0f%% fewer (issue target: at least 78%%)%s.\n", NR, p, f, 100 * (1 - p / f), bad ? sprintf("; %d run(s) never got the loss back", bad) : "" }'
