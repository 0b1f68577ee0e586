#!/usr/bin/env python3
"""The MiniLM-size encoder's attention block alone, as examples/encoder.py
writes it: q, k, v [b, t, 384] split into 12 heads, softmax(q k^T / sqrt(32)
+ padding bias) v, the heads merged back into [b, t, 384]. One attention
step and the copy that merges the heads; one thread where taskset gives one.

Prints each shape's time per call, the minimum over --rounds rounds of 10
calls. Not run by CI:

    PYTHONPATH=build/python taskset -c 1 python bench/python/encoder_attention.py [--shapes 1x16,1x48,32x16] [--rounds 20]
"""
import argparse
import math
import time

import numpy as np

import shapejit as sj

HEADS, HIDDEN = 12, 384


def attention(b, t):
    d = HIDDEN // HEADS

    def split(x):
        return x.reshape(b, t, HEADS, d).transpose(0, 2, 1, 3)

    def block(qf, kf, vf, mask):
        bias = (mask.astype(np.float32) - 1.0)[:, None, None, :] * 1e9
        probs = sj.softmax(split(qf) @ split(kf).swapaxes(-1, -2) * (1.0 / math.sqrt(d)) + bias, axis=-1)
        return (probs @ split(vf)).transpose(0, 2, 1, 3).reshape(b, t, HIDDEN)
    return block


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default="1x16,1x48,32x16")
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    for shape in args.shapes.split(","):
        b, t = map(int, shape.split("x"))
        block = attention(b, t)
        f = sj.jit(block)
        qf, kf, vf = (rng.standard_normal((b, t, HIDDEN), dtype=np.float32) for _ in range(3))
        mask = np.ones((b, t), np.int64)
        np.testing.assert_allclose(f(qf, kf, vf, mask), block(qf, kf, vf, mask), rtol=1e-4, atol=1e-5)
        best = float("inf")
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            for _ in range(10):
                f(qf, kf, vf, mask)
            best = min(best, (time.perf_counter() - t0) / 10)
        print(f"{b} x {t}: {best * 1e6:.1f} us")


if __name__ == "__main__":
    main()
