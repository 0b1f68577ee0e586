#!/usr/bin/env python3
"""The MiniLM-size encoder's two row functions alone, as examples/encoder.py
writes them at 32 x 16 tokens (512 rows): gelu(x + b) over the FFN's 1536
columns, and layer_norm(h + y + b) over the 384 hidden ones, each one step.
`x + b` alone is timed beside gelu, as the loop's floor. One thread where
taskset gives one.

Prints each function's time per call and per element, the minimum over
--calls calls. Not run by CI:

    PYTHONPATH=build/python taskset -c 1 python bench/python/encoder_pointwise.py [--rows 512] [--calls 300]
"""
import argparse
import time

import numpy as np

import shapejit as sj


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=512)
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.rows, 1536), dtype=np.float32)
    b1 = rng.standard_normal(1536, dtype=np.float32)
    h, y = (rng.standard_normal((args.rows, 384), dtype=np.float32) for _ in range(2))
    bo, w, bn = (rng.standard_normal(384, dtype=np.float32) for _ in range(3))
    cases = {
        "x + b": (sj.jit(lambda x, b: x + b), (x, b1)),
        "gelu(x + b)": (sj.jit(lambda x, b: sj.gelu(x + b)), (x, b1)),
        "layer_norm(h + y + b)": (sj.jit(lambda h, y, b, w, c: sj.layer_norm(h + y + b, w, c, eps=1e-12)), (h, y, bo, w, bn)),
    }
    for name, (f, a) in cases.items():
        f(*a)
        best = float("inf")
        for _ in range(args.calls):
            start = time.perf_counter()
            f(*a)
            best = min(best, time.perf_counter() - start)
        print(f"{name:22s} {best * 1e6:8.1f} us  {best * 1e9 / a[0].size:.3f} ns an element")


if __name__ == "__main__":
    main()
