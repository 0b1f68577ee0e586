"""Writes into a tracing value as NumPy writes into an array, functionalized:
`x[key] = value` is traced as an update (a block, a select under a mask, a
scatter at the positions an advanced key picks), a write into a view is one
into the array it views, and in-place operators are in place with NumPy's
casting checks. The caller's arrays are written when the call returns
(_runtime.calls)."""
from __future__ import annotations

import math
import operator

import numpy as np

from ._indexing import bounded_slice, getitem, integer_index, is_index_array, normalize_index
from ._np.creation import asarray
from ._trace.dtypes import END, python_int_fits
from ._trace.promotion import probe
from ._trace.sizes import SymInt, SymRange, shape_operand
from ._trace.state import as_tensor, emit, graph_break
from ._trace.tensor import Scalar, Tensor, Unlifted, View


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
    return any(is_index_array(k) or (isinstance(k, Tensor) and k.ndim > 0) for k in items)


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
    items = normalize_index(key, x.ndim)
    if sum(1 for k in items if k is not None) > x.ndim:
        raise IndexError(f"too many indices for a tensor of rank {x.ndim}")
    out = []
    for dim, k in enumerate(items):
        if k is None:
            graph_break(st, "a write with None in its index")
        if isinstance(k, slice):
            k = bounded_slice(k)
            if k.step is not None and (isinstance(k.step, SymInt) or operator.index(k.step) != 1):
                graph_break(st, "a write into a strided slice (x[a:b:s] = v)")
            if k != slice(None):
                start = 0 if k.start is None else shape_operand(k.start)
                stop = END if k.stop is None else shape_operand(k.stop)
                out.append((dim, start, stop, False))
        elif isinstance(k, (Tensor, np.ndarray, list, range, SymRange)):
            graph_break(st, "a write at integer index arrays (a scatter)")
        else:
            out.append((dim, *integer_index(x, dim, k), True))
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
