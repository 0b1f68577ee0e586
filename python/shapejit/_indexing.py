"""Indexing a tracing value as NumPy indexes an array: integers, slices
(negative steps too), None, Ellipsis, integer index arrays and lists,
ranges, and boolean masks (a data-dependent op)."""
from __future__ import annotations

import math
import operator

import numpy as np

from ._np.creation import asarray
from ._np.registry import implements
from ._np.shapes import broadcast_arrays
from ._trace.dtypes import END, python_int_fits
from ._trace.promotion import probe
from ._trace.sizes import SymInt, SymRange, shape_operand
from ._trace.state import as_tensor, emit, graph_break, state_of
from ._trace.tensor import Scalar, Tensor, Unlifted, View, as_scalar, is_array


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
    items = _normalize_index(key, x.ndim)
    if sum(1 for k in items if k is not None) > x.ndim:
        raise IndexError(f"too many indices for a tensor of rank {x.ndim}")
    arrays = sum(1 for k in items if _is_index_array(k))
    if arrays and arrays + sum(1 for k in items if k is not None and not isinstance(k, slice) and not _is_index_array(k)) >= 2:
        return _advanced(x, items)
    dim = 0
    squeeze = []
    for k in items:
        if k is None:
            x = emit(st, "unsqueeze", [x], {"dim": dim})
            dim += 1
        elif isinstance(k, slice):
            if k != slice(None):
                k = _bounded_slice(k)
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
            start, stop = _integer_index(x, dim, k)
            x = emit(st, "slice", [x, start, stop, 1], {"dim": dim})
            squeeze.append(dim)
            dim += 1
    if squeeze:
        x = emit(st, "squeeze", [x], {"dims": squeeze})
        if x.ndim == 0 and all(k is not None and not isinstance(k, slice) for k in items):
            return as_scalar(x._fresh())  # an element: NumPy's scalar, a copy
    return x


def _is_index_array(k):
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
        elif _is_index_array(k):
            idx = as_tensor(st, k, "i64", index=True)
        else:
            _integer_index(y, i, k)  # NumPy's bounds check of an integer, as a predicate
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


def _integer_index(x, dim, k):
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


def _bounded_slice(k: slice) -> slice:
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


# -- writes: x[key] = value, functionalized ---------------------------------------
#
# A write makes the updated array a new value of the graph and moves the
# tensor to it, so the code after it reads what NumPy would. A basic key
# (integers and step-1 slices) updates a block: the array is cut along each
# indexed dim into the part before the block, the block and the part after
# (slices with Python's bounds, so the three parts tile the dim exactly), and
# put together again around the block's new value. A boolean mask with a
# scalar value is a `where`. A write into a view (x[1:3], x.T, x[0]) goes
# back into the array it views, and from there into its own parent, to the
# root of the chain (assign); the other views of that root see it when they
# are next read (_trace.tensor.View). A write into an input of the call (an
# argument, or an array read through self, a closure or a global) is kept
# with the block's offsets, and the caller's array gets it when the call
# returns.

def setitem(x: Tensor, key, value):
    st = x._st
    v = _assigned(st, x, value)
    if is_mask(key) and v.ndim == 0:
        new, region = _write_mask(st, x, as_tensor(st, key), v)
    elif is_mask(key) or _is_advanced(key) or _is_strided(key):
        new = scatter(st, x, key, v, "index_put")
        region = (None, new)
    else:
        new, region = _write_block(st, x, _block_key(st, x, key), v)
    assign(x, new, region)


def _is_advanced(key):
    """Whether a key that is not a mask holds an index array (NumPy's
    advanced indexing): a write there is a scatter."""
    items = key if isinstance(key, tuple) else (key,)
    return any(_is_index_array(k) or (isinstance(k, Tensor) and k.ndim > 0) for k in items)


def _is_strided(key):
    """Whether a basic key takes a step other than 1, or holds None: its
    block is no box of x, and a write there is a scatter."""
    items = key if isinstance(key, tuple) else (key,)
    return any(k is None or (isinstance(k, slice) and k.step is not None and (isinstance(k.step, SymInt) or operator.index(k.step) != 1))
               for k in items)


def scatter(st, x, key, v, op):
    """x with the elements x[key] reads set to v (index_put: NumPy's
    assignment, a repeated element keeping its last value) or added with
    it (index_add: np.add.at, every one added), v broadcast to x[key]'s
    shape as NumPy's assignment broadcasts. The elements are found by
    indexing x's positions with the key, so every form NumPy's indexing
    takes (several arrays broadcast together, slices between them, negative
    indices, NumPy's IndexError out of range) is the read's own."""
    positions = emit(st, "arange", [0, x.size, 1], {"dtype": "i64"}).reshape(*x.shape)
    at = getitem(positions, key)
    if not isinstance(at, Tensor) or type(at) is Scalar:
        at = as_tensor(st, at, "i64")
    values = _broadcast(st, v, list(at.shape))
    flat = emit(st, op, [x.reshape(-1), at.reshape(-1), values.reshape(-1)], {"dim": 0})
    return flat.reshape(*x.shape)


def assign(x: Tensor, new: Tensor, region):
    """x (a tensor, or a view of one) now holds `new`, of its shape and
    dtype, which differs from its value before in `region`: (the block's
    offset in each dim, None where it spans the dim; its value), or (None,
    `new`) for all of it."""
    if type(x) is Unlifted:  # written before it was read (a 0-d array): the input it is takes the write
        x._lift()
    # The values as they are now: a view among them (x[...] = x.T) would be
    # made again from what the write changes.
    new = new._fresh() if isinstance(new, View) else new
    offsets, block = region
    region = (offsets, block._fresh() if isinstance(block, View) else block)
    if isinstance(x, View):
        parent_new, parent_region = _put_back(x, new, region)
        assign(x._parent, parent_new, parent_region)
        x._id = new._id
        x._seen = x._root._writes
        return
    x._id = new._id
    x._writes += 1
    if x._input is not None:
        offsets, block = region
        x._st.writes.append((x._input, offsets, block._fresh(), x))


def _put_back(view, new, region):
    """(the view's parent with the view's elements set to `new`, the region
    of the parent that changed) by the op that made the view."""
    st = view._st
    put = _PUTS.get(view._op)
    if put is None:
        graph_break(st, f"a write into a {view._op} of an array, which shapejit cannot write back into that array")
    offsets, block = region
    if offsets is None:
        offsets, block = (None,) * view.ndim, new
    return put(st, view, new, list(offsets), block)


def _put_slice(st, view, new, offsets, block):
    (start, stop, step), attrs = view._how
    if isinstance(step, SymInt) or step != 1:
        graph_break(st, "a write into a strided slice of an array (x[a:b:s] = v)")
    dim, parent = attrs["dim"], view._parent
    before = emit(st, "slice", [parent, 0, start, 1], {"dim": dim})
    lo = before.shape[dim]  # the start as Python's bounds make it
    after = emit(st, "slice", [parent, lo + new.shape[dim], END, 1], {"dim": dim})
    offsets[dim] = lo if offsets[dim] is None else lo + offsets[dim]
    return emit(st, "concat", [before, new, after], {"dim": dim}), (tuple(offsets), block)


def _put_squeeze(st, view, new, offsets, block):
    _, attrs = view._how
    for d in sorted(a % view._parent.ndim for a in attrs["dims"]):
        new = emit(st, "unsqueeze", [new], {"dim": d})
        block = emit(st, "unsqueeze", [block], {"dim": d})
        offsets.insert(d, None)
    return new, (tuple(offsets), block)


def _put_unsqueeze(st, view, new, offsets, block):
    _, attrs = view._how
    d = attrs["dim"] % view.ndim
    del offsets[d]
    parent_new = emit(st, "squeeze", [new], {"dims": [d]})
    if not bool(block.shape[d] == 1):  # a block over none of the view's new dim: an empty write, made whole
        return parent_new, (None, parent_new)
    return parent_new, (tuple(offsets), emit(st, "squeeze", [block], {"dims": [d]}))


def _put_permute(st, view, new, offsets, block):
    _, attrs = view._how
    perm = attrs["perm"]
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    back = [offsets[inverse[d]] for d in range(len(perm))]
    return (emit(st, "permute", [new], {"perm": inverse}),
            (tuple(back), emit(st, "permute", [block], {"perm": inverse})))


def _put_transpose(st, view, new, offsets, block):
    _, attrs = view._how
    a, b = attrs["dim0"], attrs["dim1"]
    offsets[a], offsets[b] = offsets[b], offsets[a]
    swap = {"dim0": a, "dim1": b}
    return emit(st, "transpose", [new], swap), (tuple(offsets), emit(st, "transpose", [block], swap))


def _put_flip(st, view, new, offsets, block):
    flipped = view._derive(new)  # flipping again undoes it
    return flipped, (None, flipped)


def _read_only(st, view, new, offsets, block):
    raise ValueError("assignment destination is read-only")


# A write into a view by the op that made it; the others (a reshape, which
# NumPy may have copied; an expand; a negative step) are a graph break.
_PUTS = {"slice": _put_slice, "squeeze": _put_squeeze, "unsqueeze": _put_unsqueeze, "permute": _put_permute,
         "transpose": _put_transpose, "flip": _put_flip, "broadcast_to": _read_only, "diagonal": _read_only}


def inplace(x: Tensor, ufunc, other, compute):
    """x op= other, as NumPy's ufunc(x, other, out=x): NumPy's own casting
    errors first; then the result, computed as x op other is, must broadcast
    to x's shape; it is written into x (cast to x's dtype), and x itself is
    the value of the expression."""
    _casting_refused(ufunc, x, other)
    if ufunc is np.matmul and (x.ndim < 1 or np.ndim(other) < 2):
        raise ValueError("inplace matrix multiplication requires the first operand to have at least one and the second "
                         "at least two dimensions.")
    result = compute()
    if isinstance(result, Tensor):
        if result.ndim > x.ndim or any(bool(result.shape[-1 - d] != x.shape[-1 - d]) for d in range(result.ndim)):
            raise ValueError(f"non-broadcastable output operand with shape {tuple(int(n) for n in x.shape)} doesn't match "
                             f"the broadcast shape {tuple(int(n) for n in result.shape)}")
    setitem(x, Ellipsis, result)
    return x


def _casting_refused(ufunc, x, other):
    """Raises what NumPy raises for ufunc(x, other, out=x) before it looks at
    shapes: a result its casting rule cannot write into x, a Python int out
    of x's range. Asked of NumPy itself, on one-element stand-ins of the
    same dtypes (other errors of the stand-ins are theirs, not the call's)."""
    stand_in = probe(other)
    if stand_in is None:
        return
    out = np.ones(1, x.dtype)
    with np.errstate(all="ignore"):
        try:
            ufunc(out.copy(), stand_in, out=out)
        except (TypeError, OverflowError):
            raise
        except Exception:  # noqa: BLE001 - the stand-ins' shapes: the traced call checks its own
            pass


def _assigned(st, x, value):
    """The value a write stores: a tensor of x's dtype. NumPy casts an array
    unsafely, but converts a scalar into an integer array as Python's int()
    does, refusing a NaN, an infinity and a value out of the dtype's range."""
    if isinstance(value, (list, tuple)):
        value = asarray(list(value))
    if x._dtype in ("i32", "i64"):
        if type(value) is Scalar and (value._dtype in ("f32", "f64") or (value._dtype == "i64" and x._dtype == "i32")):
            # Its value decides whether NumPy raises: read it (a cut), as NumPy reads it.
            value = st.read(value, lambda a: a[()], "a NumPy scalar written into an integer array (NumPy checks its value)")
        if isinstance(value, (float, np.floating)):
            if math.isnan(value):
                raise ValueError("cannot convert float NaN to integer")
            if math.isinf(value):
                raise OverflowError("cannot convert float infinity to integer")
            value = int(value)
        elif isinstance(value, np.integer):
            value = int(value)
    if type(value) is int:  # NumPy 2 refuses a Python int out of x's range
        if x._dtype == "bool":
            value = bool(value)
        else:
            python_int_fits(value, x._dtype)
            if x._dtype in ("f32", "f64"):
                value = float(value)
    elif isinstance(value, SymInt):  # a size is a Python int to NumPy: the same, as predicates on it
        if x._dtype == "bool":
            value = value != 0
        elif x._dtype == "i32" and not (bool(value >= -2**31) and bool(value <= 2**31 - 1)):
            raise OverflowError(f"Python integer {int(value)} out of bounds for int32")
    v = as_tensor(st, value, x._dtype)
    return v if v._dtype == x._dtype else v.astype(x._dtype)


def is_mask(key):
    return isinstance(key, (Tensor, np.ndarray)) and np.dtype(key.dtype) == np.bool_


def _write_mask(st, x, mask, v):
    """x[mask] = v of a scalar v: a select."""
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
            graph_break(st, "a write with None in its index")
        if isinstance(k, slice):
            k = _bounded_slice(k)
            if k.step is not None and (isinstance(k.step, SymInt) or operator.index(k.step) != 1):
                graph_break(st, "a write into a strided slice (x[a:b:s] = v)")
            if k != slice(None):
                start = 0 if k.start is None else shape_operand(k.start)
                stop = END if k.stop is None else shape_operand(k.stop)
                out.append((dim, start, stop, False))
        elif isinstance(k, (Tensor, np.ndarray, list, range, SymRange)):
            graph_break(st, "a write at integer index arrays (a scatter)")
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
        after = emit(st, "slice", [part, lo + inside.shape[dim], END, 1], {"dim": dim})
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
