#!/bin/sh
# bench_ec2.sh -- the EC2 client against the fake EC2 (tests/fake_ec2):
# calls per second with 1, 8 and 64 calls in flight on one multi handle,
# CPU per call in the client and in the fake, the same loop over plain
# libcurl with no signing and no XML (GET /_ctl, the fake's cheapest
# path), and heap/RSS per call in flight.  The driver tests/bench/
# ec2_bench.c is compiled here against build/libproteus.a.
set -eu
: "${BUILD:?}"
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
work=$(mktemp -d /tmp/pxbench-ec2.XXXXXX)
fakepid=""
cleanup() {
	exec 3>&- 2>/dev/null || true
	[ -n "$fakepid" ] && kill "$fakepid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
TOTAL=${EC2_BENCH_CALLS:-3000}

pkgs="libcurl openssl jansson sqlite3 nanomsg zlib libxml-2.0 yajl openblas"
# The same libraries the Makefile links the programs with (CUDA or not).
ldlibs=$(make -s -C "$src" --no-print-directory BUILD="$BUILD" print-ldlibs)
# shellcheck disable=SC2046,SC2086
cc -std=c11 -O2 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter \
	$(pkg-config --cflags $pkgs) -o "$work/ec2_bench" "$here/ec2_bench.c" \
	"$BUILD/libproteus.a" $ldlibs

mkfifo "$work/stdin"
/usr/bin/python3 "$src/tests/fake_ec2/fake_ec2.py" --timeout 900 \
	<"$work/stdin" >"$work/port" &
fakepid=$!
exec 3>"$work/stdin"
i=0
while ! grep -q PORT "$work/port" 2>/dev/null; do
	i=$((i + 1)); [ $i -lt 100 ] || { echo "fake did not start" >&2; exit 1; }
	sleep 0.1
done
port=$(sed -n 's/^PORT //p' "$work/port")
url="http://127.0.0.1:$port/"
export AWS_ACCESS_KEY_ID=AKIDEXAMPLE
export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY
export NO_PROXY='*'

# CPU seconds (user + system) the fake has used so far
fake_cpu() {
	awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$fakepid/stat"
}
ctl() {
	curl -s --noproxy '*' -o /dev/null -d "$1" "${url}_ctl"
}
val() { # key=value out of a result line
	echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"
}

echo "$TOTAL calls per row; the fake is Python (ThreadingHTTPServer, one"
echo "thread per connection, one GIL) and recomputes each SigV4 signature"
echo "with botocore; client and fake share the machine's $(nproc) cores."
echo
echo "| what | in flight | calls/s | client CPU us/call | fake CPU us/call | client max calls/s (1 core) |"
echo "|---|---:|---:|---:|---:|---:|"
for mode in rate raw; do
	for n in 1 8 64; do
		if [ "$mode" = rate ]; then
			target=$url
			what="signed DescribeSpotPriceHistory (ec2_call_start)"
		else
			target="${url}_ctl"
			what="plain curl multi GET /_ctl (no signing, no XML)"
		fi
		c0=$(fake_cpu)
		r=$("$work/ec2_bench" "$mode" "$target" "$n" "$TOTAL")
		c1=$(fake_cpu)
		[ "$(val failed "$r")" = 0 ] || { echo "failed: $r" >&2; exit 1; }
		calls=$(val calls "$r")
		ccpu=$(val client_cpu_us_per_call "$r")
		fcpu=$(echo "scale=0; ($c1 - $c0) * 1000000 / $calls" | bc)
		echo "| $what | $n | $(val calls_per_s "$r") | $ccpu | $fcpu | $(echo "1000000 / $ccpu" | bc) |"
	done
done

echo
echo "Memory per call in flight: the fake holds every call 3 s (a 'slow'"
echo "fault); the driver starts N calls, lets them connect and send for"
echo "0.5 s, then compares malloc's in-use bytes (mallinfo2) and RSS with"
echo "the values before the first call (the client already created)."
echo
echo "| in flight | heap bytes/call | RSS KiB/call |"
echo "|---:|---:|---:|"
for n in 64 256; do
	ctl '{"reset": true}'
	ctl "{\"faults\": [{\"op\": \"DescribeSpotPriceHistory\", \"kind\": \"slow\", \"delay\": 3, \"count\": $n}]}"
	r=$("$work/ec2_bench" mem "$url" "$n")
	[ "$(val done_early "$r")" = 0 ] || { echo "calls finished early: $r" >&2; exit 1; }
	echo "| $n | $(val heap_bytes_per_call "$r") | $(val rss_kib_per_call "$r") |"
done
