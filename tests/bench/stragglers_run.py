#!/usr/bin/python3
"""stragglers_run.py -- one `proteus-trainer local` run for
bench_stragglers.sh: runs the command given (it must have --json and
--eval-epochs), stamps the progress lines local prints on stderr as they
come, and prints one JSON object: the seconds from the job's start
("job started") to the first evaluation at or above --target, the final
result's test accuracy, train_seconds and reassigned minibatches."""
import json
import re
import subprocess
import sys
import time


def main():
    target = float(sys.argv[1])
    cmd = sys.argv[2:]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    start = None
    reached = None
    for line in p.stderr:
        now = time.monotonic()
        if start is None and "job started" in line:
            start = now
        m = re.search(r"progress: clock \d+, .*accuracy ([0-9.]+)%", line)
        if m and start is not None and reached is None and \
                float(m.group(1)) / 100 >= target:
            reached = now - start
    out = p.stdout.read()
    if p.wait() != 0:
        sys.exit("run failed: %s" % " ".join(cmd))
    r = json.loads(out)
    print(json.dumps({"to_target": reached,
                      "accuracy": r["test_accuracy"],
                      "train_seconds": r["train_seconds"],
                      "reassigned": r["reassigned"]}))


if __name__ == "__main__":
    main()
