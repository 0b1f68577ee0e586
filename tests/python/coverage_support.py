"""What the coverage test (test_coverage.py) runs its entries with: inputs of
every kind NumPy distinguishes (odd sizes, 0 and 1, broadcasts, strided
views, each dtype), NumPy's own result compared with the jitted one
(`check`), and the table of cases (`RECIPES`: an entry's name -> a function
giving its (fn, args) cases)."""
import copy

import numpy as np

import shapejit as sj

rng = np.random.default_rng(7)


def arr(shape, dtype=np.float64, lo=-3.0, hi=3.0):
    x = rng.uniform(lo, hi, size=shape)
    if np.dtype(dtype).kind == "b":
        return x > 0
    if np.dtype(dtype).kind == "i":
        return np.floor(x * 3).astype(dtype)
    return x.astype(dtype)


F32, F64 = np.float32, np.float64
I32, I64 = np.int32, np.int64
# The usual inputs of a float function: odd sizes, 0 and 1, a strided view.
FLOATS = [arr((3, 5), F32), arr((7,), F64), arr((0, 3), F32), arr((1, 1), F64), arr((4, 6), F64)[:, ::2]]
INTS = [arr((3, 5), I32), arr((6,), I64)]
BOOLS = [arr((3, 4), bool)]


def close(got, want, path="result"):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), f"{path}: {type(got)} of {len(got)} vs {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            close(g, w, f"{path}[{i}]")
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{path}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{path}: dtype {got.dtype} != {want.dtype}"
    if want.dtype.kind == "f":
        rtol = 2e-5 if want.dtype == np.float32 else 1e-10
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True, err_msg=path)
    else:
        np.testing.assert_array_equal(got, want, err_msg=path)


def check(fn, *args):
    # Each on its own copies: an entry that writes into its argument (x[I]
    # += v, np.add.at) returns it, and must not compare it with itself.
    want = fn(*copy.deepcopy(args))
    f = sj.jit(fn)
    got = f(*copy.deepcopy(args))
    stats = f.stats()
    assert stats["graph_breaks"] == 0 and stats["eager_calls"] == 0, f"not compiled: {stats}\n{f.explain()}"
    assert stats["fallbacks"] == 0, f"compiled, but run on the reference interpreter: {stats}"
    close(got, want)


def unary(name, inputs=None):
    f = getattr(np, name)
    return [(lambda x, f=f: f(x), (x,)) for x in (inputs or FLOATS)]


def binary(name, pairs=None):
    f = getattr(np, name)
    pairs = pairs or [(arr((3, 1, 5), F32), arr((4, 1), F32)), (arr((6,), F64), arr((6,), F64)), (arr((2, 3), F64), 1.5),
                      (arr((0, 4), F32), arr((4,), F32))]
    return [(lambda a, b, f=f: f(a, b), (a, b)) for a, b in pairs]


UNIT = [arr((3, 5), F32, -0.99, 0.99), arr((7,), F64, -0.99, 0.99), arr((0,), F32)]
POS = [arr((3, 5), F32, 0.1, 5), arr((7,), F64, 0.1, 5), arr((1,), F64, 1, 2)]
GE1 = [arr((3, 5), F32, 1, 5), arr((7,), F64, 1, 5)]
INT_PAIRS = [(arr((3, 4), I64), arr((4,), I64)), (arr((5,), I32), arr((5,), I32))]
BOOL_PAIRS = [(arr((3, 4), bool), arr((4,), bool))]
NONZERO = [(a, np.where(b == 0, 1, b)) for a, b in INT_PAIRS]


def reductions(name):
    f = getattr(np, name)
    cases = []
    for x in [arr((3, 5), F32), arr((4, 2, 3), F64), arr((1, 6), F64), arr((5,), I64), arr((2, 3), I32)]:
        cases.append((lambda x, f=f: f(x), (x,)))
        cases.append((lambda x, f=f: f(x, axis=-1), (x,)))
        cases.append((lambda x, f=f: f(x, axis=0, keepdims=True), (x,)))
    return cases


M = arr((4, 6), F64)
M32 = arr((5, 5), F32)
X3 = arr((2, 3, 4), F32)

RECIPES = {}


def recipe(*names):
    def add(f):
        for n in names:
            RECIPES[n] = f
        return f
    return add


