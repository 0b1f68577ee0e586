"""NumPy's functions on tracing values: the table a Tensor answers NumPy with.

Each entry is NumPy's function written over the op set, with NumPy's
results (values, dtypes, shapes) for the arguments it takes; what it cannot
take (an `out=`, a mode it lacks) is a graph break naming what, never a
wrong answer. The table maps NumPy's callables to these
(`__array_ufunc__`, `__array_function__`); `coverage()` lists what it holds
and what NumPy functions model code uses that it does not.

NumPy's creation functions (`np.arange(n)`, `np.zeros((n, d))`, `np.tri(n)`)
do not dispatch on a SymInt argument, so while a trace is recorded they
are wrapped (`creation_functions`): given a SymInt, they trace a symbolic op;
given plain numbers, they are NumPy's own.
"""
from __future__ import annotations

import builtins
import contextlib
import math
import operator
import threading

import numpy as np

from . import _tracing as T
from ._tracing import SymInt, Tensor

_FLOAT = ("f32", "f64")
_INT = ("i32", "i64")


# -- helpers --------------------------------------------------------------------

def _st(*xs):
    return T._state_of(*xs)


def _t(st, x, like=None):
    return T.as_tensor(st, x, like)


def _emit(st, op, operands, attrs=None):
    return T.emit(st, op, operands, attrs)


def _float(x):
    """x as a float tensor (NumPy's ints become float64)."""
    return x if x._dtype in _FLOAT else x.astype("f64")


def _no(st, what, **kwargs):
    """A graph break for arguments the traced function does not take."""
    for k, v in kwargs.items():
        if v is not None and v is not False:
            T._break(st, f"{what} with {k}= has no shapejit op")


def _axis(axis, ndim):
    a = operator.index(axis)
    if not -ndim <= a < ndim:
        raise np.exceptions.AxisError(f"axis {a} is out of bounds for array of dimension {ndim}")
    return a % ndim


def _count(x, axes):
    """The number of elements a reduction over `axes` takes (a size)."""
    n = 1
    for a in axes:
        n = x.shape[a] * n
    return n


def _full_like(x, value, dtype):
    return _emit(x._st, "full", list(x.shape), {"value": value, "dtype": dtype})


def _smin(a, b):
    """min of two sizes: traced where either is a SymInt."""
    if isinstance(a, SymInt) or isinstance(b, SymInt):
        return T.emit(_st(a, b), "sym_min", [a, b])
    return builtins.min(a, b)


def _smax(a, b):
    if isinstance(a, SymInt) or isinstance(b, SymInt):
        return T.emit(_st(a, b), "sym_max", [a, b])
    return builtins.max(a, b)


# -- elementwise ------------------------------------------------------------------

def _float_unary(op):
    def f(x):
        return T.unary(op, x)
    f.__name__ = op
    return f


def _rounding(op):
    """floor, ceil, trunc: integers and bools stay as they are (NumPy 2); floats round."""
    def f(x):
        st = _st(x)
        x = _t(st, x)
        if x._dtype not in _FLOAT:
            return x
        return _emit(st, op, [x])
    f.__name__ = op
    return f


def rint(x):
    st = _st(x)
    x = _t(st, x)
    if x._dtype == "bool":
        T._break(st, "np.rint of a bool array (NumPy gives float16)")
    return _emit(st, "rint", [_float(x)])


def around(x, decimals=0, out=None):
    st = _st(x)
    _no(st, "np.round", out=out)
    x = _t(st, x)
    if x._dtype not in _FLOAT:
        if decimals >= 0:
            return x
        scale = float(10 ** (-decimals))  # half to even, as NumPy rounds ints too
        return (_emit(st, "rint", [x.astype("f64") / scale]) * scale).astype(x._dtype)
    if decimals == 0:
        return _emit(st, "rint", [x])
    scale = 10.0 ** decimals
    return _emit(st, "rint", [x * scale]) / scale


def sign(x):
    st = _st(x)
    x = _t(st, x)
    zero = 0.0 if x._dtype in _FLOAT else 0
    if x._dtype == "bool":
        T._break(st, "np.sign of a bool array")
    s = (x > zero).astype(x._dtype) - (x < zero).astype(x._dtype)
    if x._dtype in _FLOAT:
        s = T.where(isnan(x), x, s)
    return s


def signbit(x):
    st = _st(x)
    x = _t(st, x)
    if x._dtype not in _FLOAT:
        return x < 0
    # -0.0 has its sign bit set: 1 / -0.0 is -inf.
    return (x < 0.0) | ((x == 0.0) & ((1.0 / x) < 0.0))


def copysign(a, b):
    st = _st(a, b)
    a, b = _float(_t(st, a)), _float(_t(st, b))
    a, b = T.promote(st, a, b)
    mag = abs(a)
    return T.where(signbit(b), -mag, mag)


def isnan(x):
    st = _st(x)
    x = _t(st, x)
    if x._dtype not in _FLOAT:
        return _full_like(x, False, "bool")
    return x != x


def isinf(x):
    st = _st(x)
    x = _t(st, x)
    if x._dtype not in _FLOAT:
        return _full_like(x, False, "bool")
    return abs(x) == math.inf


def isfinite(x):
    st = _st(x)
    x = _t(st, x)
    if x._dtype not in _FLOAT:
        return _full_like(x, True, "bool")
    return (x - x) == 0.0  # inf - inf and NaN are NaN


def fabs(x):
    st = _st(x)
    return abs(_float(_t(st, x)))


def reciprocal(x):
    st = _st(x)
    x = _t(st, x)
    if x._dtype not in _FLOAT:
        T._break(st, "np.reciprocal of an integer array (integer division by each element)")
    return T.true_divide(1.0, x)


def fmax(a, b):
    st = _st(a, b)
    a, b = T.promote(st, a, b)
    m = T.maximum(a, b)
    if m._dtype not in _FLOAT:
        return m
    return T.where(isnan(a), b, T.where(isnan(b), a, m))


def fmin(a, b):
    st = _st(a, b)
    a, b = T.promote(st, a, b)
    m = T.minimum(a, b)
    if m._dtype not in _FLOAT:
        return m
    return T.where(isnan(a), b, T.where(isnan(b), a, m))


def _float_binary(op):
    def f(a, b):
        st = _st(a, b)
        a, b = T.promote(st, a, b)
        a = _float(a) if isinstance(a, Tensor) else float(a)
        b = _float(b) if isinstance(b, Tensor) else float(b)
        a, b = T.promote(st, a, b)
        return _emit(st, op, [a, b])
    f.__name__ = op
    return f


arctan2 = _float_binary("atan2")
hypot = _float_binary("hypot")


def float_power(a, b):
    st = _st(a, b)
    a = _t(st, a).astype("f64")
    b = b.astype("f64") if isinstance(b, Tensor) else float(T._scalar(b))
    return _emit(st, "pow", [a, b])


def logaddexp(a, b):
    st = _st(a, b)
    a, b = _float(_t(st, a)), _float(_t(st, b))
    a, b = T.promote(st, a, b)
    m = T.maximum(a, b)
    d = -abs(a - b)
    return T.where(a == b, a + math.log(2.0), m + T.unary("log1p", T.unary("exp", d)))


def logaddexp2(a, b):
    st = _st(a, b)
    a, b = _float(_t(st, a)), _float(_t(st, b))
    a, b = T.promote(st, a, b)
    m = T.maximum(a, b)
    d = -abs(a - b)
    return T.where(a == b, a + 1.0, m + T.unary("log1p", T.unary("exp2", d)) / math.log(2.0))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    st = _st(a, b)
    a, b = T.promote(st, _t(st, a), _t(st, b))
    a, b = _float(a), _float(b)
    a, b = T.promote(st, a, b)
    close = abs(a - b) <= atol + rtol * abs(b)
    close = close | (a == b)  # equal infinities
    if equal_nan:
        close = close | (isnan(a) & isnan(b))
    return close


def imag(x):
    st = _st(x)
    x = _t(st, x)
    return _full_like(x, _zero(x), x._dtype)


def deg2rad(x):
    st = _st(x)
    return _float(_t(st, x)) * (math.pi / 180.0)


def rad2deg(x):
    st = _st(x)
    return _float(_t(st, x)) * (180.0 / math.pi)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    st = _st(x)
    x = _t(st, x)
    if x._dtype not in _FLOAT:
        return x
    big = float(np.finfo(T._DTYPES[x._dtype]).max)
    y = T.where(isnan(x), nan, x)
    y = T.where(y == math.inf, big if posinf is None else posinf, y)
    return T.where(y == -math.inf, -big if neginf is None else neginf, y)


# -- reductions and statistics ------------------------------------------------------

def var(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None, correction=None):
    st = _st(x)
    _no(st, "np.var", out=out, where=where, mean=mean)
    if correction is not None:
        ddof = correction
    x = _t(st, x)
    x = x.astype(dtype) if dtype is not None else _float(x)
    axes = T._axes(axis, x.ndim)
    d = x - x.mean(axis=axes, keepdims=True)
    s = (d * d).sum(axis=axes, keepdims=keepdims)
    return s / (_count(x, [a % builtins.max(x.ndim, 1) for a in axes]) - ddof)


def std(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None, correction=None):
    return T.unary("sqrt", var(x, axis, dtype, out, ddof, keepdims, where=where, mean=mean, correction=correction))


def prod(x, axis=None, dtype=None, out=None, keepdims=False, *, initial=None, where=None):
    st = _st(x)
    _no(st, "np.prod", out=out, initial=initial, where=where)
    return _t(st, x).prod(axis=axis, dtype=dtype, keepdims=keepdims)


def _scan(op, x, axis, dtype):
    st = _st(x)
    x = _t(st, x)
    if dtype is not None:
        x = x.astype(dtype)
    elif x._dtype in ("bool", "i32"):
        x = x.astype("i64")  # NumPy accumulates small integers as int64
    if axis is None:
        x, axis = x.reshape(-1), 0
    return _emit(st, op, [x], {"dim": _axis(axis, x.ndim)})


def cumsum(x, axis=None, dtype=None, out=None):
    _no(_st(x), "np.cumsum", out=out)
    return _scan("cumsum", x, axis, dtype)


def cumprod(x, axis=None, dtype=None, out=None):
    _no(_st(x), "np.cumprod", out=out)
    return _scan("cumprod", x, axis, dtype)


def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    st = _st(x)
    _no(st, "np.cumulative_sum", out=out)
    xt = _t(st, x)
    if axis is None:
        if xt.ndim > 1:
            raise ValueError("For arrays which have more than one dimension ``axis`` argument is required.")
        axis = 0
    y = _scan("cumsum", xt, axis, dtype)
    if not include_initial:
        return y
    a = _axis(axis, y.ndim)
    shape = list(y.shape)
    shape[a] = 1
    zero = _emit(st, "full", [T._shape_operand(s) for s in shape], {"value": _fill(0, y), "dtype": y._dtype})
    return _emit(st, "concat", [zero, y], {"dim": a})


def ptp(x, axis=None, out=None, keepdims=False):
    st = _st(x)
    _no(st, "np.ptp", out=out)
    x = _t(st, x)
    return x.max(axis, keepdims) - x.min(axis, keepdims)


def any(x, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    st = _st(x)
    _no(st, "np.any", out=out, where=where)
    x = _t(st, x)
    return (x != 0).astype("i64").sum(axis=axis, keepdims=keepdims) > 0


def all(x, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    st = _st(x)
    _no(st, "np.all", out=out, where=where)
    x = _t(st, x)
    return (x == 0).astype("i64").sum(axis=axis, keepdims=keepdims) == 0


def count_nonzero(x, axis=None, *, keepdims=False):
    st = _st(x)
    return (_t(st, x) != 0).astype("i64").sum(axis=axis, keepdims=keepdims)


def average(x, axis=None, weights=None, returned=False, *, keepdims=False):
    st = _st(x, weights)
    x = _t(st, x)
    if weights is None:
        avg = x.mean(axis=axis, keepdims=keepdims)
        if returned:
            T._break(st, "np.average with returned=True")
        return avg
    w = _t(st, weights)
    if w.ndim != x.ndim:
        if axis is None or w.ndim != 1:
            raise TypeError("np.average: 1D weights expected when shapes of a and weights differ")
        shape = [1] * x.ndim
        ax = _axis(axis, x.ndim)
        shape[ax] = w.shape[0]
        w = w.reshape(*shape)
    num = (x * w).sum(axis=axis, keepdims=keepdims)
    den = (w * _full_like(x, 1, w._dtype)).sum(axis=axis, keepdims=keepdims)
    if returned:
        T._break(st, "np.average with returned=True")
    return T.true_divide(num, den)


def nansum(x, axis=None, dtype=None, out=None, keepdims=False, **kw):
    st = _st(x)
    _no(st, "np.nansum", out=out, **kw)
    x = _t(st, x)
    if x._dtype in _FLOAT:
        x = T.where(isnan(x), 0.0, x)
    return x.sum(axis=axis, dtype=dtype, keepdims=keepdims)


def nanmean(x, axis=None, dtype=None, out=None, keepdims=False, **kw):
    st = _st(x)
    _no(st, "np.nanmean", out=out, **kw)
    x = _float(_t(st, x))
    ok = ~isnan(x)
    s = T.where(ok, x, 0.0).sum(axis=axis, keepdims=keepdims)
    n = ok.astype(x._dtype).sum(axis=axis, keepdims=keepdims)
    return s / n


def nanmax(x, axis=None, out=None, keepdims=False, **kw):
    st = _st(x)
    _no(st, "np.nanmax", out=out, **kw)
    x = _t(st, x)
    if x._dtype not in _FLOAT:
        return x.max(axis, keepdims)
    return T.where(isnan(x), -math.inf, x).max(axis, keepdims)


def nanmin(x, axis=None, out=None, keepdims=False, **kw):
    st = _st(x)
    _no(st, "np.nanmin", out=out, **kw)
    x = _t(st, x)
    if x._dtype not in _FLOAT:
        return x.min(axis, keepdims)
    return T.where(isnan(x), math.inf, x).min(axis, keepdims)


# -- joining and splitting ------------------------------------------------------------

def atleast_1d(*arys):
    st = _st(*arys)
    out = [_t(st, a) for a in arys]
    out = [a.reshape(1) if a.ndim == 0 else a for a in out]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_2d(*arys):
    st = _st(*arys)
    out = []
    for a in arys:
        a = _t(st, a)
        if a.ndim == 0:
            a = a.reshape(1, 1)
        elif a.ndim == 1:
            a = T.expand_dims(a, 0)
        out.append(a)
    return out[0] if len(out) == 1 else tuple(out)


def atleast_3d(*arys):
    st = _st(*arys)
    out = []
    for a in arys:
        a = _t(st, a)
        if a.ndim == 0:
            a = a.reshape(1, 1, 1)
        elif a.ndim == 1:
            a = T.expand_dims(a, (0, 2))
        elif a.ndim == 2:
            a = T.expand_dims(a, 2)
        out.append(a)
    return out[0] if len(out) == 1 else tuple(out)


def _seq(tup):
    tup = list(tup)
    return _st(*tup), tup


def hstack(tup, *, dtype=None, casting="same_kind"):
    st, tup = _seq(tup)
    arrs = [atleast_1d(_t(st, a)) for a in tup]
    out = T.concatenate(arrs, axis=0 if arrs[0].ndim == 1 else 1)
    return out.astype(dtype) if dtype is not None else out


def vstack(tup, *, dtype=None, casting="same_kind"):
    st, tup = _seq(tup)
    out = T.concatenate([atleast_2d(_t(st, a)) for a in tup], axis=0)
    return out.astype(dtype) if dtype is not None else out


def dstack(tup):
    st, tup = _seq(tup)
    return T.concatenate([atleast_3d(_t(st, a)) for a in tup], axis=2)


def column_stack(tup):
    st, tup = _seq(tup)
    cols = []
    for a in tup:
        a = _t(st, a)
        cols.append(T.expand_dims(a, 1) if a.ndim < 2 else a)
    return T.concatenate(cols, axis=1)


def _split_at(x, bounds, axis):
    """The parts of x between consecutive bounds (sizes or SymInts) along axis."""
    st = x._st
    parts = []
    for start, stop in zip(bounds[:-1], bounds[1:]):
        parts.append(_emit(st, "slice", [x, start, stop, 1], {"dim": axis}))
    return parts


def array_split(x, indices_or_sections, axis=0):
    st = _st(x)
    x = _t(st, x)
    axis = _axis(axis, x.ndim)
    n = x.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extra = n // k, n % k
        bounds = [0]
        for i in range(1, k + 1):
            bounds.append(each * i + _smin(i, extra))
        return _split_at(x, bounds, axis)
    idx = [T._shape_operand(i) if not isinstance(i, (int, np.integer)) else int(i) for i in indices_or_sections]
    return _split_at(x, [0, *idx, T._END], axis)


def split(x, indices_or_sections, axis=0):
    st = _st(x)
    if isinstance(indices_or_sections, (int, np.integer)):
        xt = _t(st, x)
        n = xt.shape[_axis(axis, xt.ndim)]
        if not bool(n % int(indices_or_sections) == 0):
            raise ValueError("array split does not result in an equal division")
    return array_split(x, indices_or_sections, axis)


def hsplit(x, indices_or_sections):
    x = _t(_st(x), x)
    return split(x, indices_or_sections, axis=1 if x.ndim > 1 else 0)


def vsplit(x, indices_or_sections):
    return split(x, indices_or_sections, axis=0)


def dsplit(x, indices_or_sections):
    return split(x, indices_or_sections, axis=2)


def unstack(x, /, *, axis=0):
    st = _st(x)
    x = _t(st, x)
    axis = _axis(axis, x.ndim)
    return tuple(T.getitem(x, (slice(None),) * axis + (i,)) for i in range(int(x.shape[axis])))


# -- rearranging ------------------------------------------------------------------------

def moveaxis(x, source, destination):
    st = _st(x)
    x = _t(st, x)
    src = [_axis(a, x.ndim) for a in (source if isinstance(source, (list, tuple)) else [source])]
    dst = [_axis(a, x.ndim) for a in (destination if isinstance(destination, (list, tuple)) else [destination])]
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return x.transpose(order)


def rollaxis(x, axis, start=0):
    st = _st(x)
    x = _t(st, x)
    axis = _axis(axis, x.ndim)
    start = start + x.ndim if start < 0 else start
    if axis < start:
        start -= 1
    if axis == start:
        return x
    order = [a for a in range(x.ndim) if a != axis]
    order.insert(start, axis)
    return x.transpose(order)


def matrix_transpose(x):
    st = _st(x)
    x = _t(st, x)
    return x.swapaxes(-1, -2)


def _reversed(x, axis):
    n = x.shape[axis]
    idx = _emit(x._st, "arange", [n - 1, -1, -1], {"dtype": "i64"})
    return _emit(x._st, "index_select", [x, idx], {"dim": axis})


def flip(x, axis=None):
    st = _st(x)
    x = _t(st, x)
    axes = range(x.ndim) if axis is None else [_axis(a, x.ndim) for a in (axis if isinstance(axis, (list, tuple)) else [axis])]
    for a in axes:
        x = _reversed(x, a)
    return x


def fliplr(x):
    return flip(x, 1)


def flipud(x):
    return flip(x, 0)


def roll(x, shift, axis=None):
    st = _st(x)
    x = _t(st, x)
    if axis is None:
        return roll(x.reshape(-1), shift, 0).reshape(*x.shape)
    axes = axis if isinstance(axis, (list, tuple)) else [axis]
    shifts = shift if isinstance(shift, (list, tuple)) else [shift] * len(axes)
    for a, s in zip(axes, shifts):
        a = _axis(a, x.ndim)
        n = x.shape[a]
        k = n - (s % n) if isinstance(s, SymInt) else n - operator.index(s) % n
        head = _emit(st, "slice", [x, k, T._END, 1], {"dim": a})
        tail = _emit(st, "slice", [x, 0, k, 1], {"dim": a})
        x = _emit(st, "concat", [head, tail], {"dim": a})
    return x


def repeat(x, repeats, axis=None):
    st = _st(x)
    x = _t(st, x)
    if not isinstance(repeats, (int, np.integer, SymInt)):
        T._break(st, "np.repeat with a count per element")
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis = _axis(axis, x.ndim)
    shape = list(x.shape)
    e = T.expand_dims(x, axis + 1)
    target = shape[:axis + 1] + [repeats] + shape[axis + 1:]
    e = _emit(st, "expand", [e, *[T._shape_operand(s) for s in target]])
    shape[axis] = shape[axis] * repeats
    return e.reshape(*shape)


def tile(x, reps):
    st = _st(x)
    x = _t(st, x)
    reps = list(reps) if isinstance(reps, (list, tuple)) else [reps]
    d = builtins.max(len(reps), x.ndim)
    reps = [1] * (d - len(reps)) + reps
    x = x.reshape(*([1] * (d - x.ndim) + list(x.shape)))
    shape = list(x.shape)
    inter, target, final = [], [], []
    for r, s in zip(reps, shape):
        inter += [1, s]
        target += [r, s]
        final.append(s * r)
    e = _emit(st, "expand", [x.reshape(*inter), *[T._shape_operand(s) for s in target]])
    return e.reshape(*final)


def pad(x, pad_width, mode="constant", **kwargs):
    st = _st(x)
    x = _t(st, x)
    if mode not in ("constant", "edge"):
        T._break(st, f"np.pad with mode={mode!r}")
    value = kwargs.pop("constant_values", 0)
    if kwargs or isinstance(value, (list, tuple, np.ndarray)):
        T._break(st, "np.pad with per-axis constants or other options")
    widths = np.broadcast_to(np.asarray(pad_width, dtype=object), (x.ndim, 2)) if x.ndim else np.zeros((0, 2))
    for a in range(x.ndim):
        before, after = (operator.index(w) for w in widths[a])
        parts = []
        if before:
            if mode == "constant":
                shape = list(x.shape)
                shape[a] = before
                parts.append(_emit(st, "full", [T._shape_operand(s) for s in shape], {"value": _fill(value, x), "dtype": x._dtype}))
            else:
                edge = _emit(st, "slice", [x, 0, 1, 1], {"dim": a})
                parts.append(repeat(edge, before, a))
        parts.append(x)
        if after:
            if mode == "constant":
                shape = list(x.shape)
                shape[a] = after
                parts.append(_emit(st, "full", [T._shape_operand(s) for s in shape], {"value": _fill(value, x), "dtype": x._dtype}))
            else:
                edge = _emit(st, "slice", [x, -1, T._END, 1], {"dim": a})
                parts.append(repeat(edge, after, a))
        if len(parts) > 1:
            x = _emit(st, "concat", parts, {"dim": a})
    return x


def _fill(value, x):
    return float(value) if x._dtype in _FLOAT else int(value)


def broadcast_arrays(*args, subok=False):
    st = _st(*args)
    ts = [_t(st, a) for a in args]
    rank = builtins.max(t.ndim for t in ts)
    shape = []
    for d in range(rank):
        size = 1
        for t in ts:
            i = d - (rank - t.ndim)
            if i >= 0:
                s = t.shape[i]
                if isinstance(size, int) and size == 1:
                    size = s
                elif not (isinstance(s, int) and s == 1):
                    size = _smax(size, s)
        shape.append(size)
    return tuple(_emit(st, "expand", [t, *[T._shape_operand(s) for s in shape]]) for t in ts)


# -- triangles, diagonals, products -----------------------------------------------------------

def tri(N, M=None, k=0, dtype=float, *, like=None):
    st = _st(N, M)
    M = N if M is None else M
    rows = _emit(st, "arange", [0, T._shape_operand(N), 1], {"dtype": "i64"})
    cols = _emit(st, "arange", [0, T._shape_operand(M), 1], {"dtype": "i64"})
    mask = T.expand_dims(rows, 1) + k >= T.expand_dims(cols, 0)
    return mask.astype(T.dtype_name(dtype))


def _tri_mask(x, k):
    n, m = x.shape[-2], x.shape[-1]
    rows = _emit(x._st, "arange", [0, n, 1], {"dtype": "i64"})
    cols = _emit(x._st, "arange", [0, m, 1], {"dtype": "i64"})
    return T.expand_dims(rows, 1) + k >= T.expand_dims(cols, 0)


def tril(x, k=0):
    st = _st(x)
    x = _t(st, x)
    if x.ndim < 2:
        T._break(st, "np.tril of an array below rank 2")
    return T.where(_tri_mask(x, k), x, _zero(x))


def triu(x, k=0):
    st = _st(x)
    x = _t(st, x)
    if x.ndim < 2:
        T._break(st, "np.triu of an array below rank 2")
    return T.where(_tri_mask(x, k - 1), _zero(x), x)


def _zero(x):
    return False if x._dtype == "bool" else (0.0 if x._dtype in _FLOAT else 0)


def eye(N, M=None, k=0, dtype=float, order="C", *, device=None, like=None):
    st = _st(N, M, k)
    M = N if M is None else M
    rows = _emit(st, "arange", [0, T._shape_operand(N), 1], {"dtype": "i64"})
    cols = _emit(st, "arange", [0, T._shape_operand(M), 1], {"dtype": "i64"})
    return (T.expand_dims(rows, 1) + k == T.expand_dims(cols, 0)).astype(T.dtype_name(dtype))


def identity(n, dtype=None, *, like=None):
    return eye(n, dtype=float if dtype is None else dtype)


def diagonal(x, offset=0, axis1=0, axis2=1):
    st = _st(x)
    x = _t(st, x)
    a1, a2 = _axis(axis1, x.ndim), _axis(axis2, x.ndim)
    rest = [a for a in range(x.ndim) if a not in (a1, a2)]
    x = x.transpose(rest + [a1, a2])
    n, m = x.shape[-2], x.shape[-1]
    if offset >= 0:
        length = _smax(_smin(n, m - offset), 0)
        r0, c0 = 0, offset
    else:
        length = _smax(_smin(n + offset, m), 0)
        r0, c0 = -offset, 0
    i = _emit(st, "arange", [0, T._shape_operand(length), 1], {"dtype": "i64"})
    flat = x.reshape(*x.shape[:-2], n * m)
    idx = (i + r0) * m + (i + c0)
    return _emit(st, "index_select", [flat, idx], {"dim": x.ndim - 2})


def diag(v, k=0):
    st = _st(v)
    v = _t(st, v)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = v.shape[0]
    size = n + builtins.abs(k)
    if bool(n == 0):
        return _emit(st, "full", [T._shape_operand(size), T._shape_operand(size)], {"value": _fill(0, v), "dtype": v._dtype})
    # (r, c) on the k-th diagonal holds v[r] (k >= 0) or v[c] (k < 0); the
    # index is clamped into v elsewhere, where the mask drops it.
    i = _emit(st, "arange", [0, T._shape_operand(size), 1], {"dtype": "i64"})
    picked = _emit(st, "index_select", [v, T.minimum(i, n - 1)], {"dim": 0})
    along = T.expand_dims(picked, 1) if k >= 0 else T.expand_dims(picked, 0)
    return T.where(eye(size, size, k, dtype=bool), along, _zero(v))


def trace(x, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    st = _st(x)
    _no(st, "np.trace", out=out)
    d = diagonal(x, offset, axis1, axis2)
    return d.sum(axis=-1, dtype=dtype)


def outer(a, b, out=None):
    st = _st(a, b)
    _no(st, "np.outer", out=out)
    a, b = _t(st, a).reshape(-1), _t(st, b).reshape(-1)
    return T.expand_dims(a, 1) * T.expand_dims(b, 0)


def inner(a, b):
    st = _st(a, b)
    a, b = _t(st, a), _t(st, b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return tensordot(a, b, axes=([-1], [-1]))


def vdot(a, b):
    st = _st(a, b)
    a, b = _t(st, a).reshape(-1), _t(st, b).reshape(-1)
    return (a * b).sum()


def vecdot(x1, x2, /, *, axis=-1):
    st = _st(x1, x2)
    a, b = T.promote(st, _t(st, x1), _t(st, x2))
    return (a * b).sum(axis=axis)


def tensordot(a, b, axes=2):
    st = _st(a, b)
    a, b = _t(st, a), _t(st, b)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        ax_a, ax_b = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
    ax_a = [_axis(x, a.ndim) for x in ax_a]
    ax_b = [_axis(x, b.ndim) for x in ax_b]
    free_a = [d for d in range(a.ndim) if d not in ax_a]
    free_b = [d for d in range(b.ndim) if d not in ax_b]
    k = _count(a, ax_a)
    am = a.transpose(free_a + ax_a).reshape(_count(a, free_a), k)
    bm = b.transpose(ax_b + free_b).reshape(k, _count(b, free_b))
    out = T.matmul(am, bm)
    return out.reshape(*[a.shape[d] for d in free_a], *[b.shape[d] for d in free_b])


def einsum(subscripts, *operands, out=None, optimize=False, **kwargs):
    """Einstein sums: each operand transposed to one order of all the
    indices (a diagonal, an index repeated in one operand, is a graph
    break), two operands contracted as a batched matmul, more by pairs."""
    st = _st(*operands)
    _no(st, "np.einsum", out=out, **kwargs)
    if not isinstance(subscripts, str):
        T._break(st, "np.einsum in its sublist form")
    spec = subscripts.replace(" ", "")
    if "." in spec:
        T._break(st, "np.einsum with an ellipsis")
    if "->" in spec:
        lhs, rhs = spec.split("->")
    else:
        lhs = spec
        counts = {}
        for c in lhs.replace(",", ""):
            counts[c] = counts.get(c, 0) + 1
        rhs = "".join(sorted(c for c, n in counts.items() if n == 1))
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError("einsum: more operands than subscripts" if len(operands) > len(terms) else "einsum: fewer operands than subscripts")
    ts = [_t(st, o) for o in operands]
    for term, t in zip(terms, ts):
        if len(set(term)) != len(term):
            T._break(st, "np.einsum with an index repeated within one operand (a diagonal)")
        if len(term) != t.ndim:
            raise ValueError(f"einsum: operand has {t.ndim} dims, subscripts '{term}' give {len(term)}")
    cur, cur_idx = ts[0], terms[0]
    for t, idx in zip(ts[1:], terms[1:]):
        rest = set(rhs)
        for other in terms[terms.index(idx) + 1:]:
            rest |= set(other)
        cur, cur_idx = _contract(st, cur, cur_idx, t, idx, rest)
    # Sum what the result does not keep, then order as asked.
    drop = [i for i, c in enumerate(cur_idx) if c not in rhs]
    if drop:
        cur = cur.sum(axis=drop)
        cur_idx = "".join(c for c in cur_idx if c in rhs)
    if cur_idx != rhs:
        cur = cur.transpose([cur_idx.index(c) for c in rhs])
    return cur


def _contract(st, a, ia, b, ib, keep):
    """a (indices ia) times b (ib), summing the shared indices not in `keep`,
    as one batched matmul: batch (shared, kept), a's own, contracted, b's own."""
    shared = [c for c in ia if c in ib]
    batch = [c for c in shared if c in keep]
    summed = [c for c in shared if c not in keep]
    own_a = [c for c in ia if c not in ib]
    own_b = [c for c in ib if c not in ia]
    # Indices of one operand only that nothing later needs are summed first.
    a_drop = [i for i, c in enumerate(ia) if c in own_a and c not in keep]
    if a_drop:
        a = a.sum(axis=a_drop)
        ia = "".join(c for c in ia if c not in own_a or c in keep)
        own_a = [c for c in own_a if c in keep]
    b_drop = [i for i, c in enumerate(ib) if c in own_b and c not in keep]
    if b_drop:
        b = b.sum(axis=b_drop)
        ib = "".join(c for c in ib if c not in own_b or c in keep)
        own_b = [c for c in own_b if c in keep]
    a, b = T.promote(st, a, b)
    size = {}
    for c, s in zip(ia, a.shape):
        size[c] = s
    for c, s in zip(ib, b.shape):
        size.setdefault(c, s)

    def prod(cs):
        n = 1
        for c in cs:
            n = size[c] * n
        return n

    am = a.transpose([ia.index(c) for c in batch + own_a + summed]).reshape(*[size[c] for c in batch], prod(own_a), prod(summed))
    bm = b.transpose([ib.index(c) for c in batch + summed + own_b]).reshape(*[size[c] for c in batch], prod(summed), prod(own_b))
    if am._dtype in _FLOAT:
        out = T.matmul(am, bm)
    else:  # integer einsum: a broadcast product and a sum (matmul is float only)
        out = (T.expand_dims(am, -1) * T.expand_dims(bm, -3)).sum(axis=-2)
    out = out.reshape(*[size[c] for c in batch + own_a + own_b])
    return out, "".join(batch + own_a + own_b)


def take_along_axis(x, indices, axis):
    st = _st(x, indices)
    x, idx = _t(st, x), _t(st, indices)
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis = _axis(axis, x.ndim)
    if idx.ndim != x.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    idx = idx.astype("i64")
    n = x.shape[axis]
    idx = T.where(idx < 0, idx + n, idx)  # NumPy's negative indices
    # Every element's flat index into x: the index along `axis`, the
    # element's own coordinate along the others (broadcast as NumPy does).
    shape = list(x.shape)
    strides = [1] * x.ndim
    for d in range(x.ndim - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    flat = idx * strides[axis]
    for d in range(x.ndim):
        if d == axis:
            continue
        coord = _emit(st, "arange", [0, T._shape_operand(idx.shape[d]), 1], {"dtype": "i64"})
        coord = coord.reshape(*[idx.shape[d] if e == d else 1 for e in range(x.ndim)])
        flat = flat + coord * strides[d]
    out = _emit(st, "index_select", [x.reshape(-1), flat.reshape(-1)], {"dim": 0})
    return out.reshape(*flat.shape)


def norm(x, ord=None, axis=None, keepdims=False):
    st = _st(x)
    x = _float(_t(st, x))
    if axis is None and ord is None:
        return T.unary("sqrt", (x * x).sum(keepdims=keepdims) if not keepdims else (x * x).sum(axis=list(range(x.ndim)), keepdims=True))
    if axis is None:
        if x.ndim == 1:
            axis = 0
        else:
            T._break(st, f"np.linalg.norm of a matrix with ord={ord!r}")
    if isinstance(axis, (tuple, list)):
        if ord in (None, "fro"):
            return T.unary("sqrt", (x * x).sum(axis=list(axis), keepdims=keepdims))
        T._break(st, f"np.linalg.norm of a matrix with ord={ord!r}")
    a = abs(x)
    if ord is None or ord == 2:
        return T.unary("sqrt", (x * x).sum(axis=axis, keepdims=keepdims))
    if ord == 1:
        return a.sum(axis=axis, keepdims=keepdims)
    if ord == math.inf:
        return a.max(axis, keepdims)
    if ord == -math.inf:
        return a.min(axis, keepdims)
    if ord == 0:
        return (x != 0.0).astype(x._dtype).sum(axis=axis, keepdims=keepdims)
    if isinstance(ord, (int, float)):
        return T.binary("pow", T.binary("pow", a, float(ord)).sum(axis=axis, keepdims=keepdims), 1.0 / ord)
    T._break(st, f"np.linalg.norm with ord={ord!r}")


def diff(x, n=1, axis=-1, prepend=None, append=None):
    st = _st(x)
    x = _t(st, x)
    axis = _axis(axis, x.ndim)
    if prepend is not None:
        x = T.concatenate([T.expand_dims(_t(st, prepend), axis) if _t(st, prepend).ndim < x.ndim else _t(st, prepend), x], axis)
    if append is not None:
        x = T.concatenate([x, T.expand_dims(_t(st, append), axis) if _t(st, append).ndim < x.ndim else _t(st, append)], axis)
    for _ in range(n):
        hi = _emit(st, "slice", [x, 1, T._END, 1], {"dim": axis})
        lo = _emit(st, "slice", [x, 0, -1, 1], {"dim": axis})
        x = hi - lo if x._dtype != "bool" else hi != lo
    return x


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    st = _st(*xi)
    xs = [_t(st, x).reshape(-1) for x in xi]
    n = len(xs)
    out = []
    for i, x in enumerate(xs):
        shape = [1] * n
        shape[i] = x.shape[0]
        out.append(x.reshape(*shape))
    if indexing == "xy" and n >= 2:
        out = [o.swapaxes(0, 1) for o in out]
    if sparse:
        return tuple(out)
    return broadcast_arrays(*out)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    st = _st(start, stop, num)
    numbers = (int, float, np.integer, np.floating)
    if retstep or axis != 0 or not isinstance(start, numbers) or not isinstance(stop, numbers):
        T._break(st, "np.linspace with array bounds, retstep or an axis")
    start, stop = float(start), float(stop)
    i = _emit(st, "arange", [0, T._shape_operand(num), 1], {"dtype": "f64"})
    step = T.true_divide(stop - start, (num - 1) if endpoint else num)
    y = i * step + start
    if endpoint:  # the last is stop itself; a single one is start
        y = T.where(i == num - 1, stop, y)
    y = T.where(i == 0, start, y)
    return y.astype(T.dtype_name(dtype) if dtype is not None else "f64")


def empty(shape, dtype=float, order="C", *, device=None, like=None):
    from . import _ops
    return _ops.zeros(shape, dtype)


def empty_like(x, dtype=None, order="K", subok=True, shape=None, *, device=None):
    from . import _ops
    return _ops.zeros_like(x, dtype)


def asarray(a, dtype=None, order=None, *, like=None, **kw):
    st = _st(a)
    if isinstance(a, Tensor):
        return a.astype(dtype) if dtype is not None else a
    if isinstance(a, SymInt):
        t = T.as_tensor(st, a)
        return t.astype(dtype) if dtype is not None else t
    if isinstance(a, (list, tuple)):
        parts = [asarray(e) for e in a]
        if not parts:
            return _emit(st, "full", [0], {"value": 0.0, "dtype": "f64" if dtype is None else T.dtype_name(dtype)})
        out = T.stack(parts, axis=0)
        return out.astype(dtype) if dtype is not None else out
    return T.as_tensor(st, a).astype(dtype) if dtype is not None else T.as_tensor(st, a)


# -- the table --------------------------------------------------------------------------------

UFUNCS = {
    np.tan: _float_unary("tan"), np.arcsin: _float_unary("asin"), np.arccos: _float_unary("acos"),
    np.arctan: _float_unary("atan"), np.sinh: _float_unary("sinh"), np.cosh: _float_unary("cosh"),
    np.arcsinh: _float_unary("asinh"), np.arccosh: _float_unary("acosh"), np.arctanh: _float_unary("atanh"),
    np.log1p: _float_unary("log1p"), np.expm1: _float_unary("expm1"), np.log2: _float_unary("log2"),
    np.log10: _float_unary("log10"), np.exp2: _float_unary("exp2"), np.cbrt: _float_unary("cbrt"),
    np.floor: _rounding("floor"), np.ceil: _rounding("ceil"), np.trunc: _rounding("trunc"), np.rint: rint,
    np.sign: sign, np.signbit: signbit, np.copysign: copysign, np.isnan: isnan, np.isinf: isinf,
    np.isfinite: isfinite, np.fabs: fabs, np.reciprocal: reciprocal, np.fmax: fmax, np.fmin: fmin,
    np.arctan2: arctan2, np.hypot: hypot, np.float_power: float_power, np.logaddexp: logaddexp,
    np.logaddexp2: logaddexp2, np.deg2rad: deg2rad, np.radians: deg2rad, np.rad2deg: rad2deg,
    np.degrees: rad2deg, np.conjugate: lambda x: x,
    np.bitwise_and: lambda a, b: T.bitwise("and", a, b), np.bitwise_or: lambda a, b: T.bitwise("or", a, b),
    np.bitwise_xor: lambda a, b: T.bitwise("xor", a, b), np.invert: lambda x: ~_t(_st(x), x),
    np.left_shift: lambda a, b: T.bitwise("left_shift", a, b), np.right_shift: lambda a, b: T.bitwise("right_shift", a, b),
}
FUNCTIONS = {
    np.round: around, np.around: around, np.fix: _rounding("trunc"), np.real: lambda x: x,
    np.nan_to_num: nan_to_num, np.isclose: isclose, np.imag: imag,
    np.var: var, np.std: std, np.ptp: ptp, np.prod: prod, np.cumsum: cumsum, np.cumprod: cumprod, np.any: any, np.all: all, np.count_nonzero: count_nonzero,
    np.average: average, np.nansum: nansum, np.nanmean: nanmean, np.nanmax: nanmax, np.nanmin: nanmin,
    np.atleast_1d: atleast_1d, np.atleast_2d: atleast_2d, np.atleast_3d: atleast_3d,
    np.hstack: hstack, np.vstack: vstack, np.dstack: dstack, np.column_stack: column_stack,
    np.split: split, np.array_split: array_split, np.hsplit: hsplit, np.vsplit: vsplit, np.dsplit: dsplit,
    np.moveaxis: moveaxis, np.rollaxis: rollaxis, np.flip: flip, np.fliplr: fliplr, np.flipud: flipud,
    np.roll: roll, np.repeat: repeat, np.tile: tile, np.pad: pad, np.broadcast_arrays: broadcast_arrays,
    np.tril: tril, np.triu: triu, np.diagonal: diagonal, np.diag: diag, np.trace: trace, np.outer: outer,
    np.inner: inner, np.vdot: vdot, np.tensordot: tensordot, np.einsum: einsum,
    np.take_along_axis: take_along_axis, np.linalg.norm: norm, np.diff: diff, np.meshgrid: meshgrid,
    np.empty_like: empty_like,
}
for _name, _f in (("unstack", unstack), ("matrix_transpose", matrix_transpose), ("vecdot", vecdot), ("cumulative_sum", cumulative_sum),
                  ("permute_dims", lambda x, axes=None: _t(_st(x), x).transpose(*(axes or ())))):
    if hasattr(np, _name):  # NumPy 2's; vecdot and matmul are ufuncs there
        (UFUNCS if isinstance(getattr(np, _name), np.ufunc) else FUNCTIONS)[getattr(np, _name)] = _f
if hasattr(np, "row_stack"):
    FUNCTIONS[np.row_stack] = vstack


# -- creation functions given sizes ----------------------------------------------------------

def _sizes_in(args, kwargs):
    """Whether the arguments hold a SymInt or a Tensor (in lists and tuples too)."""
    def has(x):
        if isinstance(x, (SymInt, Tensor)):
            return True
        if isinstance(x, (list, tuple)):
            return builtins.any(has(e) for e in x)
        return False
    return builtins.any(has(a) for a in args) or builtins.any(has(v) for v in kwargs.values())


def creation_names():
    return set(_creation())


def _creation():
    from . import _ops
    return {
        "arange": _ops.arange, "zeros": _ops.zeros, "ones": _ops.ones, "full": _ops.full, "empty": empty,
        "eye": eye, "identity": identity, "tri": tri, "linspace": linspace, "asarray": asarray, "array": asarray,
    }


_lock = threading.Lock()
_active = 0
_originals = {}


def _wrapped(name, original, traced):
    def f(*args, **kwargs):
        if T.current() is not None and _sizes_in(args, kwargs):
            return traced(*args, **kwargs)
        return original(*args, **kwargs)
    f.__name__ = name
    f.__doc__ = original.__doc__
    f.__wrapped__ = original
    return f


@contextlib.contextmanager
def creation_functions():
    """While a trace is recorded, numpy's creation functions take SymInts
    (np.arange(n), np.zeros((n, d)), np.tri(n)) and trace symbolic ops. A
    thread that is not tracing still gets NumPy's own behaviour."""
    global _active
    with _lock:
        if _active == 0:
            for name, traced in _creation().items():
                original = getattr(np, name)
                _originals[name] = original
                setattr(np, name, _wrapped(name, original, traced))
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                for name, original in _originals.items():
                    setattr(np, name, original)
                _originals.clear()
