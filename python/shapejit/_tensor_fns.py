"""Functions of tensors: the traced side of shapejit's functions that are
not methods (matmul, where, concatenate...). The package calls them through
``_tracing``, which re-exports them; they reach the tracer through it."""
from __future__ import annotations

import operator

import numpy as np

from . import _tracing as T


def matmul(a, b):
    st = T._state_of(a, b)
    a, b = T.promote(st, T.as_tensor(st, a), T.as_tensor(st, b))
    for i, t in enumerate((a, b)):
        if t.ndim == 0:
            raise ValueError(f"matmul: Input operand {i} does not have enough dimensions (has 0, gufunc core with signature "
                             "(n?,k),(k,m?)->(n?,m?) requires 1)")
    if a._dtype not in ("f32", "f64"):
        return _exact_matmul(a, b)
    return T.emit(st, "matmul", [a, b])


def _exact_matmul(a, b):
    """An integer or bool product as NumPy computes it, in its own dtype
    (wrapping as it does; bool: any of the ands), from products and a sum:
    the matmul op is float only, and floats would round past 2^53."""
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    left, right = a.ndim == 1, b.ndim == 1
    if left:
        a = a[None, :]
    if right:
        b = b[:, None]
    if a.shape[-1] != b.shape[-2]:  # read as a predicate, as NumPy checks it
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                         f"(n?,k),(k,m?)->(n?,m?) (size {int(b.shape[-2])} is different from {int(a.shape[-1])})")
    if a._dtype == "bool":
        out = (a[..., :, :, None] & b[..., None, :, :]).any(axis=-2)
    else:
        out = (a[..., :, :, None] * b[..., None, :, :]).sum(axis=-2).astype(a._dtype)
    if left and right:
        return out.reshape(())
    return out[..., 0, :] if left else out[..., 0] if right else out


def where(c, a, b):
    st = T._state_of(c, a, b)
    c = T.as_tensor(st, c)
    if c._dtype != "bool":
        c = T.emit(st, "ne", [c, 0])
    numbers = (bool, int, float, np.generic)
    if isinstance(a, numbers) and isinstance(b, numbers):
        # Two numbers take the dtype NumPy gives them together.
        dt = np.result_type(a, b)
        a, b = T.as_tensor(st, np.asarray(a, dt)), T.as_tensor(st, np.asarray(b, dt))
    a, b = _wrapped_int(a, b), _wrapped_int(b, a)
    for v, other in ((a, b), (b, a)):
        if type(v) is int and not -2**63 <= v < 2**63 and not (isinstance(other, T.Tensor) and other._dtype in ("f32", "f64")):
            T._break(st, f"np.where of {v} and a {getattr(other, 'dtype', type(other).__name__)} (NumPy gives an unsigned or object array)")
    a, b = T.promote(st, a, b)
    return T.emit(st, "where", [c, a, b])


def _wrapped_int(v, other):
    """NumPy's where casts a Python int to the other operand's integer dtype
    unsafely: it wraps, however far out of range."""
    if type(v) is int and isinstance(other, T.Tensor) and other._dtype in ("i32", "i64"):
        bits = 32 if other._dtype == "i32" else 64
        v &= (1 << bits) - 1
        return v - (1 << bits) if v >> (bits - 1) else v
    return v


def maximum(a, b): return T.binary("maximum", a, b)
def minimum(a, b): return T.binary("minimum", a, b)


def concatenate(arrays, axis=0):
    arrays = list(arrays)
    st = T._state_of(*arrays)
    ts = [T.as_tensor(st, a) for a in arrays]
    target = ts[0]._dtype
    for t in ts[1:]:
        if t._dtype != target:
            target = T._NAMES[np.result_type(T._DTYPES[target], t.dtype)]
    ts = [t.astype(target) for t in ts]
    if axis is None:
        ts, axis = [t.reshape(-1) for t in ts], 0
    return ts[0] if len(ts) == 1 else T.emit(st, "concat", ts, {"dim": operator.index(axis)})


def stack(arrays, axis=0):
    arrays = list(arrays)
    st = T._state_of(*arrays)
    return concatenate([expand_dims(T.as_tensor(st, a), axis) for a in arrays], axis=axis)


def expand_dims(x, axis):
    st = T._state_of(x)
    x = T.as_tensor(st, x)
    axes = T._axes(axis, x.ndim)
    rank = x.ndim + len(axes)
    for a in sorted(d % rank for d in axes):
        x = T.emit(st, "unsqueeze", [x], {"dim": a})
    return x


def unary(op, x):
    st = T._state_of(x)
    x = T.as_tensor(st, x)
    if op == "abs" and x._dtype == "bool":
        return x  # NumPy's abs of a bool array is itself
    if op not in ("neg", "abs", "relu") and x._dtype not in ("f32", "f64"):
        if x._dtype == "bool":
            T._break(st, f"np.{op} of a bool array (NumPy gives float16)")
        x = x.astype("f64")  # NumPy's exp of an int array is float64
    return T.emit(st, op, [x])
