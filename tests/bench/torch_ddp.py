#!/usr/bin/python3
# torch_ddp.py -- the PyTorch DistributedDataParallel peer of `proteus-trainer
# local --workers N` for the trainer benchmarks (bench_trainer_speed.sh): N
# processes on this host (gloo over loopback, one thread each), the same MLR
# or MLP 784-256-256-10 on Fashion-MNIST, SGD with momentum and a cosine
# schedule per step; each process trains on its 1/N of every epoch with
# --batch examples per step, so the global batch is N x --batch.  Prints one
# JSON object: samples_per_sec of the whole job over the training loops
# (from a barrier after loading to a barrier after the last step), as the
# coordinator measures ours.  Bench fixture only, not part of the product.
import argparse
import json
import math
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

import torch_mlp


def run(rank, a, port, q):
    torch.set_num_threads(a.threads)
    if a.pin:
        os.sched_setaffinity(0, {int(a.pin.split(",")[rank])})
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port,
                            rank=rank, world_size=a.procs)
    torch.manual_seed(1)
    x, y = torch_mlp.load(a.data, True)
    if a.max_train:
        x, y = x[:a.max_train], y[:a.max_train]
    m = nn.parallel.DistributedDataParallel(torch_mlp.model_of(a.model))
    opt = torch.optim.SGD(m.parameters(), lr=a.lr, momentum=a.momentum)
    lossf = nn.CrossEntropyLoss()
    per = math.ceil(len(x) / a.procs)
    steps = a.epochs * math.ceil(per / a.batch)
    step = samples = 0
    dist.barrier()
    t0 = time.perf_counter()
    for ep in range(a.epochs):
        g = torch.Generator().manual_seed(ep)
        perm = torch.randperm(len(x), generator=g)[rank::a.procs]
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
    dist.barrier()
    secs = time.perf_counter() - t0
    tot = torch.tensor([float(samples)])
    dist.all_reduce(tot)
    if rank == 0:
        tx, ty = torch_mlp.load(a.data, False)
        q.put({"model": a.model, "procs": a.procs, "batch": a.batch,
               "global_batch": a.batch * a.procs, "threads": a.threads,
               "epochs": a.epochs, "torch": torch.__version__,
               "backend": "gloo", "blas_core": torch_mlp.blas_core(),
               "samples_per_sec": tot.item() / secs,
               "test_accuracy": torch_mlp.evaluate(m.module, tx, ty),
               "train_seconds": secs})
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="mlp", choices=["mlr", "mlp"])
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--pin", default="",
                    help="a core per process, e.g. 0,1")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--max-train", type=int, default=0)
    a = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    q = ctx.SimpleQueue()
    mp.spawn(run, args=(a, port, q), nprocs=a.procs, join=True)
    print(json.dumps(q.get()))


if __name__ == "__main__":
    main()
