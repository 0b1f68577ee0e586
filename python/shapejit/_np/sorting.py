"""NumPy's sorting and searching on tracing values: sort and argsort (the
`sort` and `argsort` ops: ascending, NaNs last, equal elements in their
order), the median from the sorted line, searchsorted by counting."""
from __future__ import annotations

import numpy as np

from .._trace.promotion import promote
from .._trace.state import emit, graph_break, state_of
from .._trace.tensor import as_scalar
from .arithmetic import where
from .base import checked_axis, tensor_of, to_float, unsupported
from .elementwise import isnan
from .shapes import expand_dims
from .registry import implements


def _ordered(op, a, axis, kind, order):
    st = state_of(a)
    unsupported(st, f"np.{op}", order=order)
    x = tensor_of(st, a)
    if axis is None:
        x, axis = x.reshape(-1), 0
    if x.ndim == 0:
        if op == "argsort":  # NumPy sorts a 0-d array's one index as a 1-d one, axis and all
            checked_axis(axis, 1)
            return emit(st, "arange", [0, 1, 1], {"dtype": "i64"})
        raise np.exceptions.AxisError("axis -1 is out of bounds for array of dimension 0")
    return emit(st, op, [x], {"dim": checked_axis(axis, x.ndim)})


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    return _ordered("sort", a, axis, kind, order)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """Equal elements keep their order (kind="stable"'s indices; NumPy's
    default kind leaves that order unspecified)."""
    return _ordered("argsort", a, axis, kind, order)


def _along(x, axis, start):
    """x's one-wide slice at `start` along `axis`."""
    return emit(x._st, "slice", [x, start, start + 1, 1], {"dim": axis})


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    st = state_of(a)
    unsupported(st, "np.median", out=out)
    x = tensor_of(st, a)
    shape = x.shape
    if axis is None:
        x, ax = x.reshape(-1), 0
    elif isinstance(axis, (tuple, list)):
        graph_break(st, "np.median over several axes")
    else:
        ax = checked_axis(axis, x.ndim)
    n = x.shape[ax]
    if bool(n == 0):
        graph_break(st, "np.median of an empty line (NaN and a warning, in NumPy)")
    s = to_float(emit(st, "sort", [x], {"dim": ax}))
    m = (_along(s, ax, (n - 1) // 2) + _along(s, ax, n // 2)) / 2
    if s._dtype in ("f32", "f64"):
        last = _along(s, ax, n - 1)  # NaNs sort last: the line has one when its last is NaN
        m = where(isnan(last), last, m)
    if keepdims:
        return m.reshape(*[1] * len(shape)) if axis is None else m
    m = m.reshape(()) if axis is None else m.squeeze(ax)
    return as_scalar(m._fresh()) if m.ndim == 0 else m  # a 0-d median is NumPy's scalar


def searchsorted(a, v, side="left", sorter=None):
    """Where v's values would go in the sorted 1-D a: the count of a's
    elements before each (NaNs last, as NumPy sorts them)."""
    st = state_of(a, v)
    unsupported(st, "np.searchsorted", sorter=sorter)
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r})")
    a = tensor_of(st, a)
    if a.ndim != 1:
        raise ValueError("object too deep for desired array")
    v = tensor_of(st, v, a._dtype)
    a, v = promote(st, a, v)
    col = expand_dims(v, -1)
    if side == "left":
        before = a < col
        if a._dtype in ("f32", "f64"):
            before = before | (isnan(col) & ~isnan(a))
    else:
        before = a <= col
        if a._dtype in ("f32", "f64"):
            before = before | isnan(col)
    return before.sum(axis=-1)


# -- the table's entries --------------------------------------------------------
implements(np.sort)(sort)
implements(np.argsort)(argsort)
implements(np.median)(median)
implements(np.searchsorted)(searchsorted)
