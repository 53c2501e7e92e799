#!/usr/bin/python3
"""sparse_gen.py -- a synthetic sparse LIBSVM set with a learnable signal,
for bench_sparse.sh: ROWS rows over FEATURES features, K classes, NNZ
non-zeros a row.  Class c owns the features c, c + K, c + 2K, ... of the
first SIGNAL ones; a row of class c has NNZ / 4 of its class's features
(value 1; one row in 5 has another class's instead: noise) and the rest
drawn from all features (value uniform in (0, 1]), so a linear model
reaches about 80% accuracy, not 100%.

usage: sparse_gen.py OUT ROWS FEATURES K NNZ SEED
"""
import random
import sys


def main():
    out, rows, feats, k, nnz, seed = sys.argv[1:7]
    rows, feats, k, nnz = int(rows), int(feats), int(k), int(nnz)
    rnd = random.Random(int(seed))
    signal = min(feats, 100 * k)
    own = max(1, nnz // 4)
    with open(out, "w") as f:
        for _ in range(rows):
            c = rnd.randrange(k)
            f_c = rnd.randrange(k) if rnd.random() < 0.2 else c
            row = {}
            for _ in range(own):
                row[f_c + k * rnd.randrange(signal // k)] = 1.0
            while len(row) < nnz:
                j = rnd.randrange(feats)
                row.setdefault(j, round(rnd.random(), 3) or 0.001)
            # the largest index always present: every file has the width
            row.setdefault(feats - 1, 0.5)
            f.write("%d %s\n" % (c, " ".join(
                "%d:%g" % (j + 1, row[j]) for j in sorted(row))))


if __name__ == "__main__":
    main()
