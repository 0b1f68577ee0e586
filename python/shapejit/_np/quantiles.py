"""NumPy's quantiles on tracing values, by the linear method, as NumPy
computes them: quantile, percentile, their NaN-ignoring kin, and nanmedian."""
from __future__ import annotations

import math

import numpy as np

from .._trace.dtypes import FLOAT
from .._trace.state import as_tensor, emit, graph_break, state_of
from .._trace.tensor import Tensor, as_scalar
from . import arithmetic, elementwise, products, shapes, sorting
from .base import checked_axis, tensor_of, to_float, unsupported
from .registry import implements

isnan = elementwise.isnan
where = arithmetic.where


# -- quantiles -------------------------------------------------------------------------

def _lerp(a, b, t):
    """NumPy's lerp: a + (b - a) t, and b - (b - a) (1 - t) where t >= 0.5."""
    diff = b - a
    return where(t >= 0.5, b - diff * (1 - t), a + diff * t)


def _quantile(st, a, q, axis, keepdims, method, what, scale, ignore_nan=False):
    """NumPy's quantiles by the linear method: for each q, the value at
    (n - 1) q of the sorted line, between its two neighbours as NumPy's lerp
    puts it; a line with a NaN is NaN, or (`ignore_nan`) its NaNs are left
    out, n is the count of the others and a line of NaNs alone is NaN."""
    if method != "linear":
        graph_break(st, f"np.{what} with method={method!r}")
    x = tensor_of(st, a)
    if x._dtype == "bool":
        graph_break(st, f"np.{what} of a bool array (NumPy's subtract of booleans raises where it has elements)")
    if isinstance(q, Tensor) or not isinstance(q, (int, float, np.number, list, tuple, np.ndarray)):
        graph_break(st, f"np.{what} of quantiles that are traced values (NumPy checks their range first)")
    weak = isinstance(q, (int, float)) and not isinstance(q, bool)  # a Python number: float32 stays float32
    qs = np.asarray(q, dtype=np.float64) / scale
    if not (np.all(qs >= 0) and np.all(qs <= 1)):
        raise ValueError("Percentiles must be in the range [0, 100]" if scale == 100 else "Quantiles must be in the range [0, 1]")
    shape = x.shape
    if axis is None:
        x, ax = x.reshape(-1), 0
    elif isinstance(axis, (tuple, list)):
        graph_break(st, f"np.{what} over several axes")
    else:
        ax = checked_axis(axis, x.ndim)
    n = x.shape[ax]
    if n == 0 and not ignore_nan:
        raise IndexError("index -1 is out of bounds for axis 0 with size 0")
    # Integers stay integers to the lerp, as NumPy's: b - a is taken in
    # their dtype (and wraps there) before it meets the float weight.
    s = shapes.moveaxis(sorting.sort(x, axis=ax), ax, 0)  # NaNs sort last
    if ignore_nan:
        count = (~isnan(s)).astype("i64").sum(axis=0)
        nan_line = count == 0
    else:
        count = shapes.broadcast_to(as_tensor(st, n), s.shape[1:])
        nan_line = isnan(emit(st, "slice", [s, n - 1, n, 1], {"dim": 0}).reshape(*s.shape[1:]))
    last = count - 1
    top = last.astype("f64")
    gathered = lambda i: products.take_along_axis(s, arithmetic.maximum(i, 0)[None], axis=0)[0]  # noqa: E731
    out = []
    for value in qs.ravel().tolist():
        virtual = top * value
        below = elementwise.floor(virtual)
        prev = where(virtual >= top, last, below.astype("i64"))
        nxt = where(virtual >= top, last, prev + 1)
        gamma = virtual - below
        gamma._weak = weak
        out.append(where(nan_line, math.nan, _lerp(gathered(prev), gathered(nxt), gamma)))
    if qs.ndim == 0:
        result = out[0]
    else:
        result = shapes.stack(out, axis=0).reshape(*qs.shape, *s.shape[1:])
    if keepdims:
        if axis is None:
            result = result.reshape(*qs.shape, *([1] * len(shape)))
        else:
            result = shapes.expand_dims(result, qs.ndim + ax)
    return as_scalar(result)


def _quantile_function(name, scale, ignore_nan):
    """np.<name>: quantiles (scale 1) or percentiles (100), of every value or
    of those that are not NaN, in NumPy's signature."""
    def f(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None,
          interpolation=None):
        st = state_of(a, q)
        unsupported(st, f"np.{name}", out=out, weights=weights, interpolation=interpolation)
        return _quantile(st, a, q, axis, keepdims, method, name, scale, ignore_nan=ignore_nan)
    f.__name__ = name
    return f


quantile = implements(np.quantile)(_quantile_function("quantile", 1, False))
percentile = implements(np.percentile)(_quantile_function("percentile", 100, False))
nanquantile = implements(np.nanquantile)(_quantile_function("nanquantile", 1, True))
nanpercentile = implements(np.nanpercentile)(_quantile_function("nanpercentile", 100, True))


@implements(np.nanmedian)
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The mean of the middle one or two of a line's values that are not NaN; NaN for a line of NaNs."""
    st = state_of(a)
    unsupported(st, "np.nanmedian", out=out)
    x = tensor_of(st, a)
    shape = x.shape
    x, ax = sorting.one_line_axis(st, x, axis, "nanmedian")
    x = to_float(x)
    if x._dtype not in FLOAT:
        return sorting.median(a, axis, keepdims=keepdims)
    s = shapes.moveaxis(sorting.sort(x, axis=ax), ax, 0)
    count = (~isnan(s)).astype("i64").sum(axis=0)
    at = lambda i: products.take_along_axis(s, arithmetic.maximum(i, 0)[None], axis=0)[0]  # noqa: E731
    m = (at(arithmetic.floor_divide(count - 1, 2)) + at(arithmetic.floor_divide(count, 2))) / 2
    m = where(count == 0, math.nan, m)
    if keepdims:
        m = m.reshape(*([1] * len(shape))) if axis is None else shapes.expand_dims(m, ax)
    return as_scalar(m)
