#!/bin/sh
# bench_goodput_daemon.sh -- BidBrain with measured goodput (issue 27,
# item 2): a proteusd local-world job that scales poorly (MLR, Fashion-
# MNIST, every instance's worker on this host's few cores, so that more
# instances train no faster) run with the measured scaling in use
# ("scaling_measured": true, the default, which explores the scaling
# Pollux's way: from 1 instance, at most twice the largest count
# measured, docs/controller.md) and with it off (false: the spec's
# scaling_efficiency 0.9 all along, no exploring), same trace window, REPEAT
# runs each, alternated, each on a fresh daemon and store.  Reported from
# the store: spot and all instances rented (mean over the run's market
# time, and the most at once), market hours to TARGET test accuracy (the
# first progress event at or above it) and to the end, cost, final test
# accuracy, and when BidBrain began to plan with the measurements.
# BATCH_MS makes the job one that scales well: every trainer node runs
# with --fault-batch-ms BATCH_MS (a minibatch takes at least that long,
# the rest a wait that takes no CPU), so the host's instances behave as
# machines of their own and more of them train faster; that measures
# what exploring costs a job that did not need it.
#   env: BUILD, EPOCHS (default 300), REPEAT (default 2), TARGET (default
#   0.84), PIN (a taskset CPU list for the daemon and its trainer
#   processes, default none), BATCH_MS (default 0: off), ADAPT (true:
#   the job's trainer.adapt, co-adaptation, in both modes; default false).
set -eu
: "${BUILD:?}"
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
EPOCHS=${EPOCHS:-300}
REPEAT=${REPEAT:-2}
TARGET=${TARGET:-0.84}
PIN=${PIN:-}
BATCH_MS=${BATCH_MS:-0}
ADAPT=${ADAPT:-false}
for t in jq sqlite3; do
	command -v "$t" >/dev/null || { echo "needs $t"; exit 1; }
done
pin=""
[ -n "$PIN" ] && pin="taskset -c $PIN"
work=$(mktemp -d /tmp/pxbench-gpd.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
load0=$(cut -d' ' -f1 /proc/loadavg)
trainer=""
if [ "$BATCH_MS" != 0 ]; then
	trainer="$work/proteus-trainer"
	cat >"$trainer" <<EOS
#!/bin/sh
[ "\$1" = node ] && exec "$BUILD/proteus-trainer" "\$@" --fault-batch-ms $BATCH_MS
exec "$BUILD/proteus-trainer" "\$@"
EOS
	chmod +x "$trainer"
fi

# run MODE (measured|spec) I: one job to its end, a row of results
run() {
	d="$work/$1.$2"
	mkdir "$d"
	printf 'db %s/p.db\ncontrol_socket %s/s.sock\n' "$d" "$d" >"$d/p.conf"
	[ -n "$trainer" ] && printf 'trainer %s\n' "$trainer" >>"$d/p.conf"
	# shellcheck disable=SC2086
	$pin "$BUILD/proteusd" --config "$d/p.conf" >"$d/log" 2>&1 &
	pid=$!
	until "$BUILD/proteusctl" --socket "$d/s.sock" ping >/dev/null 2>&1
	do
		sleep 0.1
	done
	on=true
	[ "$1" = spec ] && on=false
	jq --argjson e "$EPOCHS" --argjson on "$on" --argjson ad "$ADAPT" \
		'.trainer.epochs = $e | .scaling_measured = $on |
		 .trainer.adapt = $ad' \
		"$src/docs/examples/job-local-mlr.json" >"$d/job.json"
	id=$("$BUILD/proteusctl" --socket "$d/s.sock" submit "$d/job.json")
	t0=$(date +%s)
	while :; do
		"$BUILD/proteusctl" --socket "$d/s.sock" status "$id" --json \
			>"$d/st.json"
		state=$(jq -r .state "$d/st.json")
		[ "$state" = running ] || [ "$state" = queued ] || break
		sleep 1
	done
	wall=$(( $(date +%s) - t0 ))
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
	# the job's market time, its instances' hours over it, the most at
	# once, the first progress at TARGET and the first measured
	# "scaling" event
	sqlite3 -separator ' ' "$d/p.db" "
	WITH s AS (SELECT min(at_us) t FROM events WHERE job_id = $id AND
		   kind = 'start'),
	     e AS (SELECT max(at_us) t FROM events WHERE job_id = $id AND
		   kind = 'done'),
	     i AS (SELECT a.tier, i.start_us b, coalesce(i.end_us, e.t) f
		   FROM instances i JOIN allocations a ON a.id = i.alloc_id,
		   e WHERE a.job_id = $id),
	     m AS (SELECT x.tier, (SELECT count(*) FROM i y WHERE
		   (x.tier = 'all' OR y.tier = x.tier) AND y.b <= x.b AND
		   y.f > x.b) n FROM (SELECT 'transient' tier, b FROM i WHERE
		   tier = 'transient' UNION ALL SELECT 'all', b FROM i) x)
	SELECT printf('%.3f', (e.t - s.t) / 3.6e9),
	  printf('%.2f', (SELECT sum(f - b) FROM i WHERE tier = 'transient')
		 * 1.0 / (e.t - s.t)),
	  (SELECT coalesce(max(n), 0) FROM m WHERE tier = 'transient'),
	  printf('%.2f', (SELECT sum(f - b) FROM i) * 1.0 / (e.t - s.t)),
	  (SELECT coalesce(max(n), 0) FROM m WHERE tier = 'all'),
	  coalesce((SELECT printf('%.3f', (min(at_us) - s.t) / 3.6e9) FROM
		    events WHERE job_id = $id AND kind = 'progress' AND
		    json_extract(detail, '$.test_accuracy') >= $TARGET
		    HAVING count(*) > 0), '-'),
	  coalesce((SELECT printf('%.3f', (min(at_us) - s.t) / 3.6e9) FROM
		    events WHERE job_id = $id AND kind = 'scaling' AND
		    json_extract(detail, '$.measured') HAVING count(*) > 0),
		   '-')
	FROM s, e" >"$d/row"
	echo "$1 $2 $(cat "$d/row") $(jq -r \
		'"\(.cost_usd) \(.test_accuracy * 10000 | round / 10000) \(.state)"' \
		"$d/st.json") $wall"
	# the measurements at the end (status: instances, mean goodput,
	# reports), below the table
	jq -c --arg m "$1 $2" '{run: $m} + (.goodput.scaling |
		{instances, goodput: [.goodput[] | round], reports,
		 serial: (if .fit then .fit.serial * 1000 | round / 1000
			  else null end)})' \
		"$d/st.json" >>"$work/points"
}

rows=""
i=0
while [ "$i" -lt "$REPEAT" ]; do
	rows="$rows$(run measured "$i")
$(run spec "$i")
"
	i=$((i + 1))
done
load1=$(cut -d' ' -f1 /proc/loadavg)
echo
echo "\`make bench BENCH=goodput_daemon\` (EPOCHS=$EPOCHS, REPEAT=$REPEAT, TARGET=$TARGET, PIN=${PIN:-none}, BATCH_MS=$BATCH_MS, ADAPT=$ADAPT): docs/examples/job-local-mlr.json (1 reliable m3.large, up to 6 spot, scaling_efficiency 0.9, 2016-03-02 on the shipped 7-day slice, speedup 240) with \`trainer.epochs\` $EPOCHS; load average $load0 before, $load1 after"
echo
echo "| scaling | run | market h | spot mean | spot max | all mean | all max | h to $TARGET | measured from h | cost \$ | final accuracy | state | wall s |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"
printf '%s' "$rows" | awk '{printf "| %s |", $1; for (k = 2; k <= NF; k++) printf " %s |", $k; printf "\n"}'
echo
echo "The measured scaling at each run's end (instances, goodput samples/s, reports, the fitted serial share):"
echo
sed 's/^/    /' "$work/points"
