#!/bin/sh
# bench_mf.sh -- `make bench BENCH=mf`: matrix factorization (--model mf)
# on a synthetic low-rank set (tests/data/mf/mf_synth.py) whose best RMSE
# is the noise's sigma: test RMSE against training time, one process.
#   env: BUILD, USERS, ITEMS, RANK, RATINGS (training), SIGMA, EPOCHS.
# Prints the run's JSON and a markdown table; exits 1 when the last test
# RMSE is over 1.2 sigma.
# Not measured: 2 workers + 2 PS and bytes on the wire per rating --
# `local --model mf` does not exist yet (docs/trainer.md, "Matrix
# factorization").
set -eu

. "$(dirname "$0")/trainer_needs.sh"
USERS=${USERS:-4000}
ITEMS=${ITEMS:-2000}
RANK=${RANK:-8}
RATINGS=${RATINGS:-600000}
SIGMA=${SIGMA:-0.5}
EPOCHS=${EPOCHS:-15}
gen="$(dirname "$0")/../data/mf/mf_synth.py"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

python3 "$gen" "$dir/train.csv" "$dir/test.csv" --users "$USERS" \
	--items "$ITEMS" --rank "$RANK" --train "$RATINGS" \
	--test $((RATINGS / 10)) --sigma "$SIGMA" --seed 1
out=$("$T" train --model mf --rank "$RANK" --train-data "$dir/train.csv" \
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
echo "2 workers + 2 PS: not measured (local --model mf is not built)"
echo "$out" | jq -e --argjson s "$SIGMA" '.test_rmse <= 1.2 * $s' >/dev/null
