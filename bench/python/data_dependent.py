#!/usr/bin/env python3
"""Data-dependent shapes compiled (issue 35): NumPy code whose result's size
is the data's, against NumPy, in interleaved rounds.

  nonzero     np.nonzero(x > 0.5)[0] + 1                 x: n uniform floats in [0, 1)
  select_sum  (x[x > 0] * 2 + 1).sum()                   x: n standard normal floats
  moe         h[np.nonzero(route == 2)[0]] @ w            the tokens routed to one of 8
                                                          experts, times its weights
  moe_static  h[idx] @ w, idx given (its length a static size under always_static):
              what the gather and product cost when the count is known

Prints per case and size the minimum and median time a call over the
rounds, and shapejit's over NumPy's (moe: over moe_static's), with each
function's stats (compiles, fallbacks to the reference interpreter). The
threads are the process's cores: run it under `taskset -c 0` for one
thread, `taskset -c 0,1` for two (NumPy's calls here use one either way).
Not run by CI:

    PYTHONPATH=build/python OPENBLAS_NUM_THREADS=1 taskset -c 0 python bench/python/data_dependent.py
"""
import argparse
import json
import statistics
import time

import numpy as np

import shapejit as sj


def nonzero(x):
    return np.nonzero(x > 0.5)[0] + 1


def select_sum(x):
    return (x[x > 0] * 2 + 1).sum()


def moe(route, h, w):
    return h[np.nonzero(route == 2)[0]] @ w


def moe_static(idx, h, w):
    return h[idx] @ w


def timed(f, calls):
    t0 = time.perf_counter()
    for _ in range(calls):
        f()
    return (time.perf_counter() - t0) / calls


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1000,1000000")
    p.add_argument("--tokens", type=int, default=4096)
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--json", help="also write the numbers here")
    a = p.parse_args(argv)
    rng = np.random.default_rng(0)
    cases = {}
    for n in [int(s) for s in a.sizes.split(",")]:
        u = rng.random(n, dtype=np.float32)
        g = rng.standard_normal(n).astype(np.float32)
        cases[f"nonzero n={n}"] = (nonzero, (u,), None)
        cases[f"select_sum n={n}"] = (select_sum, (g,), None)
    route = rng.integers(0, 8, a.tokens)
    h = rng.standard_normal((a.tokens, 256)).astype(np.float32)
    w = (rng.standard_normal((256, 512)) / 16).astype(np.float32)
    idx = np.nonzero(route == 2)[0]
    cases[f"moe tokens={a.tokens}"] = (moe, (route, h, w), ("moe_static", moe_static, (idx, h, w)))

    results = {}
    for name, (fn, args, static) in cases.items():
        jitted = sj.jit(fn)
        np.testing.assert_allclose(jitted(*args), fn(*args), rtol=1e-4, atol=1e-3)
        ways = {"numpy": lambda fn=fn, args=args: fn(*args), "shapejit": lambda j=jitted, args=args: j(*args)}
        if static:
            sname, sfn, sargs = static
            sj_static = sj.jit(sfn, config={"policy": {"mode": "always_static"}})
            np.testing.assert_allclose(sj_static(*sargs), jitted(*args), rtol=1e-5, atol=1e-5)
            ways[sname] = lambda j=sj_static, sargs=sargs: j(*sargs)
        times = {k: [] for k in ways}
        for _ in range(a.rounds):
            for k, f in ways.items():
                times[k].append(timed(f, a.calls))
        stats = jitted.stats()
        row = {k: {"min_ms": min(v) * 1e3, "median_ms": statistics.median(v) * 1e3} for k, v in times.items()}
        base = "moe_static" if static else "numpy"
        row["ratio_min"] = min(times["shapejit"]) / min(times[base])
        row["ratio_median"] = statistics.median(times["shapejit"]) / statistics.median(times[base])
        row["over"] = base
        row["compiles"], row["fallbacks"], row["graph_breaks"] = stats["compiles"], stats["fallbacks"], stats["graph_breaks"]
        results[name] = row
        line = ", ".join(f"{k} {row[k]['min_ms']:.3f}/{row[k]['median_ms']:.3f} ms" for k in ways)
        print(f"{name}: {line} (min/median); shapejit over {base} {row['ratio_min']:.2f} (min) {row['ratio_median']:.2f} (median); "
              f"compiles {row['compiles']}, fallbacks {row['fallbacks']}, graph breaks {row['graph_breaks']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
