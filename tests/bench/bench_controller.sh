#!/bin/sh
# bench_controller.sh -- one controller step at scale (issue 10): 1,000
# instances over 100 spot markets, BidBrain deciding every 5 minutes of
# trace for 16 days (tests/bench/controller_bench.c, compiled here against
# build/libproteus.a).
set -eu
: "${BUILD:?}"
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
work=$(mktemp -d /tmp/pxbench-ctrl.XXXXXX)
trap 'rm -rf "$work"' EXIT
pkgs="libcurl openssl jansson sqlite3 nanomsg zlib libxml-2.0 yajl openblas"
ldlibs=$(make -s -C "$src" --no-print-directory BUILD="$BUILD" print-ldlibs)
# shellcheck disable=SC2046,SC2086
cc -std=c11 -O2 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter \
	$(pkg-config --cflags $pkgs) -o "$work/controller_bench" \
	"$here/controller_bench.c" "$BUILD/libproteus.a" $ldlibs
echo
echo "\`make bench BENCH=controller\`: ctrl_step + ctrl_cost, wall time per step"
echo
echo "| markets | fleet at start | fleet min-max | steps | p50 us | p99 us | max us |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
"$work/controller_bench" | awk '{printf "| %s | %s | %s-%s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8}'
