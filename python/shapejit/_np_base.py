"""What the traced NumPy functions (_np_*.py) share: the trace a call
belongs to, tensors of its arguments, arguments it does not take, axes,
sizes and fills."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from . import _tracing as T
from ._tracing import SymInt

_FLOAT = ("f32", "f64")


def _st(*xs):
    return T._state_of(*xs)


def _t(st, x, like=None):
    return T.as_tensor(st, x, like)


def _emit(st, op, operands, attrs=None):
    return T.emit(st, op, operands, attrs)


def _float(x):
    """x as a float tensor (NumPy's ints become float64)."""
    return x if x._dtype in _FLOAT else x.astype("f64")


def _no(st, what, **kwargs):
    """A graph break for arguments the traced function does not take."""
    for k, v in kwargs.items():
        if v is not None and v is not False:
            T._break(st, f"{what} with {k}= has no shapejit op")


def _axis(axis, ndim):
    a = operator.index(axis)
    if not -ndim <= a < ndim:
        raise np.exceptions.AxisError(f"axis {a} is out of bounds for array of dimension {ndim}")
    return a % ndim


def _count(x, axes):
    """The number of elements a reduction over `axes` takes (a size)."""
    n = 1
    for a in axes:
        n = x.shape[a] * n
    return n


def _full_like(x, value, dtype):
    return _emit(x._st, "full", list(x.shape), {"value": value, "dtype": dtype})


def _smin(a, b):
    """min of two sizes: traced where either is a SymInt."""
    if isinstance(a, SymInt) or isinstance(b, SymInt):
        return T.emit(_st(a, b), "sym_min", [a, b])
    return builtins.min(a, b)


def _smax(a, b):
    if isinstance(a, SymInt) or isinstance(b, SymInt):
        return T.emit(_st(a, b), "sym_max", [a, b])
    return builtins.max(a, b)

def _zero(x):
    return False if x._dtype == "bool" else (0.0 if x._dtype in _FLOAT else 0)


def _fill(value, x):
    return float(value) if x._dtype in _FLOAT else int(value)
