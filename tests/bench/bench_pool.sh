#!/bin/sh
# bench_pool.sh -- issue 41: several jobs in one pool, the four arbiters
# side by side in `simulate --workload` (the shipped workload and
# generated ones, tuned-on and held-out, 2021 per-second and 2016
# legacy-hourly, seeds 1-2).  Pure simulation: single-threaded runs, no
# BLAS, no pinning matters.
set -eu
: "${BUILD:?}" "${SHARED:?}"
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
/usr/bin/python3 "$here/pool_bench.py" "$BUILD/proteusctl" "$SHARED" \
	"$src" "$out"
