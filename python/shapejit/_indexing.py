"""Indexing a tracing value as NumPy indexes an array: integers, slices
(negative steps too), None, Ellipsis, integer index arrays and lists,
ranges, and boolean masks (a data-dependent op)."""
from __future__ import annotations

import math
import operator

import numpy as np

from ._np.registry import implements
from ._np.shapes import broadcast_arrays
from ._trace.dtypes import END
from ._trace.sizes import SymInt, SymRange, shape_operand
from ._trace.state import as_tensor, emit, graph_break, state_of
from ._trace.tensor import Scalar, Tensor, View, as_scalar, is_array


def normalize_index(key, rank):
    if not isinstance(key, tuple):
        key = (key,)
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    out = []
    for k in key:
        if k is Ellipsis:
            out.extend([slice(None)] * (rank - n_real))
        else:
            out.append(k)
    if not any(k is Ellipsis for k in key):  # `in` would compare a tensor with ==
        out.extend([slice(None)] * (rank - n_real))
    return out


def _bool_index(x: Tensor, mask: Tensor):
    """x[mask] as NumPy: the mask covers x's leading dims exactly (no
    broadcasting); the result is the elements, or the rows, where it holds."""
    k = mask.ndim
    if k > x.ndim:
        raise IndexError(f"too many indices for array: array is {x.ndim}-dimensional, but {k} were indexed")
    for d in range(k):
        if x.shape[d] != mask.shape[d]:
            raise IndexError(f"boolean index did not match indexed array along axis {d}; size of axis is {x.shape[d]} "
                             f"but size of corresponding boolean axis is {mask.shape[d]}")
    if k == x.ndim and k > 0:
        return emit(x._st, "masked_select", [x, mask])
    # The rows of x over its first k dims flattened (a 0-d mask: one row,
    # x itself, as NumPy's x[True]), where the mask holds.
    lead = math.prod(x.shape[:k])
    rows = emit(x._st, "nonzero", [mask.reshape(lead)]).reshape(-1)
    return emit(x._st, "index_select", [x.reshape(lead, *x.shape[k:]), rows], {"dim": 0})


def getitem(x: Tensor, key):
    st = x._st
    if type(x) is Scalar:  # a NumPy scalar: s[()] is itself, any other index a new array of it (s[...] is 0-d)
        if isinstance(key, tuple) and not key:
            return x
        x = x._fresh()
    if isinstance(key, (bool, np.bool_)):  # x[True]: a 0-d mask, not the integer 1
        key = np.asarray(key)
    if isinstance(key, (Tensor, np.ndarray)) or (is_array(key) and not isinstance(key, tuple)):
        idx = as_tensor(st, key)
        if idx._dtype == "bool":
            return _bool_index(x, idx)
        _check_constant_indices(x, 0, key)
        idx = _from_the_end(x, 0, key, idx)
        if idx.ndim == 1:
            return emit(st, "index_select", [x, idx], {"dim": 0})
        if x.ndim == 2:
            return emit(st, "embedding", [x, idx])
        flat = emit(st, "index_select", [x, idx.reshape(-1)], {"dim": 0})
        return flat.reshape(*idx.shape, *x.shape[1:])._fresh()  # a copy, as NumPy's: x[I] += 1 writes the copy
    if isinstance(key, (range, SymRange)):
        return getitem(x, _arange_of(st, key))
    if isinstance(key, list):
        _check_constant_indices(x, 0, key)
        return getitem(x, _index_list(x, 0, key))
    items = normalize_index(key, x.ndim)
    if sum(1 for k in items if k is not None) > x.ndim:
        raise IndexError(f"too many indices for a tensor of rank {x.ndim}")
    arrays = sum(1 for k in items if is_index_array(k))
    if arrays and arrays + sum(1 for k in items if k is not None and not isinstance(k, slice) and not is_index_array(k)) >= 2:
        return _advanced(x, items)
    dim = 0
    squeeze = []
    for k in items:
        if k is None:
            x = emit(st, "unsqueeze", [x], {"dim": dim})
            dim += 1
        elif isinstance(k, slice):
            if k != slice(None):
                k = bounded_slice(k)
                step = 1 if k.step is None else k.step
                if not isinstance(step, SymInt) and operator.index(step) < 0:
                    x = _reversed_view(x, dim, _backward(x, dim, k))
                    dim += 1
                    continue
                if not isinstance(step, SymInt) and operator.index(step) == 0:
                    raise ValueError("slice step cannot be zero")
                start = 0 if k.start is None else shape_operand(k.start)
                # No stop is the dim's own size, not a bound past it: the
                # slice's length is then n - start, not min(2^62, n) - start,
                # which a specialization without hints could not compare with n.
                stop = x.shape[dim] if k.stop is None else shape_operand(k.stop)
                x = emit(st, "slice", [x, start, shape_operand(stop), shape_operand(step)], {"dim": dim})
            dim += 1
        elif isinstance(k, (Tensor, np.ndarray, list, range, SymRange)):
            if isinstance(k, (range, SymRange)):
                idx = _arange_of(st, k)
            elif isinstance(k, list):
                idx = _index_list(x, dim, k)
            else:
                idx = as_tensor(st, k, "i64", index=True)
            if idx.ndim != 1 or idx._dtype == "bool":
                graph_break(st, "advanced indexing beyond one integer index array per dim")
            _check_constant_indices(x, dim, k)
            idx = _from_the_end(x, dim, k, idx)
            x = emit(st, "index_select", [x, idx], {"dim": dim})
            dim += 1
        else:
            start, stop = integer_index(x, dim, k)
            x = emit(st, "slice", [x, start, stop, 1], {"dim": dim})
            squeeze.append(dim)
            dim += 1
    if squeeze:
        x = emit(st, "squeeze", [x], {"dims": squeeze})
        if x.ndim == 0 and all(k is not None and not isinstance(k, slice) for k in items):
            return as_scalar(x._fresh())  # an element: NumPy's scalar, a copy
    return x


def is_index_array(k):
    return isinstance(k, (Tensor, np.ndarray, list, range, SymRange))


def _advanced(x, items):
    """x[key] for a key with two index arrays or more, or one and integers:
    NumPy broadcasts them (the integers as 0-d arrays) into one index, and
    puts its dims where the first of them stood if they are adjacent in the
    key, else first. The slices and new axes are taken first; then x's
    advanced dims, moved to the front and flattened, are gathered at the
    index made linear, an index out of its own dim made out of range of all
    (the gather's check: NumPy's IndexError)."""
    st = x._st
    at = [i for i, k in enumerate(items) if k is not None and not isinstance(k, slice)]
    y = getitem(x, tuple(slice(None) if i in at else k for i, k in enumerate(items)))
    dims = at  # every item is one dim of y: a slice, a new axis, an advanced one kept whole
    indices = []
    for i in at:
        k = items[i]
        if isinstance(k, (bool, np.bool_)) or (is_array(k) and np.dtype(getattr(k, "dtype", None) or "i8") == np.bool_):
            graph_break(st, "a boolean mask among several advanced indices")
        if isinstance(k, (range, SymRange)):
            idx = _arange_of(st, k)
        elif isinstance(k, list):
            idx = _index_list(y, i, k)
        elif is_index_array(k):
            idx = as_tensor(st, k, "i64", index=True)
        else:
            integer_index(y, i, k)  # NumPy's bounds check of an integer, as a predicate
            idx = as_tensor(st, shape_operand(k), "i64")
        if idx._dtype == "bool":
            graph_break(st, "a boolean mask among several advanced indices")
        _check_constant_indices(y, i, k)
        indices.append(_from_the_end(y, i, k, idx))
    indices = broadcast_arrays(*indices)
    sizes = [y.shape[d] for d in dims]
    rest = [d for d in range(y.ndim) if d not in dims]
    linear, valid, total = None, None, 1
    for idx, n in zip(indices, sizes):
        linear = idx if linear is None else linear * n + idx
        inside = (idx >= 0) & (idx < n)
        valid = inside if valid is None else valid & inside
        total = total * n
    linear = emit(st, "where", [valid, linear, as_tensor(st, total).astype("i64")])
    flat = y.transpose(dims + rest).reshape(total, *[y.shape[d] for d in rest])
    out = emit(st, "index_select", [flat, linear.reshape(-1)], {"dim": 0}).reshape(*linear.shape, *[y.shape[d] for d in rest])
    b = linear.ndim
    if at == list(range(at[0], at[-1] + 1)) and at[0] > 0 and rest:
        before = sum(1 for d in rest if d < at[0])
        out = out.transpose([b + j for j in range(before)] + list(range(b)) + [b + j for j in range(before, len(rest))])
    if out.ndim == 0:
        return as_scalar(out._fresh())
    return out._fresh()  # a copy, as NumPy's: x[I, J] += 1 writes the copy (then x, by its setitem)


def _reversed_view(x, dim, idx):
    """x[..., a:b:-s] along `dim`, at the indices `idx`: a view in NumPy, which
    follows writes into x (a write into it is a graph break)."""
    select = lambda p: emit(p._st, "index_select", [p, idx], {"dim": dim})  # noqa: E731
    return View.of(select(x), x, "index_select", select)


def _check_constant_indices(x, dim, key):
    """NumPy's bounds check of indices known while tracing (a list, or an
    array made in the body), raised where NumPy raises it, before what
    follows: the size is read as predicates, so an entry guards them."""
    if isinstance(key, list) and all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in key):
        values = key
    elif isinstance(key, np.ndarray) and key.dtype.kind in "iu":
        values = key.ravel().tolist()
    else:
        return
    if not values:
        return
    n = x.shape[dim]
    for v in (max(values), min(values)):
        if v >= n or v < -n:
            raise IndexError(f"index {v} is out of bounds for axis {dim} with size {int(n)}")


def _index_list(x, dim, key):
    """A list of indices as a tensor, negative numbers counted from the end
    of `dim`; a nested list as the integer array NumPy makes of it."""
    if any(isinstance(k, (list, tuple)) for k in key):
        nested = np.asarray(key)
        if nested.dtype.kind not in "iu":
            graph_break(x._st, f"an index of nested lists of {nested.dtype}")
        return _index_list(x, dim, nested.ravel().tolist()).reshape(*nested.shape)
    n = x.shape[dim]
    items = [k + n if isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k < 0 else k for k in key]
    return as_tensor(x._st, items, "i64", index=True)


def _from_the_end(x, dim, key, idx):
    """Index values below zero counted from the end of `dim`, as NumPy does
    (a constant array with none of them left as it is)."""
    if isinstance(key, list) or (isinstance(key, np.ndarray) and key.dtype != np.bool_ and (key.size == 0 or key.min() >= 0)):
        return idx
    if idx._dtype == "bool":
        return idx
    st = x._st
    n = x.shape[dim]
    return emit(st, "where", [emit(st, "lt", [idx, 0]), emit(st, "add", [idx, as_tensor(st, n).astype(idx._dtype)]), idx])


def integer_index(x, dim, k):
    """(start, stop) of the slice an integer index takes along `dim`, after
    NumPy's bounds check (a SymInt's sign and bound guarded as predicates)."""
    i = shape_operand(k)
    n = x.shape[dim]
    negative = bool(i < 0)
    if not bool(n >= -i if negative else n > i):
        raise IndexError(f"index {int(i)} is out of bounds for a dim of size {int(n)}")
    if negative:
        return i, (END if bool(i == -1) else i + 1)  # a stop of 0 would be the start
    return i, i + 1


def _arange_of(st, r):
    """A range's indices as a tensor (sizes in it stay traced only where Python kept them)."""
    return emit(st, "arange", [r.start, r.stop, r.step], {"dtype": "i64"})


def _clamp_size(st, v, lo, hi):
    """max(lo, min(v, hi)), traced where a bound is a SymInt."""
    low = emit(st, "sym_min", [v, hi]) if isinstance(v, SymInt) or isinstance(hi, SymInt) else min(v, hi)
    return emit(st, "sym_max", [low, lo]) if isinstance(low, SymInt) else max(low, lo)


def bounded_slice(k: slice) -> slice:
    """k with its Python int bounds and step within ±2^62: every dim is
    smaller, so Python's slice takes the same elements (x[:2**64] is x)."""
    def bounded(v):
        if v is None or isinstance(v, SymInt):
            return v
        return max(-END, min(operator.index(v), END))
    return slice(bounded(k.start), bounded(k.stop), bounded(k.step))


def _backward(x, dim, k: slice):
    """The indices a slice with a negative step takes along `dim`, as Python's
    slice.indices gives them: bounds count from the end when negative and
    clamp to [-1, n - 1]."""
    st = x._st
    n = x.shape[dim]

    def bound(v, default):
        if v is None:
            return default
        if isinstance(v, SymInt):
            return _clamp_size(st, v, -1, n - 1)
        v = operator.index(v)
        return _clamp_size(st, v + n if v < 0 else v, -1, n - 1)

    start = bound(k.start, n - 1)
    stop = bound(k.stop, -1)
    return emit(st, "arange", [start, stop, operator.index(k.step)], {"dtype": "i64"})


# -- np.take -----------------------------------------------------------------------

def take(x, indices, axis=None):
    """np.take: elements of x along `axis` (of x flattened, by default) at
    `indices`, negative ones counted from the end, those known now checked
    now, in NumPy's order."""
    st = state_of(x, indices)
    x = as_tensor(st, x)
    if axis is None or x.ndim == 0:  # a 0-d array takes as a 1-d one
        x, axis = x.reshape(-1), 0
    axis = operator.index(axis)
    _check_constant_indices(x, axis, indices)
    if isinstance(indices, list):
        idx = _index_list(x, axis, indices)
    else:
        idx = _from_the_end(x, axis, indices, as_tensor(st, indices, "i64", index=True))
    if idx.ndim != 1:
        graph_break(st, "np.take with a multi-dimensional index")
    return emit(st, "index_select", [x, idx], {"dim": axis})


implements(np.take)(take)
