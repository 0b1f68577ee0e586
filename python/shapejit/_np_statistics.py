"""NumPy's reductions, statistics and cumulative functions on tracing values."""
from __future__ import annotations

import builtins
import math

import numpy as np

from . import _tracing as T
from ._np_base import _FLOAT, _axis, _count, _emit, _fill, _float, _full_like, _no, _st, _t
from ._np_elementwise import isnan


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
    elif x.ndim == 0:  # a 0-d array scans as a 1-d one, which has only axis 0 (or -1)
        x = x.reshape(-1)
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
