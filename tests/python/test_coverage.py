"""NumPy coverage, measured: every entry shapejit.coverage() marks compiled is
run here, jitted, on shapes with 0 and 1, odd sizes, broadcasts,
non-contiguous views and the dtypes NumPy takes there, and must compile with
no graph break and equal NumPy's own result (values, dtype and shape)."""
import operator

import numpy as np
import pytest

import shapejit as sj
from shapejit import _coverage
from coverage_support import (BOOLS, BOOL_PAIRS, F32, F64, FLOATS, GE1, I32, I64, INTS, INT_PAIRS, M, M32, NONZERO, POS, RECIPES,
                              UNIT, X3, arr, binary, check, reductions, unary)


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


import coverage_scientific  # noqa: E402, F401 - its cases register in RECIPES, after these (the inputs' draws in order)


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
    assert compiled / total >= 0.95, f"{compiled} of {total}"


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
