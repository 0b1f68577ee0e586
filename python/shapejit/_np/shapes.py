"""NumPy's shape functions on tracing values: joining and splitting,
rearranging, broadcasting, triangles and diagonals, differences."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from .._trace.dtypes import DTYPES, END, NAMES, dtype_name
from .._trace.sizes import SymInt, shape_operand
from .._trace.state import emit, graph_break, state_of
from .._trace.tensor import Tensor, View, as_scalar
from .arithmetic import minimum, where
from .base import axis_list, checked_axis, fill_of, sym_max, sym_min, tensor_of, unsupported, zero_of
from .registry import implements, numpy_has


# -- the op set's layout ops --------------------------------------------------------------

def reshape(x, shape, order="C"):
    x = tensor_of(state_of(x), x)
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    return emit(x._st, "reshape", [x, *[shape_operand(s) for s in shape]])


def ravel(x, order="C"):
    return reshape(x, -1)


def transpose(x, axes=None):
    x = tensor_of(state_of(x), x)
    perm = [operator.index(p) for p in axes] if axes else list(range(x.ndim))[::-1]
    if len(perm) != x.ndim:
        raise ValueError("axes don't match array")
    perm = [checked_axis(p, x.ndim) for p in perm]
    if len(set(perm)) != len(perm):
        raise ValueError("repeated axis in transpose")
    return emit(x._st, "permute", [x], {"perm": perm})


def swapaxes(x, axis1, axis2):
    x = tensor_of(state_of(x), x)
    dim0, dim1 = checked_axis(axis1, x.ndim, "axis1: "), checked_axis(axis2, x.ndim, "axis2: ")
    return emit(x._st, "transpose", [x], {"dim0": dim0, "dim1": dim1})


def squeeze(x, axis=None):
    x = tensor_of(state_of(x), x)
    if axis is None:
        dims = [d for d in range(x.ndim) if x.shape[d] == 1]
    else:
        dims = axis_list(axis, x.ndim)
    if not dims:
        return x
    return emit(x._st, "squeeze", [x], {"dims": dims})


def expand_dims(x, axis):
    st = state_of(x)
    x = tensor_of(st, x)
    axes = axis_list(axis, x.ndim)
    rank = x.ndim + len(axes)
    for a in sorted(d % rank for d in axes):
        x = emit(st, "unsqueeze", [x], {"dim": a})
    return x


def concatenate(arrays, axis=0):
    arrays = list(arrays)
    st = state_of(*arrays)
    ts = [tensor_of(st, a) for a in arrays]
    target = ts[0]._dtype
    for t in ts[1:]:
        if t._dtype != target:
            target = NAMES[np.result_type(DTYPES[target], t.dtype)]
    ts = [t.astype(target) for t in ts]
    if axis is None:
        ts, axis = [t.reshape(-1) for t in ts], 0
    return ts[0] if len(ts) == 1 else emit(st, "concat", ts, {"dim": operator.index(axis)})


def stack(arrays, axis=0):
    arrays = list(arrays)
    st = state_of(*arrays)
    return concatenate([expand_dims(tensor_of(st, a), axis) for a in arrays], axis=axis)


def broadcast_to(x, shape):
    """A read-only view in NumPy."""
    x = tensor_of(state_of(x), x)
    shape = tuple(shape_operand(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    expand = lambda p: emit(p._st, "expand", [p, *shape])  # noqa: E731
    return View.of(expand(x), x, "broadcast_to", expand)


def shape(x):
    return x.shape


def ndim(x):
    return x.ndim


def atleast_1d(*arys):
    st = state_of(*arys)
    out = [tensor_of(st, a) for a in arys]
    out = [a.reshape(1) if a.ndim == 0 else a for a in out]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_2d(*arys):
    st = state_of(*arys)
    out = []
    for a in arys:
        a = tensor_of(st, a)
        if a.ndim == 0:
            a = a.reshape(1, 1)
        elif a.ndim == 1:
            a = expand_dims(a, 0)
        out.append(a)
    return out[0] if len(out) == 1 else tuple(out)


def atleast_3d(*arys):
    st = state_of(*arys)
    out = []
    for a in arys:
        a = tensor_of(st, a)
        if a.ndim == 0:
            a = a.reshape(1, 1, 1)
        elif a.ndim == 1:
            a = expand_dims(a, (0, 2))
        elif a.ndim == 2:
            a = expand_dims(a, 2)
        out.append(a)
    return out[0] if len(out) == 1 else tuple(out)


def _seq(tup):
    tup = list(tup)
    return state_of(*tup), tup


def hstack(tup, *, dtype=None, casting="same_kind"):
    st, tup = _seq(tup)
    arrs = [atleast_1d(tensor_of(st, a)) for a in tup]
    out = concatenate(arrs, axis=0 if arrs[0].ndim == 1 else 1)
    return out.astype(dtype) if dtype is not None else out


def vstack(tup, *, dtype=None, casting="same_kind"):
    st, tup = _seq(tup)
    out = concatenate([atleast_2d(tensor_of(st, a)) for a in tup], axis=0)
    return out.astype(dtype) if dtype is not None else out


def dstack(tup):
    st, tup = _seq(tup)
    return concatenate([atleast_3d(tensor_of(st, a)) for a in tup], axis=2)


def column_stack(tup):
    st, tup = _seq(tup)
    cols = []
    for a in tup:
        a = tensor_of(st, a)
        cols.append(expand_dims(a, 1) if a.ndim < 2 else a)
    return concatenate(cols, axis=1)


def _split_at(x, bounds, axis):
    """The parts of x between consecutive bounds (sizes or SymInts) along axis."""
    st = x._st
    parts = []
    for start, stop in zip(bounds[:-1], bounds[1:]):
        parts.append(emit(st, "slice", [x, start, stop, 1], {"dim": axis}))
    return parts


def array_split(x, indices_or_sections, axis=0):
    st = state_of(x)
    x = tensor_of(st, x)
    axis = checked_axis(axis, x.ndim)
    n = x.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer, SymInt)):
        k = int(indices_or_sections)
        if k <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extra = n // k, n % k
        bounds = [0]
        for i in range(1, k + 1):
            bounds.append(each * i + sym_min(i, extra))
        return _split_at(x, bounds, axis)
    idx = [shape_operand(i) if not isinstance(i, (int, np.integer)) else int(i) for i in indices_or_sections]
    return _split_at(x, [0, *idx, END], axis)


def split(x, indices_or_sections, axis=0):
    st = state_of(x)
    if isinstance(indices_or_sections, (int, np.integer, SymInt)):
        xt = tensor_of(st, x)
        n = xt.shape[checked_axis(axis, xt.ndim)]
        if not bool(n % int(indices_or_sections) == 0):
            raise ValueError("array split does not result in an equal division")
    return array_split(x, indices_or_sections, axis)


def hsplit(x, indices_or_sections):
    x = tensor_of(state_of(x), x)
    return split(x, indices_or_sections, axis=1 if x.ndim > 1 else 0)


def vsplit(x, indices_or_sections):
    if tensor_of(state_of(x), x).ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(x, indices_or_sections, axis=0)


def dsplit(x, indices_or_sections):
    if tensor_of(state_of(x), x).ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(x, indices_or_sections, axis=2)


def unstack(x, /, *, axis=0):
    st = state_of(x)
    x = tensor_of(st, x)
    axis = checked_axis(axis, x.ndim)
    return tuple(x[(slice(None),) * axis + (i,)] for i in range(int(x.shape[axis])))


# -- rearranging ------------------------------------------------------------------------

def moveaxis(x, source, destination):
    st = state_of(x)
    x = tensor_of(st, x)
    src = [checked_axis(a, x.ndim) for a in (source if isinstance(source, (list, tuple)) else [source])]
    dst = [checked_axis(a, x.ndim) for a in (destination if isinstance(destination, (list, tuple)) else [destination])]
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return x.transpose(order)


def rollaxis(x, axis, start=0):
    st = state_of(x)
    x = tensor_of(st, x)
    axis = checked_axis(axis, x.ndim)
    start = start + x.ndim if start < 0 else start
    if axis < start:
        start -= 1
    if axis == start:
        return x
    order = [a for a in range(x.ndim) if a != axis]
    order.insert(start, axis)
    return x.transpose(order)


def matrix_transpose(x):
    st = state_of(x)
    x = tensor_of(st, x)
    return x.swapaxes(-1, -2)


def _reversed(x, axis):
    n = x.shape[axis]
    idx = emit(x._st, "arange", [n - 1, -1, -1], {"dtype": "i64"})
    return emit(x._st, "index_select", [x, idx], {"dim": axis})


def flip(x, axis=None):
    """A view in NumPy: it follows writes into x, and a write into it is one into x."""
    st = state_of(x)
    x = tensor_of(st, x)
    axes = list(range(x.ndim)) if axis is None else [checked_axis(a, x.ndim) for a in (axis if isinstance(axis, (list, tuple)) else [axis])]
    if not axes:
        return as_scalar(x._fresh())  # a 0-d array flipped is its element, a copy

    def flipped(p):
        for a in axes:
            p = _reversed(p, a)
        return p
    return View.of(flipped(x), x, "flip", flipped)


def fliplr(x):
    return flip(x, 1)


def flipud(x):
    return flip(x, 0)


def roll(x, shift, axis=None):
    st = state_of(x)
    x = tensor_of(st, x)
    if axis is None:
        return roll(x.reshape(-1), shift, 0).reshape(*x.shape)
    axes = axis if isinstance(axis, (list, tuple)) else [axis]
    shifts = shift if isinstance(shift, (list, tuple)) else [shift] * len(axes)
    for a, s in zip(axes, shifts):
        a = checked_axis(a, x.ndim)
        n = x.shape[a]
        m = sym_max(n, 1)  # an empty axis rolls to itself, with no division by 0
        k = n - (s % m) if isinstance(s, SymInt) else n - operator.index(s) % m
        head = emit(st, "slice", [x, k, END, 1], {"dim": a})
        tail = emit(st, "slice", [x, 0, k, 1], {"dim": a})
        x = emit(st, "concat", [head, tail], {"dim": a})
    return x


def repeat(x, repeats, axis=None):
    st = state_of(x)
    x = tensor_of(st, x)
    if not isinstance(repeats, (int, np.integer, SymInt)):
        graph_break(st, "np.repeat with a count per element")
    if axis is None or x.ndim == 0:  # a 0-d array repeats as a 1-d one, whatever the axis
        x, axis = x.reshape(-1), 0
    axis = checked_axis(axis, x.ndim)
    shape = list(x.shape)
    e = expand_dims(x, axis + 1)
    target = shape[:axis + 1] + [repeats] + shape[axis + 1:]
    e = emit(st, "expand", [e, *[shape_operand(s) for s in target]])
    shape[axis] = shape[axis] * repeats
    return e.reshape(*shape)._fresh()  # a copy in NumPy


def tile(x, reps):
    st = state_of(x)
    x = tensor_of(st, x)
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
    e = emit(st, "expand", [x.reshape(*inter), *[shape_operand(s) for s in target]])
    return e.reshape(*final)._fresh()  # a copy in NumPy


def pad(x, pad_width, mode="constant", **kwargs):
    st = state_of(x)
    x = tensor_of(st, x)
    if mode not in ("constant", "edge"):
        graph_break(st, f"np.pad with mode={mode!r}")
    value = kwargs.pop("constant_values", 0)
    if kwargs or isinstance(value, (list, tuple, np.ndarray)):
        graph_break(st, "np.pad with per-axis constants or other options")
    widths = np.broadcast_to(np.asarray(pad_width, dtype=object), (x.ndim, 2)) if x.ndim else np.zeros((0, 2))
    for a in range(x.ndim):
        before, after = (operator.index(w) for w in widths[a])
        parts = []
        if before:
            if mode == "constant":
                shape = list(x.shape)
                shape[a] = before
                parts.append(emit(st, "full", [shape_operand(s) for s in shape], {"value": fill_of(value, x), "dtype": x._dtype}))
            else:
                edge = emit(st, "slice", [x, 0, 1, 1], {"dim": a})
                parts.append(repeat(edge, before, a))
        parts.append(x)
        if after:
            if mode == "constant":
                shape = list(x.shape)
                shape[a] = after
                parts.append(emit(st, "full", [shape_operand(s) for s in shape], {"value": fill_of(value, x), "dtype": x._dtype}))
            else:
                edge = emit(st, "slice", [x, -1, END, 1], {"dim": a})
                parts.append(repeat(edge, after, a))
        if len(parts) > 1:
            x = emit(st, "concat", parts, {"dim": a})
    return x


def broadcast_arrays(*args, subok=False):
    st = state_of(*args)
    ts = [tensor_of(st, a) for a in args]
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
                    size = sym_max(size, s)
        shape.append(size)
    return tuple(emit(st, "expand", [t, *[shape_operand(s) for s in shape]]) for t in ts)


def tri(N, M=None, k=0, dtype=float, *, like=None):
    st = state_of(N, M)
    M = N if M is None else M
    rows = emit(st, "arange", [0, shape_operand(N), 1], {"dtype": "i64"})
    cols = emit(st, "arange", [0, shape_operand(M), 1], {"dtype": "i64"})
    mask = expand_dims(rows, 1) + k >= expand_dims(cols, 0)
    return mask.astype(dtype_name(dtype))


def _tri_mask(x, k):
    n, m = x.shape[-2], x.shape[-1]
    rows = emit(x._st, "arange", [0, n, 1], {"dtype": "i64"})
    cols = emit(x._st, "arange", [0, m, 1], {"dtype": "i64"})
    return expand_dims(rows, 1) + k >= expand_dims(cols, 0)


def tril(x, k=0):
    st = state_of(x)
    x = tensor_of(st, x)
    if x.ndim < 2:
        graph_break(st, "np.tril of an array below rank 2")
    return where(_tri_mask(x, k), x, zero_of(x))


def triu(x, k=0):
    st = state_of(x)
    x = tensor_of(st, x)
    if x.ndim < 2:
        graph_break(st, "np.triu of an array below rank 2")
    return where(_tri_mask(x, k - 1), zero_of(x), x)


def eye(N, M=None, k=0, dtype=float, order="C", *, device=None, like=None):
    st = state_of(N, M, k)
    M = N if M is None else M
    rows = emit(st, "arange", [0, shape_operand(N), 1], {"dtype": "i64"})
    cols = emit(st, "arange", [0, shape_operand(M), 1], {"dtype": "i64"})
    return (expand_dims(rows, 1) + k == expand_dims(cols, 0)).astype(dtype_name(dtype))


def identity(n, dtype=None, *, like=None):
    return eye(n, dtype=float if dtype is None else dtype)


def diagonal(x, offset=0, axis1=0, axis2=1):
    """A read-only view in NumPy: it follows writes into x, and a write into it is NumPy's ValueError."""
    st = state_of(x)
    x = tensor_of(st, x)
    along = lambda p: _diagonal(p, offset, axis1, axis2)  # noqa: E731
    return View.of(along(x), x, "diagonal", along)


def _diagonal(x, offset, axis1, axis2):
    st = x._st
    a1, a2 = checked_axis(axis1, x.ndim), checked_axis(axis2, x.ndim)
    rest = [a for a in range(x.ndim) if a not in (a1, a2)]
    x = x.transpose(rest + [a1, a2])
    n, m = x.shape[-2], x.shape[-1]
    if offset >= 0:
        length = sym_max(sym_min(n, m - offset), 0)
        r0, c0 = 0, offset
    else:
        length = sym_max(sym_min(n + offset, m), 0)
        r0, c0 = -offset, 0
    i = emit(st, "arange", [0, shape_operand(length), 1], {"dtype": "i64"})
    flat = x.reshape(*x.shape[:-2], n * m)
    idx = (i + r0) * m + (i + c0)
    return emit(st, "index_select", [flat, idx], {"dim": x.ndim - 2})


def diag(v, k=0):
    st = state_of(v)
    v = tensor_of(st, v)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = v.shape[0]
    size = n + builtins.abs(k)
    if bool(n == 0):
        return emit(st, "full", [shape_operand(size), shape_operand(size)], {"value": fill_of(0, v), "dtype": v._dtype})
    # (r, c) on the k-th diagonal holds v[r] (k >= 0) or v[c] (k < 0); the
    # index is clamped into v elsewhere, where the mask drops it.
    i = emit(st, "arange", [0, shape_operand(size), 1], {"dtype": "i64"})
    picked = emit(st, "index_select", [v, minimum(i, n - 1)], {"dim": 0})
    along = expand_dims(picked, 1) if k >= 0 else expand_dims(picked, 0)
    return where(eye(size, size, k, dtype=bool), along, zero_of(v))


def trace(x, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    st = state_of(x)
    unsupported(st, "np.trace", out=out)
    d = diagonal(x, offset, axis1, axis2)
    return d.sum(axis=-1, dtype=dtype)


def diff(x, n=1, axis=-1, prepend=None, append=None):
    st = state_of(x)
    x = tensor_of(st, x)
    axis = checked_axis(axis, x.ndim)
    if prepend is not None:
        x = concatenate([expand_dims(tensor_of(st, prepend), axis) if tensor_of(st, prepend).ndim < x.ndim else tensor_of(st, prepend), x], axis)
    if append is not None:
        x = concatenate([x, expand_dims(tensor_of(st, append), axis) if tensor_of(st, append).ndim < x.ndim else tensor_of(st, append)], axis)
    for _ in range(n):
        hi = emit(st, "slice", [x, 1, END, 1], {"dim": axis})
        lo = emit(st, "slice", [x, 0, -1, 1], {"dim": axis})
        x = hi - lo if x._dtype != "bool" else hi != lo
    return x


def fill_diagonal(a, val, wrap=False):
    """NumPy's fill_diagonal, in place: a[i, i, ...] = val where every dim's
    index is the same, as a write of where(on the diagonal, val, a) (the
    tall matrix's wrap, and an array of values, are NumPy's to run)."""
    st = state_of(a, val)
    if not isinstance(a, Tensor):
        graph_break(st, "np.fill_diagonal into an array that is not traced")
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if wrap or np.ndim(val) != 0:
        graph_break(st, "np.fill_diagonal with wrap=True or an array of values")
    if a.ndim > 2 and any(bool(a.shape[d] != a.shape[0]) for d in range(1, a.ndim)):
        raise ValueError("All dimensions of input must be of equal length")
    index = [emit(st, "arange", [0, a.shape[d], 1], {"dtype": "i64"}).reshape(*[-1 if k == d else 1 for k in range(a.ndim)])
             for d in range(a.ndim)]
    on = index[0] == index[1]
    for other in index[2:]:
        on = on & (index[0] == other)
    a[...] = where(on, val, a)


# -- the table's entries --------------------------------------------------------
implements(np.transpose, numpy_has("permute_dims"))(transpose)
implements(np.concatenate, numpy_has("concat"))(concatenate)
for _f, _impl in ((np.reshape, reshape), (np.ravel, ravel),
                  (np.swapaxes, swapaxes), (np.squeeze, squeeze), (np.expand_dims, expand_dims),
                  (np.stack, stack), (np.broadcast_to, broadcast_to), (np.shape, shape), (np.ndim, ndim),
                  (np.atleast_1d, atleast_1d), (np.atleast_2d, atleast_2d), (np.atleast_3d, atleast_3d), (np.hstack, hstack),
                  (np.vstack, vstack), (numpy_has("row_stack"), vstack), (np.dstack, dstack), (np.column_stack, column_stack),
                  (np.split, split), (np.array_split, array_split), (np.hsplit, hsplit), (np.vsplit, vsplit), (np.dsplit, dsplit),
                  (numpy_has("unstack"), unstack), (np.moveaxis, moveaxis), (np.rollaxis, rollaxis),
                  (numpy_has("matrix_transpose"), matrix_transpose), (np.flip, flip), (np.fliplr, fliplr), (np.flipud, flipud),
                  (np.roll, roll), (np.repeat, repeat), (np.tile, tile), (np.pad, pad), (np.broadcast_arrays, broadcast_arrays),
                  (np.tril, tril), (np.triu, triu), (np.diagonal, diagonal), (np.diag, diag), (np.trace, trace), (np.diff, diff),
                  (np.fill_diagonal, fill_diagonal)):
    implements(_f)(_impl)
implements(getattr(np.linalg, "matrix_transpose", None))(matrix_transpose)
implements(getattr(np.linalg, "diagonal", None))(lambda x, /, *, offset=0: diagonal(x, offset, -2, -1))
implements(getattr(np.linalg, "trace", None))(lambda x, /, *, offset=0, dtype=None: trace(x, offset, -2, -1, dtype))
