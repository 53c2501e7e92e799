#!/usr/bin/env python3
"""A fast fake "program job" for the daemon's integration tests (stdlib only).

It follows the node-agent contract (docs/programs.md) without
doing any real work: each step sleeps TOY_STEP_MS (default 20) milliseconds
and adds TOY_BATCH (default 32) * PROTEUS_NUM_NODES samples to the job's
count.  Node rank 0 alone writes {"samples", "loss"} lines to PROTEUS_PROGRESS
and, every TOY_CKPT_EVERY (25) steps, a checkpoint file "step-%08d.json"
(step, samples, restart and TOY_CKPT_BYTES (1000) bytes of "pad"), written
in full and fsync'd before {"checkpoint": NAME} is announced.  It resumes from
PROTEUS_CKPT_LATEST when that resolves, and exits 0 once samples reach
TOY_SAMPLES (20000), after a final checkpoint and progress line.

Knobs for tests:
  TOY_ON_TERM=checkpoint|ignore|exit  what SIGTERM does (default checkpoint:
                                      checkpoint, announce, exit 143)
  TOY_FAIL_AT_START=1                 exit 3 at once with a config error
  TOY_FAIL_AT_SAMPLES=N               on PROTEUS_RESTART 0, exit 1 once
                                      samples pass N (a restart succeeds)
  TOY_FAIL_ONCE=PATH                  with it: fail the first time only,
                                      whatever the start (PATH made then)
  TOY_FAIL_NODES=K                    ... and only in a group of K nodes
  TOY_TERM_MARK=PATH                  on SIGTERM, make PATH (a peer leaves)
  TOY_ON_MARK=fail|hang               on a reliable node (PROTEUS_RELIABLE
                                      1), once PATH exists (and
                                      TOY_FAIL_ONCE says it is the first
                                      time): exit 1,
                                      or train no more until SIGTERM, as
                                      torchrun's agent does when a peer
                                      it waits for in a barrier is gone
It starts no child processes.
"""
import json
import os
import signal
import sys
import time

env = os.environ.get


def log(msg, stream=sys.stdout):
    print(msg, file=stream, flush=True)


def progress(obj):
    """Append one JSON line to PROTEUS_PROGRESS (nowhere when unset)."""
    path = env("PROTEUS_PROGRESS")
    if not path:
        return
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(obj) + "\n").encode())
    finally:
        os.close(fd)


def main():
    step_s = int(env("TOY_STEP_MS", "20")) / 1000.0
    batch = int(env("TOY_BATCH", "32"))
    target = int(env("TOY_SAMPLES", "20000"))
    every = max(1, int(env("TOY_CKPT_EVERY", "25")))
    pad = int(env("TOY_CKPT_BYTES", "1000"))
    on_term = env("TOY_ON_TERM", "checkpoint")
    fail_at = env("TOY_FAIL_AT_SAMPLES")
    once = env("TOY_FAIL_ONCE")

    def first_failure():
        """The first failure of the job: TOY_FAIL_ONCE's file made now
        (only one process makes it), else PROTEUS_RESTART 0."""
        if not once:
            return restart == 0
        try:
            os.close(os.open(once, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                             0o644))
            return True
        except FileExistsError:
            return False
    restart = int(env("PROTEUS_RESTART", "0"))
    # a fixed group's ranks, or torchrun's (elastic: no PROTEUS_NODE_*)
    rank = int(env("PROTEUS_NODE_RANK") or env("RANK") or "0")
    nodes = max(1, int(env("PROTEUS_NUM_NODES") or env("WORLD_SIZE") or "1"))
    ckpt_dir = env("PROTEUS_CKPT_DIR") or "./ckpt"
    latest = env("PROTEUS_CKPT_LATEST") or os.path.join(ckpt_dir, "latest")

    if env("TOY_FAIL_AT_START") == "1":
        log("toy: cannot start: bad config XYZ", sys.stderr)
        return 3
    os.makedirs(ckpt_dir, exist_ok=True)
    log("toy: uid=%d gid=%d rank=%d restart=%d nodes=%d"
        % (os.getuid(), os.getgid(), rank, restart, nodes))
    progress({"metrics": {"uid": os.getuid(), "gid": os.getgid(),
                          "restart": restart, "rank": rank}})

    step, samples = 0, 0
    if os.path.exists(latest):  # follows the symlink: False when dangling
        with open(latest) as f:
            state = json.load(f)
        step, samples = int(state["step"]), int(state["samples"])
        log("resumed from %s at samples %d"
            % (os.path.basename(os.path.realpath(latest)), samples))

    def checkpoint():
        if rank != 0:
            return
        name = "step-%08d.json" % step
        path = os.path.join(ckpt_dir, name)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"step": step, "samples": samples,
                       "restart": restart, "pad": "x" * pad}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        progress({"checkpoint": name})

    termed = []

    mark = env("TOY_TERM_MARK")
    on_mark = env("TOY_ON_MARK")

    def on_sigterm(signum, frame):
        if mark:
            os.close(os.open(mark, os.O_WRONLY | os.O_CREAT, 0o666))
        if on_term == "exit":
            os._exit(143)
        termed.append(1)  # acted on between steps

    signal.signal(signal.SIGTERM, on_sigterm)

    def loss():
        return round(2.3 / (1.0 + samples / 2000.0), 6)

    last_ckpt = step
    while samples < target:
        if termed:
            termed.clear()
            if on_term == "ignore":
                log("term: ignored")
            else:
                if step != last_ckpt:
                    checkpoint()
                log("term: checkpointed at %d" % samples)
                return 143
        if (on_mark and env("PROTEUS_RELIABLE") == "1" and not termed and
                os.path.exists(mark) and first_failure()):
            if on_mark == "fail":
                log("toy: a peer left; giving up", sys.stderr)
                return 1
            log("toy: a peer left; waiting for it")
            while not termed:
                time.sleep(0.05)
            return 143
        time.sleep(step_s)
        step += 1
        samples += batch * nodes
        if (fail_at and samples > int(fail_at) and
                nodes >= int(env("TOY_FAIL_NODES", "1")) and first_failure()):
            log("toy: diverged at samples %d" % samples, sys.stderr)
            return 1
        if rank == 0:
            progress({"samples": samples, "loss": loss()})
        if step % every == 0:
            checkpoint()
            last_ckpt = step

    if step != last_ckpt:
        checkpoint()
    if rank == 0:
        progress({"samples": samples, "loss": loss()})
    log("toy: done at samples %d" % samples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
