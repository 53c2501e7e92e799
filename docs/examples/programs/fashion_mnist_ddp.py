#!/usr/bin/env python3
"""Fashion-MNIST with PyTorch DDP (gloo, CPU): an example Proteus program job.

Run by hand as one process:
    python3 fashion_mnist_ddp.py --epochs 1
or under torchrun (one or more nodes), see README.md in this folder.

How it follows the program-job contract (docs/examples/programs/README.md):
  * progress: global rank 0 appends JSON lines to PROTEUS_PROGRESS (opened
    with O_APPEND, one write per line): {"samples": N, "loss": x} about every
    20 steps, {"checkpoint": NAME} after each complete checkpoint, and at the
    end {"samples": N, "metrics": {"test_accuracy": a}, "done": true}.  N
    counts the examples trained by the whole job and continues across
    restarts.
  * checkpoints: every --ckpt-every steps (and at the end) rank 0 writes
    PROTEUS_CKPT_DIR/step-%08d.pt through a temporary name, fsync and
    os.replace, then announces it.  Every rank resumes from
    PROTEUS_CKPT_LATEST when it resolves: model, optimizer, step, samples,
    epoch and the position in the epoch.  Without PROTEUS_CKPT_LATEST (run by
    hand) the program keeps PROTEUS_CKPT_DIR/latest (default ./ckpt/latest)
    pointing at its newest checkpoint itself.
  * elastic: when torchrun re-forms the group with another number of nodes
    it restarts the workers; they resume from the latest checkpoint and the
    rest of the epoch is re-sharded over the new world size (each epoch's
    order is a fixed permutation; the checkpoint records how many examples
    of it the whole job has consumed).
  * SIGTERM (a spot notice, or torchrun stopping the workers): the handler
    only sets a flag.  At the next step boundary rank 0 saves a checkpoint
    of its local state and every rank exits 143.  No collective is used to
    agree on stopping, so this cannot deadlock on a peer that is already
    gone: after a completed step all replicas hold the same weights, so rank
    0's copy is the job's state.  A rank blocked in an all-reduce whose peer
    exited gets a gloo error; with the flag set it exits 143 as well.
  * a peer lost mid-step (SIGKILL, node gone): the all-reduce in backward()
    fails, before opt.step(), so rank 0 saves the last completed step and
    exits 1; torchrun re-forms the group and restarts the workers.  gloo does
    not always notice a dead peer (a pending send may wait for the timeout),
    so --pg-timeout (default 30 s) bounds that wait; it must exceed the
    longest pause of one rank alone (rank 0 saving a checkpoint).
"""
import argparse
import datetime
import gzip
import json
import os
import signal
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler

TERMED = False


def on_sigterm(signum, frame):
    global TERMED
    TERMED = True


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=128,
                   help="the global batch, split over the processes (the "
                   "same training whatever the group's size)")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--ckpt-every", type=int, default=200, help="steps")
    p.add_argument("--target-samples", type=int, default=None,
                   help="stop once the job trained this many examples "
                        "(default: epochs * 60000)")
    p.add_argument("--progress-every", type=int, default=20, help="steps")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--pg-timeout", type=int, default=30,
                   help="seconds a collective may wait for a peer")
    return p.parse_args()


def load_idx(path):
    """Read a gzip'd IDX file (ubyte images or labels) into a numpy array."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big")
            for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_split(data_dir, prefix):
    x = load_idx(os.path.join(data_dir, prefix + "-images-idx3-ubyte.gz"))
    y = load_idx(os.path.join(data_dir, prefix + "-labels-idx1-ubyte.gz"))
    x = torch.from_numpy(x.reshape(len(x), -1).astype(np.float32))
    x.div_(255.0).sub_(0.2860).div_(0.3530)
    return x, torch.from_numpy(y.astype(np.int64))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def progress(obj):
    path = os.environ.get("PROTEUS_PROGRESS")
    if not path:
        return
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(obj) + "\n").encode())
    finally:
        os.close(fd)


def save_checkpoint(ckpt_dir, model, opt, state, world):
    """Write step-%08d.pt completely, then announce it (rank 0 only)."""
    name = "step-%08d.pt" % state["step"]
    path = os.path.join(ckpt_dir, name)
    tmp = os.path.join(ckpt_dir, ".tmp-" + name)
    with open(tmp, "wb") as f:
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                    "world_size": world, **state}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    if not os.environ.get("PROTEUS_CKPT_LATEST"):  # by hand: keep ./latest
        link = os.path.join(ckpt_dir, "latest")
        if os.path.lexists(link + ".tmp"):
            os.unlink(link + ".tmp")
        os.symlink(name, link + ".tmp")
        os.replace(link + ".tmp", link)
    progress({"checkpoint": name})
    print("checkpoint %s at samples %d" % (name, state["samples"]), flush=True)


def evaluate(model, x, y):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), 1000):
            correct += (model(x[i:i + 1000]).argmax(1) == y[i:i + 1000]).sum()
    model.train()
    return correct.item() / len(x)


def main():
    args = parse_args()
    torch.set_num_threads(1)
    signal.signal(signal.SIGTERM, on_sigterm)
    distributed = "WORLD_SIZE" in os.environ
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    ckpt_dir = os.environ.get("PROTEUS_CKPT_DIR") or "./ckpt"
    latest = (os.environ.get("PROTEUS_CKPT_LATEST")
              or os.path.join(ckpt_dir, "latest"))
    os.makedirs(ckpt_dir, exist_ok=True)
    target = args.target_samples or args.epochs * 60000
    t0 = time.time()

    torch.manual_seed(args.seed)
    x_train, y_train = load_split(args.data, "train")
    x_test, y_test = load_split(args.data, "t10k")
    model = MLP()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr,
                          momentum=args.momentum)
    state = {"step": 0, "samples": 0, "epoch": 0, "pos": 0}
    if os.path.exists(latest):  # all ranks load, before the group forms
        ck = torch.load(latest, map_location="cpu")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        state = {k: int(ck[k]) for k in state}
        print("rank %d: resumed from %s at samples %d (epoch %d pos %d, "
              "saved by world %d, now %d)"
              % (rank, os.path.basename(os.path.realpath(latest)),
                 state["samples"], state["epoch"], state["pos"],
                 ck.get("world_size", 0), world), flush=True)

    net = model
    if distributed:
        dist.init_process_group(
            "gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
        # Adopt rank 0's counters so every rank runs the same batches.
        t = torch.tensor([state[k] for k in ("step", "samples", "epoch",
                                             "pos")], dtype=torch.int64)
        dist.broadcast(t, 0)
        state = dict(zip(("step", "samples", "epoch", "pos"), t.tolist()))
        net = DDP(model)  # also broadcasts rank 0's weights
    print("rank %d/%d: start at samples %d, target %d, restart %s/%s"
          % (rank, world, state["samples"], target,
             os.environ.get("PROTEUS_RESTART", "-"),
             os.environ.get("TORCHELASTIC_RESTART_COUNT", "-")), flush=True)

    last_ckpt = state["step"]
    losses = []
    try:
        while state["samples"] < target:
            # The epoch's fixed order; skip what the job already consumed
            # and shard the rest over the current world size.
            g = torch.Generator().manual_seed(args.seed * 1000 + state["epoch"])
            rest = torch.randperm(len(x_train), generator=g)[state["pos"]:]
            sampler = DistributedSampler(range(len(rest)), num_replicas=world,
                                         rank=rank, shuffle=False,
                                         drop_last=True)
            mine = rest[list(sampler)]
            per = max(1, args.batch // world)
            for b in range(0, len(mine), per):
                idx = mine[b:b + per]
                loss = F.cross_entropy(net(x_train[idx]), y_train[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
                n = len(idx) * world
                state["step"] += 1
                state["samples"] += n
                state["pos"] += n
                losses.append(loss.item())
                if rank == 0 and state["step"] % args.progress_every == 0:
                    progress({"samples": state["samples"],
                              "loss": round(sum(losses) / len(losses), 5)})
                    losses = []
                if TERMED:
                    break
                if state["samples"] >= target:
                    break
                if rank == 0 and state["step"] % args.ckpt_every == 0:
                    save_checkpoint(ckpt_dir, model, opt, state, world)
                    last_ckpt = state["step"]
            else:
                state["epoch"] += 1
                state["pos"] = 0
            if TERMED:
                if rank == 0 and state["step"] != last_ckpt:
                    save_checkpoint(ckpt_dir, model, opt, state, world)
                print("rank %d: term: exiting at samples %d"
                      % (rank, state["samples"]), flush=True)
                sys.exit(143)
    except RuntimeError as e:  # typically a peer left mid-collective
        # The failed step never reached opt.step(), so rank 0 still holds the
        # weights of the last completed step: save them before leaving.
        print("rank %d: step failed at samples %d: %s"
              % (rank, state["samples"], str(e).splitlines()[0]), flush=True)
        if rank == 0 and state["step"] != last_ckpt:
            save_checkpoint(ckpt_dir, model, opt, state, world)
        if TERMED:
            sys.exit(143)
        sys.exit(1)  # torchrun re-forms the group and restarts us

    if rank == 0:
        if state["step"] != last_ckpt:
            save_checkpoint(ckpt_dir, model, opt, state, world)
        acc = evaluate(model, x_test, y_test)
        # "done": the job is over now, not after torchrun's exit barrier
        progress({"samples": state["samples"],
                  "metrics": {"test_accuracy": round(acc, 4)}, "done": True})
        print("test accuracy: %.4f" % acc, flush=True)
        print("samples %d steps %d wall %.1fs"
              % (state["samples"], state["step"], time.time() - t0),
              flush=True)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
