#!/bin/sh
# bench_ec2_rebalance.sh -- world.rebalance "ignore" against "leave",
# against the fake EC2 (issue 25): per setting, a rebalance recommendation
# to one running spot node followed by an interruption L market s later
# (EC2_REBALANCE_LEADS) and one with no interruption (a false alarm); per
# run: the job's time, its cost, losses and clocks re-sent, the seconds the
# fleet was below its size, the instances rented after the recommendation.
# The work is tests/bench/ec2_notice.sh's.
set -eu
exec sh "$(dirname "$0")/ec2_notice.sh" rebalance
