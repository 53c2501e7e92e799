#!/bin/sh
# gpu_bundle_run.sh -- copied as run.sh into the bundle that
# scripts/gpu_bundle.sh makes; run on the lent GPU machine as
#   sh build/gpu-bundle/run.sh          (results under $OUT)
# Steps, each with its own time limit so the whole stays under the tool's
# 10 minutes: the GPU's name and the software found; the GPU tests
# (px_gpu_tests --verbose: every max diff); the step benchmark, ours and
# PyTorch at batch 256 and 1024 (bench_trainer_gpu.sh); one
# `proteus-trainer train --device cuda --model mlp --epochs 2 --json`; an
# elastic `proteus-trainer local --device cuda` with a worker killed and
# one added; a proteusd job with trainer.device "cuda"; and,
# with the time left, the GPU tests under compute-sanitizer memcheck
# (PX_GPU_BUDGET, default 560 s, is the whole run's budget: a smaller one
# leaves device time for a second call).
# PX_GPU_QUICK=1 leaves out the step benchmark and the proteusd job;
# PX_GPU_CPU_BENCH=1 adds the CPU benches that want the machine's cores
# (stragglers, partial recovery, goodput under churn: their env, REPS,
# KILLS, SEEDS, MODES, PAR, REPEAT..., passes through), into bench.md.
# Without a GPU the tests run and skip, the benchmark runs on the CPU as a
# harness check and the training run is a small CPU one: each is labelled,
# nothing is reported as a GPU result.  Writes run.log, summary.md,
# env.txt, gpu_tests.log, bench.md, train.json, train.log, sanitizer.log;
# exit 1 when a step that ran failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$here/out}
mkdir -p "$OUT"
tmp=$(mktemp -d /tmp/pxgpu.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
t_start=$(date +%s)
commit=$(sed -n 's/^commit //p' "$here/MANIFEST" 2>/dev/null)

# ---- libraries: ours from the bundle, CUDA's from this machine ----
setup_libs() {
	# xz (the libraries' archive must fit the tool's 64 MiB); python3's
	# tarfile where tar has no xz
	tar -xJf "$here/lib.tar.xz" -C "$tmp" 2>/dev/null ||
		python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
			"$here/lib.tar.xz" "$tmp" || return 1
	libs=$tmp/lib
	if ! ldconfig -p 2>/dev/null | grep -q 'libstdc++\.so\.6 '; then
		libs=$libs:$tmp/lib-gcc
	fi
	sites=$(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null || true)
	for name in libcudart.so.13 libcublas.so.13 libcublasLt.so.13; do
		ldconfig -p 2>/dev/null | grep -q "$name " && continue
		[ -e "/usr/local/cuda-13.0/lib64/$name" ] && continue # RUNPATH
		# shellcheck disable=SC2086
		f=$(find /usr/local/cuda*/lib64 /usr/local/cuda*/targets/*/lib \
			$sites -maxdepth 5 -name "$name" 2>/dev/null | head -1)
		if [ -n "$f" ]; then
			libs=$libs:$(dirname "$f")
		else
			echo "warning: $name not found on this machine" >&2
		fi
	done
	mkdir -p "$tmp/bin"
	for b in "$here"/bin/*; do
		n=$(basename "$b")
		# shellcheck disable=SC2016
		printf '#!/bin/sh\nexport LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\nexec %s "$@"\n' \
			"$libs" "$b" >"$tmp/bin/$n"
		chmod +x "$tmp/bin/$n"
	done
	echo "LD_LIBRARY_PATH for our binaries: $libs"
}

status() { # step, text: one summary row
	echo "| $1 | $2 |" >>"$tmp/summary"
	echo "== $1: $2"
}

# json_step NAME CMD...: CMD (150 s at most); its stdout (one JSON
# object) becomes a line of $OUT/train.json, its stderr goes to
# $OUT/train.log under a header, and one summary row.  (The device tool
# brings back at most 8 files: the steps share two.)
json_step() {
	name=$1
	shift
	echo "== $name" >>"$OUT/train.log"
	timeout 150 "$@" >"$tmp/step.json" 2>>"$OUT/train.log"
	rc=$?
	tr -d '\n' <"$tmp/step.json" >>"$OUT/train.json"
	echo >>"$OUT/train.json"
	if [ $rc -eq 0 ]; then
		status "$name" "ok: $(cat "$tmp/step.json")"
	else
		status "$name" "FAILED rc $rc: $(tail -1 "$OUT/train.log")"
		failed=1
	fi
}

# daemon_step: start proteusd on a config of ours, submit the example
# job with trainer.device set, poll its status until it ends (150 s at
# most), sampling nvidia-smi for processes on the GPU; the daemon's log
# and the job's status in train.log, and one summary row.
daemon_step() {
	d=$tmp/daemon
	dev=cuda
	[ -n "$gpu" ] || dev=cpu
	mkdir -p "$d"
	# the nodes read the bundle's Fashion-MNIST (data_dir)
	printf 'db %s\ncontrol_socket %s\nlog_level info\ndata_dir %s\n' \
		"$d/p.db" "$d/p.sock" "$here/data" >"$d/p.conf"
	python3 - "$here/job-local-mlr.json" "$d/job.json" "$dev" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
j["trainer"].update(model="mlp", epochs=30, device=sys.argv[3])
json.dump(j, open(sys.argv[2], "w"))
PY
	"$tmp/bin/proteusd" --config "$d/p.conf" >"$d/log" 2>&1 &
	dpid=$!
	ctl="$tmp/bin/proteusctl --socket $d/p.sock"
	i=0
	until $ctl ping >/dev/null 2>&1 || [ $i -ge 50 ]; do
		sleep 0.2
		i=$((i + 1))
	done
	id=$($ctl submit "$d/job.json" 2>"$d/status")
	st=none gpu_procs=0
	if [ -n "$id" ]; then
		i=0
		while [ $i -lt 150 ]; do
			st=$($ctl status "$id" --json 2>/dev/null |
			     python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])' 2>/dev/null)
			case $st in done|failed|cancelled) break ;; esac
			if [ -n "$gpu" ]; then
				n=$(nvidia-smi --query-compute-apps=pid \
				    --format=csv,noheader 2>/dev/null | wc -l)
				[ "$n" -gt "$gpu_procs" ] && gpu_procs=$n
			fi
			sleep 1
			i=$((i + 1))
		done
		$ctl status "$id" >>"$d/status" 2>&1
	fi
	kill "$dpid" 2>/dev/null
	wait "$dpid" 2>/dev/null
	# the tool brings back 8 files: the daemon's log and the job's
	# status go to train.log
	{
		echo "== proteusd (trainer.device $dev)"
		cat "$d/log"
		echo "== proteusctl submit, status"
		cat "$d/status"
	} >>"$OUT/train.log"
	summary=$(sed -n 's/.*notice: \(job [0-9]* done: .*\)/\1/p' "$d/log")
	summary="$summary; $(grep -E '^(cost|churn) ' "$d/status" | tr -s ' \n' ' ;')"
	if [ "$st" = done ] && [ -n "$gpu" ]; then
		status "proteusd job, trainer.device cuda" "done; up to $gpu_procs processes on the GPU at once; $summary"
	elif [ "$st" = done ]; then
		status "proteusd job" "CPU harness check only (no GPU): done; $summary"
	else
		status "proteusd job, trainer.device $dev" "FAILED: state '$st' (train.log)"
		failed=1
	fi
}

# cpu_benches: bench_stragglers.sh, bench_partial.sh and bench_goodput.sh
# (no plot: no gnuplot there) on this machine's
# cores, the trainer from the bundle, Fashion-MNIST where the trainer
# looks by default (a link to the bundle's copy), jq from the bundle;
# each within its share of the time left (PX_STRAGGLERS_S, PX_PARTIAL_S)
cpu_benches() {
	if [ ! -e /usr/share/datasets/fashion-mnist ]; then
		mkdir -p /usr/share/datasets &&
			ln -s "$here/data" /usr/share/datasets/fashion-mnist
	fi
	{
		echo
		echo "## CPU benches on this machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
		echo
		echo "### stragglers"
	} >>"$OUT/bench.md"
	PATH=$tmp/bin:$PATH BUILD=$tmp/bin timeout "${PX_STRAGGLERS_S:-200}" \
		sh "$here/bench/bench_stragglers.sh" >>"$OUT/bench.md" 2>&1
	rc=$?
	status "stragglers bench" "rc $rc (bench.md)"
	echo "### partial recovery" >>"$OUT/bench.md"
	PATH=$tmp/bin:$PATH BUILD=$tmp/bin timeout "${PX_PARTIAL_S:-200}" \
		sh "$here/bench/bench_partial.sh" >>"$OUT/bench.md" 2>&1
	rc=$?
	status "partial bench" "rc $rc (bench.md)"
	echo "### goodput under churn" >>"$OUT/bench.md"
	PATH=$tmp/bin:$PATH BUILD=$tmp/bin PLOT= timeout "${PX_GOODPUT_S:-150}" \
		sh "$here/bench/bench_goodput.sh" >>"$OUT/bench.md" 2>&1
	rc=$?
	status "goodput bench" "rc $rc (bench.md)"
}

left() { # seconds left of a PX_GPU_BUDGET s budget (default 560)
	echo $((${PX_GPU_BUDGET:-560} - ($(date +%s) - t_start)))
}

main() {
	failed=0
	echo "# GPU bundle run, commit ${commit:-?}, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	gpu=$(nvidia-smi -L 2>/dev/null | sed -n '1s/^GPU 0: \(.*\) (UUID.*/\1/p')
	{
		echo "== uname"; uname -a
		echo "== nvidia-smi -L"; nvidia-smi -L 2>&1
		echo "== nvidia-smi"; nvidia-smi 2>&1
		echo "== nvcc"; nvcc --version 2>&1 || /usr/local/cuda/bin/nvcc --version 2>&1
		echo "== python3 / torch"
		python3 -c 'import sys, torch; print(sys.executable, torch.__version__, torch.version.cuda, torch.cuda.is_available())' 2>&1
		echo "== glibc"; ldd --version 2>&1 | head -1
	} >"$OUT/env.txt" 2>&1
	if ! setup_libs >>"$OUT/env.txt" 2>&1; then
		status "bundle libraries" "FAILED (see env.txt)"
		return 1
	fi
	# setup_libs ran in this shell: $libs is what the wrappers use
	# the CUDA library too: the programs dlopen it on --device cuda, and
	# it is what needs this machine's libcudart/libcublas
	for b in "$here"/bin/* "$here"/lib/proteus/*.so; do
		echo "== ldd $(basename "$b")"
		LD_LIBRARY_PATH=$libs ldd "$b"
	done >"$tmp/ldd" 2>&1
	cat "$tmp/ldd" >>"$OUT/env.txt"
	if grep -q "=> not found" "$tmp/ldd"; then
		status "bundle libraries" "MISSING: $(grep '=> not found' "$tmp/ldd" | sort -u | tr -s '\t\n' '  ')(env.txt)"
	else
		status "bundle libraries" "ok: every library resolves (env.txt)"
	fi
	if [ -n "$gpu" ]; then
		status "GPU" "$gpu (nvidia-smi -L)"
	else
		status "GPU" "none found (nvidia-smi -L): GPU steps are SKIPPED"
	fi

	# GPU tests: every op of the CUDA table against the CPU reference
	timeout 150 "$tmp/bin/px_gpu_tests" --verbose --jobs=1 \
		>"$OUT/gpu_tests.log" 2>&1
	rc=$?
	syn=$(grep 'Synthesis' "$OUT/gpu_tests.log" | sed 's/^\[====\] //')
	if [ -z "$gpu" ]; then
		status "GPU tests" "SKIPPED, no GPU (rc $rc; $syn)"
	elif [ $rc -eq 0 ] && echo "$syn" | grep -q 'Tested: 0 '; then
		status "GPU tests" "NONE RAN on $gpu (all skipped: no device the CUDA runtime can use): $syn"
		failed=1
	elif [ $rc -eq 0 ]; then
		status "GPU tests" "ok on $gpu: $syn"
	else
		status "GPU tests" "FAILED rc $rc on $gpu: $syn"
		failed=1
	fi

	# step time, ours against PyTorch (a CPU harness check without a GPU);
	# PX_GPU_QUICK=1 leaves it and the daemon job out (a run for other
	# steps, on time already spent on these)
	[ "${PX_GPU_QUICK:-0}" = 1 ] || GPU_STEP_BENCH=$tmp/bin/gpu_step_bench TORCH_STEP=$here/torch_step.py \
		COMMIT=$commit timeout 200 sh "$here/bench_trainer_gpu.sh" \
		>"$OUT/bench.md" 2>&1
	rc=$?
	if [ "${PX_GPU_QUICK:-0}" = 1 ]; then
		status "step bench" "left out (PX_GPU_QUICK)"
	elif [ $rc -ne 0 ]; then
		status "step bench" "FAILED rc $rc (bench.md)"
		failed=1
	elif [ -z "$gpu" ]; then
		status "step bench" "CPU harness check only, not a result (bench.md)"
	else
		status "step bench" "ok on $gpu (bench.md)"
	fi

	# one CUDA training run on Fashion-MNIST
	if [ -n "$gpu" ]; then
		json_step "train --device cuda" \
			"$tmp/bin/proteus-trainer" train --device cuda \
			--model mlp --epochs 2 --json --data "$here/data"
	else
		timeout 150 "$tmp/bin/proteus-trainer" train --device cpu \
			--model mlp --epochs 1 --max-train 2000 --max-test 1000 \
			--json --data "$here/data" >"$OUT/train.json" \
			2>"$OUT/train.log"
		rc=$?
		status "train --device cuda" "SKIPPED, no GPU; CPU harness check (2000 examples, 1 epoch) rc $rc: $(cat "$OUT/train.json")"
		[ $rc -eq 0 ] || failed=1
	fi

	# a diverged run on the GPU is a failure that says so (exit 1,
	# "diverged", nothing on stdout), as on the CPU
	if [ -n "$gpu" ]; then
		echo "== diverged --device cuda (--lr 1e6, expect exit 1)" \
			>>"$OUT/train.log"
		timeout 150 "$tmp/bin/proteus-trainer" train --device cuda \
			--model mlp --epochs 1 --lr 1e6 --json \
			--data "$here/data" >"$tmp/div.out" 2>"$tmp/div.err"
		rc=$?
		cat "$tmp/div.err" >>"$OUT/train.log"
		if [ $rc -eq 1 ] && grep -q diverged "$tmp/div.err" &&
		   [ ! -s "$tmp/div.out" ]; then
			status "diverged --device cuda" "ok: rc 1: $(tail -1 "$tmp/div.err")"
		else
			status "diverged --device cuda" "FAILED rc $rc: $(tail -1 "$tmp/div.err"); stdout $(wc -c <"$tmp/div.out") bytes"
			failed=1
		fi
	fi

	# the elastic job on the GPU: 2 workers and 2 PS (one reliable,
	# stage 2), a worker SIGKILLed at 1 s and another added at 2 s
	if [ -n "$gpu" ]; then
		json_step "local --device cuda" \
			"$tmp/bin/proteus-trainer" local --device cuda \
			--workers 2 --ps 2 --reliable 1 --stage 2 --epochs 5 \
			--kill-worker-at 1 --add-worker-at 2 --json \
			--data "$here/data"
	fi

	# the goodput estimate on GPU workers (issue 27): an elastic job
	# with --adapt; its noise scale must be measured (above 0) and the
	# co-adaptation decided on the changes of workers
	if [ -n "$gpu" ]; then
		json_step "local --device cuda --adapt" \
			"$tmp/bin/proteus-trainer" local --device cuda \
			--workers 2 --ps 2 --epochs 10 --adapt \
			--kill-worker-at 2 --add-worker-at 3 --json \
			--data "$here/data"
		g=$(tail -1 "$OUT/train.json" | python3 -c '
import json, sys
g = json.load(sys.stdin).get("goodput", {})
print("noise_scale %s, decisions %d" % (g.get("noise_scale", 0), len(g.get("decisions", []))))' 2>&1)
		case $g in
		"noise_scale 0,"*|*rror*|"") status "goodput on cuda" "FAILED: $g"; failed=1 ;;
		*) status "goodput on cuda" "ok: $g" ;;
		esac
	fi

	# the CPU benches that need more than 2 cores (PX_GPU_CPU_BENCH=1):
	# stragglers with 4 workers, partial recovery over more kills,
	# co-adaptation under churn;
	# into bench.md
	if [ "${PX_GPU_CPU_BENCH:-0}" = 1 ]; then
		cpu_benches
	fi

	# a daemon job: proteusd (local world, the shipped slice) runs the
	# example job with trainer.device "cuda" (model mlp, 30 epochs);
	# without a GPU the same on the CPU, as a harness check
	if [ "${PX_GPU_QUICK:-0}" = 1 ]; then
		status "proteusd job" "left out (PX_GPU_QUICK)"
	else
		daemon_step
	fi

	# with the time left: the GPU tests under compute-sanitizer memcheck
	cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
	t=$(left)
	if [ -z "$gpu" ]; then
		status "compute-sanitizer" "SKIPPED, no GPU"
	elif [ -z "$cs" ]; then
		status "compute-sanitizer" "SKIPPED, not installed"
	elif [ "$t" -lt 60 ]; then
		status "compute-sanitizer" "SKIPPED, only $t s left"
	else
		# errors_map_to_px_ecuda asks cudaMalloc for too much on
		# purpose: memcheck reports that API error (2 lines), so
		# that test, which the plain run above covers, is left out
		timeout "$t" "$cs" --tool memcheck --target-processes all \
			--error-exitcode 9 "$tmp/bin/px_gpu_tests" --jobs=1 \
			--filter '!(gpu/errors_map_to_px_ecuda)' \
			>"$OUT/sanitizer.log" 2>&1
		rc=$?
		s=$(grep -E 'ERROR SUMMARY|Synthesis' "$OUT/sanitizer.log" | sort | uniq -c | tr '\n' ' ')
		if [ $rc -eq 0 ]; then
			status "compute-sanitizer" "ok: $s"
		elif [ $rc -eq 124 ]; then
			status "compute-sanitizer" "did not finish in $t s: $s"
		else
			status "compute-sanitizer" "FAILED rc $rc: $s"
			failed=1
		fi
	fi
	echo "# done in $(($(date +%s) - t_start)) s"
	return $failed
}

{
	main
	echo $? >"$tmp/rc"
} 2>&1 | tee "$OUT/run.log"
{
	echo "GPU bundle run, commit ${commit:-?}"
	echo
	echo "| step | result |"
	echo "|---|---|"
	cat "$tmp/summary" 2>/dev/null
	echo
	echo "## bench.md"
	echo
	cat "$OUT/bench.md" 2>/dev/null
} >"$OUT/summary.md"
cat "$OUT/summary.md"
exit "$(cat "$tmp/rc" 2>/dev/null || echo 1)"
