#!/usr/bin/env python3
# torch_step.py -- the PyTorch peer of tests/bench/gpu_step_bench.c: time
# per training step of the MLP 784-256-256-10 (ReLU, CrossEntropyLoss, SGD
# with momentum 0.9, lr 0.01) on one device, the batch a fixed random one.
# The parameters start as ours do (model_init_params: He normal weights
# before a ReLU, Xavier uniform for the last layer, zero biases; not
# torch's default init, under which lr 0.05 trained this batch while ours
# went dead and ended at ln 10), so the loss check compares one model.
# One step: zero_grad (set_to_none), forward, loss, backward, opt.step().
# Modes as in gpu_step_bench.c:
#   sync    batch on the device, loss.item() every step (a device sync)
#   async   batch on the device, no host read between steps
#   upload  sync, plus the batch copied from (pageable) host memory every
#           step with .to(device)
# After warm-up, ROUNDS rounds of STEPS steps are timed between two
# torch.cuda.synchronize() calls (on the CPU the work is synchronous); one
# JSON object per batch and mode, with gpu_step_bench's fields plus the
# torch version and whether TF32 matmuls are allowed (ours are plain FP32).
# Runs with torch 2.x on CUDA and with Debian's 1.13 on the CPU.  Bench
# fixture only, not part of the product.
import argparse
import json
import sys
import time

import torch
import torch.nn as nn

INCLUDES = {
    "sync": "zero_grad + forward + CrossEntropyLoss + backward + "
            "SGD(momentum 0.9).step, parameters and batch on the device, "
            "loss.item() every step",
    "async": "zero_grad + forward + CrossEntropyLoss + backward + "
             "SGD(momentum 0.9).step, parameters and batch on the device, "
             "no host read between steps",
    "upload": "zero_grad + forward + CrossEntropyLoss + backward + "
              "SGD(momentum 0.9).step, parameters on the device, batch "
              ".to(device) from host memory and loss.item() every step",
}


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def bench(dev, batch, mode, a):
    torch.manual_seed(1)
    m = nn.Sequential(nn.Linear(784, 256), nn.ReLU(),
                      nn.Linear(256, 256), nn.ReLU(),
                      nn.Linear(256, 10))
    with torch.no_grad():
        for layer in m:
            if not isinstance(layer, nn.Linear):
                continue
            if layer.out_features == 10:
                nn.init.xavier_uniform_(layer.weight)
            else:
                nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
            nn.init.zeros_(layer.bias)
    m = m.to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    lossf = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(2)
    hx = torch.rand(batch, 784, generator=g)
    hy = torch.randint(0, 10, (batch,), generator=g)
    x, y = hx.to(dev), hy.to(dev)
    read = mode != "async"
    upload = mode == "upload"

    def step():
        xs, ys = (hx.to(dev), hy.to(dev)) if upload else (x, y)
        opt.zero_grad(set_to_none=True)
        loss = lossf(m(xs), ys)
        loss.backward()
        opt.step()
        if read:
            loss.item()
        return loss

    with torch.no_grad():
        first = lossf(m(x), y).item()
    for _ in range(a.warmup):
        step()
    ms = []
    for _ in range(a.rounds):
        sync(dev)
        t0 = time.perf_counter()
        for _ in range(a.steps):
            loss = step()
        sync(dev)
        ms.append((time.perf_counter() - t0) * 1e3 / a.steps)
    ms.sort()
    with torch.no_grad():  # as gpu_step_bench: a last loss after every step
        loss = lossf(m(x), y)
    return {
        "impl": "torch", "device": dev.type,
        "gpu_name": (torch.cuda.get_device_name(dev)
                     if dev.type == "cuda" else "none"),
        "batch": batch, "mode": mode, "steps": a.steps,
        "rounds": a.rounds, "warmup": a.warmup,
        "threads": 0 if dev.type == "cuda" else a.threads,
        "ms_per_step": ms[len(ms) // 2], "ms_per_step_min": ms[0],
        "first_loss": first, "final_loss": loss.item(),
        "includes": INCLUDES[mode],
        "torch": torch.__version__,
        "tf32": bool(dev.type == "cuda" and
                     torch.backends.cuda.matmul.allow_tf32),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--batch", default="256",
                    help="comma-separated batch sizes")
    ap.add_argument("--mode", default="sync",
                    help="comma-separated: sync, async, upload")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    modes = a.mode.split(",")
    for md in modes:
        if md not in INCLUDES:
            ap.error("unknown mode '%s'" % md)
    if a.device == "cuda" and not torch.cuda.is_available():
        print("torch_step: torch %s sees no CUDA device" % torch.__version__,
              file=sys.stderr)
        return 3
    if a.device == "cpu":
        torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    for b in a.batch.split(","):
        for md in modes:
            print(json.dumps(bench(dev, int(b), md, a)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
