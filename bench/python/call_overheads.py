#!/usr/bin/env python3
"""What a compiled call costs from Python around its kernel, on two patterns
of model code: weights read from a closure's nested dict (61 arrays,
p["layers"][i][name], as examples/encoder.py reads its parameters), and a
decode step's writes into caches it reaches through self (12 rows written
a call, as examples/llama_numpy.py updates its key/value caches). Both
kernels are a few elementwise ops on tiny arrays, so the time is the call's.

Prints each pattern's time per call, the minimum over --rounds rounds of
1,000 calls. Not run by CI:

    PYTHONPATH=build/python taskset -c 1 python bench/python/call_overheads.py [--rounds 20]
"""
import argparse
import time

import numpy as np

import shapejit as sj

NAMES = ["wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo"]


def captured_weights():
    p = {"word": np.ones((4, 4), np.float32),
         "layers": [{**{k: np.ones(4, np.float32) for k in NAMES}, "ln": {"w": np.ones(4, np.float32), "b": np.ones(4, np.float32)}}
                    for _ in range(6)]}

    def model(x):
        h = x + p["word"][0]
        for L in p["layers"]:
            for k in NAMES:
                h = h + L[k]
            h = h * L["ln"]["w"] + L["ln"]["b"]
        return h
    f = sj.jit(model)
    x = np.ones(4, np.float32)
    return lambda i: f(x)


class Caches:
    def __init__(self):
        self.caches = [np.zeros((1, 256, 6, 48), np.float32) for _ in range(12)]

    def __call__(self, x, pos):
        for c in self.caches:
            c[:, pos:pos + 1] = x
        return x * 2


def cache_writes():
    Caches.__call__ = sj.jit(Caches.__call__)
    m = Caches()
    x = np.ones((1, 1, 6, 48), np.float32)
    return lambda i: m(x, i % 256)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    for name, make in (("61 captured weights", captured_weights), ("12 cache rows written through self", cache_writes)):
        call = make()
        for i in range(300):
            call(i)
        best = float("inf")
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            for i in range(1000):
                call(i)
            best = min(best, (time.perf_counter() - t0) / 1000)
        print(f"{name}: {best * 1e6:.2f} us a call")


if __name__ == "__main__":
    main()
