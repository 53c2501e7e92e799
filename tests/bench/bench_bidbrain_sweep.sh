#!/bin/sh
# bench_bidbrain_sweep.sh -- does BidBrain's result depend on its
# hand-picked constants (issue 12)?  Builds proteusctl in its own folder
# with BB_END_S (the end game, seconds), BB_SWAP_MARGIN (a swap must
# save this factor) and RISK_LEVEL_W (the weight, in samples, of the
# pooled estimate in the risk estimator's estimate at the current price
# level) set to each value in turn, and prints the mean and
# worst saving against standard over the 18 benchmark windows of the 2015
# and 2016 traces (tests/bench/sim_windows.py) for each.
#   env: SHARED (../shared), SWEEP_BUILD (default build-sweep; removed
#   at the end), END_VALUES, SWAP_VALUES, LEVEL_VALUES.
set -eu
: "${SHARED:?}"
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
B=${SWEEP_BUILD:-build-sweep}
END_VALUES=${END_VALUES:-"0 1800 3600 7200 14400 28800"}
SWAP_VALUES=${SWAP_VALUES:-"1.0 1.1 1.2 1.5 2.0 1e9"}
LEVEL_VALUES=${LEVEL_VALUES:-"12 48 96 288 1152"}
tr="$SHARED/traces"
cd "$src"
trap 'rm -rf "$B"' EXIT

build() { # CFLAGS for BidBrain and its risk estimator
	rm -f "$B/obj/bidbrain/pol_bidbrain.o" "$B/obj/bidbrain/risk.o"
	make -s BUILD="$B" CFLAGS_OPT="-O2 $1" "$B/proteusctl" >/dev/null
}
row() { # label
	a=$(python3 "$here/sim_windows.py" "$B/proteusctl" \
		"$tr/us-east-1_2015-03_2015-08_linux.json.gz" \
		etc/ondemand/us-east-1_2015-03_2015-08.json \
		docs/examples/job-2015-c3xlarge.json legacy-hourly \
		bidbrain,standard 2015-03-25,2015-04-10,2015-04-25 \
		192,768,3072 32,16 | grep '^bidbrain')
	b=$(python3 "$here/sim_windows.py" "$B/proteusctl" \
		"$tr/us-east-1_2016-02_2016-04_linux.json.gz" \
		etc/ondemand/us-east-1_2016-02_2016-04.json \
		docs/examples/job-2016-m3large.json legacy-hourly \
		bidbrain,standard 2016-03-09,2016-03-25,2016-04-09 \
		192,768,3072 32,16 | grep '^bidbrain')
	echo "| $1 | $(echo "$a" | sed 's/.*mean *\([-0-9.]*%\) worst *\([-0-9.]*%\).*max \([0-9.]*\).*/\1 | \2 | \3/') | $(echo "$b" | sed 's/.*mean *\([-0-9.]*%\) worst *\([-0-9.]*%\).*max \([0-9.]*\).*/\1 | \2 | \3/') |"
}

echo "| constant | 2015 mean | 2015 worst | 2015 runtime/std max | 2016 mean | 2016 worst | 2016 runtime/std max |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for v in $END_VALUES; do
	build "-DBB_END_S=$v"
	row "BB_END_S=$v"
done
for v in $SWAP_VALUES; do
	build "-DBB_SWAP_MARGIN=$v"
	row "BB_SWAP_MARGIN=$v"
done
for v in $LEVEL_VALUES; do
	build "-DRISK_LEVEL_W=$v"
	row "RISK_LEVEL_W=$v"
done
