#!/usr/bin/python3
"""predict_mf_ref.py -- what a user of an exported matrix factorization
computes: the safetensors file read with the standard library (struct,
json) and numpy (python3-numpy), each rating of a ratings file predicted
as the metadata says,

    global_mean + user_bias[u] + item_bias[i] + user_factors[u] . item_factors[i]

with a user (item) past the tensors counting as zeros (docs/trainer.md,
"Matrix factorization").  The sums are float32 in the trainer's order
(the mean, the user's bias, the item's, then the products one factor at
a time), so the predictions are the trainer's to the bit.

usage: predict_mf_ref.py MODEL.safetensors RATINGS.csv

Prints one JSON object: "predictions" (floats), "rmse" against the
file's ratings, and "meta" (the metadata).
"""
import json
import math
import sys

import numpy as np

from predict_ref import read_safetensors


def read_ratings(path):
    """user,item,rating lines (a header line, a 4th field allowed)."""
    users, items, ratings = [], [], []
    with open(path) as f:
        for n, line in enumerate(f):
            parts = [p.strip() for p in line.strip().split(",")]
            if not parts[0]:
                continue
            if n == 0 and not parts[0][0].isdigit():
                continue  # a header
            users.append(int(parts[0]))
            items.append(int(parts[1]))
            ratings.append(float(parts[2]))
    return (np.array(users), np.array(items),
            np.array(ratings, dtype=np.float32))


def main():
    tensors, meta = read_safetensors(sys.argv[1])
    assert meta["model"] == "mf" and meta["ids"] == "identity", meta
    P, Q = tensors["user_factors"], tensors["item_factors"]
    bu, bi = tensors["user_bias"], tensors["item_bias"]
    rank = int(meta["rank"])
    assert P.shape == (int(meta["users"]), rank), P.shape
    assert Q.shape == (int(meta["items"]), rank), Q.shape
    u, i, r = read_ratings(sys.argv[2])
    hu = u < P.shape[0]
    hi = i < Q.shape[0]
    uu = np.where(hu, u, 0)
    ii = np.where(hi, i, 0)
    zero = np.float32(0)
    y = np.full(len(u), np.float32(meta["global_mean"]), dtype=np.float32)
    y = y + np.where(hu, bu[uu], zero)
    y = y + np.where(hi, bi[ii], zero)
    both = hu & hi
    for j in range(rank):
        y = y + np.where(both, P[uu, j] * Q[ii, j], zero)
    err = r.astype(np.float64) - y.astype(np.float64)
    print(json.dumps({"predictions": [float(v) for v in y],
                      "rmse": math.sqrt(float(np.mean(err * err))),
                      "meta": meta}))


if __name__ == "__main__":
    main()
