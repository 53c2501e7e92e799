#!/bin/sh
# bench_partial.sh -- partial recovery against a full restart (issue 27):
# the MLP on Fashion-MNIST, `proteus-trainer local`, 2 workers and PS PS in
# stage 1 (no backups: each shard has one copy), a checkpoint (the state
# both recoveries go back to: the file, and the coordinator's snapshot of
# the same pull) every CKPT clocks, a test every EVERY clocks to measure;
# one PS SIGKILLed once the job reaches a clock of KILLS (one a run: a
# failure early, midway and late in a checkpoint interval), for each seed
# of SEEDS.  Modes (MODES):
#   partial  the coordinator reloads the dead PS's shards alone from the
#            last state it pulled (the checkpoint's) and the job goes on;
#   full     --no-partial-recovery: the job fails and `local
#            --max-restarts 1` restarts it from the same checkpoint;
#   prio     partial recovery with prioritized checkpoints: one every
#            PRIO_EVERY clocks within PRIO_BUDGET bytes (a full one every
#            10), so the state pulled is at most PRIO_EVERY clocks old.
# For each run: the clocks trained after the kill until the test loss is
# back to the last ones evaluated before it (recover_clocks.py), the final
# accuracy and the wall time; the work lost over all the kills together
# (failures spread over the interval).  PAR runs at a time (their wall
# times then share the machine).  Prints markdown.
#   env: BUILD (default build), EPOCHS (8), EVERY (1), CKPT (80),
#   KILLS ("90 110 130 150"), SEEDS (1), PS (4), MODES ("partial full"),
#   PRIO_EVERY (4), PRIO_BUDGET (71829), PAR (1)
set -eu

EPOCHS=${EPOCHS:-8}
EVERY=${EVERY:-1}
CKPT=${CKPT:-80}
PS=${PS:-4}
KILLS=${KILLS:-90 110 130 150}
SEEDS=${SEEDS:-1}
MODES=${MODES:-partial full}
PRIO_EVERY=${PRIO_EVERY:-4}
PRIO_BUDGET=${PRIO_BUDGET:-71829}
PAR=${PAR:-1}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/trainer_needs.sh"

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
JOB="--model mlp --epochs $EPOCHS --workers 2 --ps $PS --stage 1 --batch 128 \
 --lr 0.05 --momentum 0.9 --schedule cosine --threads 1 --timeout 900 --json \
 --eval-every $EVERY"

# one MODE KILL SEED: its results in $W/MODE.KILL.SEED.{clocks,acc,wall}
one() {
	mode=$1 k=$2 s=$3 r=$W/$1.$2.$3
	case $mode in
	partial) extra="--checkpoint-every $CKPT" ;;
	full) extra="--checkpoint-every $CKPT --no-partial-recovery --max-restarts 1" ;;
	prio) extra="--checkpoint-every $PRIO_EVERY --checkpoint-budget $PRIO_BUDGET" ;;
	*) echo "bench_partial: unknown mode '$mode'" >&2; exit 2 ;;
	esac
	t0=$(date +%s.%N)
	# shellcheck disable=SC2086
	out=$("$T" local $JOB --seed "$s" --kill-ps-at-clock "$k" \
		--checkpoint "$r.pxc" $extra 2>"$r.log") || out={}
	t1=$(date +%s.%N)
	python3 "$HERE/recover_clocks.py" "$r.log" >"$r.clocks"
	echo "$out" | jq '(.test_accuracy // 0) * 10000 | round / 100' >"$r.acc"
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", b - a }' >"$r.wall"
	rm -f "$r.pxc" "$r.pxc.delta"
}

n=0
for mode in $MODES; do
	for s in $SEEDS; do
		for k in $KILLS; do
			one "$mode" "$k" "$s" &
			n=$((n + 1))
			if [ "$n" -ge "$PAR" ]; then
				wait
				n=0
			fi
		done
	done
done
wait

val() { cat "$W/$1.$2.$3.$4"; }
# the sum of a mode's clocks, "never" counted as the clocks to the end
# would be (not bounded here: shown apart)
total() {
	t=0 nv=0
	for s in $SEEDS; do
		for k in $KILLS; do
			v=$(val "$1" "$k" "$s" clocks)
			case $v in never) nv=$((nv + 1)) ;; *) t=$((t + v)) ;; esac
		done
	done
	if [ "$nv" -gt 0 ]; then echo "$t (and $nv never)"; else echo "$t"; fi
}

echo "MLP, $EPOCHS epochs, 2 workers, $PS PS in stage 1, a checkpoint every $CKPT clocks (prio: every $PRIO_EVERY within $PRIO_BUDGET bytes), a test every $EVERY clock(s), a PS SIGKILLed at clock $(echo $KILLS | tr ' ' '/') (one a run), seeds $(echo $SEEDS | tr ' ' '/'), $PAR run(s) at a time; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg), not pinned."
echo
printf '| killed at clock | seed |'
for mode in $MODES; do printf ' %s: clocks to get the loss back | %s: accuracy / wall s |' "$mode" "$mode"; done
echo
printf '|---|---|'
for mode in $MODES; do printf -- '---|---|'; done
echo
for s in $SEEDS; do
	for k in $KILLS; do
		printf '| %s (%s past the checkpoint) | %s |' "$k" "$((k % CKPT))" "$s"
		for mode in $MODES; do
			printf ' %s | %s%% / %s |' "$(val "$mode" "$k" "$s" clocks)" \
				"$(val "$mode" "$k" "$s" acc)" "$(val "$mode" "$k" "$s" wall)"
		done
		echo
	done
done
echo
for mode in $MODES; do
	echo "- $mode: $(total "$mode") clocks redone over all the kills"
done
