#!/usr/bin/env python3
"""Per-call cost from Python on a cache hit: shapejit.jit beside torch.compile
and jax.jit, on one 3-input elementwise function of tiny arrays (x * y + z,
8 float32 elements), single-threaded, in one process.

Each framework runs the call in rounds of N calls, interleaved (shapejit,
torch, jax, shapejit, ...), so machine noise falls on all alike; reported per
call: the minimum and the median over rounds, minus nothing (the loop's own
cost, a plain Python call of a no-op, is printed beside them). Also: the cost
per extra cached entry (torch.compile's guards run per entry; shapejit's guard
tree does not), measured with the same function after 8 other shapes compiled;
and a call whose arguments are a pytree of 146 arrays (a dict of 12 lists of
12, as model code passes its weights) and one more array.

Not run by CI. Needs the package built (pip install . or PYTHONPATH=build/python)
and, for the peers, torch and jax from PyPI:

    taskset -c 0 OMP_NUM_THREADS=1 python bench/peers/python_call_overhead.py [--rounds 30] [--n 20000]
"""
import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402

import shapejit as sj  # noqa: E402


def fn(x, y, z):
    return x * y + z


def contenders(extra_entries):
    out = {}
    a = [np.full(8, i + 1, np.float32) for i in range(3)]

    others = [(k,) for k in range(9, 9 + extra_entries)]
    s = sj.jit(fn, config={"policy": {"mode": "always_static", "cache_size_limit": 64}})
    for shape in others:
        s(*[np.ones(shape, np.float32)] * 3)
    s(*a)
    assert s.stats()["compiles"] == 1 + extra_entries
    out["shapejit"] = lambda: s(*a)
    try:
        import torch
        torch.set_num_threads(1)
        torch._dynamo.config.cache_size_limit = 64
        torch._dynamo.reset()
        t = torch.compile(fn, dynamic=False)
        ta = [torch.from_numpy(x) for x in a]
        for shape in others:
            t(*[torch.ones(shape)] * 3)
        t(*ta)
        out["torch.compile"] = lambda: t(*ta)
    except ImportError:
        pass
    try:
        import jax
        jax.config.update("jax_platform_name", "cpu")
        j = jax.jit(fn)
        ja = [jax.numpy.asarray(x) for x in a]
        for shape in others:
            j(*[jax.numpy.ones(shape)] * 3).block_until_ready()
        j(*ja).block_until_ready()
        out["jax.jit"] = lambda: j(*ja).block_until_ready()
    except ImportError:
        pass
    return out


def tree_fn(x, params):
    return x + params["layer0"][0]


def tree_contenders():
    x = np.ones(8, np.float32)
    params = {f"layer{i}": [np.full(8, j, np.float32) for j in range(12)] for i in range(12)}
    out = {}
    s = sj.jit(tree_fn)
    s(x, params)
    out["shapejit"] = lambda: s(x, params)
    try:
        import torch
        torch._dynamo.reset()
        t = torch.compile(tree_fn, dynamic=False)
        tp = {k: [torch.from_numpy(a) for a in v] for k, v in params.items()}
        tx = torch.from_numpy(x)
        t(tx, tp)
        out["torch.compile"] = lambda: t(tx, tp)
    except ImportError:
        pass
    try:
        import jax
        j = jax.jit(tree_fn)
        jp = jax.tree_util.tree_map(jax.numpy.asarray, params)
        jx = jax.numpy.asarray(x)
        j(jx, jp).block_until_ready()
        out["jax.jit"] = lambda: j(jx, jp).block_until_ready()
    except ImportError:
        pass
    return out


def measure(calls, rounds, n):
    noop = lambda: None  # noqa: E731
    calls = dict(calls, **{"(a no-op Python call)": noop})
    times = {k: [] for k in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            t0 = time.perf_counter()
            for _ in range(n):
                call()
            times[name].append((time.perf_counter() - t0) / n * 1e6)
    return {k: (min(v), statistics.median(v)) for k, v in times.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--n", type=int, default=20000)
    args = ap.parse_args()
    print(f"per call on a hit, us (min / median of {args.rounds} rounds of {args.n} calls)")
    for extra in (0, 8):
        res = measure(contenders(extra), args.rounds, args.n)
        print(f"\nwith {1 + extra} cached entr{'y' if extra == 0 else 'ies'}:")
        for name, (lo, med) in res.items():
            print(f"  {name:24} {lo:7.2f} / {med:7.2f}")
    res = measure(tree_contenders(), args.rounds, args.n // 10)
    print("\nx + params['layer0'][0], params a dict of 12 lists of 12 arrays (147 arrays a call):")
    for name, (lo, med) in res.items():
        print(f"  {name:24} {lo:7.2f} / {med:7.2f}")


if __name__ == "__main__":
    main()
