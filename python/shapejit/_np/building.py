"""NumPy's functions that build an array from others or from sizes:
append, insert and delete at one position, resize, rot90, block, kron,
ediff1d, diagflat, and the index arrays (indices, ix_, the triangles' and
the diagonal's indices), each as NumPy's own code composes them."""
from __future__ import annotations

import operator

import numpy as np

from .._trace.dtypes import dtype_name
from .._trace.sizes import SymInt
from .._trace.state import as_tensor, emit, graph_break, state_of
from .._trace.tensor import as_scalar
from .base import checked_axis, stops_where, tensor_of
from .creation import asarray
from .registry import implements
from .selection import nonzero
from .shapes import broadcast_to, concatenate, diag, expand_dims, flip, reshape, transpose, tri


def _index(st, obj, what):
    """An integer position (a size, an int, a NumPy integer), or a break for
    any other (a slice, a list, an array: NumPy's other forms)."""
    if isinstance(obj, SymInt):
        return obj
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, (bool, np.bool_)):
        return int(obj)
    graph_break(st, f"np.{what} at a {type(obj).__name__} (one integer position is traced)")


@implements(np.append)
def append(arr, values, axis=None):
    arr, values = asarray(arr), asarray(values)
    if axis is None:
        arr, values, axis = arr.reshape(-1), values.reshape(-1), 0
    return concatenate([arr, values], axis=axis)


@implements(np.insert)
def insert(arr, obj, values, axis=None):
    """values before position `obj` along `axis` (of arr flattened, by default)."""
    st = state_of(arr, obj, values)
    arr = tensor_of(st, arr)
    if axis is None:
        arr, axis = arr.reshape(-1), 0
    axis = checked_axis(axis, arr.ndim)
    n = arr.shape[axis]
    i = _index(st, obj, "insert")
    if not (-n <= i) or not (i <= n):
        raise IndexError(f"index {int(i)} is out of bounds for axis {axis} with size {int(n)}")
    i = i + n if (i < 0) else i
    values = asarray(values).astype(arr._dtype)
    if values.ndim < arr.ndim:  # one slice's worth, broadcast across the other dims
        values = expand_dims(values, axis) if values.ndim == arr.ndim - 1 else values
        shape = list(arr.shape)
        shape[axis] = 1
        values = broadcast_to(values, shape)
    before = emit(st, "slice", [arr, 0, i, 1], {"dim": axis})
    after = emit(st, "slice", [arr, i, n, 1], {"dim": axis})
    return concatenate([before, values, after], axis=axis)


@implements(np.delete)
def delete(arr, obj, axis=None):
    """arr without position `obj` along `axis` (of arr flattened, by default)."""
    st = state_of(arr, obj)
    arr = tensor_of(st, arr)
    if axis is None:
        arr, axis = arr.reshape(-1), 0
    axis = checked_axis(axis, arr.ndim)
    n = arr.shape[axis]
    i = _index(st, obj, "delete")
    if not (-n <= i) or not (i < n):
        raise IndexError(f"index {int(i)} is out of bounds for axis {axis} with size {int(n)}")
    i = i + n if (i < 0) else i
    before = emit(st, "slice", [arr, 0, i, 1], {"dim": axis})
    after = emit(st, "slice", [arr, i + 1, n, 1], {"dim": axis})
    return concatenate([before, after], axis=axis)


@implements(np.resize)
def resize(a, new_shape):
    """a's elements, repeated as often as the new shape takes them."""
    st = state_of(a)
    a = tensor_of(st, a).reshape(-1)
    new_shape = tuple(new_shape) if isinstance(new_shape, (tuple, list)) else (new_shape,)
    total = 1
    for d in new_shape:
        if d < 0:
            raise ValueError("all elements of `new_shape` must be non-negative")
        total = d * total
    if a.shape[0] == 0 or total == 0:
        return emit(st, "full", list(new_shape), {"value": 0, "dtype": a._dtype})
    repeats = -(-int(total) // int(a.shape[0]))  # the count of copies: an observation of both sizes
    a = concatenate([a] * repeats, axis=0) if repeats > 1 else a
    return reshape(emit(st, "slice", [a, 0, total, 1], {"dim": 0}), new_shape)


@implements(np.rot90)
def rot90(m, k=1, axes=(0, 1)):
    st = state_of(m)
    m = tensor_of(st, m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == m.ndim:
        raise ValueError("Axes must be different.")
    if axes[0] >= m.ndim or axes[0] < -m.ndim or axes[1] >= m.ndim or axes[1] < -m.ndim:
        raise ValueError(f"Axes={axes} out of range for array of ndim={m.ndim}.")
    k = operator.index(k) % 4
    if k == 0:
        return m[:]
    if k == 2:
        return flip(flip(m, axes[0]), axes[1])
    order = list(range(m.ndim))
    order[axes[0]], order[axes[1]] = order[axes[1]], order[axes[0]]
    if k == 1:
        return transpose(flip(m, axes[1]), order)
    return flip(transpose(m, order), axes[1])


def _block_depth(arrays):
    if isinstance(arrays, list):
        if not arrays:
            raise ValueError("List at arrays is empty.")
        depths = {_block_depth(a) for a in arrays}
        if len(depths) != 1:
            raise ValueError("List depths are mismatched.")
        return 1 + depths.pop()
    if isinstance(arrays, tuple):
        raise TypeError("arrays is a tuple. Only lists can be used to arrange blocks, and np.block does not allow implicit "
                        "conversion from tuple to ndarray.")
    return 0


@implements(np.block)
def block(arrays):
    """Nested lists joined from the innermost, along the last axes."""
    depth = _block_depth(arrays)
    leaves = []

    def gather(a):
        if isinstance(a, list):
            for e in a:
                gather(e)
        else:
            leaves.append(a)
    gather(arrays)
    st = state_of(*leaves)
    ndim = max(depth, max(tensor_of(st, x).ndim for x in leaves))

    def at_least(x):
        x = tensor_of(st, x)
        return x.reshape(*([1] * (ndim - x.ndim)), *x.shape) if x.ndim < ndim else x

    def join(a, level):
        if not isinstance(a, list):
            return at_least(a)
        return concatenate([join(e, level + 1) for e in a], axis=-(depth - level))
    return join(arrays, 0)


@implements(np.kron)
def kron(a, b):
    """a's elements each times b, in blocks: the outer product with its axes interleaved."""
    st = state_of(a, b)
    a, b = tensor_of(st, a), tensor_of(st, b)
    nd = max(a.ndim, b.ndim)
    a = a.reshape(*([1] * (nd - a.ndim)), *a.shape)
    b = b.reshape(*([1] * (nd - b.ndim)), *b.shape)
    if nd == 0:
        return a * b
    ea = a.reshape(*[d for s in a.shape for d in (s, 1)])
    eb = b.reshape(*[d for s in b.shape for d in (1, s)])
    out = ea * eb
    return out.reshape(*[a.shape[i] * b.shape[i] for i in range(nd)])


@implements(np.ediff1d)
def ediff1d(ary, to_end=None, to_begin=None):
    st = state_of(ary, to_end, to_begin)
    x = tensor_of(st, ary).reshape(-1)
    parts = []
    for extra in (to_begin,):
        if extra is not None:
            parts.append(_ediff_part(st, extra, x))
    n = x.shape[0]
    d = emit(st, "slice", [x, 1, n, 1], {"dim": 0}) - emit(st, "slice", [x, 0, n - 1, 1], {"dim": 0}) if x._dtype != "bool" else \
        emit(st, "slice", [x, 1, n, 1], {"dim": 0}) != emit(st, "slice", [x, 0, n - 1, 1], {"dim": 0})
    parts.append(d.astype(x._dtype))
    if to_end is not None:
        parts.append(_ediff_part(st, to_end, x))
    return concatenate(parts, axis=0) if len(parts) > 1 else parts[0]


def _ediff_part(st, extra, x):
    e = asarray(extra).reshape(-1)
    if not np.can_cast(e.dtype, x.dtype, casting="same_kind"):
        raise TypeError("dtype of `to_begin` must be compatible with input `ary` under the `same_kind` rule.")
    return e.astype(x._dtype)


@implements(np.diagflat)
def diagflat(v, k=0):
    return diag(tensor_of(state_of(v), v).reshape(-1), k)


@implements(np.indices)
def indices(dimensions, dtype=int, sparse=False):
    """The index of each position along each dim: one arange per dim, broadcast (or not, sparse)."""
    dimensions = tuple(dimensions)
    st = state_of(*dimensions)
    name = dtype_name(dtype)
    n = len(dimensions)
    out = []
    for i, d in enumerate(dimensions):
        r = emit(st, "arange", [0, d, 1], {"dtype": name})
        r = r.reshape(*[d if j == i else 1 for j in range(n)])
        out.append(r if sparse else broadcast_to(r, dimensions))
    if sparse:
        return tuple(out)
    if not out:
        return emit(st, "full", [0], {"value": 0, "dtype": name})
    return concatenate([expand_dims(o, 0) for o in out], axis=0)


@implements(np.ix_)
def ix_(*args):
    """Each 1-d sequence shaped to index its own dim of an open mesh."""
    st = state_of(*args)
    out = []
    nd = len(args)
    for k, a in enumerate(args):
        t = as_tensor(st, a, index=isinstance(a, (list, tuple)))
        if t.ndim != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if t._dtype == "bool":
            t = nonzero(t)[0]
        out.append(t.reshape(*[-1 if j == k else 1 for j in range(nd)]))
    return tuple(out)


@implements(np.tril_indices)
def tril_indices(n, k=0, m=None):
    return nonzero(tri(n, m, k=k, dtype=bool))


@implements(np.triu_indices)
def triu_indices(n, k=0, m=None):
    return nonzero(~tri(n, m, k=k - 1, dtype=bool))


@implements(np.diag_indices)
def diag_indices(n, ndim=2):
    st = state_of(n)
    idx = emit(st, "arange", [0, n, 1], {"dtype": "i64"})
    return (idx,) * ndim


def _two_d(arr):
    a = tensor_of(state_of(arr), arr)
    if a.ndim != 2:
        raise ValueError("input array must be 2-d")
    return a


implements(np.tril_indices_from)(lambda arr, k=0: tril_indices(_two_d(arr).shape[-2], k=k, m=_two_d(arr).shape[-1]))
implements(np.triu_indices_from)(lambda arr, k=0: triu_indices(_two_d(arr).shape[-2], k=k, m=_two_d(arr).shape[-1]))


@implements(np.diag_indices_from)
def diag_indices_from(arr):
    a = tensor_of(state_of(arr), arr)
    if not a.ndim >= 2:
        raise ValueError("input array must be at least 2-d")
    if any(a.shape[0] != d for d in a.shape[1:]):
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(a.shape[0], a.ndim)


@implements(np.size)
def size(a, axis=None):
    a = tensor_of(state_of(a), a)
    return a.size if axis is None else a.shape[checked_axis(axis, a.ndim)]


def _dims(st, shape, what):
    dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    for d in dims:
        if not isinstance(d, (int, SymInt)) or isinstance(d, bool):
            graph_break(st, f"np.{what} of dims that are not sizes")
    return dims


@implements(np.unravel_index)
def unravel_index(indices, shape, order="C"):
    """np.unravel_index: each flat index's coordinates in `shape`, an
    index out of range NumPy's ValueError (the kernel stops on it, and
    NumPy runs the call)."""
    st = state_of(indices, *(shape if isinstance(shape, (tuple, list)) else (shape,)))
    idx = tensor_of(st, indices)
    if idx._dtype not in ("i32", "i64") or order not in ("C", "F"):
        graph_break(st, "np.unravel_index of indices that are not integers, or an order NumPy names otherwise")
    dims = _dims(st, shape, "unravel_index")
    size = 1
    for d in dims:
        size = size * d
    idx = idx.astype("i64")
    stops_where(st, (idx < 0) | (idx >= size))
    out, rest = [None] * len(dims), idx
    for k in (reversed(range(len(dims))) if order == "C" else range(len(dims))):
        out[k], rest = rest % dims[k], rest // dims[k]
    return tuple(as_scalar(o) if o.ndim == 0 else o for o in out)


@implements(np.ravel_multi_index)
def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """np.ravel_multi_index: the flat index of each coordinate tuple, the
    coordinates broadcast together; out of range NumPy's ValueError
    ('raise'), wrapped or clipped."""
    st = state_of(*multi_index)
    dims = _dims(st, dims, "ravel_multi_index")
    coords = [tensor_of(st, c) for c in multi_index]
    if (len(coords) != len(dims) or any(c._dtype not in ("i32", "i64") for c in coords) or not isinstance(mode, str)
            or mode not in ("raise", "wrap", "clip") or order not in ("C", "F")):
        graph_break(st, "np.ravel_multi_index of another form (coordinates that are not integers, one mode a dim)")
    coords = [c.astype("i64") for c in coords]
    if mode == "raise":
        bad = None
        for c, d in zip(coords, dims):
            out = (c < 0) | (c >= d)
            bad = out if bad is None else bad | out
        stops_where(st, bad)
    elif mode == "wrap":
        coords = [c % d for c, d in zip(coords, dims)]
    else:
        coords = [np.clip(c, 0, d - 1) for c, d in zip(coords, dims)]
    flat, stride = None, 1
    for k in (reversed(range(len(dims))) if order == "C" else range(len(dims))):
        term = coords[k] * stride
        flat = term if flat is None else flat + term
        stride = stride * dims[k]
    return as_scalar(flat) if flat.ndim == 0 else flat
