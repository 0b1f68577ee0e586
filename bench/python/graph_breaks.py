#!/usr/bin/env python3
"""A model with a NumPy call shapejit has no op for in every layer: how much
of a call runs compiled (issue 30: "a program with one unsupported call per
layer must still run most of its time in compiled code").

The model: --layers layers of `x = tanh(x @ w)`, then `x - np.percentile(x, 50,
axis=-1, keepdims=True)` (np.percentile has no op: a graph break per layer), on
a batch of --rows rows of --width. Three ways, in interleaved rounds:
  numpy      the function itself;
  shapejit   jitted: every call runs as compiled segments cut at the breaks;
  no breaks  the same model with the percentile replaced by the mean (an op),
             one compiled graph: what the breaks cost against none.
Prints per way the minimum and median time a call over the rounds, and for
shapejit where its time goes, from its stats: the segments' calls (kernels
and dispatch), the breaks' NumPy calls (the percentiles), and the rest (the
function's Python on tracing values, hashing and cutting). Not run by CI:

    PYTHONPATH=build/python taskset -c 0 python bench/python/graph_breaks.py [--rounds 7]
"""
import argparse
import statistics
import time

import numpy as np

import shapejit as sj


def model(x, ws):
    for w in ws:
        x = np.tanh(x @ w)
        x = x - np.percentile(x, 50, axis=-1, keepdims=True)
    return x


def model_without_breaks(x, ws):
    for w in ws:
        x = np.tanh(x @ w)
        x = x - np.mean(x, axis=-1, keepdims=True)
    return x


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--rows", type=int, default=256)
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--calls", type=int, default=5)
    a = p.parse_args(argv)
    rng = np.random.default_rng(0)
    ws = [(rng.standard_normal((a.width, a.width)) / np.sqrt(a.width)).astype(np.float32) for _ in range(a.layers)]
    x = rng.standard_normal((a.rows, a.width)).astype(np.float32)
    jitted, whole = sj.jit(model), sj.jit(model_without_breaks)
    np.testing.assert_allclose(jitted(x, ws), model(x, ws), rtol=1e-3, atol=1e-4)  # f32 sums in another order, 12 layers deep
    whole(x, ws)
    ways = {"numpy": lambda: model(x, ws), "shapejit": lambda: jitted(x, ws), "no breaks": lambda: whole(x, ws)}
    times = {k: [] for k in ways}
    before = jitted.stats()
    for _ in range(a.rounds):
        for k, f in ways.items():
            t0 = time.perf_counter()
            for _ in range(a.calls):
                f()
            times[k].append((time.perf_counter() - t0) / a.calls * 1e3)
    s = jitted.stats()
    calls = s["segmented_calls"] - before["segmented_calls"]
    outside = (s["outside_ms"] - before["outside_ms"]) / calls
    kernels = (s["segment_kernel_ms"] - before["segment_kernel_ms"]) / calls
    in_numpy = (s["break_numpy_ms"] - before["break_numpy_ms"]) / calls
    print(f"{a.layers} layers, {a.rows} x {a.width}, one np.percentile a layer; ms a call (min / median of {a.rounds} rounds)")
    for k, t in times.items():
        print(f"  {k:<10} {min(t):8.2f} / {statistics.median(t):8.2f}")
    print(f"  shapejit: {s['segments'] // max(s['segmented_calls'], 1)} segments a call, {s['segment_graphs']} segment graphs; "
          f"{kernels:.2f} ms a call in segment calls (kernels and dispatch), {outside:.2f} ms outside them: "
          f"{in_numpy:.2f} in the breaks' NumPy calls, {outside - in_numpy:.2f} tracing and cutting "
          f"({(outside - in_numpy) / (outside + kernels) * 100:.0f}% of its time)")


if __name__ == "__main__":
    main()
