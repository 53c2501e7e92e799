#!/bin/sh
# bench_ckpt_prio.sh -- prioritized, incremental checkpoints against full
# ones of the same bytes (issue 27 item 3; Qiao et al., ICML'19): the MLP
# on Fashion-MNIST, `proteus-trainer local`, 2 workers and PS PS in stage 1
# (one copy of each shard), a test every EVERY clocks to measure; one PS
# SIGKILLed at a clock of KILLS (one a run, in turn) with
# --no-partial-recovery, so that `local --max-restarts 1` restarts the job
# from the checkpoint file.  "full": a full checkpoint every FULL clocks.
# "prioritized": a checkpoint every FULL/10 clocks, a full one every 20 of
# them (every 2*FULL clocks) and, between, records of the parameters that
# changed most, each within a budget of 1/PART of a full checkpoint: with
# PART 30, fewer bytes than "full" (the restart's first checkpoint and
# the last are full ones in both).  For each: the clocks trained after the
# kill until the test loss is back to the last one evaluated before it
# (recover_clocks.py), the checkpoint bytes written (both lives of the
# job, from the coordinator's lines) and the final accuracy.  Prints
# markdown.
#   env: BUILD (default build), EPOCHS (8), EVERY (2), FULL (40),
#   KILLS ("110 130 150 170 190"), PS (4), PART (30)
set -eu

EPOCHS=${EPOCHS:-8}
EVERY=${EVERY:-2}
FULL=${FULL:-40}
PS=${PS:-4}
PART=${PART:-30}
KILLS=${KILLS:-110 130 150 170 190}
. "$(dirname "$0")/trainer_needs.sh"

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
JOB="--model mlp --epochs $EPOCHS --workers 2 --ps $PS --stage 1 --batch 128 \
 --lr 0.05 --momentum 0.9 --schedule cosine --threads 1 --timeout 900 --json \
 --eval-every $EVERY --no-partial-recovery --max-restarts 1"

med() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }

# parameters of the model and the size of a full checkpoint: one short run
"$T" local --model mlp --epochs 1 --max-train 2000 --workers 1 --ps 1 \
	--threads 1 --json --checkpoint "$W/probe.pxc" >/dev/null 2>&1
full_bytes=$(stat -c %s "$W/probe.pxc")
budget=$((full_bytes / PART))
every=$((FULL / 10))

for mode in full prioritized; do
	for f in clocks acc mb resumed; do : > "$W/$mode.$f"; done
	for k in $KILLS; do
		rm -f "$W/ck.pxc" "$W/ck.pxc.delta"
		if [ "$mode" = full ]; then
			ck="--checkpoint-every $FULL"
		else
			ck="--checkpoint-every $every --checkpoint-budget $budget --checkpoint-full-every 20"
		fi
		log="$W/$mode.$k.log"
		out=$("$T" local $JOB --kill-ps-at-clock "$k" --checkpoint "$W/ck.pxc" $ck 2>"$log") || out={}
		python3 "$(dirname "$0")/recover_clocks.py" "$log" >> "$W/$mode.clocks"
		echo "$out" | jq '(.test_accuracy // 0) * 10000 | round / 100' >> "$W/$mode.acc"
		echo "$out" | jq -r '.resumed_from // "-"' >> "$W/$mode.resumed"
		# MB written, both lives: the coordinator's checkpoint lines
		sed -n 's/.*checkpoint at clock .* parameters, \([0-9.]*\) MB;.*/\1/p' "$log" |
			awk '{ s += $1 } END { printf "%.2f\n", s }' >> "$W/$mode.mb"
	done
done

echo "MLP, $EPOCHS epochs, 2 workers, $PS PS in stage 1, a test every $EVERY clocks, a PS SIGKILLed at clock $(echo $KILLS | tr ' ' '/') (one a run) and the job restarted from its checkpoint file; a full checkpoint $full_bytes bytes; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1 /proc/loadavg), not pinned."
echo
echo "| checkpoints | resumed at clock (each run) | clocks to get the loss back: median (each run) | MB written a run (median) | test accuracy (median) |"
echo "|---|---|---|---|---|"
for mode in full prioritized; do
	label="full, every $FULL clocks"
	[ "$mode" = prioritized ] && label="prioritized: every $every clocks, records of $budget bytes, a full one every 20"
	echo "| $label | $(tr '\n' ' ' < "$W/$mode.resumed" | sed 's/ $//') | $(grep -v never "$W/$mode.clocks" | med) ($(tr '\n' ' ' < "$W/$mode.clocks" | sed 's/ $//')) | $(med < "$W/$mode.mb") | $(med < "$W/$mode.acc")% |"
done
p=$(grep -v never "$W/prioritized.clocks" | med)
f=$(grep -v never "$W/full.clocks" | med)
echo
awk -v p="$p" -v f="$f" 'BEGIN { if (f > 0 && p != "-") printf "Prioritized checkpoints: %.0f%% fewer clocks redone than full ones.\n", 100 * (1 - p / f) }'
