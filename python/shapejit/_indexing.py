"""Indexing a tracing value as NumPy indexes an array: integers, slices
(negative steps too), None, Ellipsis, integer index arrays and lists,
ranges, and boolean masks (a data-dependent op)."""
from __future__ import annotations

import operator

import numpy as np

from ._tracing import _END, SymInt, Tensor, _break, _shape_operand, as_tensor, emit, is_array


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


def getitem(x: Tensor, key):
    st = x._st
    if isinstance(key, (Tensor, np.ndarray)) or (is_array(key) and not isinstance(key, tuple)):
        idx = as_tensor(st, key)
        if idx._dtype == "bool":
            return emit(st, "masked_select", [x, idx])
        if idx.ndim == 1:
            return emit(st, "index_select", [x, idx], {"dim": 0})
        if x.ndim == 2:
            return emit(st, "embedding", [x, idx])
        flat = emit(st, "index_select", [x, idx.reshape(-1)], {"dim": 0})
        return flat.reshape(*idx.shape, *x.shape[1:])
    if isinstance(key, range):
        return getitem(x, _arange_of(st, key))
    if isinstance(key, list):
        return getitem(x, as_tensor(st, key, "i64", index=True))
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
                stop = _END if k.stop is None else _shape_operand(k.stop)
                x = emit(st, "slice", [x, start, stop, _shape_operand(step)], {"dim": dim})
            dim += 1
        elif isinstance(k, (Tensor, np.ndarray, list, range)):
            idx = _arange_of(st, k) if isinstance(k, range) else as_tensor(st, k, "i64", index=True)
            if idx.ndim != 1 or idx._dtype == "bool":
                _break(st, "advanced indexing beyond one integer index array per dim")
            x = emit(st, "index_select", [x, idx], {"dim": dim})
            dim += 1
        else:
            i = _shape_operand(k)
            if isinstance(i, int):
                n = x.shape[dim]
                if i < 0:
                    if not bool(n >= -i):
                        raise IndexError(f"index {i} is out of bounds for a dim of size {int(n)}")
                    start, stop = i, (i + 1 if i != -1 else _END)
                else:
                    if not bool(n > i):
                        raise IndexError(f"index {i} is out of bounds for a dim of size {int(n)}")
                    start, stop = i, i + 1
            else:
                start, stop = i, i + 1
            x = emit(st, "slice", [x, start, stop, 1], {"dim": dim})
            squeeze.append(dim)
            dim += 1
    if squeeze:
        x = emit(st, "squeeze", [x], {"dims": squeeze})
    return x


def _arange_of(st, r: range):
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
