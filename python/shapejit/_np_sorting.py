"""NumPy's sorting and searching on tracing values: sort and argsort (the
`sort` and `argsort` ops: ascending, NaNs last, equal elements in their
order), the median from the sorted line, searchsorted by counting."""
from __future__ import annotations

import numpy as np

from . import _tracing as T
from ._np_base import _axis, _emit, _float, _no, _st, _t
from ._np_elementwise import isnan


def _ordered(op, a, axis, kind, order):
    st = _st(a)
    _no(st, f"np.{op}", order=order)
    x = _t(st, a)
    if axis is None:
        x, axis = x.reshape(-1), 0
    if x.ndim == 0:
        if op == "argsort":  # NumPy sorts a 0-d array's one index as a 1-d one, axis and all
            _axis(axis, 1)
            return _emit(st, "arange", [0, 1, 1], {"dtype": "i64"})
        raise np.exceptions.AxisError("axis -1 is out of bounds for array of dimension 0")
    return _emit(st, op, [x], {"dim": _axis(axis, x.ndim)})


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    return _ordered("sort", a, axis, kind, order)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """Equal elements keep their order (kind="stable"'s indices; NumPy's
    default kind leaves that order unspecified)."""
    return _ordered("argsort", a, axis, kind, order)


def _along(x, axis, start):
    """x's one-wide slice at `start` along `axis`."""
    return _emit(x._st, "slice", [x, start, start + 1, 1], {"dim": axis})


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    st = _st(a)
    _no(st, "np.median", out=out)
    x = _t(st, a)
    shape = x.shape
    if axis is None:
        x, ax = x.reshape(-1), 0
    elif isinstance(axis, (tuple, list)):
        T._break(st, "np.median over several axes")
    else:
        ax = _axis(axis, x.ndim)
    n = x.shape[ax]
    if bool(n == 0):
        T._break(st, "np.median of an empty line (NaN and a warning, in NumPy)")
    s = _float(_emit(st, "sort", [x], {"dim": ax}))
    m = (_along(s, ax, (n - 1) // 2) + _along(s, ax, n // 2)) / 2
    if s._dtype in ("f32", "f64"):
        last = _along(s, ax, n - 1)  # NaNs sort last: the line has one when its last is NaN
        m = T.where(isnan(last), last, m)
    if keepdims:
        return m.reshape(*[1] * len(shape)) if axis is None else m
    m = m.reshape(()) if axis is None else m.squeeze(ax)
    return T.as_scalar(m._fresh()) if m.ndim == 0 else m  # a 0-d median is NumPy's scalar


def searchsorted(a, v, side="left", sorter=None):
    """Where v's values would go in the sorted 1-D a: the count of a's
    elements before each (NaNs last, as NumPy sorts them)."""
    st = _st(a, v)
    _no(st, "np.searchsorted", sorter=sorter)
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r})")
    a = _t(st, a)
    if a.ndim != 1:
        raise ValueError("object too deep for desired array")
    v = _t(st, v, a._dtype)
    a, v = T.promote(st, a, v)
    col = T.expand_dims(v, -1)
    if side == "left":
        before = a < col
        if a._dtype in ("f32", "f64"):
            before = before | (isnan(col) & ~isnan(a))
    else:
        before = a <= col
        if a._dtype in ("f32", "f64"):
            before = before | isnan(col)
    return before.sum(axis=-1)
