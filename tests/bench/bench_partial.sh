#!/bin/sh
# bench_partial.sh -- partial recovery against a full restart (issue 27):
# the MLP on Fashion-MNIST, `proteus-trainer local`, 2 workers and PS PS in
# stage 1 (no backups: each shard has one copy), a checkpoint (the state
# both recoveries go back to: the file, and the coordinator's snapshot of
# the same pull) every CKPT clocks, a test every EVERY clocks to measure;
# one PS SIGKILLed once the job reaches clock KILL_AT.  With
# partial recovery the coordinator reloads the dead PS's shards alone from
# the last state it pulled and the job goes on; with --no-partial-recovery
# the job fails and `local --max-restarts 1` restarts it from the same
# checkpoint.  For each: the clocks trained after the kill until the test
# loss is back to the last one evaluated before it, the final accuracy and
# the wall time.  REPS runs each, medians.  Prints markdown.
#   env: BUILD (default build), EPOCHS (8), EVERY (2), CKPT (80),
#   KILL_AT (110: a clock), PS (4), REPS (3)
set -eu

EPOCHS=${EPOCHS:-8}
EVERY=${EVERY:-2}
CKPT=${CKPT:-80}
PS=${PS:-4}
KILL_AT=${KILL_AT:-110}
REPS=${REPS:-3}
. "$(dirname "$0")/trainer_needs.sh"

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
JOB="--model mlp --epochs $EPOCHS --workers 2 --ps $PS --stage 1 --batch 128 \
 --lr 0.05 --momentum 0.9 --schedule cosine --threads 1 --timeout 900 --json \
 --eval-every $EVERY --checkpoint-every $CKPT --kill-ps-at-clock $KILL_AT"

# clocks trained after the kill until the loss is back (recover_clocks.py)
recover() { # log
	python3 "$(dirname "$0")/recover_clocks.py" "$1"
}

med() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }

for mode in partial full; do
	: > "$W/$mode.clocks"
	: > "$W/$mode.acc"
	: > "$W/$mode.wall"
	for r in $(seq 1 "$REPS"); do
		rm -f "$W/ck.pxc"
		extra=
		[ "$mode" = full ] && extra="--no-partial-recovery --max-restarts 1"
		t0=$(date +%s.%N)
		out=$("$T" local $JOB --checkpoint "$W/ck.pxc" $extra 2>"$W/$mode.$r.log") || out={}
		t1=$(date +%s.%N)
		recover "$W/$mode.$r.log" >> "$W/$mode.clocks"
		echo "$out" | jq '(.test_accuracy // 0) * 10000 | round / 100' >> "$W/$mode.acc"
		awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", b - a }' >> "$W/$mode.wall"
		echo "$out" | jq -c '{partial_recoveries, resumed_from}' > "$W/$mode.shape"
	done
done

echo "MLP, $EPOCHS epochs, 2 workers, $PS PS in stage 1, a checkpoint every $CKPT clocks, a test every $EVERY, a PS SIGKILLed at clock $KILL_AT (30 past the last checkpoint); median of $REPS runs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1 /proc/loadavg))."
echo
echo "| recovery | clocks to get the loss back (median; each run) | test accuracy | wall s (the whole command) |"
echo "|---|---|---|---|"
for mode in partial full; do
	label="partial: the lost shards reloaded alone, the job goes on"
	[ "$mode" = full ] && label="full restart from the checkpoint (--no-partial-recovery, local --max-restarts 1)"
	echo "| $label | $(grep -v never "$W/$mode.clocks" | med) ($(tr '\n' ' ' < "$W/$mode.clocks" | sed 's/ $//')) | $(med < "$W/$mode.acc")% | $(med < "$W/$mode.wall") |"
done
p=$(grep -v never "$W/partial.clocks" | med)
f=$(grep -v never "$W/full.clocks" | med)
echo
awk -v p="$p" -v f="$f" 'BEGIN { if (f > 0 && p != "-") printf "Partial recovery redid %.0f%% fewer clocks than the full restart (issue target: at least 78%%).\n", 100 * (1 - p / f) }'
