"""NumPy's array creation on tracing values (given sizes, tensors or lists of them)."""
from __future__ import annotations

import numpy as np

from .._trace.dtypes import FLOAT, dtype_name, python_int_fits
from .._trace.sizes import SymInt, shape_operand
from .._trace.state import as_tensor, emit, graph_break, state_of
from .._trace.tensor import Tensor
from .arithmetic import true_divide, where
from .base import tensor_of
from .registry import implements
from .shapes import broadcast_arrays, stack


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    st = state_of(*xi)
    xs = [tensor_of(st, x).reshape(-1) for x in xi]
    n = len(xs)
    out = []
    for i, x in enumerate(xs):
        shape = [1] * n
        shape[i] = x.shape[0]
        out.append(x.reshape(*shape))
    if indexing == "xy" and n >= 2:
        out = [o.swapaxes(0, 1) for o in out]
    out = tuple(out) if sparse else broadcast_arrays(*out)
    return tuple(o._fresh() for o in out) if copy else out  # copies by default in NumPy


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    st = state_of(start, stop, num)
    numbers = (int, float, np.integer, np.floating)
    if retstep or axis != 0 or not isinstance(start, numbers) or not isinstance(stop, numbers):
        graph_break(st, "np.linspace with array bounds, retstep or an axis")
    if isinstance(num, (int, np.integer)) and num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    start, stop = float(start), float(stop)
    delta = stop - start
    div = (num - 1) if endpoint else num
    i = emit(st, "arange", [0, shape_operand(num), 1], {"dtype": "f64"})
    if div > 0:  # a predicate where num is a size
        if isinstance(div, SymInt):
            y = i * true_divide(delta, div) + start
        else:
            step = delta / div  # in float64, as NumPy divides
            y = (i / div * delta if step == 0 else i * step) + start
    else:
        y = i * delta + start  # 0 or 1 sample: its step is undefined
    if endpoint and num > 1:  # the last is stop itself
        y = where(i == num - 1, stop, y)
    name = dtype_name(dtype) if dtype is not None else "f64"
    if name in ("i32", "i64"):
        y = emit(st, "floor", [y])  # NumPy floors before it casts to an integer dtype
    return y.astype(name)


def empty(shape, dtype=float, order="C", *, device=None, like=None):
    return zeros(shape, dtype)


def empty_like(x, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return zeros_like(x, dtype)


def ascontiguousarray(a, dtype=None, *, like=None):
    """An array of at least one dim (NumPy's for a 0-d one), as asarray gives it."""
    out = asarray(a, dtype)
    return out.reshape(1) if out.ndim == 0 else out


def copy(a, order="K", subok=False):
    return array(a, copy=True)


def array(a, dtype=None, *, copy=True, **kw):
    """np.array: a copy of a tensor (a write into it is its own), else asarray."""
    out = asarray(a, dtype, **kw)
    return out._fresh() if copy and out is a else out


def asarray(a, dtype=None, order=None, *, like=None, **kw):
    st = state_of(a)
    if isinstance(a, Tensor):
        return a.astype(dtype, copy=False) if dtype is not None else a
    if isinstance(a, SymInt):
        t = as_tensor(st, a)
        return t.astype(dtype) if dtype is not None else t
    if isinstance(a, (list, tuple)):
        parts = [asarray(e) for e in a]
        if not parts:
            return emit(st, "full", [0], {"value": 0.0, "dtype": "f64" if dtype is None else dtype_name(dtype)})
        out = stack(parts, axis=0)
        return out.astype(dtype) if dtype is not None else out
    return as_tensor(st, a).astype(dtype) if dtype is not None else as_tensor(st, a)


def _fill_dtype(value, dtype):
    if dtype is not None:
        return dtype_name(dtype)
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "i64"
    return "f64"


def full(shape, fill_value, dtype=None):
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if isinstance(fill_value, (SymInt, Tensor)):
        # A traced value fills as it is (a size: an int64), never read as a number.
        fill = as_tensor(state_of(fill_value, *shape), fill_value)
        return full(shape, 0, dtype or fill.dtype) + fill.astype(dtype or fill.dtype)
    dt = _fill_dtype(fill_value, dtype)
    if type(fill_value) is int:
        if dtype is None and not -2**63 <= fill_value < 2**63:
            graph_break(state_of(*shape), f"np.full of {fill_value}, which NumPy makes an unsigned or object array")
        python_int_fits(fill_value, dt)
    v = float(fill_value) if dt in FLOAT else int(fill_value)
    return emit(state_of(*shape), "full", [shape_operand(s) for s in shape], {"value": v, "dtype": dt})


def zeros(shape, dtype=float):
    return full(shape, 0, dtype)


def ones(shape, dtype=float):
    return full(shape, 1, dtype)


def full_like(x, fill_value, dtype=None):
    x = tensor_of(state_of(x), x)
    return full(x.shape, fill_value, dtype or x.dtype)


def zeros_like(x, dtype=None):
    return full_like(x, 0, dtype)


def ones_like(x, dtype=None):
    return full_like(x, 1, dtype)


def arange(start, stop=None, step=1, dtype=None):
    if stop is None:
        start, stop = 0, start
    for v in (start, stop, step):
        if not isinstance(v, (int, np.integer, SymInt)):
            raise TypeError("shapejit.arange takes integer bounds while tracing")
    dt = dtype_name(dtype) if dtype is not None else "i64"
    st = state_of(start, stop, step)
    return emit(st, "arange", [shape_operand(start), shape_operand(stop), shape_operand(step)], {"dtype": dt})


# -- the table's entries (the creation functions that dispatch on an array;
# the others take sizes, _runtime.patches) ---------------------------------------
implements(np.zeros_like)(zeros_like)
implements(np.ones_like)(ones_like)
implements(np.full_like)(full_like)
implements(np.empty_like)(empty_like)
implements(np.meshgrid)(meshgrid)
implements(np.copy)(copy)
