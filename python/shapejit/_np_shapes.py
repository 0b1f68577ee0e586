"""NumPy's shape functions on tracing values: joining and splitting,
rearranging, broadcasting, triangles and diagonals, differences."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from . import _tracing as T
from ._tracing import SymInt
from ._np_base import _axis, _emit, _fill, _no, _smax, _smin, _st, _t, _zero


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
    if isinstance(indices_or_sections, (int, np.integer, SymInt)):
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
    if isinstance(indices_or_sections, (int, np.integer, SymInt)):
        xt = _t(st, x)
        n = xt.shape[_axis(axis, xt.ndim)]
        if not bool(n % int(indices_or_sections) == 0):
            raise ValueError("array split does not result in an equal division")
    return array_split(x, indices_or_sections, axis)


def hsplit(x, indices_or_sections):
    x = _t(_st(x), x)
    return split(x, indices_or_sections, axis=1 if x.ndim > 1 else 0)


def vsplit(x, indices_or_sections):
    if _t(_st(x), x).ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(x, indices_or_sections, axis=0)


def dsplit(x, indices_or_sections):
    if _t(_st(x), x).ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(x, indices_or_sections, axis=2)


def unstack(x, /, *, axis=0):
    st = _st(x)
    x = _t(st, x)
    axis = _axis(axis, x.ndim)
    from ._indexing import getitem
    return tuple(getitem(x, (slice(None),) * axis + (i,)) for i in range(int(x.shape[axis])))


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
    """A view in NumPy: it follows writes into x, and a write into it is one into x."""
    st = _st(x)
    x = _t(st, x)
    axes = list(range(x.ndim)) if axis is None else [_axis(a, x.ndim) for a in (axis if isinstance(axis, (list, tuple)) else [axis])]
    if not axes:
        return T.as_scalar(x._fresh())  # a 0-d array flipped is its element, a copy

    def flipped(p):
        for a in axes:
            p = _reversed(p, a)
        return p
    return T._View.of(flipped(x), x, "flip", flipped)


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
        m = _smax(n, 1)  # an empty axis rolls to itself, with no division by 0
        k = n - (s % m) if isinstance(s, SymInt) else n - operator.index(s) % m
        head = _emit(st, "slice", [x, k, T._END, 1], {"dim": a})
        tail = _emit(st, "slice", [x, 0, k, 1], {"dim": a})
        x = _emit(st, "concat", [head, tail], {"dim": a})
    return x


def repeat(x, repeats, axis=None):
    st = _st(x)
    x = _t(st, x)
    if not isinstance(repeats, (int, np.integer, SymInt)):
        T._break(st, "np.repeat with a count per element")
    if axis is None or x.ndim == 0:  # a 0-d array repeats as a 1-d one, whatever the axis
        x, axis = x.reshape(-1), 0
    axis = _axis(axis, x.ndim)
    shape = list(x.shape)
    e = T.expand_dims(x, axis + 1)
    target = shape[:axis + 1] + [repeats] + shape[axis + 1:]
    e = _emit(st, "expand", [e, *[T._shape_operand(s) for s in target]])
    shape[axis] = shape[axis] * repeats
    return e.reshape(*shape)._fresh()  # a copy in NumPy


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
    return e.reshape(*final)._fresh()  # a copy in NumPy


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




def eye(N, M=None, k=0, dtype=float, order="C", *, device=None, like=None):
    st = _st(N, M, k)
    M = N if M is None else M
    rows = _emit(st, "arange", [0, T._shape_operand(N), 1], {"dtype": "i64"})
    cols = _emit(st, "arange", [0, T._shape_operand(M), 1], {"dtype": "i64"})
    return (T.expand_dims(rows, 1) + k == T.expand_dims(cols, 0)).astype(T.dtype_name(dtype))


def identity(n, dtype=None, *, like=None):
    return eye(n, dtype=float if dtype is None else dtype)


def diagonal(x, offset=0, axis1=0, axis2=1):
    """A read-only view in NumPy: it follows writes into x, and a write into it is NumPy's ValueError."""
    st = _st(x)
    x = _t(st, x)
    along = lambda p: _diagonal(p, offset, axis1, axis2)  # noqa: E731
    return T._View.of(along(x), x, "diagonal", along)


def _diagonal(x, offset, axis1, axis2):
    st = x._st
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


def fill_diagonal(a, val, wrap=False):
    """NumPy's fill_diagonal, in place: a[i, i, ...] = val where every dim's
    index is the same, as a write of where(on the diagonal, val, a) (the
    tall matrix's wrap, and an array of values, are NumPy's to run)."""
    st = _st(a, val)
    if not isinstance(a, T.Tensor):
        T._break(st, "np.fill_diagonal into an array that is not traced")
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if wrap or np.ndim(val) != 0:
        T._break(st, "np.fill_diagonal with wrap=True or an array of values")
    if a.ndim > 2 and any(bool(a.shape[d] != a.shape[0]) for d in range(1, a.ndim)):
        raise ValueError("All dimensions of input must be of equal length")
    index = [_emit(st, "arange", [0, a.shape[d], 1], {"dtype": "i64"}).reshape(*[-1 if k == d else 1 for k in range(a.ndim)])
             for d in range(a.ndim)]
    on = index[0] == index[1]
    for other in index[2:]:
        on = on & (index[0] == other)
    a[...] = T.where(on, val, a)
