"""Indexing a tracing value as NumPy indexes an array: integers, slices
(negative steps too), None, Ellipsis, integer index arrays and lists,
ranges, and boolean masks (a data-dependent op)."""
from __future__ import annotations

import math
import operator

import numpy as np

from ._tracing import _END, SymInt, SymRange, Tensor, _break, _shape_operand, as_tensor, emit, is_array


def _normalize_index(key, rank):
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
        return flat.reshape(*idx.shape, *x.shape[1:])
    if isinstance(key, (range, SymRange)):
        return getitem(x, _arange_of(st, key))
    if isinstance(key, list):
        _check_constant_indices(x, 0, key)
        return getitem(x, _index_list(x, 0, key))
    items = _normalize_index(key, x.ndim)
    if sum(1 for k in items if k is not None) > x.ndim:
        raise IndexError(f"too many indices for a tensor of rank {x.ndim}")
    dim = 0
    squeeze = []
    for k in items:
        if k is None:
            x = emit(st, "unsqueeze", [x], {"dim": dim})
            dim += 1
        elif isinstance(k, slice):
            if k != slice(None):
                step = 1 if k.step is None else k.step
                if not isinstance(step, SymInt) and operator.index(step) < 0:
                    x = emit(st, "index_select", [x, _backward(x, dim, k)], {"dim": dim})
                    dim += 1
                    continue
                if not isinstance(step, SymInt) and operator.index(step) == 0:
                    raise ValueError("slice step cannot be zero")
                start = 0 if k.start is None else _shape_operand(k.start)
                # No stop is the dim's own size, not a bound past it: the
                # slice's length is then n - start, not min(2^62, n) - start,
                # which a specialization without hints could not compare with n.
                stop = x.shape[dim] if k.stop is None else _shape_operand(k.stop)
                x = emit(st, "slice", [x, start, _shape_operand(stop), _shape_operand(step)], {"dim": dim})
            dim += 1
        elif isinstance(k, (Tensor, np.ndarray, list, range, SymRange)):
            if isinstance(k, (range, SymRange)):
                idx = _arange_of(st, k)
            elif isinstance(k, list):
                idx = _index_list(x, dim, k)
            else:
                idx = as_tensor(st, k, "i64", index=True)
            if idx.ndim != 1 or idx._dtype == "bool":
                _break(st, "advanced indexing beyond one integer index array per dim")
            _check_constant_indices(x, dim, k)
            idx = _from_the_end(x, dim, k, idx)
            x = emit(st, "index_select", [x, idx], {"dim": dim})
            dim += 1
        else:
            start, stop = _integer_index(x, dim, k)
            x = emit(st, "slice", [x, start, stop, 1], {"dim": dim})
            squeeze.append(dim)
            dim += 1
    if squeeze:
        x = emit(st, "squeeze", [x], {"dims": squeeze})
    return x


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
    """A list of indices as a tensor, negative numbers counted from the end of `dim`."""
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


def _integer_index(x, dim, k):
    """(start, stop) of the slice an integer index takes along `dim`, after
    NumPy's bounds check (a SymInt's sign and bound guarded as predicates)."""
    i = _shape_operand(k)
    n = x.shape[dim]
    negative = bool(i < 0)
    if not bool(n >= -i if negative else n > i):
        raise IndexError(f"index {int(i)} is out of bounds for a dim of size {int(n)}")
    if negative:
        return i, (_END if bool(i == -1) else i + 1)  # a stop of 0 would be the start
    return i, i + 1


def _arange_of(st, r):
    """A range's indices as a tensor (sizes in it stay traced only where Python kept them)."""
    return emit(st, "arange", [r.start, r.stop, r.step], {"dtype": "i64"})


def _clamp_size(st, v, lo, hi):
    """max(lo, min(v, hi)), traced where a bound is a SymInt."""
    low = emit(st, "sym_min", [v, hi]) if isinstance(v, SymInt) or isinstance(hi, SymInt) else min(v, hi)
    return emit(st, "sym_max", [low, lo]) if isinstance(low, SymInt) else max(low, lo)


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


# -- writes: x[key] = value, functionalized ---------------------------------------
#
# A write makes the updated array a new value of the graph and moves the
# tensor to it, so the code after it reads what NumPy would. A basic key
# (integers and step-1 slices) updates a block: the array is cut along each
# indexed dim into the part before the block, the block and the part after
# (slices with Python's bounds, so the three parts tile the dim exactly), and
# put together again around the block's new value. A boolean mask with a
# scalar value is a `where`. A write into an input of the call (an argument,
# or an array read through self or a closure) is kept with the block's
# offsets, and the caller's array gets it when the call returns.

def setitem(x: Tensor, key, value):
    st = x._st
    if x._view:
        _break(st, "a write through a view (x[a][b] = v, x.T[k] = v): the array it is a view of would change too")
    v = _assigned(st, x, value)
    if _is_mask(key):
        new, write = _write_mask(st, x, as_tensor(st, key), v)
    else:
        new, write = _write_block(st, x, _block_key(st, x, key), v)
    x._id = new._id
    if x._input is not None:
        st.writes.append((x._input, *write))


def _assigned(st, x, value):
    """The value a write stores: a tensor of x's dtype (NumPy casts unsafely)."""
    if isinstance(value, (list, tuple)):
        from ._np_creation import asarray
        value = asarray(list(value))
    v = as_tensor(st, value, x._dtype)
    return v if v._dtype == x._dtype else v.astype(x._dtype)


def _is_mask(key):
    return isinstance(key, (Tensor, np.ndarray)) and np.dtype(key.dtype) == np.bool_


def _write_mask(st, x, mask, v):
    if v.ndim != 0:
        _break(st, "x[mask] = array (values taken in mask order)")
    if mask.ndim > x.ndim:
        raise IndexError(f"a boolean index of rank {mask.ndim} for a tensor of rank {x.ndim}")
    if mask.ndim < x.ndim:
        mask = mask.reshape(*mask.shape, *([1] * (x.ndim - mask.ndim)))
    new = emit(st, "where", [mask, v, x])
    return new, (None, new)


def _block_key(st, x, key):
    """[(dim, start, stop, is_int)] for a basic key, or a graph break."""
    items = _normalize_index(key, x.ndim)
    if sum(1 for k in items if k is not None) > x.ndim:
        raise IndexError(f"too many indices for a tensor of rank {x.ndim}")
    out = []
    for dim, k in enumerate(items):
        if k is None:
            _break(st, "a write with None in its index")
        if isinstance(k, slice):
            if k.step is not None and (isinstance(k.step, SymInt) or operator.index(k.step) != 1):
                _break(st, "a write into a strided slice (x[a:b:s] = v)")
            if k != slice(None):
                start = 0 if k.start is None else _shape_operand(k.start)
                stop = _END if k.stop is None else _shape_operand(k.stop)
                out.append((dim, start, stop, False))
        elif isinstance(k, (Tensor, np.ndarray, list, range, SymRange)):
            _break(st, "a write at integer index arrays (a scatter)")
        else:
            out.append((dim, *_integer_index(x, dim, k), True))
    return out


def _write_block(st, x, dims, v):
    """(x with the block of `dims` set to v, (the block's offsets, its value))."""
    offsets = [None] * x.ndim
    ints = [d for d, _, _, is_int in dims if is_int]

    def update(part, rest):
        """(part updated, the block's value)."""
        if not rest:
            block = _broadcast(st, v, [part.shape[d] for d in range(part.ndim) if d not in ints])
            for d in ints:  # an integer index keeps its dim in the block, of size 1
                block = emit(st, "unsqueeze", [block], {"dim": d})
            return block, block
        dim, start, stop, _ = rest[0]
        before = emit(st, "slice", [part, 0, start, 1], {"dim": dim})
        inside = emit(st, "slice", [part, start, stop, 1], {"dim": dim})
        lo = before.shape[dim]  # the start as Python's bounds make it
        after = emit(st, "slice", [part, lo + inside.shape[dim], _END, 1], {"dim": dim})
        offsets[dim] = lo
        inside, block = update(inside, rest[1:])
        return emit(st, "concat", [before, inside, after], {"dim": dim}), block

    new, block = update(x, dims)
    return new, (tuple(offsets), block)


def _broadcast(st, v, shape):
    """v broadcast to `shape` as NumPy's assignment does (leading 1s dropped)."""
    extra = v.ndim - len(shape)
    if extra > 0:
        v = emit(st, "squeeze", [v], {"dims": list(range(extra))})
    elif extra < 0:
        v = v.reshape(*([1] * -extra), *v.shape)
    return emit(st, "expand", [v, *shape]) if shape else v
