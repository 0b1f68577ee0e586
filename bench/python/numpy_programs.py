#!/usr/bin/env python3
"""The realistic NumPy programs of tests/python/programs, each jitted with
one line, against NumPy itself: time per call after warm-up, NumPy's and
shapejit's, measured in interleaved rounds in one process (each round
times --calls calls of each, on the same inputs), with the ratio of the
minimum and of the median (below 1: shapejit is faster). Every call's
result is checked against NumPy's before timing. Not run by CI:

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=build/python taskset -c 1 \\
        python bench/python/numpy_programs.py [--rounds 7] [--calls 20] [--only rnn,kmeans]
"""
import argparse
import copy
import pathlib
import statistics
import sys
import time

import numpy as np

import shapejit as sj

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "python" / "programs"))
import boids  # noqa: E402
import fluid  # noqa: E402
import image_filter  # noqa: E402
import kmeans  # noqa: E402
import mlp  # noqa: E402
import nbody  # noqa: E402
import rnn  # noqa: E402


def rnn_decode():
    p = rnn.init(vocab=256, d=64, layers=4)
    state = rnn.init_state(p)
    model = sj.jit(rnn.model)
    tokens = iter(range(10**9))
    return (lambda: rnn.model(p, next(tokens) % 256, state)), (lambda: model(p, next(tokens) % 256, state))


def fluid_step():
    rng = np.random.default_rng(0)
    fields = [rng.standard_normal((66, 66)) * 0.1 for _ in range(4)]
    vel = sj.jit(fluid.vel_step)
    # Fresh fields each call: the solver's callers alias u and u0 after the first.
    return (lambda: fluid.vel_step(*[f.copy() for f in fields], 1e-4, 0.1)), (lambda: vel(*[f.copy() for f in fields], 1e-4, 0.1))


def kmeans_step():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((4000, 8))
    c = X[:16].copy()
    step = sj.jit(kmeans.kmeans_step)
    return (lambda: kmeans.kmeans_step(X, c)), (lambda: step(X, c))


def nbody_step():
    rng = np.random.default_rng(0)
    pos, vel, mass = rng.standard_normal((256, 3)), rng.standard_normal((256, 3)) * 0.1, rng.random(256)
    step = sj.jit(nbody.step)
    a, b = (pos.copy(), vel.copy()), (pos.copy(), vel.copy())
    return (lambda: nbody.step(*a, mass, 1e-4)), (lambda: step(*b, mass, 1e-4))


def boids_step():
    mine, theirs = boids.Flock(300), boids.Flock(300)
    step = sj.jit(boids.Flock.step)
    return (lambda: theirs.step()), (lambda: step(mine))


def mlp_step():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((100, 64))
    y = rng.integers(0, 10, 100)
    pa = mlp.init(64, 128, 10)
    pb = copy.deepcopy(pa)
    va, vb = ({k: np.zeros_like(v) for k, v in pa.items()} for _ in range(2))
    step = sj.jit(mlp.train_step)
    return (lambda: mlp.train_step(pa, va, X, y)), (lambda: step(pb, vb, X, y))


def image_edges():
    img = np.random.default_rng(0).random((256, 256))
    edges = sj.jit(image_filter.edges)
    return (lambda: image_filter.edges(img)), (lambda: edges(img))


def ssm_block():
    import ssm  # einops (python/requirements-dev.txt)
    m = ssm.Mamba(ssm.init())
    x = np.random.default_rng(1).standard_normal((2, 64, 16))
    call = sj.jit(ssm.Mamba.__call__)
    return (lambda: m(x)), (lambda: call(m, x))


PROGRAMS = {"rnn": rnn_decode, "fluid": fluid_step, "kmeans": kmeans_step, "nbody": nbody_step, "boids": boids_step,
            "mlp": mlp_step, "image": image_edges, "ssm": ssm_block}


def timed(f, calls):
    t = time.perf_counter()
    for _ in range(calls):
        f()
    return (time.perf_counter() - t) / calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--only", default=",".join(PROGRAMS))
    a = ap.parse_args()
    print(f"{'program':8} {'numpy ms':>9} {'shapejit ms':>12} {'min ratio':>10} {'median ratio':>13}")
    for name in a.only.split(","):
        plain, jitted = PROGRAMS[name]()
        for _ in range(3):  # warm-up: compiles, and the first calls' checks
            plain(), jitted()
        ours, theirs = [], []
        for _ in range(a.rounds):
            theirs.append(timed(plain, a.calls))
            ours.append(timed(jitted, a.calls))
        print(f"{name:8} {min(theirs) * 1e3:9.3f} {min(ours) * 1e3:12.3f} {min(ours) / min(theirs):10.2f} "
              f"{statistics.median(ours) / statistics.median(theirs):13.2f}")


if __name__ == "__main__":
    main()
