"""The NumPy functions that write at positions an index or a mask picks:
`ufunc.at` (np.add.at, subtract, multiply, maximum, minimum), np.put (and x.put), np.putmask
and np.place, over the scatter ops _writes writes assignments with
(index_put, index_add), in NumPy's casts and repeats."""
from __future__ import annotations

import numpy as np

from ._indexing import getitem
from ._np.creation import asarray
from ._np.registry import implements
from ._np.ufuncs import AT
from ._trace.promotion import probe
from ._trace.state import as_tensor, emit, graph_break, state_of
from ._trace.tensor import Scalar, Tensor
from ._writes import assign, is_mask, scatter


def ufunc_at(ufunc, a, indices, b=None):
    """ufunc.at(a, indices, b): every element a[indices] reads combined with
    b's, a repeated one each time (np.add.at, subtract, multiply, maximum,
    minimum: a NaN wins the last two), in a's dtype where NumPy computes in
    it; None, as NumPy gives. NotImplemented for what NumPy has to run:
    another ufunc, a's dtype bool, b that promotes a."""
    if ufunc not in AT or b is None or not isinstance(a, Tensor) or a.ndim == 0 or a._dtype == "bool":
        return NotImplemented
    st = a._st
    stand_in = probe(b)
    if stand_in is None or np.result_type(np.dtype(a.dtype), stand_in) != np.dtype(a.dtype):
        return NotImplemented  # NumPy adds in the promoted dtype, then casts each sum back
    v = as_tensor(st, b, a._dtype)
    v = v if v._dtype == a._dtype else v.astype(a._dtype)
    if ufunc is np.subtract:
        v = emit(st, "neg", [v])
    if is_mask(indices):
        indices = (indices,)
    new = scatter(st, a, indices, v, AT[ufunc])
    assign(a, new, (None, new))
    return None


def _listed(x):
    """A list or tuple as NumPy's array of it (np.put(a, [0, 2], [1.5])); anything else as it is."""
    return asarray(x) if isinstance(x, (list, tuple)) else x


def _cycled(st, v, n, dtype):
    """v flattened, cast to `dtype` as NumPy's put casts (unsafely), and
    repeated to n elements (np.put's and np.putmask's rule for values
    shorter than what they fill)."""
    v = as_tensor(st, _listed(v))
    v = (v if v._dtype == dtype else v.astype(dtype)).reshape(-1)
    k = emit(st, "arange", [0, n, 1], {"dtype": "i64"})
    return emit(st, "index_select", [v, k % v.shape[0]], {"dim": 0})


def _target(st, a, what):
    """a, the array np.<what> writes into: a tracing value, or a graph break."""
    if not isinstance(a, Tensor) or type(a) is Scalar:
        graph_break(st, f"np.{what} into an array that is not traced")


def _mask(st, a, mask, what):
    """np.<what>'s mask as bools of a's shape; NumPy's ValueError where its size is not a's."""
    m = as_tensor(st, _listed(mask))
    if m.size != a.size:
        raise ValueError(f"{what}: mask and data must be the same size")
    return (m if m._dtype == "bool" else m.astype("bool")).reshape(*a.shape)


def _positions(st, a):
    """Every flat position of a, in C order, in a's shape."""
    return emit(st, "arange", [0, a.size, 1], {"dtype": "i64"}).reshape(*a.shape)


def _written(a, new):
    """a now holds `new` (its shape), everywhere: the call writes it back."""
    assign(a, new, (None, new))
    return None


def _scattered(st, a, at, values):
    """a with its flat positions `at` set to `values` cycled to their count."""
    flat = emit(st, "index_put", [a.reshape(-1), at, _cycled(st, values, at.shape[0], a._dtype)], {"dim": 0})
    return _written(a, flat.reshape(*a.shape))


@implements(np.put)
def put(a, ind, v, mode="raise"):
    """np.put(a, ind, v, mode): a.flat[ind] = v, v repeated to ind's count,
    an index out of range NumPy's IndexError ('raise'), wrapped ('wrap') or
    clipped ('clip')."""
    st = state_of(a, ind, v)
    _target(st, a, "put")
    idx = as_tensor(st, _listed(ind))
    if idx._dtype not in ("i32", "i64") or mode not in ("raise", "wrap", "clip"):
        graph_break(st, "np.put with indices that are not integers, or a mode NumPy names otherwise")
    idx = idx.reshape(-1)
    values = as_tensor(st, _listed(v))
    if idx.shape[0] == 0 or values.size == 0:
        return None  # NumPy puts nothing
    if a.size == 0:
        raise IndexError("cannot replace elements of an empty array")
    if mode == "wrap":
        idx = idx % a.size
    elif mode == "clip":
        idx = np.clip(idx, 0, a.size - 1)
    return _scattered(st, a, getitem(_positions(st, a).reshape(-1), idx), values)


@implements(np.putmask)
def putmask(a, mask, values):
    """np.putmask(a, mask, values): a.flat[n] = values[n % len(values)]
    wherever mask.flat[n] holds (a select, no scatter)."""
    st = state_of(a, mask, values)
    _target(st, a, "putmask")
    m = _mask(st, a, mask, "putmask")
    v = as_tensor(st, _listed(values))
    if v.size == 0:
        return None  # NumPy puts nothing
    return _written(a, emit(st, "where", [m, _cycled(st, v, a.size, a._dtype).reshape(*a.shape), a]))


@implements(np.place)
def place(arr, mask, vals):
    """np.place(arr, mask, vals): the k-th element where mask holds (in C
    order) set to vals[k % len(vals)], a scatter at the mask's positions."""
    st = state_of(arr, mask, vals)
    _target(st, arr, "place")
    m = _mask(st, arr, mask, "place")
    v = as_tensor(st, _listed(vals))
    if v.size == 0:
        graph_break(st, "np.place of no values (NumPy's error only where the mask holds anywhere)")
    return _scattered(st, arr, getitem(_positions(st, arr), m), v)
