#!/usr/bin/env python3
"""A float64 matrix times a float32 weight, as NumPy 2 computes GPT-2's
products after its first attention (`np.sqrt(d)` is a float64 scalar, so
the residual stream is float64): rows x 768 by 768 x 3072, from Python.

NumPy casts the weight to a float64 copy and calls dgemm; shapejit reads the
float32 weight as it is and its GEMM converts it as the tiles load it. Eight
weights (75 MB, past L3) are taken in turn, so that each product reads its
weight from memory, as a model's layers do. Per row count, in interleaved
rounds: shapejit and NumPy on float32 weights, and shapejit on float64
weights (the same product with nothing to convert). Prints the minimum and
median ms per product, and shapejit's GFLOP/s at the minimum. Not run by CI:

    PYTHONPATH=build/python taskset -c 0 python bench/python/converted_matmul.py [--rows 20,31,97,192] [--rounds 7]
"""
import argparse
import statistics
import time

import numpy as np

import shapejit as sj


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="20,31,97,192")
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    w32 = [rng.standard_normal((768, 3072)).astype(np.float32) for _ in range(8)]
    w64 = [w.astype(np.float64) for w in w32]
    product = sj.jit(lambda x, w: x @ w)
    print(f"{'rows':>5} {'shapejit f32 w':>16} {'numpy f32 w':>16} {'shapejit f64 w':>16}   GFLOP/s (shapejit, f32 w)")
    for m in (int(r) for r in a.rows.split(",")):
        x = rng.standard_normal((m, 768))
        ways = {"sj32": (product, w32), "np32": (lambda x, w: x @ w, w32), "sj64": (product, w64)}
        for f, ws in ways.values():  # compiles and first touches
            for w in ws:
                f(x, w)
        times = {k: [] for k in ways}
        for _ in range(a.rounds):
            for k, (f, ws) in ways.items():
                t = time.perf_counter()
                for w in ws:
                    f(x, w)
                times[k].append((time.perf_counter() - t) / len(ws) * 1e3)
        cell = {k: f"{min(v):6.2f} / {statistics.median(v):6.2f}" for k, v in times.items()}
        gflops = 2 * m * 768 * 3072 / (min(times["sj32"]) * 1e-3) / 1e9
        print(f"{m:>5} {cell['sj32']:>16} {cell['np32']:>16} {cell['sj64']:>16}   {gflops:.1f}")


if __name__ == "__main__":
    main()
