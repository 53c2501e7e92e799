#!/bin/sh
# gpu_bundle.sh -- build the CUDA path here and collect, in one folder
# (build/gpu-bundle), what the lent GPU machine needs to run our GPU tests,
# the GPU step benchmark and a CUDA training run: that machine has CUDA and
# PyTorch but none of the Debian libraries we link (OpenBLAS, jansson,
# nanomsg, criterion, ...), so they travel with the binaries.
#
#   scripts/gpu_bundle.sh        then, with the device tool, one call:
#   run(command="sh build/gpu-bundle/run.sh", carry=["build/gpu-bundle"])
#
# The folder holds bin/ (px_gpu_tests, gpu_step_bench, proteus-trainer,
# proteusd, proteusctl), share/proteus/ (the trace slice and on-demand
# table proteusd finds beside it), job-local-mlr.json,
# lib/proteus/libproteus-cuda.so (the CUDA kernels, which the programs
# dlopen on --device cuda from ../lib/proteus/ beside them),
# lib.tar.xz (every shared library they need except glibc's and CUDA's, as
# real files under their sonames; GCC's runtime apart, used only where the
# machine has none), data/ (Fashion-MNIST), torch_step.py,
# bench_trainer_gpu.sh, bench/ (the CPU benches run.sh runs with
# PX_GPU_CPU_BENCH=1 on the machine's 16 cores, and jq in bin/), run.sh
# (scripts/gpu_bundle_run.sh) and MANIFEST.
# It must stay under the tool's 64 MiB for what travels; this script fails
# above 60 MiB.  Exit 2 when this machine cannot build the CUDA path.
#   env: BUILD (default build), DATA (default /usr/share/datasets/fashion-mnist)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
: "${BUILD:=build}"
case "$BUILD" in /*) ;; *) BUILD="$src/$BUILD" ;; esac
DATA=${DATA:-/usr/share/datasets/fashion-mnist}
out="$BUILD/gpu-bundle"
die() {
	echo "gpu_bundle: $*" >&2
	exit 2
}

cd "$src"
note=$(make -s --no-print-directory BUILD="$BUILD" cuda-note)
case $note in
*"building the CUDA path too"*) ;;
*) die "this machine does not build the CUDA path: $note" ;;
esac
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz \
	 t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
	[ -r "$DATA/$f" ] || die "'$DATA/$f' missing (dataset-fashion-mnist)"
done
make -s --no-print-directory -j"$(nproc)" BUILD="$BUILD" all \
	"$BUILD/px_gpu_tests" >/dev/null

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib/proteus" "$out/data" "$out/stage/lib" \
	"$out/stage/lib-gcc"
cp "$BUILD/proteus-trainer" "$BUILD/px_gpu_tests" "$BUILD/proteusd" \
	"$BUILD/proteusctl" "$out/bin/"
# the CPU benches' own needs (run.sh, PX_GPU_CPU_BENCH): jq, which the
# GPU machine's image may lack, with its libraries below
command -v jq >/dev/null 2>&1 && cp "$(command -v jq)" "$out/bin/"
# what proteusd finds beside itself (../share/proteus/...): the shipped
# trace slice and on-demand table, and the example local job
mkdir -p "$out/share/proteus/traces" "$out/share/proteus/ondemand"
cp docs/examples/traces/us-east-1_2016-03-01_7d_linux.json.gz \
	"$out/share/proteus/traces/"
cp etc/ondemand/us-east-1_2016-02_2016-04.json "$out/share/proteus/ondemand/"
cp docs/examples/job-local-mlr.json "$out/job-local-mlr.json"
cp "$BUILD/libproteus-cuda.so" "$out/lib/proteus/"
# shellcheck disable=SC2046
cc -std=c11 -O2 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter \
	-o "$out/bin/gpu_step_bench" \
	tests/bench/gpu_step_bench.c "$BUILD/libproteus.a" \
	$(make -s --no-print-directory BUILD="$BUILD" print-ldlibs)

# Every library the binaries load, by the name the loader asks for, minus
# glibc's (the GPU machine's newer glibc runs our binaries) and CUDA's (the
# machine's own CUDA 13 runtime and cuBLAS must match its driver).
for b in "$out"/bin/* "$out"/lib/proteus/*.so; do
	ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r name path; do
	case $name in
	ld-linux*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|\
	libresolv.so.*|libutil.so.*|libanl.so.*|libmvec.so.*) continue ;;
	libcuda.so.*|libcudart.so.*|libcublas.so.*|libcublasLt.so.*) continue ;;
	libstdc++.so.*|libgcc_s.so.*) cp -L "$path" "$out/stage/lib-gcc/$name" ;;
	*) cp -L "$path" "$out/stage/lib/$name" ;;
	esac
done
tar -cJf "$out/lib.tar.xz" -C "$out/stage" lib lib-gcc
rm -rf "$out/stage"

cp "$DATA"/*-ubyte.gz "$out/data/"
cp tests/bench/torch_step.py tests/bench/bench_trainer_gpu.sh "$out/"
mkdir -p "$out/bench"
cp tests/bench/bench_stragglers.sh tests/bench/stragglers_run.py \
	tests/bench/bench_partial.sh tests/bench/recover_clocks.py \
	tests/bench/bench_goodput.sh tests/bench/trainer_needs.sh "$out/bench/"
cp scripts/gpu_bundle_run.sh "$out/run.sh"
chmod +x "$out/run.sh" "$out/bench_trainer_gpu.sh" "$out/torch_step.py"

{
	echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
	echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m), $(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/nvcc \1/p')"
	echo "libraries: $(tar -tJf "$out/lib.tar.xz" | grep -v '/$' | sed 's|.*/||' | tr '\n' ' ')"
	(cd "$out" && find . -type f ! -name MANIFEST | sort | xargs sha256sum)
} >"$out/MANIFEST"

kib=$(du -sk "$out" | cut -f1)
[ "$kib" -le $((60 * 1024)) ] || die "bundle is $((kib / 1024)) MiB, over 60 MiB"
rel=${out#"$src"/}
echo "gpu_bundle: $out ($((kib / 1024)) MiB); on the GPU machine, one call:"
echo "  run(command=\"sh $rel/run.sh\", carry=[\"$rel\"], timeout_s=600)"
