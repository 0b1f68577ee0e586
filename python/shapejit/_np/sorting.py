"""NumPy's sorting and searching on tracing values: sort and argsort (the
`sort` and `argsort` ops: ascending, NaNs last, equal elements in their
order), the median from the sorted line, searchsorted by counting."""
from __future__ import annotations

import numpy as np

from .._trace.promotion import promote
from .._trace.state import emit, graph_break, state_of
from .._trace.tensor import as_scalar
from .arithmetic import where
from .base import checked_axis, sym_min, tensor_of, to_float, unsupported
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


def one_line_axis(st, x, axis, what):
    """(x, the axis of its lines) for np.median's kind of `axis`: None
    flattens x; several axes are a graph break."""
    if axis is None:
        return x.reshape(-1), 0
    if isinstance(axis, (tuple, list)):
        graph_break(st, f"np.{what} over several axes")
    return x, checked_axis(axis, x.ndim)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    st = state_of(a)
    unsupported(st, "np.median", out=out)
    x = tensor_of(st, a)
    shape = x.shape
    x, ax = one_line_axis(st, x, axis, "median")
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


@implements(np.lexsort)
def lexsort(keys, axis=-1):
    """The indices that sort by the last key, ties by the one before, ...:
    a stable sort by each key in turn, from the first (NaNs last, as in argsort)."""
    st = state_of(*keys) if isinstance(keys, (list, tuple)) else state_of(keys)
    ks = list(keys) if isinstance(keys, (list, tuple)) else [keys[i] for i in range(int(tensor_of(st, keys).shape[0]))]
    if not ks:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    ks = [tensor_of(st, k) for k in ks]
    if any(k.ndim != 1 for k in ks) or axis not in (-1, 0):
        graph_break(st, "np.lexsort of keys that are not 1-d")
    n = ks[0].shape[0]
    if any(k.shape[0] != n for k in ks):
        raise ValueError("all keys need to be the same shape")
    order = argsort(ks[0])
    for k in ks[1:]:
        order = emit(st, "index_select", [order, argsort(emit(st, "index_select", [k, order], {"dim": 0}))], {"dim": 0})
    return order


@implements(np.unique)
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True, sorted=True):
    """The sorted distinct values of ar flattened (NaNs one, with
    equal_nan), and where asked: the index of each one's first occurrence,
    the index of each element's value among them (in ar's shape), and each
    one's count. Their number is the data's (the op set's masked_select)."""
    st = state_of(ar)
    if axis is not None or not sorted:
        graph_break(st, "np.unique along an axis or unsorted")
    flat = tensor_of(st, ar)
    shape = flat.shape
    flat = flat.reshape(-1)
    if return_index or return_inverse:
        perm = argsort(flat)  # stable: the first occurrence first, as NumPy's mergesort
        aux = emit(st, "index_select", [flat, perm], {"dim": 0})
    else:
        aux = sort(flat)
    n = aux.shape[0]
    first = emit(st, "slice", [emit(st, "full", [1], {"value": 1, "dtype": "bool"}), 0, sym_min(n, 1), 1], {"dim": 0})
    hi, lo = emit(st, "slice", [aux, 1, n, 1], {"dim": 0}), emit(st, "slice", [aux, 0, n - 1, 1], {"dim": 0})
    new = hi != lo
    if equal_nan and aux._dtype in ("f32", "f64"):
        new = new & ~(isnan(hi) & isnan(lo))  # NaNs sort last: the first of them stands for all
    mask = emit(st, "concat", [first, new], {"dim": 0})
    values = emit(st, "masked_select", [aux, mask])
    out = [values]
    if return_index:
        out.append(emit(st, "masked_select", [perm, mask]))
    if return_inverse:
        rank = mask.astype("i64").cumsum() - 1
        out.append(emit(st, "index_select", [rank, argsort(perm)], {"dim": 0}).reshape(*shape))  # argsort(perm): its inverse
    if return_counts:
        starts = emit(st, "nonzero", [mask]).reshape(-1)
        bounds = emit(st, "concat", [starts, emit(st, "full", [1], {"value": 0, "dtype": "i64"}) + n], {"dim": 0})
        m = bounds.shape[0]
        out.append(emit(st, "slice", [bounds, 1, m, 1], {"dim": 0}) - emit(st, "slice", [bounds, 0, m - 1, 1], {"dim": 0}))
    return tuple(out) if len(out) > 1 else values


# The array API's unique functions, which NumPy answers sorted, NaNs each
# their own (equal_nan=False), in its named tuples. unique_values is not
# here: NumPy's is in its hash table's order, not a sort's.
_SETOPS = getattr(np.lib, "_arraysetops_impl", None)


def _named(name, parts):
    result = getattr(_SETOPS, name, None)
    return result(*parts) if result is not None else tuple(parts)


if hasattr(np, "unique_counts"):
    @implements(np.unique_counts)
    def unique_counts(x, /):
        return _named("UniqueCountsResult", unique(x, return_counts=True, equal_nan=False))

    @implements(np.unique_inverse)
    def unique_inverse(x, /):
        return _named("UniqueInverseResult", unique(x, return_inverse=True, equal_nan=False))

    @implements(np.unique_all)
    def unique_all(x, /):
        return _named("UniqueAllResult", unique(x, return_index=True, return_inverse=True, return_counts=True, equal_nan=False))

