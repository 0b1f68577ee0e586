#!/usr/bin/env python3
"""The realistic NumPy programs of tests/python/programs through NumPy,
shapejit, Numba and torch.compile, in one process, interleaved rounds.

Each program runs as bench/python/numpy_programs.py runs it (the same
inputs and call), through
  numpy          itself;
  shapejit       jitted with one line;
  numba          numba.njit on the program's functions as a Numba user
                 decorates them (each function it calls decorated too), where
                 Numba compiles it: where it does not, the table says why (the
                 first line of Numba's error);
  torch.compile  the function compiled as it is (Dynamo traces NumPy code
                 through torch._numpy), where torch is installed.
Every contender's result is checked against NumPy's on the first call. The
time a call after warm-up, the minimum and median over --rounds rounds of
--calls calls, and the ratio of each to NumPy's. Not run by CI; the peers
come from PyPI into a virtual environment of their own:

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install numba numpy==<build/venv's>
    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 PYTHONPATH=build/python taskset -c 0 \\
        /tmp/peers/bin/python bench/peers/numpy_programs_peers.py [--rounds 7] [--calls 20]
"""
import argparse
import copy
import importlib
import pathlib
import statistics
import sys
import time

import numpy as np

import shapejit as sj

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python" / "programs"))
import boids  # noqa: E402
import fluid  # noqa: E402
import image_filter  # noqa: E402
import kmeans  # noqa: E402
import mlp  # noqa: E402
import nbody  # noqa: E402
import rnn  # noqa: E402


def _numba():
    try:
        return importlib.import_module("numba")
    except ImportError:
        return None


def _torch():
    try:
        return importlib.import_module("torch")
    except ImportError:
        return None


def njit_module(module, entry):
    """The module's functions njit-ed (as a Numba user decorates each one
    the entry calls), and the entry's dispatcher."""
    numba = _numba()
    for name, f in list(vars(module).items()):
        if callable(f) and getattr(f, "__module__", None) == module.__name__ and not isinstance(f, type):
            setattr(module, name, numba.njit(f))
    return getattr(module, entry)


# Each program: (its module, the entry function's name or a method of a
# class, the arguments of one call, fresh where the call writes them).
def _rnn():
    p = rnn.init(vocab=256, d=64, layers=4)
    state = rnn.init_state(p)
    tokens = iter(range(10**9))
    return rnn, "model", lambda: (p, next(tokens) % 256, state)


def _fluid():
    rng = np.random.default_rng(0)
    fields = [rng.standard_normal((66, 66)) * 0.1 for _ in range(4)]
    return fluid, "vel_step", lambda: (*[f.copy() for f in fields], 1e-4, 0.1)


def _kmeans():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((4000, 8))
    c = X[:16].copy()
    return kmeans, "kmeans_step", lambda: (X, c)


def _nbody():
    rng = np.random.default_rng(0)
    pos, vel, mass = rng.standard_normal((256, 3)), rng.standard_normal((256, 3)) * 0.1, rng.random(256)
    return nbody, "step", lambda: (pos.copy(), vel.copy(), mass, 1e-4)


def _mlp():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((100, 64))
    y = rng.integers(0, 10, 100)
    p = mlp.init(64, 128, 10)
    v = {k: np.zeros_like(a) for k, a in p.items()}
    return mlp, "train_step", lambda: (copy.deepcopy(p), copy.deepcopy(v), X, y)


def _image():
    img = np.random.default_rng(0).random((256, 256))
    return image_filter, "edges", lambda: (img,)


def _boids():
    flock = boids.Flock(300)
    return boids, boids.Flock.step, lambda: (copy.deepcopy(flock),)


def _ssm():
    import ssm  # einops (python/requirements-dev.txt)
    m = ssm.Mamba(ssm.init())
    x = np.random.default_rng(1).standard_normal((2, 64, 16))
    return ssm, ssm.Mamba.__call__, lambda: (m, x)


PROGRAMS = {"rnn": _rnn, "fluid": _fluid, "kmeans": _kmeans, "nbody": _nbody, "mlp": _mlp, "image": _image, "boids": _boids,
            "ssm": _ssm}


def contenders(name):
    """{contender: (call, why it is not there or None)}: each call takes
    the program's arguments."""
    module, entry, args = PROGRAMS[name]()
    plain = entry if callable(entry) else getattr(module, entry)
    out = {"numpy": (plain, None), "shapejit": (sj.jit(plain), None)}
    if _numba() is None:
        out["numba"] = (None, "not installed")
    elif callable(entry):
        out["numba"] = (None, "a method of a class holding arrays (Numba takes a jitclass, a rewrite)")
    else:
        try:
            fresh = importlib.reload(module)  # its own copy, its functions njit-ed
            f = njit_module(fresh, entry)
            f(*args())
            out["numba"] = (f, None)
        except Exception as e:  # noqa: BLE001 - Numba's refusal is the finding
            out["numba"] = (None, _numba_reason(e))
        finally:
            importlib.reload(module)
    torch = _torch()
    if torch is None:
        out["torch.compile"] = (None, "not installed")
    else:
        out["torch.compile"] = (torch.compile(plain), None)
    return out, args


def _numba_reason(e):
    """The line of Numba's error that says what it refused (its first lines
    name the pipeline stage)."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    said = [ln for ln in lines if not ln.startswith(("Failed in", "During:", "^", "File", "- Resolution", "Resolution"))]
    return (said or lines or [type(e).__name__])[0][:140]


def same(a, b):
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    try:
        return np.allclose(np.asarray(a, float), np.asarray(b, float), rtol=1e-6, atol=1e-9, equal_nan=True)
    except (TypeError, ValueError):
        return a == b


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--only", default=",".join(PROGRAMS))
    a = ap.parse_args()
    print("ms a call, min / median; (x NumPy's, min / median)")
    for name in a.only.split(","):
        calls, args = contenders(name)
        want = calls["numpy"][0](*args())
        live = {}
        for who, (f, why) in calls.items():
            if f is None:
                continue
            try:
                for _ in range(3):  # warm: compiles
                    got = f(*args())
                if not same(got, want) and name not in ("rnn", "nbody"):  # those two advance their own state
                    why = "differs from NumPy's result"
            except Exception as e:  # noqa: BLE001
                why = f"raised {type(e).__name__}: {str(e).strip().splitlines()[0][:100]}"
            if why is None:
                live[who] = f
            else:
                calls[who] = (None, why)
        times = {who: [] for who in live}
        for _ in range(a.rounds):
            for who, f in live.items():
                inputs = [args() for _ in range(a.calls)]
                t0 = time.perf_counter()
                for x in inputs:
                    f(*x)
                times[who].append((time.perf_counter() - t0) / a.calls)
        base = times["numpy"]
        print(f"{name}:")
        for who, (_, why) in calls.items():
            if who not in times:
                print(f"  {who:14} -  ({why})")
                continue
            t = times[who]
            print(f"  {who:14} {min(t) * 1e3:8.3f} / {statistics.median(t) * 1e3:8.3f}   "
                  f"({min(t) / min(base):5.2f} / {statistics.median(t) / statistics.median(base):5.2f})")


if __name__ == "__main__":
    main()
