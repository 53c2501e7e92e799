#!/bin/sh
# bench_bidbrain_today.sh -- issue 40: BidBrain on the 2021 per-second
# market against EC2 Fleet's strategies and the (scaling-aware) hindsight
# bound on held-out windows, jobs and seeds; and against Uniform Progress
# over a range of deadlines (2016 legacy, 2021 per-second), with a plot of
# cost against deadline (PLOT_DIR).  Pure simulation: no pinning matters
# (single-threaded per run), no BLAS.
set -eu
: "${BUILD:?}" "${SHARED:?}"
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
PLOT_DIR=${PLOT_DIR:-/tmp}
/usr/bin/python3 "$here/bidbrain_today.py" "$BUILD/proteusctl" "$SHARED" \
	"$src" "$PLOT_DIR/bidbrain-deadlines.png"
