#!/bin/sh
# bench_import.sh -- trace import speed and peak memory, and the import side
# by side with `jq -c '.SpotPriceHistory[]'` (reading only) and Python's
# json.load (parsing only) on the same decompressed file.
set -eu
: "${BUILD:?}" "${SHARED:?}"
ctl="$BUILD/proteusctl"
trace="$SHARED/traces/us-east-1_2016-02_2016-04_linux.json.gz"
work=$(mktemp -d /tmp/pxbench.XXXXXX)
trap 'rm -rf "$work"' EXIT
TIMEFMT='%e %M'

# wall seconds and peak RSS (KiB) of a command, via GNU time
measure() {
	/usr/bin/time -f "$TIMEFMT" -o "$work/time" "$@" >/dev/null 2>"$work/err" ||
		{ cat "$work/err" >&2; exit 1; }
	cat "$work/time"
}

# best of N runs (wall), with the peak RSS of that run
best() {
	n=$1; shift
	bestw=""; bestm=""
	i=0
	while [ $i -lt "$n" ]; do
		rm -f "$work/db"*
		r=$(measure "$@")
		w=${r% *}; m=${r#* }
		if [ -z "$bestw" ] || [ "$(echo "$w < $bestw" | bc)" = 1 ]; then
			bestw=$w; bestm=$m
		fi
		i=$((i + 1))
	done
	echo "$bestw $bestm"
}

records=$(zcat "$trace" | grep -c '"Timestamp"')
zcat "$trace" > "$work/t.json"

echo "| what | records | wall s (best of 3) | records/s | peak RSS MB |"
echo "|---|---:|---:|---:|---:|"
r=$(best 3 "$ctl" market import --db "$work/db" "$trace")
w=${r% *}; m=${r#* }
echo "| import 2016 trace (.json.gz, 60 d, 50 markets) | $records | $w | $(echo "$records / $w" | bc) | $(echo "scale=1; $m / 1024" | bc) |"

# 10x: the same records repeated with timestamps shifted by k * 61 days
python3 - "$work/t.json" "$work/t10.json.gz" <<'PY'
import gzip, json, sys, datetime as dt
src = json.load(open(sys.argv[1]))["SpotPriceHistory"]
shift = dt.timedelta(days=61)
with gzip.open(sys.argv[2], "wt", compresslevel=1) as f:
    f.write('{"SpotPriceHistory": [\n')
    first = True
    for k in range(10):
        for r in src:
            t = dt.datetime.strptime(r["Timestamp"], "%Y-%m-%dT%H:%M:%S.000Z") + k * shift
            r2 = dict(r, Timestamp=t.strftime("%Y-%m-%dT%H:%M:%S.000Z"))
            f.write(("" if first else ",\n") + json.dumps(r2))
            first = False
    f.write("\n]}\n")
PY
r=$(best 1 "$ctl" market import --db "$work/db" "$work/t10.json.gz")
w=${r% *}; m=${r#* }
echo "| import 10x file (.json.gz, 610 d) | $((records * 10)) | $w | $(echo "$records * 10 / $w" | bc) | $(echo "scale=1; $m / 1024" | bc) |"

echo
echo "Side by side on the decompressed 2016 file ($(du -m "$work/t.json" | cut -f1) MB), best of 3:"
echo
echo "| what | wall s | peak RSS MB | import time / this |"
echo "|---|---:|---:|---:|"
r=$(best 3 "$ctl" market import --db "$work/db" "$work/t.json")
iw=${r% *}; im=${r#* }
echo "| proteusctl market import (parse + SQLite writes) | $iw | $(echo "scale=1; $im / 1024" | bc) | 1.00 |"
r=$(best 3 jq -c '.SpotPriceHistory[]' "$work/t.json")
w=${r% *}; m=${r#* }
echo "| jq -c '.SpotPriceHistory[]' > /dev/null (read only) | $w | $(echo "scale=1; $m / 1024" | bc) | $(echo "scale=2; $iw / $w" | bc) |"
r=$(best 3 /usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/t.json")
w=${r% *}; m=${r#* }
echo "| python3 json.load (parse only) | $w | $(echo "scale=1; $m / 1024" | bc) | $(echo "scale=2; $iw / $w" | bc) |"
