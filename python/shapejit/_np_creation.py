"""NumPy's array creation on tracing values (given sizes, tensors or lists of them)."""
from __future__ import annotations


import numpy as np

from . import _tracing as T
from ._tracing import SymInt, Tensor
from ._np_base import _emit, _st, _t
from ._np_shapes import broadcast_arrays


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    st = _st(*xi)
    xs = [_t(st, x).reshape(-1) for x in xi]
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
    st = _st(start, stop, num)
    numbers = (int, float, np.integer, np.floating)
    if retstep or axis != 0 or not isinstance(start, numbers) or not isinstance(stop, numbers):
        T._break(st, "np.linspace with array bounds, retstep or an axis")
    start, stop = float(start), float(stop)
    i = _emit(st, "arange", [0, T._shape_operand(num), 1], {"dtype": "f64"})
    step = T.true_divide(stop - start, (num - 1) if endpoint else num)
    y = i * step + start
    if endpoint:  # the last is stop itself; a single one is start
        y = T.where(i == num - 1, stop, y)
    y = T.where(i == 0, start, y)
    return y.astype(T.dtype_name(dtype) if dtype is not None else "f64")


def empty(shape, dtype=float, order="C", *, device=None, like=None):
    from . import _ops
    return _ops.zeros(shape, dtype)


def empty_like(x, dtype=None, order="K", subok=True, shape=None, *, device=None):
    from . import _ops
    return _ops.zeros_like(x, dtype)


def array(a, dtype=None, *, copy=True, **kw):
    """np.array: a copy of a tensor (a write into it is its own), else asarray."""
    out = asarray(a, dtype, **kw)
    return out._fresh() if copy and out is a else out


def asarray(a, dtype=None, order=None, *, like=None, **kw):
    st = _st(a)
    if isinstance(a, Tensor):
        return a.astype(dtype, copy=False) if dtype is not None else a
    if isinstance(a, SymInt):
        t = T.as_tensor(st, a)
        return t.astype(dtype) if dtype is not None else t
    if isinstance(a, (list, tuple)):
        parts = [asarray(e) for e in a]
        if not parts:
            return _emit(st, "full", [0], {"value": 0.0, "dtype": "f64" if dtype is None else T.dtype_name(dtype)})
        out = T.stack(parts, axis=0)
        return out.astype(dtype) if dtype is not None else out
    return T.as_tensor(st, a).astype(dtype) if dtype is not None else T.as_tensor(st, a)
