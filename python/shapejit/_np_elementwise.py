"""NumPy's elementwise functions on tracing values: the libm functions,
roundings, signs and classes of floats, binary float functions."""
from __future__ import annotations

import math

import numpy as np

from . import _tracing as T
from ._tracing import Tensor
from ._np_base import _FLOAT, _emit, _float, _full_like, _no, _st, _t, _zero


def _float_unary(op):
    def f(x):
        return T.unary(op, x)
    f.__name__ = op
    return f


def _rounding(op):
    """floor, ceil, trunc: integers and bools stay as they are (NumPy 2); floats round."""
    def f(x):
        st = _st(x)
        x = _t(st, x)
        if x._dtype not in _FLOAT:
            return x._fresh()  # a new array of the same values, as NumPy's
        return _emit(st, op, [x])
    f.__name__ = op
    return f


def rint(x):
    st = _st(x)
    x = _t(st, x)
    if x._dtype == "bool":
        T._break(st, "np.rint of a bool array (NumPy gives float16)")
    return _emit(st, "rint", [_float(x)])


def around(x, decimals=0, out=None):
    st = _st(x)
    _no(st, "np.round", out=out)
    x = _t(st, x)
    if x._dtype == "bool":
        T._break(st, "np.round of a bool array (NumPy gives float16)")
    if x._dtype not in _FLOAT:
        if decimals >= 0:
            return x._fresh()
        scale = float(10 ** (-decimals))  # half to even, as NumPy rounds ints too
        return (_emit(st, "rint", [x.astype("f64") / scale]) * scale).astype(x._dtype)
    if decimals == 0:
        return _emit(st, "rint", [x])
    scale = 10.0 ** decimals
    return _emit(st, "rint", [x * scale]) / scale


def sign(x):
    st = _st(x)
    x = _t(st, x)
    zero = 0.0 if x._dtype in _FLOAT else 0
    if x._dtype == "bool":
        T._break(st, "np.sign of a bool array")
    s = (x > zero).astype(x._dtype) - (x < zero).astype(x._dtype)
    if x._dtype in _FLOAT:
        s = T.where(isnan(x), x, s)
    return s


def signbit(x):
    st = _st(x)
    x = _t(st, x)
    if x._dtype not in _FLOAT:
        return x < 0
    # -0.0 has its sign bit set: 1 / -0.0 is -inf.
    return (x < 0.0) | ((x == 0.0) & ((1.0 / x) < 0.0))


def copysign(a, b):
    st = _st(a, b)
    a, b = (_float(_t(st, T._as_float(st, v))) for v in (a, b))
    a, b = T.promote(st, a, b)
    mag = abs(a)
    return T.where(signbit(b), -mag, mag)


def isnan(x):
    st = _st(x)
    x = _t(st, x)
    if x._dtype not in _FLOAT:
        return _full_like(x, False, "bool")
    return x != x


def isinf(x):
    st = _st(x)
    x = _t(st, x)
    if x._dtype not in _FLOAT:
        return _full_like(x, False, "bool")
    return abs(x) == math.inf


def isfinite(x):
    st = _st(x)
    x = _t(st, x)
    if x._dtype not in _FLOAT:
        return _full_like(x, True, "bool")
    return (x - x) == 0.0  # inf - inf and NaN are NaN


def fabs(x):
    st = _st(x)
    return abs(_float(_t(st, x)))


def reciprocal(x):
    st = _st(x)
    x = _t(st, x)
    if x._dtype not in _FLOAT:
        T._break(st, "np.reciprocal of an integer array (integer division by each element)")
    return T.true_divide(1.0, x)


def _ignoring_nan(extreme):
    """np.fmax, np.fmin: `extreme` of the two, the other where one is NaN."""
    def f(a, b):
        st = _st(a, b)
        a, b = T.promote(st, a, b)
        m = extreme(a, b)
        if m._dtype not in _FLOAT:
            return m
        return T.where(isnan(a), b, T.where(isnan(b), a, m))
    return f


fmax = _ignoring_nan(T.maximum)
fmin = _ignoring_nan(T.minimum)


def _float_binary(op):
    def f(a, b):
        st = _st(a, b)
        a, b = T._as_float(st, a), T._as_float(st, b)  # an int or a size: the float NumPy makes of it
        a, b = T.promote(st, a, b)
        a = _float(a) if isinstance(a, Tensor) else float(a)
        b = _float(b) if isinstance(b, Tensor) else float(b)
        a, b = T.promote(st, a, b)
        return _emit(st, op, [a, b])
    f.__name__ = op
    return f


arctan2 = _float_binary("atan2")
hypot = _float_binary("hypot")


def float_power(a, b):
    st = _st(a, b)
    a = _t(st, a).astype("f64")
    b = b.astype("f64") if isinstance(b, Tensor) else float(T._scalar(b))
    return _emit(st, "pow", [a, b])


def logaddexp(a, b):
    st = _st(a, b)
    a, b = (_float(_t(st, T._as_float(st, v))) for v in (a, b))
    a, b = T.promote(st, a, b)
    m = T.maximum(a, b)
    d = -abs(a - b)
    return T.where(a == b, a + math.log(2.0), m + T.unary("log1p", T.unary("exp", d)))


def logaddexp2(a, b):
    st = _st(a, b)
    a, b = (_float(_t(st, T._as_float(st, v))) for v in (a, b))
    a, b = T.promote(st, a, b)
    m = T.maximum(a, b)
    d = -abs(a - b)
    return T.where(a == b, a + 1.0, m + T.unary("log1p", T.unary("exp2", d)) / math.log(2.0))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    st = _st(a, b)
    a, b = T.promote(st, _t(st, a), _t(st, b))
    a, b = _float(a), _float(b)
    a, b = T.promote(st, a, b)
    # Within the tolerance where both are finite (an infinite b would make
    # any finite a close); an infinity is close to itself alone.
    close = (abs(a - b) <= atol + rtol * abs(b)) & isfinite(a) & isfinite(b)
    close = close | (a == b)
    if equal_nan:
        close = close | (isnan(a) & isnan(b))
    return close


def imag(x):
    st = _st(x)
    x = _t(st, x)
    return _full_like(x, _zero(x), x._dtype)


def deg2rad(x):
    st = _st(x)
    return _float(_t(st, x)) * (math.pi / 180.0)


def rad2deg(x):
    st = _st(x)
    return _float(_t(st, x)) * (180.0 / math.pi)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    st = _st(x)
    x = _t(st, x)
    if x._dtype not in _FLOAT:
        return x._fresh()
    big = float(np.finfo(T._DTYPES[x._dtype]).max)
    y = T.where(isnan(x), nan, x)
    y = T.where(y == math.inf, big if posinf is None else posinf, y)
    return T.where(y == -math.inf, -big if neginf is None else neginf, y)
