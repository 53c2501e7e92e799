#!/bin/sh
# bench_trainer_accuracy.sh -- full Fashion-MNIST accuracy and one-process
# throughput of the trainer's MLR and MLP (single process, CPU by default).
# Usage: tests/bench/bench_trainer_accuracy.sh [extra proteus-trainer args]
#   env: BUILD (build folder, default build), THREADS (OpenBLAS threads,
#   default: nproc), DEVICE (cpu|cuda, default cpu).
# Prints one JSON object per model and a summary; exits 1 when MLR < 84%
# or MLP < 88% test accuracy.
set -eu

THREADS=${THREADS:-$(nproc)}
DEVICE=${DEVICE:-cpu}
. "$(dirname "$0")/trainer_needs.sh"

status=0
# model target epochs lr batch
while read -r model target epochs lr batch; do
	out=$("$T" train --model "$model" --epochs "$epochs" --lr "$lr" \
		--momentum 0.9 --batch "$batch" --schedule cosine \
		--threads "$THREADS" --device "$DEVICE" --seed 1 --json "$@")
	echo "$out"
	acc=$(echo "$out" | jq -r .test_accuracy)
	sps=$(echo "$out" | jq -r '.samples_per_sec | floor')
	ok=$(echo "$out" | jq -r --argjson t "$target" \
		'if .test_accuracy >= $t then "ok" else "BELOW" end')
	printf '%s: test accuracy %s (target %s: %s), %s samples/s, ' \
		"$model" "$acc" "$target" "$ok" "$sps" >&2
	printf '%s epochs, batch %s, %s threads, %s\n' \
		"$epochs" "$batch" "$THREADS" "$DEVICE" >&2
	[ "$ok" = ok ] || status=1
done <<EOF
mlr 0.84 20 0.05 128
mlp 0.88 10 0.05 128
EOF
exit $status
