#!/bin/sh
# bench_simulate.sh -- issues 3 and 12: what the policies cost on the
# shared traces (legacy-hourly 2015 and 2016, per-second 2021; three
# windows, three job sizes, the shipped fleet cap of 32 spot instances and
# an equal-fleet cap of 16; then windows, sizes and caps outside that set)
# against the oracle's hindsight bound, one plot per trace of cost per
# work-hour against job size (PLOT_DIR), and
# how fast `proteusctl simulate` is: all policies over the 60-day, 20-type
# 2016 trace (trace loading included) side by side with
# `jq -c '.SpotPriceHistory[]'` on the same decompressed file, then the
# growth with trace length (1x, 2x, 4x) and with the number of markets.
set -eu
: "${BUILD:?}" "${SHARED:?}"
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
ctl="$BUILD/proteusctl"
tr="$SHARED/traces"
od="$src/etc/ondemand"
ex="$src/docs/examples"
work=$(mktemp -d /tmp/pxbench.XXXXXX)
trap 'rm -rf "$work"' EXIT

# ---- cost ----

# windows TITLE TRACE OD JOB BILLING POLICIES STARTS SIZES CAPS [PLOT]:
# every policy and the oracle on each (start, job size, spot cap)
windows() {
	"$here/sim_windows.py" "$ctl" "$2" "$3" "$4" "$5" "$6" "$7" "$8" "$9" \
		> "$work/runs.jsonl"
	echo
	echo "\`proteusctl simulate --trace $(basename "$2") --ondemand-prices etc/ondemand/$(basename "$3") --job J --start S --billing $5 --policy $6 --json\`, J = \`$(basename "$4")\` with work_hours and spot.max_instances as in the table, S each start"
	echo
	python3 "$here/sim_tables.py" "$1" "$5" "$work/runs.jsonl" ${10:-}
}

LEG=bidbrain,standard,ondemand,oracle,oracle-paid
PS=bidbrain,standard,ondemand,spread,lowest-price,capacity-optimized,price-capacity-optimized,diversified,oracle,oracle-paid
PLOT_DIR=${PLOT_DIR:-$work}
T15="$tr/us-east-1_2015-03_2015-08_linux.json.gz"
T16="$tr/us-east-1_2016-02_2016-04_linux.json.gz"
T21="$tr/us-east-1_2021-03_2021-05_linux.json.gz"
O15="$od/us-east-1_2015-03_2015-08.json"
O16="$od/us-east-1_2016-02_2016-04.json"
O21="$od/us-east-1_2021-03_2021-05.json"

echo "The benchmark windows start 14, 30 and 45 days into each trace (so that"
echo "BidBrain's estimator has history and every market has a price); job"
echo "sizes 192, 768 and 3072 work-hours (12, 48, 192 h of a 16-instance"
echo "job); spot caps 32 (shipped) and 16 (equal fleet).  Savings are in cost"
echo "per work-hour (1 - ours / theirs; positive: cheaper)."
if [ -z "${SKIP_COST:-}" ]; then
	windows "2015 trace, legacy-hourly (c3.xlarge job, 5 types x 3 zones)" \
		"$T15" "$O15" "$ex/job-2015-c3xlarge.json" legacy-hourly "$LEG" \
		2015-03-25,2015-04-10,2015-04-25 192,768,3072 32,16 \
		"$PLOT_DIR/simulate-2015.png"
	windows "2016 trace, legacy-hourly (m3.large job, 17 types x 3 zones)" \
		"$T16" "$O16" "$ex/job-2016-m3large.json" legacy-hourly "$LEG" \
		2016-03-09,2016-03-25,2016-04-09 192,768,3072 32,16 \
		"$PLOT_DIR/simulate-2016.png"
	windows "2021 trace, per-second (c4.xlarge job, 13 types x 6 zones)" \
		"$T21" "$O21" "$ex/job-2021-c4xlarge.json" per-second "$PS" \
		2021-03-16,2021-04-01,2021-04-16 192,768,3072 32,16 \
		"$PLOT_DIR/simulate-2021.png"
	echo
	echo "Outside the benchmark set (other starts, job sizes and caps, never"
	echo "looked at while changing BidBrain):"
	SUMMARY_ONLY=1 windows "2015 trace, unseen windows" "$T15" "$O15" \
		"$ex/job-2015-c3xlarge.json" legacy-hourly "$LEG" \
		2015-05-12,2015-06-03,2015-07-01,2015-08-02 96,400,1500 24,20
	SUMMARY_ONLY=1 windows "2016 trace, unseen windows" "$T16" "$O16" \
		"$ex/job-2016-m3large.json" legacy-hourly "$LEG" \
		2016-03-03,2016-03-17,2016-04-02,2016-04-15 96,400,1500 24,20
	SUMMARY_ONLY=1 windows "2021 trace, unseen windows" "$T21" "$O21" \
		"$ex/job-2021-c4xlarge.json" per-second "$PS" \
		2021-03-20,2021-04-08,2021-04-28,2021-05-10 96,400,1500 24,20
	SUMMARY_ONLY=1 windows "2016 trace, the measured scaling profile (job-2016-m3large-profile.json)" \
		"$T16" "$O16" "$ex/job-2016-m3large-profile.json" legacy-hourly \
		"$LEG" 2016-03-09,2016-03-25,2016-04-09 192,768,3072 32,16
	echo
	echo "### Where the money goes, and what 43% against standard would need"
	echo
	echo "(\`tests/bench/sim_ceiling.py\`: each run's ledger from \`--db\`; the floor is"
	echo "the lowest price per speed-hour of the job's spot markets during"
	echo "BidBrain's run; free share = evicted partial hours over spot speed-hours"
	echo "run; the any-fleet columns are an upper bound on what any fleet of the"
	echo "tier plus up to cap spot instances saves when every paid hour costs its"
	echo "type's floor, with no startup, lost clock or rounding; see the script.)"
	for t in 2015 2016; do
		if [ $t = 2015 ]; then
			set -- "$T15" "$O15" "$ex/job-2015-c3xlarge.json" 2015-03-25,2015-04-10,2015-04-25
		else
			set -- "$T16" "$O16" "$ex/job-2016-m3large.json" 2016-03-09,2016-03-25,2016-04-09
		fi
		echo
		echo "#### $t trace, benchmark windows"
		echo
		"$here/sim_ceiling.py" "$ctl" "$src" "$1" "$2" "$3" "$4" \
			192,768,3072 32,16 2>/dev/null
	done
fi

# ---- speed ----

TIMEFMT='%e %M'
measure() {
	/usr/bin/time -f "$TIMEFMT" -o "$work/time" "$@" >/dev/null 2>"$work/err" ||
		{ cat "$work/err" >&2; exit 1; }
	cat "$work/time"
}
best() {
	n=$1; shift
	bestw=""; bestm=""
	i=0
	while [ $i -lt "$n" ]; do
		r=$(measure "$@")
		w=${r% *}; m=${r#* }
		if [ -z "$bestw" ] || [ "$(echo "$w < $bestw" | bc)" = 1 ]; then
			bestw=$w; bestm=$m
		fi
		i=$((i + 1))
	done
	echo "$bestw $bestm"
}
mb() { echo "scale=1; $1 / 1024" | bc; }

zcat "$tr/us-east-1_2016-02_2016-04_linux.json.gz" > "$work/t.json"
records=$(grep -c '"Timestamp"' "$work/t.json")
# a job that never completes runs the whole window: the worst case
jq '.work_hours = 1000000' "$ex/job-2016-m3large.json" > "$work/big.json"
odf="$od/us-east-1_2016-02_2016-04.json"
pols=${SPEED_POLICIES:-bidbrain,standard,ondemand,spread}
# sim TRACE JOB [ARGS]: a script, so that /usr/bin/time can run it
cat > "$work/sim" <<SH
#!/bin/sh
t=\$1 j=\$2; shift 2
exec "$ctl" simulate --trace "\$t" --ondemand-prices "$odf" --job "\$j" \
	--billing legacy-hourly --policy "$pols" "\$@"
SH
chmod +x "$work/sim"
sim() { "$work/sim" "$@"; }

echo
echo "### Speed"
echo
echo "All four policies ($pols) over the whole 60-day 2016 trace"
echo "($records records, 20 types, $(du -m "$work/t.json" | cut -f1) MB decompressed), job = job-2016-m3large.json"
echo "with work_hours 1e6 (never completes, so every run spans all 60 days), trace loading included;"
echo "the policies run side by side on the $(nproc) online CPUs (--threads' default), jq on one:"
echo
echo "| what | wall s (best of 3) | peak RSS MB | / jq |"
echo "|---|---:|---:|---:|"
r=$(best 3 jq -c '.SpotPriceHistory[]' "$work/t.json")
jw=${r% *}; jm=${r#* }
r=$(best 3 "$work/sim" "$work/t.json" "$work/big.json")
sw=${r% *}; sm=${r#* }
echo "| \`proteusctl simulate --trace t.json ... --policy $pols\` | $sw | $(mb "$sm") | $(echo "scale=2; $sw / $jw" | bc) |"
r=$(best 3 "$work/sim" "$work/t.json" "$work/big.json" --threads 1)
echo "| the same, one policy at a time (\`--threads 1\`) | ${r% *} | $(mb "${r#* }") | $(echo "scale=2; ${r% *} / $jw" | bc) |"
echo "| \`jq -c '.SpotPriceHistory[]' t.json > /dev/null\` | $jw | $(mb "$jm") | 1.00 |"
r=$(best 3 "$ctl" simulate --trace "$work/t.json" --ondemand-prices "$odf" --job "$work/big.json" --billing legacy-hourly --policy ondemand)
echo "| of which trace loading (the same with --policy ondemand) | ${r% *} | $(mb "${r#* }") | $(echo "scale=2; ${r% *} / $jw" | bc) |"
r=$(best 3 "$ctl" simulate --trace "$work/t.json" --ondemand-prices "$odf" --job "$work/big.json" --billing legacy-hourly --policy "$PS")
echo "| every policy and both oracles (\`--policy $PS\`) | ${r% *} | $(mb "${r#* }") | $(echo "scale=2; ${r% *} / $jw" | bc) |"
for p in standard bidbrain spread oracle; do
	r=$(best 1 "$ctl" simulate --trace "$work/t.json" --ondemand-prices "$odf" --job "$work/big.json" --billing legacy-hourly --policy "$p")
	echo "| --policy $p alone (loading included) | ${r% *} | $(mb "${r#* }") | $(echo "scale=2; ${r% *} / $jw" | bc) |"
done

# k copies of the trace, each shifted by k * 61 days
python3 - "$work/t.json" "$work" <<'PY'
import json, sys, datetime as dt
src = json.load(open(sys.argv[1]))["SpotPriceHistory"]
shift = dt.timedelta(days=61)
for k in (2, 4):
    with open("%s/t%d.json" % (sys.argv[2], k), "w") as f:
        f.write('{"SpotPriceHistory": [\n')
        first = True
        for c in range(k):
            for r in src:
                t = dt.datetime.strptime(r["Timestamp"], "%Y-%m-%dT%H:%M:%S.000Z") + c * shift
                r2 = dict(r, Timestamp=t.strftime("%Y-%m-%dT%H:%M:%S.000Z"))
                f.write(("" if first else ",\n") + json.dumps(r2))
                first = False
        f.write("\n]}\n")
PY
echo
echo "Growth with trace length (the trace repeated k times, each copy shifted by"
echo "61 days; all four policies over the whole window):"
echo
echo "| trace | days | records | wall s | peak RSS MB | s per 1x |"
echo "|---|---:|---:|---:|---:|---:|"
echo "| 1x | 60 | $records | $sw | $(mb "$sm") | $sw |"
for k in 2 4; do
	r=$(best 1 "$work/sim" "$work/t$k.json" "$work/big.json")
	echo "| ${k}x | $((61 * (k - 1) + 60)) | $((records * k)) | ${r% *} | $(mb "${r#* }") | $(echo "scale=2; ${r% *} / $k" | bc) |"
done
echo
echo "Growth with the number of markets (the first N of the job's 17 spot types,"
echo "x 3 zones; 1x trace, all four policies):"
echo
echo "| spot types | markets | wall s | bidbrain decisions |"
echo "|---:|---:|---:|---:|"
for n in 1 4 8 17; do
	jq ".spot.types = (.spot.types[0:$n] + (if (.spot.types[0:$n] | index(\"m3.large\")) then [] else [\"m3.large\"] end) | unique)" \
		"$work/big.json" > "$work/sub.json"
	nt=$(jq '.spot.types | length' "$work/sub.json")
	r=$(best 1 "$work/sim" "$work/t.json" "$work/sub.json")
	d=$(sim "$work/t.json" "$work/sub.json" --json 2>/dev/null | jq '.results[0].decisions' 2>/dev/null || echo '?')
	echo "| $nt | $((nt * 3)) | ${r% *} | $d |"
done
