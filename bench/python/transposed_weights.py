#!/usr/bin/env python3
"""A weight held as PyTorch holds it, [out, in], multiplied by its
transpose: `x` of M x 384 times the 384 x 1536 transpose of `W` (1536 x
384), from Python, against NumPy on the same arrays (issue 61's table).

Cases, per row count M:
  captured   `x @ W.T + b`, W and b read from the function's globals
  view       `x @ w`, w passed as the view W.T
  contiguous `x @ w`, w passed as a contiguous copy of W.T (the twin)
  frozen     the view and the twin again, W and the twin frozen (sj.freeze),
             so that the product keeps them packed
One function takes both layouts of w, as a program passing either would.
Interleaved rounds; prints the minimum and median microseconds per call
and shapejit over NumPy at each. Not run by CI:

    PYTHONPATH=build/python taskset -c 1 python bench/python/transposed_weights.py [--rows 1,16,64] [--rounds 5] [--calls 400]
"""
import argparse
import statistics
import time

import numpy as np

import shapejit as sj

rng = np.random.default_rng(0)
W = rng.standard_normal((1536, 384)).astype(np.float32)
B = rng.standard_normal(1536).astype(np.float32)


@sj.jit
def captured(x):
    return x @ W.T + B


@sj.jit
def product(x, w):
    return x @ w


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1,16,64")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=400)
    a = ap.parse_args()
    twin = np.ascontiguousarray(W.T)
    frozen_w, frozen_twin = W.copy(), twin.copy()
    sj.freeze([frozen_w, frozen_twin])
    print(f"{'M':>4} {'case':>18} {'shapejit us':>16} {'numpy us':>16} {'ratio (min, median)':>20}")
    for m in (int(r) for r in a.rows.split(",")):
        x = rng.standard_normal((m, 384)).astype(np.float32)
        cases = {
            "captured": (lambda: captured(x), lambda: x @ W.T + B),
            "view": (lambda: product(x, W.T), lambda: x @ W.T),
            "contiguous": (lambda: product(x, twin), lambda: x @ twin),
            "frozen view": (lambda: product(x, frozen_w.T), lambda: x @ frozen_w.T),
            "frozen contiguous": (lambda: product(x, frozen_twin), lambda: x @ frozen_twin),
        }
        for sj_call, np_call in cases.values():
            np.testing.assert_allclose(sj_call(), np_call(), rtol=1e-3, atol=1e-3)
            for _ in range(20):
                sj_call(), np_call()
        times = {(c, w): [] for c in cases for w in (0, 1)}
        for _ in range(a.rounds):
            for c, calls in cases.items():
                for w in (0, 1):
                    f = calls[w]
                    t = time.perf_counter()
                    for _ in range(a.calls):
                        f()
                    times[c, w].append((time.perf_counter() - t) / a.calls * 1e6)
        for c in cases:
            s, n = times[c, 0], times[c, 1]
            print(f"{m:>4} {c:>18} {min(s):7.0f} / {statistics.median(s):6.0f} {min(n):7.0f} / {statistics.median(n):6.0f}"
                  f" {min(s) / min(n):9.2f}, {statistics.median(s) / statistics.median(n):.2f}")
    print(f"compiles: captured {captured.stats()['compiles']}, product {product.stats()['compiles']} (both layouts)")


if __name__ == "__main__":
    main()
