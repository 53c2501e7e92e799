#!/bin/sh
# bench_trainer_ckpt.sh -- what checkpoints cost and what they save: the
# MLP on full Fashion-MNIST (`proteus-trainer local`, 2 workers, 2 PS,
# stage 2) run through without checkpoints, with one every EVERY clocks,
# and with its coordinator SIGKILLed at 60% of the clocks (the test fault
# --fault-crash-at) then resumed from the last checkpoint.  Prints
# markdown.  Then stage 1 with the PS holding a shard's only copy
# SIGKILLed, restarted by local --max-restarts from the checkpoint.
#   env: BUILD (default build), EPOCHS (default 4), EVERY (default 100).
set -eu

EPOCHS=${EPOCHS:-4}
EVERY=${EVERY:-100}
. "$(dirname "$0")/trainer_needs.sh"

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
CK="$W/job.pxc"
JOB="--model mlp --epochs $EPOCHS --workers 2 --ps 2 --reliable 1 --stage 2 \
 --batch 128 --lr 0.05 --momentum 0.9 --schedule cosine --threads 1 --timeout 600 --json"

# mean of the "pull N ms, write M ms" numbers in a log
ms() { # log field
	sed -n "s/.*checkpoint at clock .*$2 \([0-9]*\) ms.*/\1/p" "$1" |
		awk '{ s += $1; n++ } END { if (n) printf "%.0f", s / n; else print "-" }'
}

base=$("$T" local $JOB 2>/dev/null)
total=$(echo "$base" | jq .clocks)
ck=$("$T" local $JOB --checkpoint "$CK" --checkpoint-every "$EVERY" 2>"$W/ck.log")
size=$(stat -c %s "$CK")
crash_at=$((total * 6 / 10))
rm -f "$CK"
ta=$(date +%s.%N)
set +e
"$T" local $JOB --checkpoint "$CK" --checkpoint-every "$EVERY" \
	--fault-crash-at "$crash_at" >/dev/null 2>"$W/crash.log"
rc=$?
set -e
tb=$(date +%s.%N)
at=$(head -1 "$CK" | jq .clock)
t0=$(date +%s.%N)
res=$("$T" local $JOB --checkpoint "$CK" --checkpoint-every "$EVERY" --resume "$CK" 2>/dev/null)
t1=$(date +%s.%N)

# stage 1: the PS holding a shard's only copy SIGKILLed at 60% of the
# run's wall time; local restarts the job from the last checkpoint
kill_at=$(echo "$base" | jq '.wall_seconds * 0.6 | floor')
JOB1=$(echo "$JOB" | sed 's/--reliable 1 --stage 2/--stage 1/')
t2=$(date +%s.%N)
s1=$("$T" local $JOB1 --checkpoint "$CK" --checkpoint-every "$EVERY" \
	--kill-ps-at "$kill_at" --max-restarts 1 2>"$W/s1.log")
t3=$(date +%s.%N)
s1_from=$(echo "$s1" | jq .resumed_from)

echo "MLP, $EPOCHS epochs, full Fashion-MNIST, 2 workers, 2 PS (stage 2), $total clocks; checkpoint file $size bytes."
echo
echo "| run | test accuracy | samples/s | wall s | checkpoints | pull ms (mean) | write ms (mean) |"
echo "|---|---|---|---|---|---|---|"
echo "$base" | jq -r '"| no checkpoints | \(.test_accuracy*10000|round/100)% | \(.samples_per_sec|round) | \(.wall_seconds*10|round/10) | 0 | - | - |"'
echo "$ck" | jq -r --arg e "$EVERY" --arg p "$(ms "$W/ck.log" pull)" --arg w "$(ms "$W/ck.log" write)" \
	'"| checkpoint every \($e) clocks and at the end | \(.test_accuracy*10000|round/100)% | \(.samples_per_sec|round) | \(.wall_seconds*10|round/10) | \(.checkpoints) | \($p) | \($w) |"'
echo "$res" | jq -r --arg a "$at" --arg c "$crash_at" \
	'"| coordinator SIGKILLed at clock \($c), resumed from the checkpoint of clock \($a) | \(.test_accuracy*10000|round/100)% | \(.samples_per_sec|round) | \(.wall_seconds*10|round/10) (the resumed run) | \(.checkpoints) | - | - |"'
echo "$s1" | jq -r --arg k "$kill_at" --arg f "$s1_from" \
	'"| stage 1, the PS of a shard SIGKILLed at \($k) s; local restarts the job from the checkpoint of clock \($f) | \(.test_accuracy*10000|round/100)% | \(.samples_per_sec|round) | \(.wall_seconds*10|round/10) (the restart) | \(.checkpoints) | - | - |"'
echo
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
echo "The killed run exited $rc after $(secs "$ta" "$tb") s; clocks lost to the crash:"
echo "$((crash_at - at)) of $total; the resumed run took $(secs "$t0" "$t1") s from exec to exit;"
echo "killed + resumed: $(awk -v a="$(secs "$ta" "$tb")" -v b="$(secs "$t0" "$t1")" 'BEGIN { printf "%.1f", a + b }') s against $(echo "$base" | jq '.wall_seconds*10|round/10') s run through."
echo "Stage 1 with the PS killed: $(secs "$t2" "$t3") s from exec to exit in one command"
echo "(--sole-copy-timeout 10 s, then the restart), against $(echo "$base" | jq '.wall_seconds*10|round/10') s for stage 2 run through."
