#!/usr/bin/env python3
"""A jitted forward inside a training loop that also runs NumPy's BLAS.

A minibatch MLP (100 x 784 x 50 x 10, float32): each step runs the forward
(two products, a ReLU, a softmax), then the backward and the update in
NumPy, whose products are OpenBLAS's, on as many threads as it is given.
The forward is timed inside the loop, each call on its own, so that what
runs between calls (NumPy's BLAS threads, which spin for a while after each
product) is there as it is in training; back to back it is not. Rounds
alternate a loop whose forward is NumPy's and one whose forward is
shapejit's, in one process, and the minimum and median of the rounds'
mean forward time are printed, with their ratio (below 1: shapejit's
forward is faster). Not run by CI:

    PYTHONPATH=build/python taskset -c 0,1 python bench/python/training_loop.py [--rounds 9] [--steps 200]

Run it with OPENBLAS_NUM_THREADS unset (NumPy's BLAS on every core, as a
user's training runs) and with it set to 1.
"""
import argparse
import statistics
import time

import numpy as np

import shapejit as sj


def forward(X, W1, b1, W2, b2):
    h = np.maximum(X @ W1 + b1, 0)
    z = h @ W2 + b2
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return h, e / e.sum(axis=1, keepdims=True)


def backward(X, y, h, probs, W2):
    n = X.shape[0]
    d = probs.copy()
    d[np.arange(n), y] -= 1
    d /= n
    dW2, db2 = h.T @ d, d.sum(axis=0)
    dh = d @ W2.T
    dh[h <= 0] = 0
    return X.T @ dh, dh.sum(axis=0), dW2, db2


def loop(fwd, params, data, steps, lr=0.05):
    """`steps` training steps; the mean seconds of a forward call."""
    X_all, y_all = data
    spent = 0.0
    for i in range(steps):
        j = (i * 100) % (len(X_all) - 100)
        X, y = X_all[j:j + 100], y_all[j:j + 100]
        t0 = time.perf_counter()
        h, probs = fwd(X, *params)
        spent += time.perf_counter() - t0
        grads = backward(X, y, h, probs, params[2])
        for p, g in zip(params, grads):
            p -= lr * g
    return spent / steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    data = (rng.standard_normal((6000, 784)).astype(np.float32), rng.integers(0, 10, 6000))

    def fresh():
        return [(rng.standard_normal((784, 50)) * 0.05).astype(np.float32), np.zeros(50, np.float32),
                (rng.standard_normal((50, 10)) * 0.1).astype(np.float32), np.zeros(10, np.float32)]

    jitted = sj.jit(forward)
    X = data[0][:100]
    p = fresh()
    for got, want in zip(jitted(X, *p), forward(X, *p)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    loop(jitted, fresh(), data, 20)  # warm: the compile, the caches
    loop(forward, fresh(), data, 20)
    times = {"numpy": [], "shapejit": []}
    for _ in range(args.rounds):
        times["numpy"].append(loop(forward, fresh(), data, args.steps))
        times["shapejit"].append(loop(jitted, fresh(), data, args.steps))
    n, s = times["numpy"], times["shapejit"]
    print(f"forward inside the loop, us a call (min / median over {args.rounds} rounds of {args.steps} steps):")
    print(f"  numpy      {min(n) * 1e6:8.1f} / {statistics.median(n) * 1e6:8.1f}")
    print(f"  shapejit   {min(s) * 1e6:8.1f} / {statistics.median(s) * 1e6:8.1f}")
    print(f"  ratio      {min(s) / min(n):8.2f} / {statistics.median(s) / statistics.median(n):8.2f}")
    st = jitted.stats()
    print(f"  shapejit compiles {st['compiles']}, graph breaks {st['graph_breaks']}, NumPy's calls {st['eager_calls']}")


if __name__ == "__main__":
    main()
