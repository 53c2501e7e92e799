#!/usr/bin/python3
# torch_mlp.py -- the PyTorch CPU peer of `proteus-trainer train` for the
# trainer benchmarks (tests/bench/bench_trainer_peers.sh): the same MLR or
# MLP 784-256-256-10 on Fashion-MNIST, SGD with momentum, cosine schedule
# per step, same batch and thread count.  Prints one JSON object with
# samples_per_sec measured like ours (training loop only, no evaluation).
# Bench fixture only, not part of the product.
#
# Also the worker of the elastic recovery run: with --elastic it trains
# under torch.distributed.run (gloo), checkpoints every epoch to --ckpt and
# resumes from it after a restart, and appends "step <t> <rank> <n> <pid>" lines
# (monotonic seconds) to --trace so the bench can time the recovery.
import argparse
import gzip
import json
import math
import os
import struct
import time

import numpy as np
import torch
import torch.nn as nn


def load(d, train):
    p = "train" if train else "t10k"
    with gzip.open(os.path.join(d, p + "-images-idx3-ubyte.gz")) as f:
        _, n, r, c = struct.unpack(">IIII", f.read(16))
        x = np.frombuffer(f.read(), np.uint8).reshape(n, r * c)
    with gzip.open(os.path.join(d, p + "-labels-idx1-ubyte.gz")) as f:
        f.read(8)
        y = np.frombuffer(f.read(), np.uint8)
    return (torch.from_numpy(x.astype(np.float32) / 255.0),
            torch.from_numpy(y.astype(np.int64)))


def blas_core():
    """The OpenBLAS kernel set this process runs (torch's BLAS is the
    libblas.so.3 of Debian's alternatives, OpenBLAS's here), or None."""
    import ctypes
    with open("/proc/self/maps") as f:
        libs = {ln.split()[-1] for ln in f if "openblas" in ln}
    for lib in sorted(libs):
        try:
            fn = ctypes.CDLL(lib).openblas_get_corename
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_char_p
        return fn().decode()
    return None


def model_of(kind):
    if kind == "mlr":
        return nn.Linear(784, 10)
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(),
                         nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def evaluate(m, x, y):
    with torch.no_grad():
        return (m(x).argmax(1) == y).float().mean().item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="mlp", choices=["mlr", "mlp"])
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--max-train", type=int, default=0)
    ap.add_argument("--elastic", action="store_true")
    ap.add_argument("--ckpt", default="")
    ap.add_argument("--trace", default="")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    x, y = load(a.data, True)
    if a.max_train:
        x, y = x[:a.max_train], y[:a.max_train]
    tx, ty = load(a.data, False)
    m = model_of(a.model)
    rank, world = 0, 1
    if a.elastic:
        import torch.distributed as dist
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        m = nn.parallel.DistributedDataParallel(m)
    opt = torch.optim.SGD(m.parameters(), lr=a.lr, momentum=a.momentum)
    steps = a.epochs * math.ceil(len(x) / world / a.batch)
    first = 0
    if a.elastic and a.ckpt and os.path.exists(a.ckpt):
        st = torch.load(a.ckpt)
        m.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        first = st["epoch"]
    lossf = nn.CrossEntropyLoss()
    step = first * math.ceil(len(x) / world / a.batch)
    train_s = 0.0
    samples = 0
    for ep in range(first, a.epochs):
        g = torch.Generator().manual_seed(ep)
        perm = torch.randperm(len(x), generator=g)[rank::world]
        t0 = time.perf_counter()
        for i in range(0, len(perm), a.batch):
            idx = perm[i:i + a.batch]
            for pg in opt.param_groups:
                pg["lr"] = a.lr * 0.5 * (1 + math.cos(math.pi * step /
                                                      steps))
            opt.zero_grad()
            lossf(m(x[idx]), y[idx]).backward()
            opt.step()
            step += 1
            samples += len(idx)
            if a.trace:
                with open(a.trace, "a") as f:
                    f.write("step %.6f %d %d %d\n" % (
                        time.monotonic(), rank, step, os.getpid()))
        train_s += time.perf_counter() - t0
        if a.elastic and a.ckpt and rank == 0:
            torch.save({"model": m.state_dict(), "opt": opt.state_dict(),
                        "epoch": ep + 1}, a.ckpt + ".tmp")
            os.replace(a.ckpt + ".tmp", a.ckpt)
    if rank == 0:
        print(json.dumps({
            "model": a.model, "batch": a.batch, "threads": a.threads,
            "epochs": a.epochs, "torch": torch.__version__,
            "blas_core": blas_core(),
            "samples_per_sec": samples / train_s if train_s else 0.0,
            "test_accuracy": evaluate(m, tx, ty),
            "train_seconds": train_s}))


if __name__ == "__main__":
    main()
