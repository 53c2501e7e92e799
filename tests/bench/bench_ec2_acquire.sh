#!/bin/sh
# bench_ec2_acquire.sh -- acquire to first update, with enrollment,
# against the fake EC2 (issue 25): EC2_ACQUIRE_RUNS jobs like
# bench_ec2_notice.sh's, nothing perturbed; for each instance: its launch
# (EC2's launch time) -> running (the fake's boot) -> enrolled (the daemon's
# event; the node's console line) -> joined (the coordinator's
# registration) -> its worker's first clock done (the coordinator's
# `first clock` line).  The work is tests/bench/ec2_notice.sh's.
set -eu
exec sh "$(dirname "$0")/ec2_notice.sh" acquire
