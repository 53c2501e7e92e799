#!/bin/sh
# bench_trainer_gpu.sh -- time per training step of the MLP 784-256-256-10
# (ReLU, softmax cross-entropy, SGD momentum 0.9) on one GPU: ours
# (tests/bench/gpu_step_bench.c over the CUDA ops table) against PyTorch
# (tests/bench/torch_step.py) on the same GPU, at batch 256 and 1024, in
# three modes (see gpu_step_bench.c): sync (loss read every step, as the
# trainer), async (no host read), upload (sync + batch copied from the host
# every step).  Where no GPU is found both run on the CPU instead: that is
# a check of the harness, labelled so, not a result.  Prints markdown.
#   make bench BENCH=trainer_gpu
#   env: BUILD; GPU_STEP_BENCH (a built driver, as in the GPU bundle; else
#   it is compiled here against $BUILD/libproteus.a); PYTHON (a python3
#   with torch; default the first of python3, /usr/bin/python3 that has
#   it); DEVICE (cuda or cpu; default cuda when nvidia-smi lists a GPU);
#   BATCHES ("256 1024"), MODES ("sync async upload"), STEPS, ROUNDS,
#   WARMUP (per mode: 100, 5, 20 on a GPU; 10, 3, 2 on the CPU), THREADS
#   (CPU only, default 1), COMMIT (to print; default git's HEAD).
# Exit 2 when something needed is missing (nothing built, no torch, a GPU
# but a build without the CUDA path).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$src/build}
BATCHES=${BATCHES:-256 1024}
MODES=${MODES:-sync async upload}
THREADS=${THREADS:-1}
TORCH_STEP=${TORCH_STEP:-$here/torch_step.py}
work=$(mktemp -d /tmp/pxbench-gpu.XXXXXX)
trap 'rm -rf "$work"' EXIT
die() {
	echo "bench_trainer_gpu: $*" >&2
	exit 2
}

if [ -z "${PYTHON:-}" ]; then
	for p in python3 /usr/bin/python3; do
		if command -v "$p" >/dev/null 2>&1 &&
		   "$p" -c 'import torch' 2>/dev/null; then
			PYTHON=$p
			break
		fi
	done
fi
[ -n "${PYTHON:-}" ] || die "no python3 with torch (scripts/deps.sh bench installs python3-torch)"

gpu=$(nvidia-smi -L 2>/dev/null | sed -n '1s/^GPU 0: \(.*\) (UUID.*/\1/p' || true)
if [ -z "${DEVICE:-}" ]; then
	if [ -n "$gpu" ]; then DEVICE=cuda; else DEVICE=cpu; fi
fi
case $DEVICE in
cuda) STEPS=${STEPS:-100} ROUNDS=${ROUNDS:-5} WARMUP=${WARMUP:-20} ;;
cpu) STEPS=${STEPS:-10} ROUNDS=${ROUNDS:-3} WARMUP=${WARMUP:-2} ;;
*) die "DEVICE must be cuda or cpu, not '$DEVICE'" ;;
esac

if [ -n "${GPU_STEP_BENCH:-}" ]; then
	drv=$GPU_STEP_BENCH
	[ -x "$drv" ] || die "GPU_STEP_BENCH='$drv' is not an executable"
else
	[ -r "$BUILD/libproteus.a" ] || die "'$BUILD/libproteus.a' not built (run make)"
	# The CUDA path is a library the program loads; built here, it is
	# not beside the program, so say where it is.
	if [ -r "$BUILD/libproteus-cuda.so" ]; then
		PROTEUS_CUDA_LIB=${PROTEUS_CUDA_LIB:-$BUILD/libproteus-cuda.so}
		export PROTEUS_CUDA_LIB
	elif [ "$DEVICE" = cuda ]; then
		die "a GPU ($gpu) but $BUILD was built without the CUDA path (make cuda-note)"
	fi
	# The same libraries the Makefile links the programs with.
	ldlibs=$(make -s -C "$src" --no-print-directory BUILD="$BUILD" print-ldlibs)
	# shellcheck disable=SC2086
	cc -std=c11 -O2 -D_GNU_SOURCE -Wall -Wextra -Werror \
		-Wno-unused-parameter -o "$work/gpu_step_bench" \
		"$here/gpu_step_bench.c" "$BUILD/libproteus.a" $ldlibs ||
		die "cannot build gpu_step_bench"
	drv=$work/gpu_step_bench
fi

common="--device $DEVICE --steps $STEPS --rounds $ROUNDS --warmup $WARMUP --threads $THREADS"
for b in $BATCHES; do
	for m in $MODES; do
		# shellcheck disable=SC2086
		if ! "$drv" $common --batch "$b" --mode "$m" >>"$work/ours.json"; then
			die "gpu_step_bench failed (batch $b, mode $m)"
		fi
	done
done
# One torch process for every row (import and CUDA start-up once).
# shellcheck disable=SC2086
"$PYTHON" "$TORCH_STEP" $common --batch "$(echo $BATCHES | tr ' ' ,)" \
	--mode "$(echo $MODES | tr ' ' ,)" >"$work/torch.json" ||
	die "torch_step.py failed"

commit=${COMMIT:-$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?')}
GPU="$gpu" COMMIT="$commit" "$PYTHON" - "$work/ours.json" "$work/torch.json" <<'EOF'
import json, os, sys

ours = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
torch = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
key = lambda r: (r["batch"], r["mode"])
t = {key(r): r for r in torch}
o0, t0 = ours[0], torch[0]
label = {"sync": "sync: loss read every step (as the trainer)",
         "async": "async: no host read between steps",
         "upload": "upload: sync + batch copied from the host every step"}
if o0["device"] == "cuda":
    print("GPU: %s (nvidia-smi -L; ours: %s, torch: %s); torch %s, "
          "TF32 %s (ours: plain FP32); commit %s." % (
              os.environ.get("GPU") or "?", o0["gpu_name"],
              t0["gpu_name"], t0["torch"], "on" if t0["tf32"] else "off",
              os.environ.get("COMMIT")))
else:
    print("**HARNESS CHECK ON THE CPU, NOT A GPU RESULT** (no GPU found, "
          "or DEVICE=cpu): %d thread(s); torch %s; commit %s." % (
              o0["threads"], t0["torch"], os.environ.get("COMMIT")))
print("Median of %d rounds of %d steps after %d warm-up steps; the "
      "fastest round in brackets. ours/torch is steps per second, ours "
      "over PyTorch's: >= 1.0 means ours is at least as fast." % (
          o0["rounds"], o0["steps"], o0["warmup"]))
print()
print("| batch | per step | ours ms/step | PyTorch ms/step | ours/torch |")
print("|---:|---|---:|---:|---:|")
for r in ours:
    p = t.get(key(r))
    if p is None:
        continue
    print("| %d | %s | %.3f (%.3f) | %.3f (%.3f) | %.2fx |" % (
        r["batch"], label.get(r["mode"], r["mode"]), r["ms_per_step"],
        r["ms_per_step_min"], p["ms_per_step"], p["ms_per_step_min"],
        p["ms_per_step"] / r["ms_per_step"]))
print()
print("Loss on the fixed batch, first -> after every step (a check that "
      "the steps train): " + "; ".join(
          "b%d %s ours %.3f -> %.3f, torch %.3f -> %.3f" % (
              r["batch"], r["mode"], r["first_loss"], r["final_loss"],
              t[key(r)]["first_loss"], t[key(r)]["final_loss"])
          for r in ours if key(r) in t))
print()
print("What a step includes:")
seen = set()
for r in ours:
    if r["mode"] in seen or key(r) not in t:
        continue
    seen.add(r["mode"])
    print("- %s: ours: %s; PyTorch: %s." % (
        r["mode"], r["includes"], t[key(r)]["includes"]))
EOF
