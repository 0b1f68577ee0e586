"""NumPy coverage, measured: every entry shapejit.coverage() marks compiled is
run here, jitted, on shapes with 0 and 1, odd sizes, broadcasts,
non-contiguous views and the dtypes NumPy takes there, and must compile with
no graph break and equal NumPy's own result (values, dtype and shape)."""
import copy
import math
import operator

import numpy as np
import pytest

import shapejit as sj
from shapejit import _coverage

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


# -- elementwise ----------------------------------------------------------------------
for _n, _np in [("abs", "abs"), ("absolute", "absolute"), ("negative", "negative"), ("positive", "positive"),
                ("square", "square"), ("sign", "sign"), ("floor", "floor"), ("ceil", "ceil"), ("trunc", "trunc"),
                ("fix", "fix")]:
    RECIPES[_n] = (lambda name: lambda: unary(name, FLOATS + INTS))(_np)
for _n, _np in [("exp", "exp"), ("sin", "sin"), ("cos", "cos"), ("tan", "tan"), ("tanh", "tanh"), ("sinh", "sinh"),
                ("cosh", "cosh"), ("atan", "atan"), ("arctan", "arctan"), ("asinh", "asinh"), ("arcsinh", "arcsinh"),
                ("expm1", "expm1"), ("exp2", "exp2"), ("cbrt", "cbrt"), ("rint", "rint"), ("fabs", "fabs"),
                ("deg2rad", "deg2rad"), ("rad2deg", "rad2deg"), ("radians", "radians"), ("degrees", "degrees"),
                ("isnan", "isnan"), ("isinf", "isinf"), ("isfinite", "isfinite"), ("signbit", "signbit"),
                ("conj", "conj"), ("conjugate", "conjugate"), ("real", "real"), ("imag", "imag"),
                ("nan_to_num", "nan_to_num"), ("reciprocal", "reciprocal")]:
    RECIPES[_n] = (lambda name: lambda: unary(name))(_np)
for _n, _np, _ins in [("asin", "asin", UNIT), ("arcsin", "arcsin", UNIT), ("acos", "acos", UNIT), ("arccos", "arccos", UNIT),
                      ("atanh", "atanh", UNIT), ("arctanh", "arctanh", UNIT), ("acosh", "acosh", GE1),
                      ("arccosh", "arccosh", GE1), ("log", "log", POS), ("log1p", "log1p", UNIT), ("log2", "log2", POS),
                      ("log10", "log10", POS), ("sqrt", "sqrt", POS)]:
    RECIPES[_n] = (lambda name, ins: lambda: unary(name, ins))(_np, _ins)
for _n in ["add", "subtract", "multiply", "divide", "true_divide", "maximum", "minimum", "fmax", "fmin", "equal",
           "not_equal", "less", "less_equal", "greater", "greater_equal", "atan2", "arctan2", "hypot", "copysign",
           "logaddexp", "logaddexp2", "float_power"]:
    RECIPES[_n] = (lambda name: lambda: binary(name))(_n)
for _n in ["floor_divide", "remainder", "mod"]:
    RECIPES[_n] = (lambda name: lambda: binary(name) + binary(name, NONZERO))(_n)
RECIPES["pow"] = lambda: binary("pow", [(arr((3, 4), F64, 0.1, 3), arr((4,), F64)), (arr((5,), I64), np.abs(arr((5,), I64)))])
RECIPES["power"] = lambda: binary("power", [(arr((3, 4), F32, 0.1, 3), 2.5)])
for _n in ["logical_and", "logical_or", "logical_xor"]:
    RECIPES[_n] = (lambda name: lambda: binary(name, BOOL_PAIRS + [(arr((4,), F64), arr((4,), F64))]))(_n)
RECIPES["logical_not"] = lambda: unary("logical_not", BOOLS + FLOATS[:2])
RECIPES["clip"] = lambda: [(lambda x: np.clip(x, -1, 1.5), (x,)) for x in FLOATS + INTS]
RECIPES["round"] = lambda: [(lambda x: np.round(x), (x,)) for x in FLOATS + INTS] + [(lambda x: np.round(x, 2), (FLOATS[1],)),
                                                                                    (lambda x: np.round(x * 10, -1), (INTS[0],))]
RECIPES["around"] = lambda: [(lambda x: np.around(x, 1), (x,)) for x in FLOATS]
RECIPES["isclose"] = lambda: [(lambda a, b: np.isclose(a, b), (x, x + 1e-9)) for x in FLOATS[:2]] + \
    [(lambda a, b: np.isclose(a, b, equal_nan=True), (np.array([np.nan, 1.0, np.inf]), np.array([np.nan, 1.1, np.inf])))]
RECIPES["where"] = lambda: [(lambda c, a, b: np.where(c, a, b), (arr((3, 4), bool), arr((4,), F32), arr((3, 1), F32))),
                            (lambda a: np.where(a > 0, a, 0.0), (FLOATS[1],))]

# -- creation --------------------------------------------------------------------------
RECIPES["arange"] = lambda: [(lambda x: np.arange(x.shape[0]) * 2, (arr((5,), F64),)),
                             (lambda x: np.arange(1, x.shape[0], 2), (arr((7,), F64),))]
RECIPES["zeros"] = lambda: [(lambda x: np.zeros((x.shape[0], 3)) + x[:, :1], (M,)),
                            (lambda x: np.zeros(x.shape, dtype=np.int32), (M,))]
RECIPES["ones"] = lambda: [(lambda x: np.ones((2, x.shape[1]), np.float32) * x[:2], (M32,))]
RECIPES["empty"] = lambda: [(lambda x: np.empty((x.shape[0],)).shape[0] + x, (arr((3,), F64),))]
RECIPES["full"] = lambda: [(lambda x: np.full((x.shape[0], 2), 7.5), (M,))]
RECIPES["eye"] = lambda: [(lambda x: np.eye(x.shape[0]) @ x, (M,)), (lambda x: np.eye(x.shape[0], x.shape[1], 1), (M,))]
RECIPES["identity"] = lambda: [(lambda x: np.identity(x.shape[0]) * x[0, 0], (M32,))]
RECIPES["tri"] = lambda: [(lambda x: np.tri(x.shape[0]) * x, (M32,)), (lambda x: np.tri(x.shape[0], x.shape[1], -1, dtype=int), (M,))]
RECIPES["linspace"] = lambda: [(lambda x: np.linspace(0, 1, x.shape[0]) + x, (arr((6,), F64),)),
                               (lambda x: np.linspace(-2, 3, x.shape[0], endpoint=False) + x, (arr((5,), F64),)),
                               (lambda x: np.linspace(0, 1, x.shape[0]) + x, (arr((1,), F64),))]
RECIPES["asarray"] = lambda: [(lambda x: np.asarray([x.shape[0], 2 * x.shape[0]]) + x[:2].astype(np.int64), (arr((4,), I64),)),
                              (lambda x: np.asarray(x) * 2, (M,))]
for _n in ["zeros_like", "ones_like", "empty_like"]:
    RECIPES[_n] = (lambda name: lambda: [(lambda x, f=getattr(np, name): f(x).shape[0] + x if name == "empty_like" else f(x) + x,
                                          (x,)) for x in FLOATS[:2]])(_n)
RECIPES["full_like"] = lambda: [(lambda x: np.full_like(x, 3), (x,)) for x in FLOATS[:2] + INTS]
RECIPES["meshgrid"] = lambda: [(lambda a, b: np.meshgrid(a, b), (arr((3,), F64), arr((4,), F64))),
                               (lambda a, b: np.meshgrid(a, b, indexing="ij"), (arr((3,), F64), arr((4,), F64)))]
RECIPES["tril"] = lambda: [(lambda x: np.tril(x), (M,)), (lambda x: np.tril(x, -1), (X3,)), (lambda x: np.tril(x, 2), (M32,))]
RECIPES["triu"] = lambda: [(lambda x: np.triu(x), (M,)), (lambda x: np.triu(x, 1), (X3,))]
RECIPES["astype"] = lambda: [(lambda x: np.astype(x, np.int32), (M,)), (lambda x: x.astype(np.float32), (INTS[0],))]

# -- indexing, linear algebra ----------------------------------------------------------------
RECIPES["take"] = lambda: [(lambda x, i: np.take(x, i, axis=1), (M, np.array([0, 5, 2]))), (lambda x, i: np.take(x, i), (M, np.array([3, 0])))]
RECIPES["take_along_axis"] = lambda: [(lambda x, i: np.take_along_axis(x, i, axis=1), (M, np.array([[0], [5], [2], [-1]]))),
                                      (lambda x, i: np.take_along_axis(x, i, axis=0), (X3, np.zeros((1, 3, 4), np.int64)))]
RECIPES["matmul"] = lambda: [(lambda a, b: np.matmul(a, b), (arr((2, 3, 4), F32), arr((4, 5), F32))), (lambda a, b: a @ b, (M, M.T))]
RECIPES["dot"] = lambda: [(lambda a, b: np.dot(a, b), (M, M.T)), (lambda a, b: np.dot(a, b), (arr((4,), F64), arr((4,), F64)))]
RECIPES["matrix_transpose"] = lambda: [(lambda x: np.matrix_transpose(x), (X3,))]
RECIPES["permute_dims"] = lambda: [(lambda x: np.permute_dims(x, (2, 0, 1)), (X3,))]
RECIPES["tensordot"] = lambda: [(lambda a, b: np.tensordot(a, b), (arr((2, 3, 4), F64), arr((3, 4, 5), F64))),
                                (lambda a, b: np.tensordot(a, b, axes=([0], [1])), (arr((3, 2), F64), arr((4, 3), F64)))]
RECIPES["vecdot"] = lambda: [(lambda a, b: np.vecdot(a, b), (arr((3, 4), F64), arr((4,), F64)))]
RECIPES["outer"] = lambda: [(lambda a, b: np.outer(a, b), (arr((3,), F32), arr((2, 2), F32)))]
RECIPES["inner"] = lambda: [(lambda a, b: np.inner(a, b), (arr((3, 4), F64), arr((2, 4), F64)))]
RECIPES["vdot"] = lambda: [(lambda a, b: np.vdot(a, b), (M, M))]
RECIPES["einsum"] = lambda: [(lambda a, b: np.einsum("ij,jk->ik", a, b), (M, M.T)),
                             (lambda a, b: np.einsum("bhqd,bhkd->bhqk", a, b), (arr((2, 3, 4, 5), F32), arr((2, 3, 6, 5), F32))),
                             (lambda a: np.einsum("ij->j", a), (M,)), (lambda a, b: np.einsum("i,i", a, b), (arr((5,), F64), arr((5,), F64))),
                             (lambda a, b: np.einsum("ij,kj->ikj", a, b), (arr((2, 3), F64), arr((4, 3), F64)))]
RECIPES["linalg.norm"] = lambda: [(lambda x: np.linalg.norm(x), (M,)), (lambda x: np.linalg.norm(x, axis=-1), (M,)),
                                  (lambda x: np.linalg.norm(x, ord=1, axis=0), (M,)), (lambda x: np.linalg.norm(x, np.inf), (arr((5,), F64),))]

# -- manipulation ---------------------------------------------------------------------------------
RECIPES["broadcast_arrays"] = lambda: [(lambda a, b: np.broadcast_arrays(a, b), (arr((3, 1), F64), arr((4,), F64)))]
RECIPES["broadcast_to"] = lambda: [(lambda a: np.broadcast_to(a, (2, 3, 4)), (arr((3, 1), F64),))]
for _n in ["concat", "concatenate"]:
    RECIPES[_n] = (lambda name: lambda: [(lambda a, b, f=getattr(np, name): f([a, b], axis=1), (M, M[:, :2])),
                                         (lambda a, b, f=getattr(np, name): f((a, b)), (arr((2,), F64), arr((3,), I64)))])(_n)
RECIPES["stack"] = lambda: [(lambda a, b: np.stack([a, b], axis=-1), (M, M))]
RECIPES["unstack"] = lambda: [(lambda a: np.unstack(a, axis=1), (arr((2, 3), F64),))]
RECIPES["expand_dims"] = lambda: [(lambda a: np.expand_dims(a, (0, 2)), (M,))]
RECIPES["squeeze"] = lambda: [(lambda a: np.squeeze(a, 1), (arr((3, 1, 2), F64),))]
RECIPES["reshape"] = lambda: [(lambda a: np.reshape(a, (-1, 2)), (M,)), (lambda a: a.reshape(a.shape[1], -1), (M,))]
RECIPES["flip"] = lambda: [(lambda a: np.flip(a), (M,)), (lambda a: np.flip(a, 1), (X3,)), (lambda a: np.flip(a), (arr((0,), F64),))]
RECIPES["fliplr"] = lambda: [(lambda a: np.fliplr(a), (M,))]
RECIPES["flipud"] = lambda: [(lambda a: np.flipud(a), (M,))]
RECIPES["moveaxis"] = lambda: [(lambda a: np.moveaxis(a, 0, -1), (X3,)), (lambda a: np.moveaxis(a, [0, 1], [-1, -2]), (X3,))]
RECIPES["rollaxis"] = lambda: [(lambda a: np.rollaxis(a, 2), (X3,))]
RECIPES["swapaxes"] = lambda: [(lambda a: np.swapaxes(a, 0, 2), (X3,))]
RECIPES["transpose"] = lambda: [(lambda a: np.transpose(a), (X3,)), (lambda a: np.transpose(a, (1, 0, 2)), (X3,))]
RECIPES["ravel"] = lambda: [(lambda a: np.ravel(a), (M[:, ::2],))]
RECIPES["repeat"] = lambda: [(lambda a: np.repeat(a, 3), (arr((2, 2), F64),)), (lambda a: np.repeat(a, 2, axis=1), (M,))]
RECIPES["roll"] = lambda: [(lambda a: np.roll(a, 2), (M,)), (lambda a: np.roll(a, -1, axis=0), (M,)),
                           (lambda a: np.roll(a, (1, 2), axis=(0, 1)), (M,))]
RECIPES["tile"] = lambda: [(lambda a: np.tile(a, 2), (arr((3,), F64),)), (lambda a: np.tile(a, (2, 1, 3)), (M,))]
RECIPES["pad"] = lambda: [(lambda a: np.pad(a, 1), (M,)), (lambda a: np.pad(a, ((0, 2), (1, 0)), constant_values=-1.0), (M,)),
                          (lambda a: np.pad(a, 2, mode="edge"), (arr((4,), F64),))]
for _n in ["split", "array_split"]:
    RECIPES[_n] = (lambda name: lambda: [(lambda a, f=getattr(np, name): f(a, 2, axis=1), (M,)),
                                         (lambda a, f=getattr(np, name): f(a, [1, 3]), (M,))])(_n)
RECIPES["array_split"] = lambda: [(lambda a: np.array_split(a, 4, axis=1), (M,)), (lambda a: np.array_split(a, [2]), (M,))]
RECIPES["hsplit"] = lambda: [(lambda a: np.hsplit(a, 3), (M,))]
RECIPES["vsplit"] = lambda: [(lambda a: np.vsplit(a, 2), (M,))]
RECIPES["dsplit"] = lambda: [(lambda a: np.dsplit(a, 2), (X3,))]
RECIPES["hstack"] = lambda: [(lambda a, b: np.hstack([a, b]), (M, M)), (lambda a, b: np.hstack((a, b)), (arr((2,), F64), arr((3,), F64)))]
RECIPES["vstack"] = lambda: [(lambda a, b: np.vstack([a, b]), (arr((4,), F64), M[:, :4].T))]
RECIPES["dstack"] = lambda: [(lambda a, b: np.dstack([a, b]), (M, M))]
RECIPES["column_stack"] = lambda: [(lambda a, b: np.column_stack([a, b]), (arr((4,), F64), M))]
for _n in ["atleast_1d", "atleast_2d", "atleast_3d"]:
    RECIPES[_n] = (lambda name: lambda: [(lambda a, f=getattr(np, name): f(a), (x,)) for x in (arr((3,), F64), M, X3)])(_n)
RECIPES["diag"] = lambda: [(lambda a: np.diag(a), (M,)), (lambda a: np.diag(a, 1), (M,)), (lambda a: np.diag(a), (arr((3,), F64),)),
                           (lambda a: np.diag(a, -1), (arr((3,), F64),)), (lambda a: np.diag(a, 2), (arr((2,), F64),))]
RECIPES["diagonal"] = lambda: [(lambda a: np.diagonal(a), (M,)), (lambda a: np.diagonal(a, -1, 1, 2), (X3,))]
RECIPES["trace"] = lambda: [(lambda a: np.trace(a), (M,)), (lambda a: np.trace(a, 1), (M32,))]
RECIPES["diff"] = lambda: [(lambda a: np.diff(a), (M,)), (lambda a: np.diff(a, 2, axis=0), (M,)), (lambda a: np.diff(a), (INTS[1],))]

# -- searching, statistics ------------------------------------------------------------------------
for _n in ["argmax", "argmin"]:
    RECIPES[_n] = (lambda name: lambda: [(lambda a, f=getattr(np, name): f(a), (x,)) for x in (M, INTS[0])] +
                   [(lambda a, f=getattr(np, name): f(a, axis=1), (M,))])(_n)
for _n in ["sum", "mean", "max", "min", "amax", "amin", "std", "var", "ptp", "nansum", "nanmax", "nanmin", "nanmean", "prod"]:
    RECIPES[_n] = (lambda name: lambda: reductions(name))(_n)
RECIPES["var"] = lambda: reductions("var") + [(lambda x: np.var(x, ddof=1), (M,))]
RECIPES["std"] = lambda: reductions("std") + [(lambda x: np.std(x, axis=0, ddof=1), (M,))]
RECIPES["nansum"] = lambda: reductions("nansum") + [(lambda x: np.nansum(x), (np.array([1.0, np.nan, 2.0]),))]
RECIPES["nanmean"] = lambda: [(lambda x: np.nanmean(x, axis=0), (np.array([[1.0, np.nan], [3.0, 4.0]]),))]
NAN_ROWS = np.array([[np.nan, np.nan, np.nan], [1.0, np.nan, -2.0], [np.inf, 3.0, np.nan]])  # an all-NaN slice is NaN
for _n in ["nanmax", "nanmin"]:
    RECIPES[_n] = (lambda name: lambda: reductions(name) + [(lambda x, f=getattr(np, name): f(x, axis=1), (NAN_ROWS,)),
                                                           (lambda x, f=getattr(np, name): f(x[:1]), (NAN_ROWS,)),
                                                           (lambda x, f=getattr(np, name): f(x, axis=0, keepdims=True), (NAN_ROWS,))])(_n)
for _n in ["all", "any"]:
    RECIPES[_n] = (lambda name: lambda: reductions(name) + [(lambda x, f=getattr(np, name): f(x, axis=1), (arr((3, 4), bool),)),
                                                           (lambda x, f=getattr(np, name): f(x), (arr((0,), F64),))])(_n)
SCAN_INPUTS = [arr((3, 5), F32, 0.5, 1.5), arr((4, 2, 3), F64, 0.5, 1.5), arr((6,), I32), arr((2, 3), I64), arr((0, 2), F64),
               arr((3, 4), bool), arr((4, 6), F64, 0.5, 1.5)[:, ::2]]
for _n in ["cumsum", "cumprod"]:
    RECIPES[_n] = (lambda name: lambda: [(lambda x, f=getattr(np, name): f(x), (x,)) for x in SCAN_INPUTS] +
                   [(lambda x, f=getattr(np, name): f(x, axis=-1), (x,)) for x in SCAN_INPUTS[:2]] +
                   [(lambda x, f=getattr(np, name): f(x * 2 + 1, axis=0), (SCAN_INPUTS[1],))])(_n)
    RECIPES[f"x.{_n}"] = (lambda name: lambda: [(lambda x, m=name: getattr(x, m)(axis=1), (x,)) for x in SCAN_INPUTS[:2]])(_n)
RECIPES["cumulative_sum"] = lambda: [(lambda x: np.cumulative_sum(x, axis=1), (SCAN_INPUTS[0],)),
                                     (lambda x: np.cumulative_sum(x, include_initial=True), (SCAN_INPUTS[2],)),
                                     (lambda x: np.cumulative_sum(x, axis=0, include_initial=True), (SCAN_INPUTS[3],))]
def _with_nan(x):
    x = x.copy()
    x.flat[1] = np.nan
    return x


SORT_INPUTS = [_with_nan(arr((3, 5), F32)), arr((7,), F64), arr((0, 3), F32), arr((1, 1), F64), arr((4, 6), F64)[:, ::2]]
RECIPES["sort"] = lambda: ([(lambda x: np.sort(x), (x,)) for x in SORT_INPUTS + INTS + BOOLS] +
                           [(lambda x: np.sort(x, axis=0), (SORT_INPUTS[0],)), (lambda x: np.sort(x, axis=None), (SORT_INPUTS[4],))])
RECIPES["argsort"] = lambda: ([(lambda x: np.argsort(x), (x,)) for x in SORT_INPUTS] +  # no ties: NumPy's default kind agrees
                              [(lambda x: np.argsort(x, axis=0, kind="stable"), (x,)) for x in INTS + BOOLS] +
                              [(lambda x: np.argsort(x, axis=None), (SORT_INPUTS[0],))])
RECIPES["x.sort"] = lambda: [(lambda x: (lambda y: (y.sort(axis=a), y)[1])(x.copy()), (x,)) for x in SORT_INPUTS[:2] for a in (0, -1)
                             if a < x.ndim]
RECIPES["x.argsort"] = lambda: [(lambda x: x.argsort(), (SORT_INPUTS[0],)), (lambda x: x.argsort(axis=0, kind="stable"), (INTS[0],))]
RECIPES["median"] = lambda: ([(lambda x: np.median(x), (x,)) for x in [SORT_INPUTS[0], SORT_INPUTS[1], SORT_INPUTS[4], *INTS]] +
                             [(lambda x: np.median(x, axis=1), (x,)) for x in [SORT_INPUTS[0], SORT_INPUTS[4], INTS[0]]] +
                             [(lambda x: np.median(x, axis=0, keepdims=True), (SORT_INPUTS[3],)),
                              (lambda x: np.median(x, keepdims=True), (SORT_INPUTS[4],))])
RECIPES["searchsorted"] = lambda: [(lambda a, v: np.searchsorted(np.sort(a), v), (_with_nan(arr((9,), F64)), _with_nan(arr((2, 3), F64)))),
                                   (lambda a, v: np.searchsorted(a, v, side="right"), (np.sort(INTS[1]), INTS[0])),
                                   (lambda a: np.searchsorted(a, 0.5), (np.sort(arr((6,), F32)),))]
RECIPES["x[i] = v"] = lambda: [(lambda x: (lambda y: (y.__setitem__(1, 7.0), y)[1])(x.copy()), (A,)),
                               (lambda x, v: (lambda y: (y.__setitem__(np.s_[:, 1:3], v), y)[1])(x.copy()), (A, arr((2,), F32)))]
RECIPES["x[mask] = v"] = lambda: [(lambda x: (lambda y: (y.__setitem__(y < 0, 0.0), y)[1])(x.copy()), (A,))]
RECIPES["count_nonzero"] = lambda: [(lambda x: np.count_nonzero(x > 0), (M,)), (lambda x: np.count_nonzero(x, axis=0), (INTS[0],))]
RECIPES["average"] = lambda: [(lambda x: np.average(x), (M,)), (lambda x, w: np.average(x, axis=1, weights=w), (M, arr((6,), F64, 0.1, 1)))]

# -- the ndarray ------------------------------------------------------------------------------------
A, B = arr((3, 4), F64), arr((4,), F64, 0.5, 2)
AI, BI = arr((3, 4), I64), np.abs(arr((4,), I64)) + 1
OPS = {"x + y": operator.add, "x - y": operator.sub, "x * y": operator.mul, "x / y": operator.truediv,
       "x // y": operator.floordiv, "x % y": operator.mod, "x ** y": operator.pow, "x == y": operator.eq,
       "x != y": operator.ne, "x < y": operator.lt, "x <= y": operator.le, "x > y": operator.gt, "x >= y": operator.ge}
for _n, _op in OPS.items():
    RECIPES[_n] = (lambda op: lambda: [(lambda x, y, op=op: op(x, y), (A, B)), (lambda x, y, op=op: op(x, y), (AI, BI)),
                                       (lambda x, op=op: op(x, 2), (A,))])(_op)
RECIPES["x @ y"] = lambda: [(lambda x, y: x @ y, (A, A.T))]
RECIPES["-x"] = lambda: [(lambda x: -x, (x,)) for x in (A, AI)]
RECIPES["+x"] = lambda: [(lambda x: +x, (A,))]
RECIPES["abs(x)"] = lambda: [(lambda x: abs(x), (x,)) for x in (A, AI)]
RECIPES["~x"] = lambda: [(lambda x: ~x, (x,)) for x in (arr((5,), bool), AI)]
for _n, _op in [("x & y", operator.and_), ("x | y", operator.or_), ("x ^ y", operator.xor)]:
    RECIPES[_n] = (lambda op: lambda: [(lambda x, y, op=op: op(x, y), BOOL_PAIRS[0]), (lambda x, op=op: op(x > 0, x < 1), (A,)),
                                       (lambda x, y, op=op: op(x, y), INT_PAIRS[0]), (lambda x, y, op=op: op(x, y), INT_PAIRS[1])])(_op)
SHIFTS = [(arr((3, 4), I64), np.array([0, 3, 63, 64])), (np.array([-8, 5, 1], np.int32), np.array([2, 40, -1], np.int32))]
RECIPES["x << y"] = lambda: [(lambda x, y: x << y, p) for p in SHIFTS]
RECIPES["x >> y"] = lambda: [(lambda x, y: x >> y, p) for p in SHIFTS]
for _n in ["bitwise_and", "bitwise_or", "bitwise_xor"]:
    RECIPES[_n] = (lambda name: lambda: binary(name, INT_PAIRS + BOOL_PAIRS))(_n)
RECIPES["bitwise_left_shift"] = lambda: binary("bitwise_left_shift", SHIFTS)
RECIPES["bitwise_right_shift"] = lambda: binary("bitwise_right_shift", SHIFTS)
RECIPES["bitwise_invert"] = lambda: unary("bitwise_invert", INTS + BOOLS)
RECIPES["x[i]"] = lambda: [(lambda x: x[1], (A,)), (lambda x: x[-1, 2], (A,))]
RECIPES["x[a:b]"] = lambda: [(lambda x: x[1:3], (A,)), (lambda x: x[:, 1::2], (A,)), (lambda x: x[-3:-1], (arr((5,), F64),))]
RECIPES["x[::-1]"] = lambda: [(lambda x: x[::-1], (A,)), (lambda x: x[:, ::-2], (A,)), (lambda x: x[3:0:-1], (arr((5,), F64),)),
                              (lambda x: x[-2::-1], (arr((5,), F64),)), (lambda x: x[:-7:-1], (arr((5,), F64),))]
RECIPES["x[None]"] = lambda: [(lambda x: x[None, :, None], (A,))]
RECIPES["x[...]"] = lambda: [(lambda x: x[..., 1], (X3,))]
RECIPES["x[int_array]"] = lambda: [(lambda x, i: x[i], (A, np.array([2, 0]))), (lambda x: x[[0, 2]], (A,)),
                                   (lambda x, i: x[:, i], (A, np.array([3, 1])))]
RECIPES["x[bool_mask]"] = lambda: [(lambda x: x[x > 0], (A,)), (lambda x: x[x[:, 0] > 0], (A,)), (lambda x: x[x[:, 0] > 9], (A,))]
RECIPES["x[range]"] = lambda: [(lambda x: x[range(2)], (A,)), (lambda x: x[range(x.shape[0] - 1)], (A,)), (lambda x: x[:, range(1, 4, 2)], (A,))]
RECIPES["x.T"] = lambda: [(lambda x: x.T, (A,))]
RECIPES["x.shape"] = lambda: [(lambda x: x.reshape(x.shape[1], x.shape[0]), (A,))]
RECIPES["x.ndim"] = lambda: [(lambda x: x * x.ndim, (A,))]
RECIPES["x.size"] = lambda: [(lambda x: x / x.size, (A,))]
RECIPES["x.dtype"] = lambda: [(lambda x: x.astype(x.dtype) + 1, (A,))]
RECIPES["len(x)"] = lambda: [(lambda x: x * len(x), (A,))]
RECIPES["x.reshape"] = lambda: [(lambda x: x.reshape(2, -1), (A,)), (lambda x: x.reshape((4, 3)), (A,))]
RECIPES["x.transpose"] = lambda: [(lambda x: x.transpose(1, 0, 2), (X3,))]
RECIPES["x.swapaxes"] = lambda: [(lambda x: x.swapaxes(0, 1), (A,))]
RECIPES["x.squeeze"] = lambda: [(lambda x: x.squeeze(), (arr((1, 3, 1), F64),))]
RECIPES["x.flatten"] = lambda: [(lambda x: x.flatten(), (A,))]
RECIPES["x.ravel"] = lambda: [(lambda x: x.ravel(), (A,))]
RECIPES["x.astype"] = lambda: [(lambda x: x.astype(np.int32), (A,))]
RECIPES["x.copy"] = lambda: [(lambda x: x.copy() + 1, (A,))]
for _m in ["sum", "mean", "max", "min", "var", "std", "any", "all", "prod"]:
    RECIPES[f"x.{_m}"] = (lambda m: lambda: [(lambda x, m=m: getattr(x, m)(), (A,)), (lambda x, m=m: getattr(x, m)(axis=0), (A,)),
                                             (lambda x, m=m: getattr(x, m)(axis=1, keepdims=True), (AI,))])(_m)
for _m in ["argmax", "argmin"]:
    RECIPES[f"x.{_m}"] = (lambda m: lambda: [(lambda x, m=m: getattr(x, m)(), (A,)), (lambda x, m=m: getattr(x, m)(axis=1), (A,))])(_m)
RECIPES["x.clip"] = lambda: [(lambda x: x.clip(-1, 1), (A,))]
RECIPES["x.round"] = lambda: [(lambda x: x.round(1), (A,)), (lambda x: (x * 2.5).round(), (A,))]
RECIPES["x.repeat"] = lambda: [(lambda x: x.repeat(2, axis=0), (A,))]
RECIPES["x.take"] = lambda: [(lambda x, i: x.take(i, axis=1), (A, np.array([1, 3])))]
RECIPES["x.dot"] = lambda: [(lambda x, y: x.dot(y), (A, B))]
RECIPES["x.diagonal"] = lambda: [(lambda x: x.diagonal(), (A,))]
RECIPES["x.trace"] = lambda: [(lambda x: x.trace(), (A,))]
RECIPES["convolve"] = lambda: [(lambda x: np.convolve(x[0], x[1, :3]), (A,)), (lambda x: np.convolve(x[0], x[1, :2], "same"), (A,)),
                               (lambda x: np.convolve(x[0], x[1], mode="valid"), (A,))]


def _diagonal_filled(x):
    y = x.copy()
    np.fill_diagonal(y, 0.5)
    return y


RECIPES["fill_diagonal"] = lambda: [(_diagonal_filled, (A,))]
RECIPES["x.nonzero"] = lambda: [(lambda x: (x > 0).nonzero(), (A,))]
RECIPES["x.mT"] = lambda: [(lambda x: x.mT @ x, (A,)), (lambda x: x[None].mT + 1, (A,))]
RECIPES["x.conj"] = lambda: [(lambda x: x.conj() * x.real + x.imag, (A,))]
RECIPES["x.searchsorted"] = lambda: [(lambda x: np.sort(x[0]).searchsorted(x[1]), (A,))]


def _filled(x):
    y = x.copy()
    y.fill(2.5)
    return y * x


RECIPES["x.fill"] = lambda: [(_filled, (A,))]

# Data-dependent shapes: the result's size is the mask's count.
RECIPES["nonzero"] = lambda: [(lambda x: np.nonzero(x > 0), (A,)), (lambda x: np.nonzero(x), (AI,))]
RECIPES["argwhere"] = lambda: [(lambda x: np.argwhere(x > 0), (A,))]
RECIPES["extract"] = lambda: [(lambda x: np.extract(x > 0, x), (A,)), (lambda x: np.extract(x[0] > 0, x), (A,))]
RECIPES["compress"] = lambda: [(lambda x: np.compress(x[:, 0] > 0, x, axis=0), (A,)), (lambda x: np.compress(x[0] > 0, x), (A,)),
                               (lambda x: np.compress(x[0] > 0, x, axis=1), (A,))]
RECIPES["flatnonzero"] = lambda: [(lambda x: np.flatnonzero(x > 0), (A,))]


# -- the scientific list (shapejit.coverage()["scientific"]) and the ndarray's
# in-place operators: NumPy's own answers on empty, one-element, strided and
# integer inputs, NaNs and infinities where a function treats them apart.
ODD = np.array([-3.5, -0.0, 0.0, 2.25, np.inf, -np.inf, np.nan])
NANS = np.array([[np.nan, 1.0, 2.0], [np.nan, np.nan, np.nan], [3.0, np.nan, -1.0]])
SQ = arr((3, 3), F64)
IA, IB = arr((6,), I32), np.array([2, -2, 3, 1, 5, -1], np.int32)
VEC3 = arr((4, 3), F64)
XP, FP = np.array([0.0, 1.0, 2.5, 4.0]), np.array([1.0, 3.0, 2.0, 0.0])
XI = np.array([-1.0, 0.0, 0.5, 1.0, 2.5, 3.0, 4.0, 5.0, np.nan])
for _n, _cases in {
    "fmod": [(lambda a: np.fmod(a, 1.5), (ODD,)), (lambda a, b: np.fmod(a, b), (IA, IB)), (lambda a: np.fmod(a, -2), (INTS[1],))],
    "divmod": [(lambda a, b: np.divmod(a, b), (IA, IB)), (lambda a: np.divmod(a, 2.0), (ODD,))],
    "modf": [(lambda a: np.modf(a), (ODD,)), (lambda a: np.modf(a), (IA,)), (lambda a: np.modf(a), (FLOATS[2],))],
    "heaviside": [(lambda a: np.heaviside(a, 0.5), (ODD,)), (lambda a: np.heaviside(a, 0.5), (IA,))],
    "ldexp": [(lambda a, e: np.ldexp(a, e), (np.array([1.0, 3.0, 1e-300, 5.0]), np.array([2, -3, 1100, 0]))),
              (lambda a, e: np.ldexp(a, e), (arr((3,), F32), np.array([1, 2, 3], np.int32)))],
    "sinc": [(lambda a: np.sinc(a), (np.array([0.0, 0.5, -1.25, 3.0]),)), (lambda a: np.sinc(a), (FLOATS[0],))],
    "isneginf": [(lambda a: np.isneginf(a), (ODD,)), (lambda a: np.isneginf(a), (IA,))],
    "isposinf": [(lambda a: np.isposinf(a), (ODD,)), (lambda a: np.isposinf(a), (IA,))],
    "isreal": [(lambda a: np.isreal(a), (ODD,))], "iscomplex": [(lambda a: np.iscomplex(a), (IA,))],
    "isrealobj": [(lambda a: a * np.isrealobj(a), (ODD,))], "iscomplexobj": [(lambda a: a + np.iscomplexobj(a), (IA,))],
    "angle": [(lambda a: np.angle(a), (ODD,)), (lambda a: np.angle(a, deg=True), (IA,)), (lambda a: np.angle(a), (FLOATS[0],))],
    "bitwise_not": [(lambda a: np.bitwise_not(a), (IA,)), (lambda a: np.bitwise_not(a), (BOOLS[0],))],
    "invert": [(lambda a: np.invert(a), (INTS[1],))],
    "left_shift": [(lambda a: np.left_shift(a, 3), (IA,)), (lambda a, b: np.left_shift(a, np.abs(b)), (IA, IB))],
    "right_shift": [(lambda a: np.right_shift(a, 1), (IA,))],
    "append": [(lambda a: np.append(a, [1.0, 2.0]), (M,)), (lambda a: np.append(a, a[:1], axis=0), (M,)), (lambda a: np.append(a, a), (FLOATS[2],))],
    "insert": [(lambda a: np.insert(a, 2, 7.5), (M,)), (lambda a: np.insert(a, 1, 9, axis=1), (M,)), (lambda a: np.insert(a, -1, 0), (IA,)),
               (lambda a: np.insert(a, 3, a[0], axis=0), (M,))],
    "delete": [(lambda a: np.delete(a, 3), (M,)), (lambda a: np.delete(a, -1, axis=1), (M,))],
    "resize": [(lambda a: np.resize(a, (5, 3)), (M,)), (lambda a: np.resize(a, (2, 2)), (FLOATS[2],)), (lambda a: np.resize(a, (0,)), (M,))],
    "rot90": [(lambda a, k=k: np.rot90(a, k), (M,)) for k in range(-1, 5)] + [(lambda a: np.rot90(a[None], 1, axes=(1, 2)), (M,))],
    "block": [(lambda a: np.block([[a, a], [a, a]]), (M,)), (lambda a: np.block([a[0], a[1]]), (M,)), (lambda a: np.block([[a, a[:, :1]]]), (M,))],
    "kron": [(lambda a: np.kron(a[:2, :2], a[:2, :3]), (M,)), (lambda a: np.kron(a[0], a[1]), (M,)), (lambda a, i: np.kron(a[0], i), (M, IA))],
    "ediff1d": [(lambda a: np.ediff1d(a), (M,)), (lambda a: np.ediff1d(a, to_end=[1, 2], to_begin=-1), (M,)), (lambda a: np.ediff1d(a), (IA,))],
    "diagflat": [(lambda a: np.diagflat(a[:2, :2], 1), (M,)), (lambda a: np.diagflat(a, -1), (IA,))],
    "indices": [(lambda a: np.indices(a.shape), (M,)), (lambda a: np.indices(a.shape, sparse=True), (M,))],
    "ix_": [(lambda a: a[np.ix_([0, 2], [1, 3])], (M,)), (lambda a, b: np.ix_(b[0], [1, 0]), (M, BOOLS[0]))],
    "tril_indices": [(lambda a: a[np.tril_indices(a.shape[0])], (SQ,)), (lambda a: np.tril_indices(a.shape[0], -1, a.shape[1]), (M,))],
    "triu_indices": [(lambda a: np.triu_indices(a.shape[0], 1, a.shape[1]), (M,))],
    "diag_indices": [(lambda a: a[np.diag_indices(a.shape[0])], (SQ,))],
    "tril_indices_from": [(lambda a: a[np.tril_indices_from(a, 1)], (M,))], "triu_indices_from": [(lambda a: np.triu_indices_from(a), (M,))],
    "diag_indices_from": [(lambda a: np.diag_indices_from(a), (SQ,))],
    "size": [(lambda a: a.reshape(-1)[: np.size(a) - 3] * np.size(a, 1), (M,))],
    "select": [(lambda a: np.select([a > 1, a < -1], [a * 2, -a], 0), (M,)), (lambda a: np.select([a > 0], [a]), (M32,)),
               (lambda i: np.select([i > 2], [i], default=0.5), (IA,))],
    "isin": [(lambda a: np.isin(np.round(a), [1.0, 2.0, -1.0]), (M,)), (lambda a, i: np.isin(a, i, invert=True), (IA, IB)),
             (lambda a: np.isin(a, a[::-1]), (ODD,))],
    "copyto": [(lambda a, b: (np.copyto(a, b), a)[1], (M.copy(), arr((6,), F64))), (lambda a, b: (np.copyto(a, b, where=b > 0), a)[1], (M.copy(), M * 2)),
               (lambda a, b: (np.copyto(a, b, casting="unsafe"), a)[1], (IA.copy(), arr((6,), F64)))],
    "copy": [(lambda a: np.copy(a) + 1, (x,)) for x in FLOATS], "asanyarray": [(lambda a: np.asanyarray(a) * 2, (M,))],
    "ascontiguousarray": [(lambda a: np.ascontiguousarray(a.T) * 2, (M,)), (lambda a: np.ascontiguousarray(a.sum()), (M,))],
    "asfortranarray": [(lambda a: np.asfortranarray(a) * 2, (M,)), (lambda a: np.asfortranarray(a.sum()), (M,))],
    "geomspace": [(lambda a: np.geomspace(1, 1000, a.shape[0]) * a[:, 0], (M,)), (lambda a: np.geomspace(-2, -0.5, a.shape[1], endpoint=False) + a, (M,)),
                  (lambda a: np.geomspace(3.0, 3.0, a.shape[0] - a.shape[0] + 1) * a, (M,))],
    "logspace": [(lambda a: np.logspace(0, 2, a.shape[0]) * a[:, 0], (M,)), (lambda a: np.logspace(1, 3, a.shape[1], base=2.0, endpoint=False) + a, (M,))],
    "nanprod": [(lambda a: np.nanprod(a), (NANS,)), (lambda a: np.nanprod(a, axis=1), (NANS,)), (lambda a: np.nanprod(a, axis=0), (INTS[0],))],
    "nancumsum": [(lambda a: np.nancumsum(a), (NANS,)), (lambda a: np.nancumsum(a, axis=1), (NANS,))],
    "nancumprod": [(lambda a: np.nancumprod(a, axis=0), (NANS,)), (lambda a: np.nancumprod(a), (IA,))],
    "nanvar": [(lambda a: np.nanvar(a, axis=1), (NANS,)), (lambda a: np.nanvar(a, axis=1, ddof=1), (NANS,)), (lambda a: np.nanvar(a, axis=0), (M32,))],
    "nanstd": [(lambda a: np.nanstd(a), (NANS,)), (lambda a: np.nanstd(a, axis=0, keepdims=True), (NANS,))],
    "nanmedian": [(lambda a: np.nanmedian(a, axis=1), (NANS,)), (lambda a: np.nanmedian(a), (NANS,)), (lambda a: np.nanmedian(a, axis=0), (M,)),
                  (lambda a: np.nanmedian(a, axis=0, keepdims=True), (NANS,)), (lambda a: np.nanmedian(a), (IA,))],
    "quantile": [(lambda a, q=q: np.quantile(a, q), (M,)) for q in (0.3, 0.5, 1.0, 0.0, [0.1, 0.9])] +
                [(lambda a: np.quantile(a, 0.3, axis=1), (M32,)), (lambda a: np.quantile(a, 0.5, axis=1), (NANS,)),
                 (lambda a: np.quantile(a, [0.3], axis=0, keepdims=True), (M,)), (lambda a: np.quantile(a, 0.3), (IA,))],
    "percentile": [(lambda a: np.percentile(a, [25, 50, 75], axis=0), (M,)), (lambda a: np.percentile(a, 40), (M32,))],
    "nanquantile": [(lambda a, q=q: np.nanquantile(a, q, axis=1), (NANS.astype(F32),)) for q in (0.3, [0.3, 0.6], 0.0, 1.0)] +
                   [(lambda a: np.nanquantile(a, 0.3), (NANS,))],
    "nanpercentile": [(lambda a: np.nanpercentile(a, 30), (NANS,)), (lambda a: np.nanpercentile(a, [30, 90], axis=0, keepdims=True), (NANS,))],
    "cov": [(lambda a: np.cov(a), (M,)), (lambda a: np.cov(a, rowvar=False), (M32,)), (lambda a: np.cov(a[0]), (M,)),
            (lambda a: np.cov(a[0], a[1]), (M,)), (lambda a: np.cov(a, bias=True), (M,)), (lambda i: np.cov(i), (IA,))],
    "corrcoef": [(lambda a: np.corrcoef(a), (M,)), (lambda a: np.corrcoef(a[0]), (M,)), (lambda a: np.corrcoef(a[0], a[1]), (M,))],
    "trapezoid": [(lambda a: np.trapezoid(a), (M,)), (lambda a: np.trapezoid(a, a[0], axis=1), (M,)), (lambda a: np.trapezoid(a, dx=0.5, axis=0), (M32,))],
    "cross": [(lambda a, b: np.cross(a, b), (VEC3, VEC3[::-1])), (lambda a: np.cross(a[:3].T, a[1:].T, axis=0), (VEC3,))],
    "polyval": [(lambda p, x: np.polyval(p, x), (np.array([1.0, -2.0, 3.0]), M)), (lambda p, x: np.polyval(p, x), (np.array([2, 1]), IA)),
                (lambda x: np.polyval([1, 2, 3], x), (M32,))],
    "polyder": [(lambda p: np.polyder(p), (M[0],)), (lambda p: np.polyder(p, 2), (IA,)), (lambda p: np.polyder(p, 0), (M[0],))],
    "polyadd": [(lambda a, b: np.polyadd(a, b), (M[0], M[1, :2])), (lambda a, b: np.polyadd(a, b), (IA, IB))],
    "polysub": [(lambda a, b: np.polysub(a[:2], b), (M[0], M[1]))],
    "correlate": [(lambda a, v: np.correlate(a, v), (M[0], M[1, :3])), (lambda a, v: np.correlate(a, v, "full"), (M[0, :2], M[1])),
                  (lambda a, v: np.correlate(a, v, "same"), (M[0], M[1, :2]))],
    "interp": [(lambda x, a, b: np.interp(x, a, b), (XI, XP, FP)), (lambda x, a, b: np.interp(x, a, b, left=-9, right=9), (XI, XP, FP)),
               (lambda x, a, b: np.interp(x, a[:1], b[:1]), (XI, XP, FP)), (lambda x, a, b: np.interp(x, a, b), (XI, XP, np.array([1.0, np.inf, 2.0, 0.0]))),
               (lambda x, a, b: np.interp(x, a, b), (XI.astype(F32), XP, FP))],
    "gradient": [(lambda a: np.gradient(a), (M,)), (lambda a: np.gradient(a[0], 0.5), (M,)), (lambda a: np.gradient(a, axis=1), (M32,)),
                 (lambda i: np.gradient(i), (IA,)), (lambda a: np.gradient(a, 2.0, 0.5), (M,))],
    "matvec": [(lambda a, v: np.matvec(a, v), (X3, X3[0, 0])), (lambda i: np.matvec(i.reshape(2, 3), i[:3]), (IA,))],
    "vecmat": [(lambda a, v: np.vecmat(v, a), (X3, X3[0, :, 0]))],
    "vander": [(lambda x: np.vander(x), (M[0],)), (lambda x: np.vander(x, 3, increasing=True), (M[0],)), (lambda i: np.vander(i, 4), (IA,)),
               (lambda x: np.vander(x, 0), (M[0],)), (lambda x: np.vander(x > 0), (M[0],))],
    "unwrap": [(lambda p: np.unwrap(p * 5), (M,)), (lambda p: np.unwrap(p * 5, axis=0), (M,)), (lambda p: np.unwrap(p * 5, period=4), (M,)),
               (lambda i: np.unwrap(i * 3, period=6), (IA,))],
    "real_if_close": [(lambda a: np.real_if_close(a) * 2, (M,))],
    "histogram": [(lambda a: np.histogram(a, 5, range=(-2, 2)), (M,)), (lambda a: np.histogram(a, 4, range=(-1, 1), weights=a * 2), (M,)),
                  (lambda a: np.histogram(a, 3, range=(0, 1), density=True), (M,)), (lambda i: np.histogram(i, 3, range=(0, 6)), (IA,)),
                  (lambda a: np.histogram(a, 2, range=(1, 1)), (M,)), (lambda a: np.histogram(a / 0, 3, range=(0, 1)), (M,))],
    "histogram_bin_edges": [(lambda a: np.histogram_bin_edges(a, 4, range=(-3, 3)), (M,))],
    "digitize": [(lambda x: np.digitize(x, [-1, 0, 1]), (M,)), (lambda x: np.digitize(x, np.array([-1.0, 0, 1]), right=True), (M,)),
                 (lambda x: np.digitize(x, [1, 0, -1]), (M,)), (lambda x: np.digitize(x, [1, 0, -1], right=True), (M,))],
    "lexsort": [(lambda a: np.lexsort((a[0], a[1] > 0)), (M,)), (lambda a: np.lexsort(np.round(a[:3])), (M,)), (lambda i: np.lexsort((i, i % 2)), (IA,))],
    "unique": [(lambda a, f=f: np.unique(a, *f), (x,)) for f in [(), (True,), (False, True), (False, False, True), (True, True, True)]
               for x in (np.array([[3.0, 1, np.nan], [2, 1, np.nan]]), np.array([5, 3, 1, 3, 9, 2, 100, 7, 50, 1], np.int32), FLOATS[2], np.ones(1))],
    "hanning": [(lambda a, d=d: np.hanning(a.shape[0] - d) * 1.0, (M,)) for d in (0, 3, 4)],
    "hamming": [(lambda a, d=d: np.hamming(a.shape[0] - d) * 1.0, (M,)) for d in (0, 3, 4)],
    "blackman": [(lambda a, d=d: np.blackman(a.shape[0] - d) * 1.0, (M,)) for d in (0, 3, 4)],
    "bartlett": [(lambda a, d=d: np.bartlett(a.shape[0] - d) * 1.0, (M,)) for d in (0, 3, 4)],
    "linalg.matmul": [(lambda a: np.linalg.matmul(a, a.swapaxes(-1, -2)), (X3,))],
    "linalg.outer": [(lambda x: np.linalg.outer(x, x[:3]), (M[0],))],
    "linalg.tensordot": [(lambda a: np.linalg.tensordot(a[0], a[1], axes=([1], [1])), (X3,))],
    "linalg.vecdot": [(lambda a: np.linalg.vecdot(a, a), (X3,))],
    "linalg.vector_norm": [(lambda a: np.linalg.vector_norm(a), (X3,)), (lambda a: np.linalg.vector_norm(a, axis=1, ord=1, keepdims=True), (X3,)),
                           (lambda a: np.linalg.vector_norm(a, keepdims=True), (X3,))],
    "linalg.matrix_norm": [(lambda a: np.linalg.matrix_norm(a), (X3,)), (lambda a: np.linalg.matrix_norm(a, keepdims=True), (X3,))],
    "linalg.matrix_transpose": [(lambda a: np.linalg.matrix_transpose(a), (X3,))],
    "linalg.diagonal": [(lambda a: np.linalg.diagonal(a, offset=1), (X3,))], "linalg.trace": [(lambda a: np.linalg.trace(a), (X3,))],
    "linalg.cross": [(lambda a: np.linalg.cross(a[..., :3], a[..., 1:4]), (X3,))],
    "linalg.matrix_power": [(lambda a, n=n: np.linalg.matrix_power(a, n), (SQ,)) for n in (0, 1, 2, 3, 5, 8)] +
                           [(lambda i: np.linalg.matrix_power(i.reshape(2, 3)[:, :2], 6), (IA,))],
    "cumulative_prod": [(lambda a: np.cumulative_prod(a, axis=1, include_initial=True), (M,)), (lambda i: np.cumulative_prod(i), (IA,))],
}.items():
    RECIPES[_n] = (lambda cases: lambda: cases)(_cases)


def _inplace(op):
    src = f"def f(x, y):\n    x {op} y\n    return x\n"
    scope = {}
    exec(src, scope)  # noqa: S102
    return scope["f"]


for _op, _ins in {"+=": None, "-=": None, "*=": None, "/=": [(arr((3, 4), F64), arr((4,), F64)), (arr((3, 4), F32), 1.5)], "//=": None, "%=": None, "**=": [(arr((3, 4), F64, 0.5, 2), 2.0)],
                  "@=": [(arr((3, 3), F64), arr((3, 3), F64))], "&=": [(arr((3, 4), I64), arr((4,), I64)), (BOOLS[0], BOOLS[0])],
                  "|=": [(arr((3, 4), I64), 6)], "^=": [(arr((3, 4), I32), arr((3, 4), I32))], "<<=": [(arr((4,), I64), 2)],
                  ">>=": [(arr((4,), I64), 1)]}.items():
    _pairs = _ins or [(arr((3, 4), F64), arr((4,), F64)), (arr((3, 4), F32), 1.5), (arr((5,), I64), np.array([2, 1, 3, 1, 2], np.int64))]
    RECIPES[f"x {_op} y"] = (lambda f, pairs: lambda: [(lambda a, b, f=f: f(a.copy(), b), (a, b)) for a, b in pairs])(_inplace(_op), _pairs)
RECIPES["divmod(x, y)"] = lambda: [(lambda a, b: divmod(a, b), (IA, IB)), (lambda a: divmod(a, 1.5), (ODD,))]
RECIPES["x[I, J]"] = lambda: [(lambda a: a[np.array([0, 2, 1]), np.array([1, 3, 0])], (M,)), (lambda a: a[[[0], [2]], [1, 3]], (M,))]
RECIPES["x[I, :, J]"] = lambda: [(lambda a: a[np.array([0, 1]), :, np.array([2, 3])], (X3,))]
RECIPES["x[a:b] = v"] = lambda: [(lambda a: (a.__setitem__(slice(1, 3), 2.5), a)[1], (M.copy(),))]
RECIPES["x[a:b] += v"] = lambda: [(lambda a: (a[1:3].__iadd__(a[0]), a)[1], (M.copy(),))]
RECIPES["x[I, J] = v"] = lambda: [(lambda a: (a.__setitem__((np.array([0, 2, 0]), np.array([1, -1, 1])), a[0, :3] * 2), a)[1], (M.copy(),))]
RECIPES["x[I] += v"] = lambda: [(lambda a: (a[np.array([1, 1, 0])].__iadd__(1.5), a)[1], (M.copy(),)),
                                (lambda a, i: _iadd_at(a, i), (arr((5,), I32), np.array([4, -1, 0])))]
RECIPES["x[I] = v"] = lambda: [(lambda a, i: (a.__setitem__(i, 7.0), a)[1], (M.copy(), np.array([2, 0]))),
                               (lambda a: (a.__setitem__([[0], [1]], a[2]), a)[1], (arr((3, 4), I64),))]
RECIPES["put"] = lambda: [(lambda a, i: (np.put(a, i, [2.5, -1]), a)[1], (arr((3, 4), F64), np.array([0, -1, 5]))),
                          (lambda a, i: (np.put(a, i, a[0] * 2, mode="clip"), a)[1], (arr((2, 3), I64), np.array([[9], [-9]]))),
                          (lambda a, i: (np.put(a, i, 7, mode="wrap"), a)[1], (arr((5,), I32), np.array([6, -8]))),
                          (lambda a, i: (np.put(a, i, 1.0), a)[1], (arr((4,), F32), np.array([], np.int64)))]
RECIPES["putmask"] = lambda: [(lambda a: (np.putmask(a, a > 0, [10.0, 20.0, 30.0]), a)[1], (arr((3, 5), F64),)),
                              (lambda a, m: (np.putmask(a, m, a * 2), a)[1], (arr((2, 6), I64), arr((3, 4), bool))),
                              (lambda a: (np.putmask(a, a < 0, 0), a)[1], (arr((0, 3), F32),))]
RECIPES["unravel_index"] = lambda: [(lambda i, a: np.unravel_index(i, a.shape), (np.array([0, 5, 14]), arr((3, 5)))),
                                    (lambda i, a: np.unravel_index(i, (a.shape[0], 2), order="F"), (np.array([[1], [5]], np.int32), arr((3, 5)))),
                                    (lambda i: np.unravel_index(i, (4, 6)), (np.array([], np.int64),))]
RECIPES["ravel_multi_index"] = lambda: [(lambda i, j, a: np.ravel_multi_index((i, j), a.shape), (np.array([0, 2]), np.array([[4], [1]]), arr((3, 5)))),
                                        (lambda i, j: np.ravel_multi_index((i, j), (4, 3), mode="clip", order="F"), (np.array([9, -1]), np.array([5, 2]))),
                                        (lambda i, j: np.ravel_multi_index((i, j), (4, 3), mode="wrap"), (np.array([9, -1], np.int32), np.array([5, 2])))]
RECIPES["nanargmax"] = lambda: [(lambda a: np.nanargmax(a, axis=1), (NANS[[0, 2]],)), (lambda a: np.nanargmax(a), (M,)),
                                (lambda a: np.nanargmax(a, axis=0, keepdims=True), (arr((4, 3), I64),))]
RECIPES["nanargmin"] = lambda: [(lambda a: np.nanargmin(a, axis=0), (NANS[[0, 2]],)), (lambda a: np.nanargmin(a[:, ::2]), (M32,))]
RECIPES["place"] = lambda: [(lambda a: (np.place(a, a > 0, [10.0, 20.0]), a)[1], (arr((3, 5), F64),)),
                            (lambda a, m: (np.place(a, m, a[:1] * 2), a)[1], (arr((2, 6), I64), arr((3, 4), bool))),
                            (lambda a: (np.place(a, a < 0, [1.5]), a)[1], (arr((0, 3), F32),))]
RECIPES["x.put"] = lambda: [(lambda a, i: (a.put(i, [5, 6]), a)[1], (arr((2, 3), I32), np.array([1, 1, -2])))]
RECIPES["x[::s] = v"] = lambda: [(lambda a: (a.__setitem__(np.s_[::2, ::-3], 0.5), a)[1], (M.copy(),))]


def _iadd_at(a, i):
    a[i] += 3
    return a


def _ufunc_methods():
    pairs = [(arr((3,), F32), arr((2, 2), F32)), (arr((0,), F64), arr((4,), F64)), (arr((2,), I64), 3)]
    for name in ("add", "subtract", "multiply", "divide", "maximum", "equal"):
        u = getattr(np, name)
        RECIPES[f"{name}.outer"] = (lambda u: lambda: [(lambda a, b: u.outer(a, b), p) for p in pairs])(u)
    for name in ("add", "multiply", "maximum", "minimum", "logical_and", "logical_or"):
        u = getattr(np, name)
        RECIPES[f"{name}.reduce"] = (lambda u: lambda: [(lambda x: u.reduce(x), (x,)) for x in (arr((3, 5), F32), arr((4,), I32))] +
                                     [(lambda x: u.reduce(x, axis=1, keepdims=True), (arr((2, 3), F64),)),
                                      (lambda x: u.reduce(x, axis=None), (arr((4, 6), F64)[:, ::2],))])(u)
    for name in ("add", "multiply"):
        u = getattr(np, name)
        RECIPES[f"{name}.accumulate"] = (lambda u: lambda: [(lambda x: u.accumulate(x), (x,)) for x in (arr((3, 5), F32), arr((0,), I64))] +
                                         [(lambda x: u.accumulate(x, axis=1), (arr((2, 3), F64),))])(u)
    for name in ("add", "subtract"):
        u = getattr(np, name)
        RECIPES[f"{name}.at"] = (lambda u: lambda: [
            (lambda a, i: (u.at(a, i, 2.5), a)[1], (arr((5,), F64), np.array([0, 3, 3, -1]))),
            (lambda a, i, b: (u.at(a, (i, i % 2), b), a)[1], (arr((4, 3), F32), np.array([1, 1, 2]), arr((3,), F32))),
            (lambda a, i: (u.at(a, i, 1), a)[1], (arr((3, 2), I32), np.array([[0, 0], [2, 0]]))),
            (lambda a, i: (u.at(a, i, 1), a)[1], (arr((0,), F64), np.array([], np.int64)))])(u)


_ufunc_methods()
RECIPES["x.real"] = lambda: [(lambda a: a.real * 2, (M,))]
RECIPES["x.imag"] = lambda: [(lambda a: a.imag + a, (M,))]
RECIPES["x.conjugate"] = lambda: [(lambda a: a.conjugate() * 2, (M,))]
RECIPES["x.itemsize"] = lambda: [(lambda a: a * a.itemsize, (M32,))]
RECIPES["x.nbytes"] = lambda: [(lambda a: a * a.nbytes, (M,))]
RECIPES["x.device"] = lambda: [(lambda a: a * (a.device == "cpu"), (M,))]
RECIPES["x.to_device"] = lambda: [(lambda a: a.to_device("cpu") * 2, (M,))]
RECIPES["x.__array_namespace__"] = lambda: [(lambda a: a.__array_namespace__().sum(a, axis=0), (M,))]


def compiled_entries():
    out = []
    for part in _coverage.coverage().values():
        for name, status in part.items():
            if status.startswith("compiled"):
                out.append(name)
    return sorted(set(out))


def test_the_list_is_long_and_mostly_compiled():
    compiled, total = _coverage.coverage_counts()
    assert total >= 400
    assert compiled / total >= 0.90, f"{compiled} of {total}"


def test_every_compiled_entry_has_a_case_here():
    missing = [n for n in compiled_entries() if n not in RECIPES]
    assert not missing, f"entries marked compiled with no case in this test: {missing}"


@pytest.mark.parametrize("name", compiled_entries())
def test_entry_compiles_and_equals_numpy(name):
    cases = RECIPES[name]()
    assert cases
    for fn, args in cases:
        check(fn, *args)


def test_a_graph_break_entry_says_so():
    table = sj.coverage()
    broken = [n for part in table.values() for n, s in part.items() if s == "graph break"]
    assert "unique_values" in broken  # its order is NumPy's hash's, not a sort's
    f = sj.jit(lambda x: np.unique_values(x) + 1)
    x = arr((5,), I64)
    np.testing.assert_allclose(f(x), np.unique_values(x) + 1)
    assert f.stats()["graph_breaks"] >= 1
