#!/usr/bin/env python3
"""A Python loop unrolled into one trace: `for i in range(N): h = tanh(h @ W
+ x[i])` over a 4 x 16 state, jitted whole. Prints, per N: the first call
(trace and compile included, a fresh disk tier), the peak resident memory
after it, the steps and how many were distinct (compiled once each), and a
call after warm-up against NumPy's (the minimum of --rounds rounds of 10).
Not run by CI:

    PYTHONPATH=build/python taskset -c 0 python bench/python/unrolled_scan.py [--n 100,1000] [--rounds 5]
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time


def one(n, rounds):
    import numpy as np

    import shapejit as sj
    rng = np.random.default_rng(0)
    w = rng.standard_normal((16, 16)) * 0.1

    def scan(h, x):
        for i in range(n):
            h = np.tanh(h @ w + x[i])
        return h
    f = sj.jit(scan)
    h, x = np.zeros((4, 16)), rng.standard_normal((n, 4, 16))
    t0 = time.perf_counter()
    out = f(h, x)
    first = time.perf_counter() - t0
    np.testing.assert_allclose(out, scan(h, x), rtol=1e-9, atol=1e-12)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def best(fn):
        times = []
        for _ in range(rounds):
            t = time.perf_counter()
            for _ in range(10):
                fn(h, x)
            times.append((time.perf_counter() - t) / 10)
        return min(times)
    jit_s, np_s = best(f), best(scan)
    s = f.stats()
    print(f"N={n}: first call {first:.2f} s (trace {s['trace_ms']:.0f} ms, compile {s['compile_ms']:.0f} ms), peak RSS {rss:.0f} MB, "
          f"steps {s['steps']['steps']} ({s['steps']['distinct']} distinct), a call {jit_s * 1e3:.3f} ms, NumPy {np_s * 1e3:.3f} ms, "
          f"ratio {jit_s / np_s:.2f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", default="100,1000")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one is not None:
        one(a.one, a.rounds)
        return
    for n in (int(v) for v in a.n.split(",")):  # a process each: its own peak memory and a cold disk tier
        env = dict(os.environ, XDG_CACHE_HOME=tempfile.mkdtemp(prefix="shapejit-scan-"))
        subprocess.run([sys.executable, __file__, "--one", str(n), "--rounds", str(a.rounds)], env=env, check=True)


if __name__ == "__main__":
    main()
