#!/bin/bash
# bench_stragglers.sh -- a straggler, with and without FlexRR relief
# (docs/trainer.md, "Stragglers"): `proteus-trainer local`, MLP on 12000
# Fashion-MNIST examples, 2 and 4 workers, BSP (--slack 0) and SSP
# (--slack 2); one worker slowed 3x (--slow-worker-at) from the start
# for half the run without a straggler (its median train time); time
# from the job's start to the first evaluation (each epoch) at or above
# TARGET, and to the end, against the run without a straggler.  Prints
# markdown.
#   env: BUILD (default build), REPS (runs of each, default 3; medians),
#   EPOCHS (default 20), TARGET (default 0.87), CPUS (taskset list,
#   default all of them), WORKERS (default "2 4"), MODEL (default mlp),
#   EXTRA (more options for every run: `--fault-batch-ms 4` with MODEL
#   mlr makes each worker a machine of its own on a host of fewer cores:
#   a minibatch is a 4 ms wait, not CPU), EVAL_EVERY (clocks: evaluate
#   that often too, not only at each epoch's end, so that a target
#   reached early is timed to a few clocks, not to an epoch).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/trainer_needs.sh"
REPS=${REPS:-3}
EPOCHS=${EPOCHS:-20}
TARGET=${TARGET:-0.87}
CPUS=${CPUS:-0-$(($(nproc) - 1))}
WORKERS=${WORKERS:-2 4}
MODEL=${MODEL:-mlp}
EXTRA=${EXTRA:-}
EVAL_EVERY=${EVAL_EVERY:-}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
PIN="taskset -c $CPUS"
RUN="$HERE/stragglers_run.py"
COMMON="--model $MODEL --batch 64 --max-train 12000 --max-test 2000 --threads 1
	--schedule cosine --eval-epochs --json --epochs $EPOCHS --timeout 600
	${EVAL_EVERY:+--eval-every $EVAL_EVERY} $EXTRA"

# runs W SLACK EXTRA...: REPS runs, a JSON array of their results
runs() {
	local w=$1 slack=$2 a='[]' r
	shift 2
	for i in $(seq "$REPS"); do
		# shellcheck disable=SC2086
		r=$($PIN "$PY" "$RUN" "$TARGET" "$T" local $COMMON \
			--workers "$w" --slack "$slack" "$@")
		a=$(echo "$a" | jq -c --argjson x "$r" '. + [$x]')
	done
	echo "$a"
}

echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min); pinned: $PIN; $REPS runs each, medians; target $TARGET test accuracy (2000 test examples), $EPOCHS epochs; model $MODEL${EXTRA:+, $EXTRA}${EVAL_EVERY:+; evaluated every $EVAL_EVERY clocks too}."
echo
echo "| workers | consistency | run | to target, s | ratio | to the end, s | ratio | reassigned minibatches | accuracy |"
echo "|---|---|---|---|---|---|---|---|---|"
for w in $WORKERS; do
	for slack in 0 2; do
		name=$([ "$slack" = 0 ] && echo BSP || echo "SSP, slack $slack")
		base=$(runs "$w" "$slack")
		half=$(echo "$base" | jq '[.[].train_seconds] | sort | .[length / 2 | floor] / 2')
		slow="0:1:3:$half"
		relief=$(runs "$w" "$slack" --slow-worker-at "$slow")
		none=$(runs "$w" "$slack" --slow-worker-at "$slow" --no-reassign)
		jq -rn --argjson b "$base" --argjson r "$relief" \
			--argjson n "$none" --arg w "$w" --arg c "$name" \
			--argjson half "$half" '
			def med: sort | .[length / 2 | floor];
			def tt: map(.to_target // 1e9) | med;
			def te: map(.train_seconds) | med;
			def f: . * 100 | round / 100;
			def s: if . >= 1e9 then "not reached" else f end;
			def row($x; $lab):
				"| \($w) | \($c) | \($lab) | \($x | tt | s) | \(if ($x | tt) >= 1e9 or ($b | tt) >= 1e9 then "-" else "\(($x | tt) / ($b | tt) | f)x" end) | \($x | te | f) | \(($x | te) / ($b | te) | f)x | \($x | map(.reassigned) | med) | \($x | map(.accuracy) | med * 1000 | round / 10)% |";
			row($b; "no straggler"),
			row($r; "worker 1 at 3x for \($half | f) s, relief"),
			row($n; "the same, --no-reassign")'
	done
done
echo
echo "Load after: $(cut -d' ' -f1-3 /proc/loadavg)"
