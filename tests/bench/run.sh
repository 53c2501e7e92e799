#!/bin/sh
# run.sh -- `make bench`: runs every tests/bench/bench_*.sh (or those named
# in $1, e.g. BENCH=import) and prints their markdown results.  Copy the
# results into docs/benchmarks.md with the machine they ran on.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
: "${BUILD:=$here/../../build}"
: "${SHARED:=$here/../../../shared}"
export BUILD SHARED
echo "# machine: $(uname -m), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  commit: $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
for b in "$here"/bench_*.sh; do
	name=$(basename "$b" .sh)
	name=${name#bench_}
	if [ $# -gt 0 ] && [ -n "$1" ]; then
		case ",$1," in *",$name,"*) ;; *) continue ;; esac
	fi
	echo
	echo "## $name"
	sh "$b"
done
