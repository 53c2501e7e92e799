#!/bin/sh
# demo.sh -- `make demo`: the main job on the embedded default world.
# Until the daemon and the local world exist (docs/status.md), the demo
# imports a shipped one-week slice of the real us-east-1 2016 spot-price
# history with its era's on-demand prices into a fresh database, prints the
# market summary at a chosen time, then replays the slice offline for a
# small training job under each policy (proteusctl simulate) and plots it,
# then trains a model with the elastic trainer on this host while a worker
# and a parameter server are killed (proteus-trainer local), checkpointing
# after each epoch, and evaluates the checkpoint it leaves.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
: "${BUILD:=build}"
case "$BUILD" in /*) ;; *) BUILD="$here/$BUILD" ;; esac
ctl="$BUILD/proteusctl"
db="$BUILD/demo.db"
trace="$here/docs/examples/traces/us-east-1_2016-03-01_7d_linux.json.gz"
od="$here/etc/ondemand/us-east-1_2016-02_2016-04.json"

rm -f "$db" "$db-wal" "$db-shm"
echo "== importing a week of us-east-1 spot prices (2016-03-01 .. 03-08)"
"$ctl" market import --db "$db" "$trace"
echo "== importing the era's on-demand prices"
"$ctl" market import --db "$db" --ondemand "$od"
echo
echo "== the market on 2016-03-04 12:00 UTC"
"$ctl" market --db "$db" --at 2016-03-04T12:00:00Z
echo
job="$here/docs/examples/job-2016-7d-m3large.json"
plot="$BUILD/demo-simulate.png"
echo "== replaying the slice for a 96 work-hour job, from 2016-03-03 (BidBrain"
echo "   learns eviction risk from the two days before; other windows give other"
echo "   results: see docs/benchmarks.md)"
"$ctl" simulate --trace "$trace" --ondemand-prices "$od" --job "$job" \
	--start 2016-03-03T00:00:00Z --db "$db" --plot "$plot"
echo
echo "== the elastic trainer on this host: MLR on Fashion-MNIST, 2 workers, 2 PS"
echo "   (stage 2: a backup on the reliable PS); a worker is SIGKILLed at 1 s"
echo "   and replaced, the transient ActivePS at 2 s: training goes on"
"$BUILD/proteus-trainer" local --model mlr --workers 2 --ps 2 --reliable 1 \
	--stage 2 --epochs 8 --batch 128 --lr 0.05 --schedule cosine \
	--threads 1 --eval-epochs --kill-worker-at 1 --kill-ps-at 2 \
	--checkpoint "$BUILD/demo.pxc" --max-restarts 1 --timeout 120
echo
echo "== the model it left: the checkpoint written after the last epoch"
"$BUILD/proteus-trainer" eval "$BUILD/demo.pxc"
echo
echo "(database: $db; plot: $plot)"
echo "(try: $ctl market --db $db --type g2.8xlarge --json"
echo "      $ctl history --db $db)"
