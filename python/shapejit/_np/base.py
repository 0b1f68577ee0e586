"""What the table's families share: the trace a call belongs to, tensors of
its arguments, arguments an implementation does not take, axes, sizes and
fills."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from .._trace.dtypes import FLOAT
from .._trace.sizes import SymInt
from .._trace.state import as_tensor, emit, graph_break, state_of


def tensor_of(st, x, like=None):
    """x as a tensor of the trace st (as_tensor)."""
    return as_tensor(st, x, like)


def to_float(x):
    """x, a tensor, as a float tensor (NumPy's ints become float64)."""
    return x if x._dtype in FLOAT else x.astype("f64")


def unsupported(st, what, **kwargs):
    """A graph break for arguments the traced function does not take."""
    for k, v in kwargs.items():
        if v is not None and v is not False:
            graph_break(st, f"{what} with {k}= has no shapejit op")


def axis_list(axis, rank):
    """An axis argument (None: all of them) as a list of ints."""
    if axis is None:
        return list(range(rank))
    if isinstance(axis, (list, tuple)):
        return [operator.index(a) for a in axis]
    return [operator.index(axis)]


def checked_axis(axis, rank, what=""):
    """`axis` of an array of rank `rank`, in [0, rank): NumPy's AxisError when out of it."""
    a = operator.index(axis)
    if not -rank <= a < rank:
        raise np.exceptions.AxisError(f"{what}axis {a} is out of bounds for array of dimension {rank}")
    return a % rank


def count(x, axes):
    """The number of elements a reduction over `axes` takes (a size)."""
    n = 1
    for a in axes:
        n = x.shape[a] * n
    return n


def full_of(x, value, dtype):
    """A tensor of x's shape, all `value`."""
    return emit(x._st, "full", list(x.shape), {"value": value, "dtype": dtype})


def stops_where(st, cond):
    """A check the kernel makes on the data: where `cond` (a bool tensor)
    holds anywhere, the call stops, as an index out of range stops it, and
    NumPy runs the call, raising its own error (np.nanargmax's all-NaN
    slice, np.unravel_index's index past the size). Computed whether or not
    anything reads it (state.CHECKING)."""
    flag = emit(st, "where", [cond, 1, 0]).astype("i64").reshape(-1)
    emit(st, "index_select", [emit(st, "full", [1], {"value": 0, "dtype": "i64"}), flag], {"dim": 0})


def sym_min(a, b):
    """min of two sizes: traced where either is a SymInt."""
    if isinstance(a, SymInt) or isinstance(b, SymInt):
        return emit(state_of(a, b), "sym_min", [a, b])
    return builtins.min(a, b)


def sym_max(a, b):
    if isinstance(a, SymInt) or isinstance(b, SymInt):
        return emit(state_of(a, b), "sym_max", [a, b])
    return builtins.max(a, b)


def zero_of(x):
    return False if x._dtype == "bool" else (0.0 if x._dtype in FLOAT else 0)


def fill_of(value, x):
    return float(value) if x._dtype in FLOAT else int(value)
