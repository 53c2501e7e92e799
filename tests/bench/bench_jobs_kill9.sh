#!/bin/sh
# bench_jobs_kill9.sh -- kill -9 of proteusd at random moments of a
# local-world job, KILL9_ROUNDS times in a row (default 20): the test
# jobs/kill_9_of_the_daemon_mid_job with more rounds.  After each kill no
# trainer process may outlive the daemon; at the end the job is done, every
# instance closed and charged once, the cost equal to its ledger's sum.
set -eu
: "${BUILD:?}"
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
: "${KILL9_ROUNDS:=20}"
t0=$(date +%s)
if PX_KILL9_ROUNDS=$KILL9_ROUNDS PX_BUILD="$BUILD" PX_SRC="$src" \
   PX_SHARED="${SHARED:-$src/../shared}" "$BUILD/px_tests" \
   --filter='jobs/kill_9_of_the_daemon_mid_job' -j1 > /tmp/pxbench-kill9.log 2>&1
then result=passed; else result=FAILED; fi
echo
echo "\`make bench BENCH=jobs_kill9\`: kill -9 of proteusd mid-job, then restart"
echo
echo "| rounds | result | wall s |"
echo "|---:|---|---:|"
echo "| $KILL9_ROUNDS | $result | $(( $(date +%s) - t0 )) |"
[ "$result" = passed ] || { cat /tmp/pxbench-kill9.log; exit 1; }
