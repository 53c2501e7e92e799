#!/bin/sh
# bench_simulate.sh -- issue 3: what the policies cost on the shared traces
# (legacy-hourly 2015 and 2016, per-second 2021; three job sizes; the
# shipped fleet cap of 32 spot instances and an equal-fleet cap of 16), and
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

# cost TITLE TRACE OD JOB START POLICIES BILLING
cost() {
	title=$1 trace=$2 odf=$3 job=$4 start=$5 pols=$6 bill=$7
	echo
	echo "### $title"
	echo
	echo "\`proteusctl simulate --trace $(basename "$trace") --ondemand-prices etc/ondemand/$(basename "$odf") --job J --start $start --billing $bill --policy $pols --json\`, J = \`$(basename "$job")\` with work_hours and spot.max_instances as in the table"
	echo
	echo "| work-h | spot cap | policy | done | cost USD | runtime h | USD/work-h | evictions | vs ondemand | vs standard | runtime vs standard |"
	echo "|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"
	for wh in 192 768 3072; do
		for cap in 32 16; do
			jq ".work_hours = $wh | .spot.max_instances = $cap" "$job" > "$work/job.json"
			"$ctl" simulate --trace "$trace" --ondemand-prices "$odf" \
				--job "$work/job.json" --start "$start" \
				--billing "$bill" --policy "$pols" --json > "$work/r.json"
			jq -r --arg wh "$wh" --arg cap "$cap" '
			  (.results[] | select(.policy == "standard") | .runtime_hours) as $srt |
			  .results[] |
			  def pct: if . == null then "-" else (. * 1000 | round / 10 | tostring) + "%" end;
			  "| \($wh) | \($cap) | \(.policy) | \(if .completed then "yes" else "no" end) | \(.cost_usd * 100 | round / 100) | \(.runtime_hours * 100 | round / 100) | \(if .cost_per_work_usd == null then "-" else (.cost_per_work_usd * 10000 | round / 10000) end) | \(.evictions) | \(.savings_vs_ondemand | pct) | \(.savings_vs_standard | pct) | \(if .policy == "standard" then "-" else ((1 - .runtime_hours / $srt) | pct) end) |"' "$work/r.json"
		done
	done
}

echo "Savings are in cost per work-hour (1 - ours / theirs; positive: cheaper);"
echo "\"runtime vs standard\" is 1 - runtime / standard's runtime (positive: shorter)."
echo "Windows start 14 days into each trace so that BidBrain's estimator has"
echo "history and every market has a price."
[ -n "${SKIP_COST:-}" ] || cost "2015 trace, legacy-hourly (c3.xlarge job, 5 types x 3 zones)" \
	"$tr/us-east-1_2015-03_2015-08_linux.json.gz" \
	"$od/us-east-1_2015-03_2015-08.json" "$ex/job-2015-c3xlarge.json" \
	2015-03-25 bidbrain,standard,ondemand legacy-hourly
[ -n "${SKIP_COST:-}" ] || cost "2016 trace, legacy-hourly (m3.large job, 17 types x 3 zones)" \
	"$tr/us-east-1_2016-02_2016-04_linux.json.gz" \
	"$od/us-east-1_2016-02_2016-04.json" "$ex/job-2016-m3large.json" \
	2016-03-09 bidbrain,standard,ondemand legacy-hourly
[ -n "${SKIP_COST:-}" ] || cost "2021 trace, per-second (c4.xlarge job, 13 types x 6 zones)" \
	"$tr/us-east-1_2021-03_2021-05_linux.json.gz" \
	"$od/us-east-1_2021-03_2021-05.json" "$ex/job-2021-c4xlarge.json" \
	2021-03-16 bidbrain,standard,ondemand,spread per-second

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
pols=bidbrain,standard,ondemand,spread
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
echo "with work_hours 1e6 (never completes, so every run spans all 60 days), trace loading included:"
echo
echo "| what | wall s (best of 3) | peak RSS MB | / jq |"
echo "|---|---:|---:|---:|"
r=$(best 3 jq -c '.SpotPriceHistory[]' "$work/t.json")
jw=${r% *}; jm=${r#* }
r=$(best 3 "$work/sim" "$work/t.json" "$work/big.json")
sw=${r% *}; sm=${r#* }
echo "| \`proteusctl simulate --trace t.json ... --policy $pols\` | $sw | $(mb "$sm") | $(echo "scale=2; $sw / $jw" | bc) |"
echo "| \`jq -c '.SpotPriceHistory[]' t.json > /dev/null\` | $jw | $(mb "$jm") | 1.00 |"
r=$(best 3 "$ctl" simulate --trace "$work/t.json" --ondemand-prices "$odf" --job "$work/big.json" --billing legacy-hourly --policy ondemand)
echo "| of which trace loading (the same with --policy ondemand) | ${r% *} | $(mb "${r#* }") | $(echo "scale=2; ${r% *} / $jw" | bc) |"
for p in standard bidbrain spread; do
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
