"""NumPy's reductions, statistics and cumulative functions on tracing values."""
from __future__ import annotations

import builtins
import math

import numpy as np

from .._trace.dtypes import FLOAT
from .._trace.sizes import shape_operand
from .._trace.state import emit, graph_break, state_of
from .arithmetic import true_divide, unary, where
from . import reductions
from .base import axis_list, checked_axis, count, fill_of, full_of, stops_where, tensor_of, to_float, unsupported
from .elementwise import isnan
from .registry import implements, numpy_has


def var(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None, correction=None):
    st = state_of(x)
    unsupported(st, "np.var", out=out, where=where, mean=mean)
    if correction is not None:
        ddof = correction
    x = tensor_of(st, x)
    x = x.astype(dtype) if dtype is not None else to_float(x)
    axes = axis_list(axis, x.ndim)
    d = x - x.mean(axis=axes, keepdims=True)
    s = (d * d).sum(axis=axes, keepdims=keepdims)
    return s / (count(x, [a % builtins.max(x.ndim, 1) for a in axes]) - ddof)


def std(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None, correction=None):
    return unary("sqrt", var(x, axis, dtype, out, ddof, keepdims, where=where, mean=mean, correction=correction))


def prod(x, axis=None, dtype=None, out=None, keepdims=False, *, initial=None, where=None):
    st = state_of(x)
    unsupported(st, "np.prod", out=out, initial=initial, where=where)
    return tensor_of(st, x).prod(axis=axis, dtype=dtype, keepdims=keepdims)


def _scan(op, x, axis, dtype):
    st = state_of(x)
    x = tensor_of(st, x)
    if dtype is not None:
        x = x.astype(dtype)
    elif x._dtype in ("bool", "i32"):
        x = x.astype("i64")  # NumPy accumulates small integers as int64
    if axis is None:
        x, axis = x.reshape(-1), 0
    elif x.ndim == 0:  # a 0-d array scans as a 1-d one, which has only axis 0 (or -1)
        x = x.reshape(-1)
    return emit(st, op, [x], {"dim": checked_axis(axis, x.ndim)})


def cumsum(x, axis=None, dtype=None, out=None):
    unsupported(state_of(x), "np.cumsum", out=out)
    return _scan("cumsum", x, axis, dtype)


def cumprod(x, axis=None, dtype=None, out=None):
    unsupported(state_of(x), "np.cumprod", out=out)
    return _scan("cumprod", x, axis, dtype)


def _cumulative(op, identity):
    def f(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        st = state_of(x)
        unsupported(st, f"np.cumulative_{op[3:]}", out=out)
        xt = tensor_of(st, x)
        if axis is None:
            if xt.ndim > 1:
                raise ValueError("For arrays which have more than one dimension ``axis`` argument is required.")
            axis = 0
        y = _scan(op, xt, axis, dtype)
        if not include_initial:
            return y
        a = checked_axis(axis, y.ndim)
        shape = list(y.shape)
        shape[a] = 1
        first = emit(st, "full", [shape_operand(s) for s in shape], {"value": fill_of(identity, y), "dtype": y._dtype})
        return emit(st, "concat", [first, y], {"dim": a})
    f.__name__ = f"cumulative_{op[3:]}"
    return f


cumulative_sum = _cumulative("cumsum", 0)
cumulative_prod = _cumulative("cumprod", 1)


def ptp(x, axis=None, out=None, keepdims=False):
    st = state_of(x)
    unsupported(st, "np.ptp", out=out)
    x = tensor_of(st, x)
    return x.max(axis, keepdims) - x.min(axis, keepdims)


def any(x, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    st = state_of(x)
    unsupported(st, "np.any", out=out, where=where)
    x = tensor_of(st, x)
    return (x != 0).astype("i64").sum(axis=axis, keepdims=keepdims) > 0


def all(x, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    st = state_of(x)
    unsupported(st, "np.all", out=out, where=where)
    x = tensor_of(st, x)
    return (x == 0).astype("i64").sum(axis=axis, keepdims=keepdims) == 0


def count_nonzero(x, axis=None, *, keepdims=False):
    st = state_of(x)
    return (tensor_of(st, x) != 0).astype("i64").sum(axis=axis, keepdims=keepdims)


def average(x, axis=None, weights=None, returned=False, *, keepdims=False):
    st = state_of(x, weights)
    x = tensor_of(st, x)
    if weights is None:
        avg = x.mean(axis=axis, keepdims=keepdims)
        if returned:
            graph_break(st, "np.average with returned=True")
        return avg
    w = tensor_of(st, weights)
    if w.ndim != x.ndim:
        if axis is None or w.ndim != 1:
            raise TypeError("np.average: 1D weights expected when shapes of a and weights differ")
        shape = [1] * x.ndim
        ax = checked_axis(axis, x.ndim)
        shape[ax] = w.shape[0]
        w = w.reshape(*shape)
    num = (x * w).sum(axis=axis, keepdims=keepdims)
    den = (w * full_of(x, 1, w._dtype)).sum(axis=axis, keepdims=keepdims)
    if returned:
        graph_break(st, "np.average with returned=True")
    return true_divide(num, den)


def nansum(x, axis=None, dtype=None, out=None, keepdims=False, **kw):
    st = state_of(x)
    unsupported(st, "np.nansum", out=out, **kw)
    x = tensor_of(st, x)
    if x._dtype in FLOAT:
        x = where(isnan(x), 0.0, x)
    return x.sum(axis=axis, dtype=dtype, keepdims=keepdims)


def nanmean(x, axis=None, dtype=None, out=None, keepdims=False, **kw):
    st = state_of(x)
    unsupported(st, "np.nanmean", out=out, **kw)
    x = to_float(tensor_of(st, x))
    ok = ~isnan(x)
    s = where(ok, x, 0.0).sum(axis=axis, keepdims=keepdims)
    n = ok.astype(x._dtype).sum(axis=axis, keepdims=keepdims)
    return s / n


def nanmax(x, axis=None, out=None, keepdims=False, **kw):
    st = state_of(x)
    unsupported(st, "np.nanmax", out=out, **kw)
    x = tensor_of(st, x)
    if x._dtype not in FLOAT:
        return x.max(axis, keepdims)
    nan = isnan(x)  # an all-NaN slice is NaN (NumPy warns), not the fill
    return where(all(nan, axis, keepdims=keepdims), math.nan, where(nan, -math.inf, x).max(axis, keepdims))


def nanmin(x, axis=None, out=None, keepdims=False, **kw):
    st = state_of(x)
    unsupported(st, "np.nanmin", out=out, **kw)
    x = tensor_of(st, x)
    if x._dtype not in FLOAT:
        return x.min(axis, keepdims)
    nan = isnan(x)
    return where(all(nan, axis, keepdims=keepdims), math.nan, where(nan, math.inf, x).min(axis, keepdims))


def _nanarg(x, axis, keepdims, name):
    st = state_of(x)
    x = tensor_of(st, x)
    pick = reductions.argmax if name == "nanargmax" else reductions.argmin
    if x._dtype not in FLOAT:
        return pick(x, axis, keepdims)
    nan = isnan(x)
    if x.size != 0:  # an empty one is argmax's error, as NumPy's
        stops_where(st, all(nan, axis))  # NumPy's "All-NaN slice encountered"
    return pick(where(nan, -math.inf if name == "nanargmax" else math.inf, x), axis, keepdims)


@implements(np.nanargmax)
def nanargmax(a, axis=None, out=None, *, keepdims=False):
    unsupported(state_of(a), "np.nanargmax", out=out)
    return _nanarg(a, axis, keepdims, "nanargmax")


@implements(np.nanargmin)
def nanargmin(a, axis=None, out=None, *, keepdims=False):
    unsupported(state_of(a), "np.nanargmin", out=out)
    return _nanarg(a, axis, keepdims, "nanargmin")


# -- the table's entries --------------------------------------------------------
implements(np.var)(var)
implements(np.std)(std)
implements(np.prod)(prod)
implements(np.cumsum)(cumsum)
implements(np.cumprod)(cumprod)
implements(numpy_has("cumulative_sum"))(cumulative_sum)
implements(numpy_has("cumulative_prod"))(cumulative_prod)
implements(np.ptp)(ptp)
implements(np.any)(any)
implements(np.all)(all)
implements(np.count_nonzero)(count_nonzero)
implements(np.average)(average)
implements(np.nansum)(nansum)
implements(np.nanmean)(nanmean)
implements(np.nanmax)(nanmax)
implements(np.nanmin)(nanmin)
