"""A ufunc's methods and keywords on tracing values: `reduce` (axis,
dtype, keepdims, initial, where), `accumulate`, `reduceat`, `outer`, and a
call's `dtype=` and `casting=`, as NumPy defines them. What this module
does not take (another ufunc's reduce, `out=` of a method) is the caller's
to run in NumPy: each function gives NOT_TAKEN for it. `at` is a scatter,
_scatters.ufunc_at's, for the ufuncs of AT."""
from __future__ import annotations

import numpy as np

from .._trace.dtypes import NAMES, dtype_name
from .._trace.promotion import probe
from .._trace.state import as_tensor, emit, state_of, strong
from .._trace.tensor import Tensor, as_scalar
from . import arithmetic, reductions, statistics
from .base import checked_axis
from .creation import asarray

NOT_TAKEN = object()
_NO_VALUE = np._NoValue  # NumPy's "not given" for initial=

# The ufuncs whose reduce is a reduction of the op set, and its identity (None: it has none).
_REDUCTIONS = {np.add: ("sum", 0), np.multiply: ("prod", 1), np.maximum: ("max", None), np.minimum: ("min", None),
               np.logical_and: ("all", True), np.logical_or: ("any", False)}
_SCANS = {np.add: "cumsum", np.multiply: "cumprod", np.maximum: "cummax", np.minimum: "cummin"}
# The ufuncs whose `at` is a scatter of the op set (_scatters.ufunc_at), and its op.
AT = {np.add: "index_add", np.subtract: "index_add", np.multiply: "index_mul", np.maximum: "index_max", np.minimum: "index_min"}


def takes(ufunc, method, impl=None):
    """Whether ufunc.method on tracing values is traced (for the keywords
    each takes, see it); `impl`, the ufunc's entry in the registry."""
    if method == "reduce":
        return ufunc in _REDUCTIONS
    if method == "accumulate":
        return ufunc in _SCANS
    if method == "reduceat":
        return ufunc in _REDUCTIONS
    if method == "outer":
        return impl is not None
    return method == "at" and ufunc in AT


def reduce(ufunc, x, axis=0, dtype=None, out=None, keepdims=False, initial=_NO_VALUE, where=True):
    """ufunc.reduce(x, ...): NumPy's reduction along `axis` (0 by default,
    None: all of them), in `dtype`, of the elements `where` holds, starting
    from `initial`."""
    taken = _REDUCTIONS.get(ufunc)
    if taken is None or out is not None:
        return NOT_TAKEN
    op, identity = taken
    st = state_of(x)
    x = as_tensor(st, x)
    # The result's dtype, and NumPy's error where `initial` does not fit
    # it, from NumPy itself on a one-element stand-in.
    kw = {} if initial is _NO_VALUE else {"initial": initial}
    result = np.asarray(ufunc.reduce(np.ones(1, x.dtype), dtype=dtype, **kw)).dtype
    if result not in NAMES:
        return NOT_TAKEN
    if dtype is not None:
        x = x.astype(dtype)
    if op in ("all", "any"):
        x = x.astype(bool)  # NumPy's logical reductions give bools, whatever they reduce
    if where is not True:
        if identity is None and initial is _NO_VALUE:
            raise ValueError(f"reduction operation '{ufunc.__name__}' does not have an identity, so to use a where mask one "
                             "has to specify 'initial'")
        x = arithmetic.where(where, x, identity if identity is not None else initial)
    if op in ("all", "any"):
        axis = None if x.ndim == 0 else axis  # "axis 0" of a 0-d array
        out = (statistics.all if op == "all" else statistics.any)(x, axis, keepdims=keepdims)
    elif op in ("max", "min") and initial is _NO_VALUE:
        out = (reductions.max if op == "max" else reductions.min)(x, axis, keepdims)
    else:
        out = reductions.reduce(x, op, axis, keepdims)  # with an initial, an empty axis is its to give
    name = dtype_name(result)
    if out._dtype != name:
        out = out.astype(name)
    if initial is not _NO_VALUE:
        # In the result's dtype, as NumPy casts it (2 into a bool max is True).
        start = strong(st, np.asarray(initial).astype(result)[()])
        combine = {"sum": "add", "prod": "mul", "max": "maximum", "min": "minimum", "all": "and", "any": "or"}[op]
        out = (arithmetic.bitwise if op in ("all", "any") else arithmetic.binary)(combine, out, start)
        if out._dtype != name:
            out = out.astype(name)
    return as_scalar(out)


def accumulate(ufunc, x, axis=0, dtype=None, out=None):
    """ufunc.accumulate(x, ...): the running reduction along `axis`."""
    op = _SCANS.get(ufunc)
    if op is None or out is not None:
        return NOT_TAKEN
    st = state_of(x)
    x = as_tensor(st, x)
    if x.ndim == 0:
        raise TypeError("cannot accumulate on a scalar")
    if op in ("cumsum", "cumprod"):
        return (statistics.cumsum if op == "cumsum" else statistics.cumprod)(x, axis, dtype)
    if dtype is not None or axis is None:
        return NOT_TAKEN
    dim = checked_axis(axis, x.ndim)
    if x._dtype == "bool":  # the running or (maximum) or and (minimum), in bools
        return emit(st, op, [x.astype("i32")], {"dim": dim}).astype("bool")
    return emit(st, op, [x], {"dim": dim})


def reduceat(ufunc, x, indices, axis=0, dtype=None, out=None):
    """ufunc.reduceat(x, indices, ...): along `axis`, the reduction of
    x[indices[i]:indices[i + 1]] for each i (to the end for the last), or
    x[indices[i]] alone where the next index is not past it. Each segment
    is a row of a mask over the axis, reduced with the ufunc's identity
    elsewhere (-0.0 for a float sum: x + -0.0 is x, -0.0 too): one
    reduction of [segments, n], exact in integers, a float's sum rounded
    as a sum. An index outside [0, n) is NumPy's IndexError (a gather
    checks it)."""
    taken = _REDUCTIONS.get(ufunc)
    if taken is None or out is not None or axis is None:
        return NOT_TAKEN
    op, _ = taken
    st = state_of(x, indices)
    x = as_tensor(st, x)
    idx = asarray(indices) if isinstance(indices, (list, tuple)) else as_tensor(st, indices)
    if x.ndim == 0 or idx.ndim != 1 or idx._dtype not in ("i32", "i64", "f32", "f64"):
        return NOT_TAKEN
    result = np.asarray(ufunc.reduceat(np.ones(1, x.dtype), [0], dtype=dtype)).dtype
    if result not in NAMES:
        return NOT_TAKEN
    name = dtype_name(result)
    dim = checked_axis(axis, x.ndim)
    x = x if x._dtype == name else x.astype(name)
    idx = idx if idx._dtype == "i64" else idx.astype("i64")  # NumPy casts float indices (unsafely)
    n = x.shape[dim]
    # NumPy's range check, negative indices included: index_select checks it (its op is kept for that).
    emit(st, "index_select", [x, arithmetic.where(idx < 0, n, idx)], {"dim": dim})
    k = idx.shape[0]
    after = emit(st, "concat", [emit(st, "slice", [idx, 1, k, 1], {"dim": 0}), emit(st, "full", [1], {"value": 0, "dtype": "i64"}) + n],
                 {"dim": 0})
    end = arithmetic.where(idx < after, after, idx + 1)
    j = emit(st, "arange", [0, n, 1], {"dtype": "i64"})
    inside = (j[None, :] >= idx[:, None]) & (j[None, :] < end[:, None])  # [k, n]
    moved = x.swapaxes(dim, -1)[..., None, :]  # [..., 1, n]
    identity = {"sum": -0.0 if name in ("f32", "f64") else 0, "prod": 1, "all": True, "any": False,
                "max": -np.inf if name in ("f32", "f64") else np.iinfo(result).min if name != "bool" else False,
                "min": np.inf if name in ("f32", "f64") else np.iinfo(result).max if name != "bool" else True}[op]
    masked = arithmetic.where(inside, moved, strong(st, result.type(identity)))
    if op in ("all", "any"):
        segments = (statistics.all if op == "all" else statistics.any)(masked.astype(bool), -1)
    else:
        segments = reductions.reduce(masked, op, -1, False)
    segments = segments if segments._dtype == name else segments.astype(name)
    return segments.swapaxes(dim, -1)


def outer(ufunc, a, b):
    """ufunc.outer(a, b): ufunc(a[..., None, ...], b), a's dims then b's;
    its operands arrays, as NumPy's outer makes them (2 is int64,
    np.float32(2) float32)."""
    st = state_of(a, b)
    a, b = (strong(st, x) if isinstance(x, np.generic) else as_tensor(st, x) for x in (a, b))
    return ufunc(a.reshape(*a.shape, *([1] * b.ndim)), b)


def call_with_dtype(ufunc, impl, inputs, dtype, casting="same_kind"):
    """ufunc(*inputs, dtype=dtype[, casting=...]): computed in NumPy's
    dtype for that signature (its TypeError where the casting refuses the
    inputs), the result in it."""
    probes = [probe(x) for x in inputs]
    if any(p is None for p in probes):
        return NOT_TAKEN
    with np.errstate(all="ignore"):
        want = np.asarray(ufunc(*probes, dtype=dtype, casting=casting)).dtype  # NumPy's error, on the same dtypes
    if want not in NAMES:
        return NOT_TAKEN
    name = dtype_name(want)
    cast = [x.astype(name) if isinstance(x, Tensor) and x._dtype != name else
            want.type(x) if isinstance(x, np.generic) else x for x in inputs]
    out = impl(*cast)
    return out.astype(name) if isinstance(out, Tensor) and out._dtype != name else out
