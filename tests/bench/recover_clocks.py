#!/usr/bin/env python3
"""recover_clocks.py LOG -- clocks trained after a failure until the test
loss is back (bench_partial.sh, bench_ckpt_prio.sh).

LOG is one `proteus-trainer local` run's stderr with --eval-every
progress lines (clock, last test loss) and the test fault's kill line.  A
clock that goes back is a restart from the checkpoint: its clocks count
again from there.  Prints the count, or "never".
"""
import re, sys
# the test loss is noisy from one evaluation to the next: each point is
# the mean of the last 3 evaluations, the goal the mean of the 3 before
# the kill
pts = []; killed_at = None
for line in open(sys.argv[1], errors='replace'):
    if 'churn: SIGKILL ps' in line:
        killed_at = len(pts)
        continue
    m = re.search(r'progress: clock (\d+),.*test loss ([0-9.]+)', line)
    if m:
        pts.append((int(m.group(1)), float(m.group(2))))
if killed_at is None or killed_at < 3:
    print('never'); sys.exit()
goal = sum(l for _, l in pts[killed_at - 3:killed_at]) / 3
clock = pts[killed_at - 1][0]; spent = 0; window = []
for c, l in pts[killed_at:]:
    if c > clock:
        spent += c - clock
    else:
        window = []          # a restart: its evaluations start anew
    clock = c
    window = (window + [l])[-3:]
    if len(window) == 3 and sum(window) / 3 <= goal:
        print(spent); sys.exit()
print('never')
