#!/usr/bin/python3
"""mf_synth.py -- a synthetic ratings set for `--model mf` (tests and
`make bench BENCH=mf`): true factors P [users x rank] and Q [items x rank]
with entries N(0, rank^-1/4), so that p_u . q_i has variance 1, and

    rating = mean + p_u . q_i + N(0, sigma^2)

for (user, item) pairs drawn uniformly.  The best RMSE any model reaches on
fresh ratings is sigma (the noise), the mean alone gets sqrt(1 + sigma^2).

usage: mf_synth.py TRAIN.csv TEST.csv [--users N] [--items N] [--rank R]
       [--train N] [--test N] [--sigma S] [--mean M] [--seed S]
Writes user,item,rating lines after a header; ids from 0.
"""
import argparse
import random


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("train")
    ap.add_argument("test")
    ap.add_argument("--users", type=int, default=500)
    ap.add_argument("--items", type=int, default=500)
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--train-n", "--train", dest="n_train", type=int,
                    default=100000)
    ap.add_argument("--test-n", "--test", dest="n_test", type=int,
                    default=10000)
    ap.add_argument("--sigma", type=float, default=0.5)
    ap.add_argument("--mean", type=float, default=3.0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    s = a.rank ** -0.25
    p = [[rnd.gauss(0, s) for _ in range(a.rank)] for _ in range(a.users)]
    q = [[rnd.gauss(0, s) for _ in range(a.rank)] for _ in range(a.items)]
    for path, n in ((a.train, a.n_train), (a.test, a.n_test)):
        with open(path, "w") as f:
            f.write("user,item,rating\n")
            for _ in range(n):
                u = rnd.randrange(a.users)
                i = rnd.randrange(a.items)
                pu, qi = p[u], q[i]
                r = a.mean + sum(pu[k] * qi[k] for k in range(a.rank))
                r += rnd.gauss(0, a.sigma)
                f.write("%d,%d,%.4f\n" % (u, i, r))


if __name__ == "__main__":
    main()
