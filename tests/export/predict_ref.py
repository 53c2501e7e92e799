#!/usr/bin/python3
"""predict_ref.py -- what a user of an exported model computes: the
safetensors file read with the standard library (struct, json), the
model built as a PyTorch nn.Sequential of Linear and ReLU with
load_state_dict (python3-torch) or, without torch, the same layers in
numpy (python3-numpy), the scaling in the metadata applied, and the
class of each row of a data set mapped to its label.

usage: predict_ref.py MODEL.safetensors DATA (idx|libsvm)

Prints one JSON object: "backend" (torch or numpy), "predictions" (the
labels), "accuracy" against the data's labels, and "ambiguous": the rows
whose two best logits are within 1e-4 of each other (float32 sums in
another order may rank them the other way; the test allows those rows
to differ, and no other).
"""
import gzip
import json
import struct
import sys

import numpy as np


def read_safetensors(path):
    """The tensors (name -> float32 array) and the metadata."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        buf = f.read()
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, t in header.items():
        assert t["dtype"] == "F32", name
        b, e = t["data_offsets"]
        tensors[name] = np.frombuffer(buf[b:e], dtype="<f4").reshape(
            t["shape"])
    return tensors, meta


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = struct.unpack(">" + "I" * dims, raw[4:4 + 4 * dims])
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * dims).reshape(shape)


def load_data(path, fmt, width):
    if fmt == "idx":
        images = read_idx(path).reshape(-1, width).astype(np.float32)
        lab = path[::-1].replace("segami", "slebal", 1)[::-1]
        lab = lab.replace("idx3", "idx1")
        # the trainer's features of an image: byte * (1 / 255.0f)
        return images * np.float32(1 / 255.0), read_idx(lab).astype(int)
    rows, labels = [], []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            labels.append(int(parts[0]))
            x = np.zeros(width, np.float32)
            for kv in parts[1:]:
                k, v = kv.split(":")
                x[int(k) - 1] = np.float32(v)
            rows.append(x)
    return np.stack(rows), np.array(labels)


def main():
    model, data, fmt = sys.argv[1:4]
    tensors, meta = read_safetensors(model)
    widths = json.loads(meta["widths"])
    labels = json.loads(meta["labels"])
    x, y = load_data(data, fmt, widths[0])
    if meta.get("scale") == "standard":
        mean = np.array(json.loads(meta["scale_mean"]), np.float32)
        std = np.array(json.loads(meta["scale_std"]), np.float32)
        x = (x - mean) / std
    try:
        import torch
        from torch import nn
        layers = []
        for i in range(len(widths) - 1):
            layers.append(nn.Linear(widths[i], widths[i + 1]))
            if i < len(widths) - 2:
                layers.append(nn.ReLU())
        net = nn.Sequential(*layers)
        net.load_state_dict({k: torch.from_numpy(v.copy())
                             for k, v in tensors.items()})
        with torch.no_grad():
            logits = net(torch.from_numpy(x)).numpy()
        backend = "torch"
    except ImportError:
        h = x
        n = len(widths) - 1
        for i in range(n):
            h = h @ tensors["%d.weight" % (2 * i)].T + \
                tensors["%d.bias" % (2 * i)]
            if i < n - 1:
                h = np.maximum(h, 0)
        logits = h
        backend = "numpy"
    cls = logits.argmax(axis=1)
    top2 = np.sort(logits, axis=1)[:, -2:]
    ambiguous = np.nonzero(top2[:, 1] - top2[:, 0] < 1e-4)[0]
    pred = [labels[c] for c in cls]
    json.dump({"backend": backend, "predictions": pred,
               "accuracy": float(np.mean(np.array(pred) == y)),
               "ambiguous": [int(i) for i in ambiguous]}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
