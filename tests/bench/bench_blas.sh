#!/bin/sh
# bench_blas.sh -- the OpenBLAS kernel sets on this CPU (issue 26, item 1):
# `proteus-trainer train --model mlp --batch 256 --threads 1 --epochs 1`
# and tests/bench/torch_mlp.py (the same MLP, batch, threads and epoch,
# on the same OpenBLAS), each pinned to core 0 with taskset, under
#   default  the library's own choice: OPENBLAS_CORETYPE set to the core
#            OpenBLAS picks by itself here (`train --json`'s
#            blas.library_core), which is what any program gets
#   chosen   no OPENBLAS_CORETYPE: proteus-trainer's choice by the CPU's
#            features (docs/trainer-compute.md); torch is given the same
#            core, as it has no choice of its own
#   CORE     each of $CORES, set for both
# The runs go round-robin (every set for both programs in each of REPS
# rounds) so that a change in the machine's load hits all of them; the
# table gives medians and spreads, and the kernels each program reports
# it ran (proteus-trainer's blas.core, torch_mlp.py's blas_core).  A
# second table times the SGEMMs of one training step alone
# (blas_gemm_bench.c, compiled here: best of 5, steadier than a whole
# run on a shared machine) under each set.
#   env: BUILD (default build), REPS (default 3), EPOCHS (default 1),
#   CORES (default "Prescott Haswell SkylakeX": the generic fallback the
#   issue's Xeon got, the AVX2 and the AVX-512 sets), CPU (default 0).
set -eu

REPS=${REPS:-3}
EPOCHS=${EPOCHS:-1}
CORES=${CORES:-Prescott Haswell SkylakeX}
CPU=${CPU:-0}
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/trainer_needs.sh"
$PY -c 'import torch' 2>/dev/null || {
	echo "bench_blas: needs python3-torch (scripts/deps.sh bench)" >&2
	exit 2
}
command -v taskset >/dev/null || { echo "bench_blas: needs taskset" >&2; exit 2; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cc -O2 -o "$W/gemm" "$HERE/blas_gemm_bench.c" $(pkg-config --cflags --libs openblas) || {
	echo "bench_blas: cannot compile blas_gemm_bench.c (libopenblas-dev)" >&2
	exit 2
}
OPT="--model mlp --batch 256 --threads 1 --epochs $EPOCHS --lr 0.05 --momentum 0.9 --schedule cosine"

# what the library picks by itself, and what the trainer picks
j=$(env -u OPENBLAS_CORETYPE taskset -c "$CPU" "$T" train $OPT --max-train 256 \
	--max-test 100 --json 2>/dev/null) || { echo "bench_blas: train failed" >&2; exit 1; }
LIB=$(echo "$j" | jq -r .blas.library_core)
PICK=$(echo "$j" | jq -r .blas.core)
HOW=$(echo "$j" | jq -r .blas.chosen)

ours() { # OPENBLAS_CORETYPE ("" none)
	if [ -n "$1" ]; then
		OPENBLAS_CORETYPE=$1 taskset -c "$CPU" "$T" train $OPT --json 2>/dev/null
	else
		env -u OPENBLAS_CORETYPE taskset -c "$CPU" "$T" train $OPT --json 2>/dev/null
	fi
}
torch() { # OPENBLAS_CORETYPE
	OPENBLAS_CORETYPE=$1 taskset -c "$CPU" $PY "$HERE/torch_mlp.py" --model mlp \
		--epochs "$EPOCHS" --batch 256 --lr 0.05 --momentum 0.9 --threads 1
}

SETS="default chosen $CORES"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$REPS"); do
	for s in $SETS; do
		case $s in
		default) ct=$LIB oc=$LIB ;;
		chosen) ct=$PICK oc= ;;
		*) ct=$s oc=$s ;;
		esac
		a=$(ours "$oc") || { echo "bench_blas: train ($s) failed" >&2; exit 1; }
		b=$(torch "$ct") || { echo "bench_blas: torch ($s) failed" >&2; exit 1; }
		echo "$s $r $(echo "$a" | jq -r '"\(.samples_per_sec) \(.blas.core) \(.blas.chosen)"') $(echo "$b" | jq -r '"\(.samples_per_sec) \(.blas_core)"')" >>"$W/runs"
	done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), family $(grep -m1 '^cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model $(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' '); $(echo "$j" | jq -r .blas.library); on its own it picks $LIB, proteus-trainer picks $PICK ($HOW)."
echo "MLP 784-256-256-10, batch 256, 1 thread, $EPOCHS epoch(s) of Fashion-MNIST, each process pinned to core $CPU; $REPS rounds (round-robin), samples/s:"
echo
echo "| kernels asked for | proteus-trainer ran | samples/s median | min - max | torch ran | torch samples/s median | min - max | ours / torch |"
echo "|---|---|---:|---:|---|---:|---:|---:|"
col() { # set column
	awk -v k="$1" -v c="$2" '$1 == k { print $c }' "$W/runs" | sort -g
}
med() { # set column
	col "$1" "$2" | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'
}
for s in $SETS; do
	case $s in
	default) what="default: OPENBLAS_CORETYPE=$LIB (the library's own)" ;;
	chosen) what="chosen: none (proteus-trainer's pick); torch $PICK" ;;
	*) what="OPENBLAS_CORETYPE=$s" ;;
	esac
	ran=$(awk -v k="$s" '$1 == k { print $4 " (" $5 ")"; exit }' "$W/runs")
	tran=$(awk -v k="$s" '$1 == k { print $7; exit }' "$W/runs")
	m=$(med "$s" 3) t=$(med "$s" 6)
	printf '| %s | %s | %.0f | %.0f - %.0f | %s | %.0f | %.0f - %.0f | %.2fx |\n' \
		"$what" "$ran" "$m" "$(col "$s" 3 | head -1)" "$(col "$s" 3 | tail -1)" \
		"$tran" "$t" "$(col "$s" 6 | head -1)" "$(col "$s" 6 | tail -1)" \
		"$(awk -v a="$m" -v b="$t" 'BEGIN { print a / b }')"
done

echo
echo "The SGEMMs of one training step alone (blas_gemm_bench.c: forward NN, weight gradient TN, input gradient NT, batch 256), 1 thread, core $CPU, best of 5 x 100 steps:"
echo
echo "| kernels asked for | OpenBLAS ran | ms per step | GFLOP/s |"
echo "|---|---|---:|---:|"
for s in $SETS; do
	case $s in
	default) ct=$LIB ;;
	chosen) ct=$PICK ;;
	*) ct=$s ;;
	esac
	OPENBLAS_CORETYPE=$ct taskset -c "$CPU" "$W/gemm" 256 |
		awk -v s="$s" -v c="$ct" '{ printf "| %s (%s) | %s | %s | %s |\n", s, c, $1, $2, $3 }'
done
