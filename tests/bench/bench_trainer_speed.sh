#!/bin/bash
# bench_trainer_speed.sh -- the elastic trainer's throughput against one
# process and against PyTorch, side by side in one run (issue 11):
#   one      proteus-trainer train, batch 256, 1 thread, on core 0
#   torch    tests/bench/torch_mlp.py, the same, on core 0
#   local1   proteus-trainer local, 1 worker + 1 PS (+ the coordinator),
#            batch 256, every process on core 0 (the same core as one)
#   local2   proteus-trainer local, 2 workers + 2 PS (1 reliable), stage
#            2, batch 128 per worker (global 256), on cores 0-1
#   ddp2     tests/bench/torch_ddp.py: DistributedDataParallel, gloo on
#            loopback, 2 processes of 1 thread, batch 128 each (global
#            256), on cores 0-1
# MLP 784-256-256-10 (MODEL), full Fashion-MNIST, lr 0.05 cosine,
# momentum 0.9.  The runs go round-robin (one of each per round, REPS
# rounds) so that a change in the machine's load hits all of them; the
# tables give medians, spreads (min-max) and the ratios the issue's
# targets are about.  The distributed runs also give bytes on the wire per
# sample and the share of the roles' CPU time spent on frame tags, from
# the roles' "wire:" lines.
#   env: BUILD (default build), EPOCHS (default 3), REPS (default 3),
#   MODEL (default mlp), EXTRA (more options for both local runs),
#   ONLY (a comma list of the runs above; default all).
# Each row names the OpenBLAS kernels its program ran (proteus-trainer's
# choice, docs/trainer-compute.md; torch gets the library's own unless
# OPENBLAS_CORETYPE is set for the bench: run it with the core the
# trainer reports to compare like with like).
set -eu

EPOCHS=${EPOCHS:-3}
REPS=${REPS:-3}
MODEL=${MODEL:-mlp}
EXTRA=${EXTRA:-}
ONLY=${ONLY:-one,torch,local1,local2,ddp2}
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
. "$(dirname "$0")/trainer_needs.sh"
$PY -c 'import torch' 2>/dev/null || {
	echo "bench_trainer_speed: needs python3-torch (scripts/deps.sh bench)" >&2
	exit 2
}
command -v taskset >/dev/null || { echo "bench_trainer_speed: needs taskset" >&2; exit 2; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
OPT="--model $MODEL --epochs $EPOCHS --lr 0.05 --momentum 0.9 --schedule cosine --threads 1"
want() { case ",$ONLY," in *",$1,"*) return 0 ;; esac; return 1; }

run() { # name
	case $1 in
	one) taskset -c 0 "$T" train $OPT --batch 256 --json 2>/dev/null ;;
	torch) taskset -c 0 $PY "$HERE/torch_mlp.py" --model "$MODEL" \
		--epochs "$EPOCHS" --batch 256 --lr 0.05 --momentum 0.9 --threads 1 ;;
	local1) taskset -c 0 "$T" local $OPT --batch 256 --workers 1 --ps 1 \
		--timeout 600 --json $EXTRA 2>"$W/err.$1" ;;
	local2) taskset -c 0,1 "$T" local $OPT --batch 128 --workers 2 --ps 2 \
		--reliable 1 --stage 2 --timeout 600 --json $EXTRA 2>"$W/err.$1" ;;
	ddp2) taskset -c 0,1 $PY "$HERE/torch_ddp.py" --model "$MODEL" --procs 2 \
		--epochs "$EPOCHS" --batch 128 --lr 0.05 --momentum 0.9 --threads 1 ;;
	esac
}

# the roles' wire lines of a local run: bytes sent, tag and CPU ms
wire() { # stderr-file samples
	awk -v n="$2" '/ wire: sent / {
		for (i = 1; i <= NF; i++) {
			if ($i == "sent") { sub(",", "", $(i+3)); b += $(i+3) }
			if ($i == "authentication") { a += $(i+1); c += $(i+4) }
		}
	} END { printf "%.0f %.1f\n", b / n, c ? 100 * a / c : 0 }' "$1"
}

# the OpenBLAS kernels a run computed with: train's and torch's JSON say
# them; a local run's worker says them in its log ("blas: ...")
kernels() { # name json
	case $1 in
	one) echo "$2" | jq -r '"\(.blas.core) (\(.blas.chosen))"' ;;
	torch|ddp2) echo "$2" | jq -r '.blas_core // "?"' ;;
	local*) sed -n 's/.*worker: notice: blas: .*kernels \([^ ]*\) (\([^,)]*\).*/\1 (\2)/p' \
		"$W/err.$1" | head -1 ;;
	esac
}

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$REPS"); do
	for k in one torch local1 local2 ddp2; do
		want $k || continue
		j=$(run $k) || { echo "bench_trainer_speed: $k failed" >&2; cat "$W/err.$k" >&2 2>/dev/null; exit 1; }
		s=$(echo "$j" | jq '.samples_per_sec')
		a=$(echo "$j" | jq '.test_accuracy')
		extra=
		case $k in local*) extra=$(wire "$W/err.$k" "$(echo "$j" | jq .samples)") ;; esac
		echo "$k $r $s $a $extra" >>"$W/runs"
		echo "$k $(kernels $k "$j")" >>"$W/kernels"
	done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "$MODEL, $EPOCHS epochs, $REPS rounds (round-robin), samples/s:"
echo
echo "| run | what | OpenBLAS kernels | samples/s median | min - max | accuracy (median run) | bytes on the wire / sample | CPU in tags |"
echo "|---|---|---|---:|---:|---:|---:|---:|"
desc() {
	case $1 in
	one) echo "proteus-trainer train, batch 256, 1 thread, core 0" ;;
	torch) echo "PyTorch $($PY -c 'import torch; print(torch.__version__)'), batch 256, 1 thread, core 0" ;;
	local1) echo "local, 1 worker + 1 PS, batch 256, all on core 0${EXTRA:+ ($EXTRA)}" ;;
	local2) echo "local, 2 workers + 2 PS, stage 2, batch 128 each, cores 0-1${EXTRA:+ ($EXTRA)}" ;;
	ddp2) echo "PyTorch DDP, gloo, 2 processes x 1 thread, batch 128 each, cores 0-1" ;;
	esac
}
med() { # name column
	awk -v k="$1" -v c="$2" '$1 == k { print $c }' "$W/runs" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'
}
for k in one torch local1 local2 ddp2; do
	want $k || continue
	m=$(med $k 3)
	lo=$(awk -v k=$k '$1 == k { print $3 }' "$W/runs" | sort -g | head -1)
	hi=$(awk -v k=$k '$1 == k { print $3 }' "$W/runs" | sort -g | tail -1)
	acc=$(awk -v k=$k -v m="$m" '$1 == k && $3 == m { print $4; exit }' "$W/runs")
	bytes=$(awk -v k=$k -v m="$m" '$1 == k && $3 == m { print $5; exit }' "$W/runs")
	tags=$(awk -v k=$k -v m="$m" '$1 == k && $3 == m { print $6; exit }' "$W/runs")
	kern=$(awk -v k=$k '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }' "$W/kernels")
	printf '| %s | %s | %s | %.0f | %.0f - %.0f | %.2f%% | %s | %s |\n' "$k" "$(desc $k)" \
		"${kern:-?}" "$m" "$lo" "$hi" "$(awk -v a="$acc" 'BEGIN { print a * 100 }')" \
		"${bytes:--}" "${tags:+$tags%}"
done
echo
echo "| target | ratio of the medians | each round | met |"
echo "|---|---:|---|---|"
ratio() { # a b bound label
	want "$1" && want "$2" || return 0
	x=$(med "$1" 3) y=$(med "$2" 3)
	pairs=$(awk -v a="$1" -v b="$2" '$1 == a { x[$2] = $3 } $1 == b { y[$2] = $3 }
		END { for (r in x) if (r in y) printf "%s%.2f", (n++ ? ", " : ""), x[r] / y[r] }' "$W/runs")
	awk -v x="$x" -v y="$y" -v b="$3" -v l="$4" -v p="$pairs" 'BEGIN {
		printf "| %s >= %.1fx | %.2fx | %s | %s |\n", l, b, x / y, p, (x / y >= b ? "yes" : "NO") }'
}
ratio local1 one 0.9 "local1 / one"
ratio local1 torch 1.0 "local1 / torch"
ratio local2 one 1.0 "local2 / one"
ratio local2 ddp2 1.0 "local2 / ddp2"
