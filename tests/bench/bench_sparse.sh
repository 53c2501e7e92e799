#!/bin/sh
# bench_sparse.sh -- `make bench BENCH=sparse`: MLR on a synthetic sparse
# LIBSVM set (tests/bench/sparse_gen.py: ROWS rows, FEATURES features, 10
# classes, NNZ non-zeros a row, a learnable signal): samples/s, test
# accuracy and peak RSS of the sparse path (--sparse on: the non-zeros)
# against the dense one (--sparse off: every feature), one process
# (`train`) and `local` with 2 workers + 2 PS.  Pinned to CPU 0 (taskset)
# with one OpenBLAS thread; /usr/bin/time gives the peak RSS (for `local`
# the largest process's).
#   env: BUILD, ROWS (100000), FEATURES (100000), NNZ (40), EPOCHS (1),
#        BATCH (256).
set -eu

. "$(dirname "$0")/trainer_needs.sh"
ROWS=${ROWS:-100000}
FEATURES=${FEATURES:-100000}
NNZ=${NNZ:-40}
EPOCHS=${EPOCHS:-1}
BATCH=${BATCH:-256}
gen="$(dirname "$0")/sparse_gen.py"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
[ -x /usr/bin/time ] || { echo "bench_sparse: needs /usr/bin/time" >&2; exit 2; }
pin=""
command -v taskset >/dev/null 2>&1 && pin="taskset -c 0"

python3 "$gen" "$dir/train.svm" "$ROWS" "$FEATURES" 10 "$NNZ" 1
python3 "$gen" "$dir/test.svm" $((ROWS / 10)) "$FEATURES" 10 "$NNZ" 2

# run NAME ARGS...: the trainer's JSON in $dir/NAME.json, peak RSS (KiB)
# in $dir/NAME.rss
run() {
	name=$1
	shift
	$pin /usr/bin/time -f '%M' -o "$dir/$name.rss" "$T" "$@" \
		--model mlr --epochs "$EPOCHS" --batch "$BATCH" --threads 1 \
		--train-data "$dir/train.svm" --test-data "$dir/test.svm" \
		--json >"$dir/$name.json" 2>"$dir/$name.err" || {
		echo "bench_sparse: $name failed:" >&2
		tail -5 "$dir/$name.err" >&2
		exit 1
	}
}
run train_sparse train --sparse on
run train_dense train --sparse off
run local_sparse local --workers 2 --ps 2 --sparse on
run local_dense local --workers 2 --ps 2 --sparse off

core=$(jq -r .blas.core "$dir/train_sparse.json")
echo "$ROWS rows x $FEATURES features, 10 classes, $NNZ non-zeros a row" \
	"(density $(echo "$NNZ $FEATURES" | awk '{printf "%.2g", $1 / $2}'))," \
	"$EPOCHS epoch(s), batch $BATCH, 1 OpenBLAS thread ($core), ${pin:-not pinned}"
echo
echo "| run | path | samples/s | test accuracy | peak RSS MiB |"
echo "|---|---|---:|---:|---:|"
for r in train_sparse train_dense local_sparse local_dense; do
	jq -r --arg r "$r" --argjson rss "$(cat "$dir/$r.rss")" '
		"| \($r | split("_")[0] | if . == "train" then "1 process"
		  else "local, 2 workers + 2 PS" end) | \($r | split("_")[1]) | " +
		"\(.samples_per_sec | round) | \(.test_accuracy * 1000 | round / 10)% | " +
		"\($rss / 1024 | round) |"' "$dir/$r.json"
done
grep -h "data: " "$dir/local_sparse.err" | sed 's/^/    /'
