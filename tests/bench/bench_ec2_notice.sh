#!/bin/sh
# bench_ec2_notice.sh -- notice to hand-off done, against the fake EC2
# (issue 25): an ec2 job (1 reliable + up to 3 spot, MLR, both clocks at
# 60x) whose running spot nodes are interrupted one at a time (the fake's
# 120 market s notice, EC2_NOTICE_N times, EC2_NOTICE_APART real s apart,
# EC2_NOTICE_RUNS jobs); for each, from the notice posted: the node read it,
# the daemon heard it, the coordinator moved the shards, the node's PS
# handed them over and ended, the replacement launched and joined; the
# hand-off's margin to the deadline, the job's clock after it, losses 0.
# The work is tests/bench/ec2_notice.sh's (its probe and report).
set -eu
exec sh "$(dirname "$0")/ec2_notice.sh" notice
