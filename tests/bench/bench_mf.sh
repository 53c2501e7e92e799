#!/bin/sh
# bench_mf.sh -- `make bench BENCH=mf`: matrix factorization (--model mf)
# on a synthetic low-rank set (tests/data/mf/mf_synth.py) whose best RMSE
# is the noise's sigma: test RMSE against time for one process (`train`)
# and for 2 workers + 2 PS (`local`, evaluated after each epoch), and the
# distributed run's bytes on the wire per rating (its sparse pulls and
# pushes, as the workers' CLOCKs report them).
#   env: BUILD, USERS, ITEMS, RANK, RATINGS (training), SIGMA, EPOCHS,
#        PIN (CPUs for taskset, default 0-1; "" for none).
# Prints both runs' JSON and markdown tables; exits 1 when a last test
# RMSE is over 1.2 sigma.
set -eu

. "$(dirname "$0")/trainer_needs.sh"
USERS=${USERS:-4000}
ITEMS=${ITEMS:-2000}
RANK=${RANK:-8}
RATINGS=${RATINGS:-600000}
SIGMA=${SIGMA:-0.5}
EPOCHS=${EPOCHS:-15}
PIN=${PIN-0-1}
pin=""
[ -n "$PIN" ] && command -v taskset >/dev/null 2>&1 && pin="taskset -c $PIN"
gen="$(dirname "$0")/../data/mf/mf_synth.py"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

python3 "$gen" "$dir/train.csv" "$dir/test.csv" --users "$USERS" \
	--items "$ITEMS" --rank "$RANK" --train "$RATINGS" \
	--test $((RATINGS / 10)) --sigma "$SIGMA" --seed 1
out=$($pin "$T" train --model mf --rank "$RANK" --train-data "$dir/train.csv" \
	--test-data "$dir/test.csv" --epochs "$EPOCHS" --batch 256 \
	--lr 0.04 --weight-decay 0.03 --seed 1 --json)
echo "$out"
echo
echo "$USERS users, $ITEMS items, rank $RANK, $RATINGS training ratings," \
	"noise sigma $SIGMA (the floor); the mean alone:" \
	"$(echo "$SIGMA" | awk '{printf "%.3f", sqrt(1 + $1 * $1)}')"
echo
echo "| run | epoch | training s (cumulative) | train RMSE | test RMSE | test / sigma |"
echo "|---|---:|---:|---:|---:|---:|"
echo "$out" | jq -r --argjson s "$SIGMA" '
	foreach .curve[] as $e (0; . + $e.train_seconds;
		"| 1 process | \($e.epoch) | \(. * 1000 | round / 1000) | " +
		"\($e.train_rmse * 10000 | round / 10000) | " +
		"\($e.test_rmse * 10000 | round / 10000) | " +
		"\($e.test_rmse / $s * 1000 | round / 1000) |")'
echo
echo "$out" | jq -r '"1 process: \(.ratings_per_sec | floor) ratings/s, " +
	"\(.wall_seconds * 100 | round / 100) s in all (loading excluded)"'

# 2 workers + 2 PS: each stderr line stamped with the seconds since the
# start (an evaluation's pull and RMSE included: the time is wall time),
# the RMSE taken from the progress lines where they change.
start=$(date +%s.%N)
$pin "$T" local --model mf --rank "$RANK" --train-data "$dir/train.csv" \
	--test-data "$dir/test.csv" --epochs "$EPOCHS" --batch 256 \
	--lr 0.04 --weight-decay 0.03 --seed 1 --workers 2 --ps 2 \
	--eval-epochs --json >"$dir/dist.json" 2>"$dir/dist.err" &
pid=$!
tail -f "$dir/dist.err" --pid=$pid 2>/dev/null | while IFS= read -r l; do
	echo "$(date +%s.%N) $l"
done >"$dir/dist.stamped"
wait $pid
dout=$(cat "$dir/dist.json")
echo
echo "$dout"
echo
echo "| run | evaluation | wall s since start | train RMSE | test RMSE | test / sigma |"
echo "|---|---:|---:|---:|---:|---:|"
awk -v t0="$start" -v s="$SIGMA" '
	/progress: clock .*train RMSE/ {
		tr = $0; sub(/.*train RMSE /, "", tr); sub(/,.*/, "", tr)
		te = $0; sub(/.*test RMSE /, "", te); sub(/,.*/, "", te)
		if (tr == ltr && te == lte) next
		ltr = tr; lte = te; n++
		printf "| 2 workers + 2 PS | %d | %.3f | %s | %s | %.3f |\n",
			n, $1 - t0, tr, te, te / s
	}' "$dir/dist.stamped"
echo
echo "$dout" | jq -r '"2 workers + 2 PS: \(.samples_per_sec | floor) " +
	"ratings/s, \(.train_seconds * 100 | round / 100) s training, " +
	"\(.wall_seconds * 100 | round / 100) s in all; on the wire " +
	"\(.row_bytes) bytes in \(.row_frames) frames for " +
	"\(.rows_touched) rows: \(.row_bytes_per_rating * 10 | round / 10) " +
	"bytes a rating (the whole matrices: \(.params * 4) bytes)"'
echo "$out" | jq -e --argjson s "$SIGMA" '.test_rmse <= 1.2 * $s' >/dev/null
echo "$dout" | jq -e --argjson s "$SIGMA" '.test_rmse <= 1.2 * $s' >/dev/null
