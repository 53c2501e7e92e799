#!/bin/sh
# bench_goodput.sh -- goodput and co-adaptation (issue 27, item 2):
# `proteus-trainer local` (MLP, Fashion-MNIST, BSP) while the workers churn
# between 1 and 4 (--churn-every: a join every CHURN s up to 4, then a
# SIGKILL every CHURN s down to 1, and again), with co-adaptation
# (--adapt), with it and the clock's length adapted too (adapt-clock:
# --adapt --adapt-clock) and without (fixed: a fixed batch and lr), the
# MODES asked for, REPEAT runs each: test
# accuracy after the same number of samples (the epochs), time to TARGET
# test accuracy (from the --eval-every evaluations), mean goodput; and a
# PNG of goodput and workers over time of each mode's first run (gnuplot,
# as `simulate --plot`).
#   env: BUILD (default build), EPOCHS (default 6), REPEAT (default 2),
#   CHURN (s, default 1.5), TARGET (default 0.87), PLOT (default
#   docs/img/goodput-churn.png; "" for none), PIN (a taskset CPU list,
#   default none), MODES (default "adapt fixed"; adapt-clock too).
set -eu

EPOCHS=${EPOCHS:-6}
REPEAT=${REPEAT:-2}
CHURN=${CHURN:-1.5}
TARGET=${TARGET:-0.87}
PLOT=${PLOT-docs/img/goodput-churn.png}
PIN=${PIN:-}
MODES=${MODES:-adapt fixed}
. "$(dirname "$0")/trainer_needs.sh"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
pin=""
[ -n "$PIN" ] && pin="taskset -c $PIN"
load0=$(cut -d' ' -f1 /proc/loadavg)

run() { # mode index
	case $1 in
	adapt) flag=--adapt ;;
	adapt-clock) flag="--adapt --adapt-clock" ;;
	fixed) flag="" ;;
	*) echo "bench_goodput: unknown mode '$1'" >&2; exit 2 ;;
	esac
	# shellcheck disable=SC2086
	$pin "$T" local --model mlp --epochs "$EPOCHS" --workers 1 --ps 1 \
		--batch 128 --lr 0.05 --momentum 0.9 --schedule cosine \
		--threads 1 --max-test 2000 --eval-every 20 \
		--churn-every "$CHURN" --churn-max 4 --timeout 600 --json \
		$flag >"$out/$1.$2.json" 2>"$out/$1.$2.err"
}

i=0
while [ "$i" -lt "$REPEAT" ]; do
	# alternate, so that a change of the machine's load hits each
	for m in $MODES; do
		run "$m" "$i"
	done
	i=$((i + 1))
done
load1=$(cut -d' ' -f1 /proc/loadavg)

echo "MLP, $EPOCHS epochs of Fashion-MNIST (60000 examples), --batch 128 --lr 0.05 cosine, BSP, 1 PS, workers churning 1..4 every $CHURN s; $REPEAT runs per mode; load average $load0 before, $load1 after${PIN:+; pinned to CPUs $PIN}"
echo
echo "| mode | run | test accuracy | s to $TARGET | train s | joins | losses | mean goodput (samples/s) | mean samples/s | decisions | clock lengths |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for f in "$out"/*.json; do
	b=$(basename "$f" .json)
	jq -r --arg mode "${b%.*}" --arg run "${b#*.}" \
		--argjson target "$TARGET" '
		def mean(f): (map(f) | if length > 0 then add / length
					else 0 end);
		.goodput.timeline as $tl |
		([$tl[] | select(.test_accuracy != null and
				 .test_accuracy >= $target) | .t] | first)
			as $reach |
		"| \($mode) | \($run) | \(.test_accuracy) | \(if $reach then
		  ($reach * 10 | round / 10) else "never" end) | \(.train_seconds
		  * 10 | round / 10) | \(.joins) | \(.losses) | \($tl |
		  mean(.goodput) | round) | \($tl | mean(.samples_per_s) |
		  round) | \(.goodput.decisions | length) | \([.goodput.decisions[].clock_batches] | unique | map(tostring) | join(" ")) |"' "$f"
done
if [ -n "$PLOT" ] && command -v gnuplot >/dev/null 2>&1 &&
   [ -f "$out/adapt.0.json" ] && [ -f "$out/fixed.0.json" ]; then
	for m in adapt fixed; do
		jq -r '.goodput.timeline[] | "\(.t) \(.goodput) \(.samples_per_s) \(.workers) \(.batch) \(.lr_scale)"' \
			"$out/$m.0.json" >"$out/$m.dat"
	done
	gnuplot <<GP
set terminal pngcairo size 1200,700 font 'sans,11'
set output '$PLOT'
set multiplot layout 2,1 title 'Goodput under churn (1..4 workers every $CHURN s): co-adaptation (--adapt) against a fixed batch and lr'
set ylabel 'samples/s'
set key top left
set grid
plot '$out/adapt.dat' using 1:2 with lines lw 2 title 'goodput, --adapt', \
     '$out/fixed.dat' using 1:2 with lines lw 2 title 'goodput, fixed', \
     '$out/adapt.dat' using 1:3 with lines dt 2 title 'throughput, --adapt', \
     '$out/fixed.dat' using 1:3 with lines dt 2 title 'throughput, fixed'
set xlabel 's since the job started'
set ylabel 'workers / lr factor'
set y2label 'batch per worker'
set y2tics
plot '$out/adapt.dat' using 1:4 with steps lw 2 title 'workers (adapt run)', \
     '$out/fixed.dat' using 1:4 with steps title 'workers (fixed run)', \
     '$out/adapt.dat' using 1:6 with steps title 'lr factor (adapt)', \
     '$out/adapt.dat' using 1:5 axes x1y2 with steps title 'batch per worker (adapt)'
unset multiplot
GP
	echo
	echo "plot: $PLOT"
fi
