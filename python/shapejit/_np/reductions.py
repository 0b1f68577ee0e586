"""NumPy's reductions the op set has: sum, mean, prod, max, min, argmax,
argmin, with NumPy's dtypes (small integers summed as int64, a mean of
integers in float64), its 0-d results as scalars, and its errors where an
axis is out of range or a reduction with no identity meets an empty one."""
from __future__ import annotations

import numpy as np

from .._trace.dtypes import FLOAT
from .._trace.state import as_tensor, emit, state_of
from .._trace.tensor import as_scalar
from .base import axis_list, checked_axis
from .registry import implements


def _tensor(x):
    return as_tensor(state_of(x), x)


def reduce(x, op, axis, keepdims, dtype=None):
    """The op set's reduction `op` of x over `axis`, in NumPy's dtype."""
    x = _tensor(x)
    src = x
    if op == "mean" and x._dtype not in FLOAT:
        x = x.astype("f64")
    if op in ("sum", "prod") and x._dtype in ("bool", "i32"):
        x = x.astype("i64")  # NumPy sums and multiplies small integers as its int64
    if dtype is not None:
        x = x.astype(dtype)
    if src.ndim == 0 and axis in (0, -1, (0,), (-1,)) and op != "mean":
        axis = None  # NumPy's ufunc reductions take "axis 0" of a 0-d array (its mean does not)
    axes = axis_list(axis, src.ndim)
    for a in axes:
        if not -src.ndim <= a < src.ndim:
            raise np.exceptions.AxisError(f"axis {a} is out of bounds for array of dimension {src.ndim}")
    return as_scalar(emit(src._st, op, [x], {"axes": axes, "keepdim": bool(keepdims)}))


def _nonempty(x, axis, message):
    """NumPy's error for a reduction with no identity over an empty axis,
    raised where NumPy raises it, before what follows (each size read
    as a predicate: an entry guards that it is not 0)."""
    for a in (axis_list(axis, x.ndim) if x.ndim else []):
        if x.shape[checked_axis(a, x.ndim)] == 0:
            raise ValueError(message)


@implements(np.sum)
def sum(x, axis=None, dtype=None, keepdims=False):  # noqa: A001 - NumPy's name
    return reduce(x, "sum", axis, keepdims, dtype)


@implements(np.mean)
def mean(x, axis=None, dtype=None, keepdims=False):
    return reduce(x, "mean", axis, keepdims, dtype)


def prod(x, axis=None, dtype=None, keepdims=False):
    return reduce(x, "prod", axis, keepdims, dtype)


@implements(np.max, np.amax)
def max(x, axis=None, keepdims=False):  # noqa: A001 - NumPy's name
    x = _tensor(x)
    _nonempty(x, axis, "zero-size array to reduction operation maximum which has no identity")
    return reduce(x, "max", axis, keepdims)


@implements(np.min, np.amin)
def min(x, axis=None, keepdims=False):  # noqa: A001 - NumPy's name
    x = _tensor(x)
    _nonempty(x, axis, "zero-size array to reduction operation minimum which has no identity")
    return reduce(x, "min", axis, keepdims)


@implements(np.argmax)
def argmax(x, axis=None, keepdims=False, *, _name="argmax"):
    x = src = _tensor(x)
    if axis is None:
        x, axis = src.reshape(-1), 0
    _nonempty(x, axis, f"attempt to get {_name} of an empty sequence")
    return as_scalar(emit(src._st, "argmax", [x], {"dim": checked_axis(axis, x.ndim), "keepdim": bool(keepdims)}))


@implements(np.argmin)
def argmin(x, axis=None, keepdims=False):
    x = src = _tensor(x)
    if x._dtype == "bool":
        x = x.astype("i64")
    if axis is not None:
        checked_axis(axis, src.ndim)
    return argmax(-x, axis, keepdims, _name="argmin")

