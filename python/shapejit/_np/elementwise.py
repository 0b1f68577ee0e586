"""NumPy's elementwise functions on tracing values: the libm functions,
roundings, signs and classes of floats, binary float functions, a
float's parts and neighbours, gcd and lcm."""
from __future__ import annotations

import math

import numpy as np

from .._trace.dtypes import DTYPES, FLOAT
from .._trace.promotion import promote, python_scalar
from .._trace.state import emit, graph_break, state_of
from .._trace.tensor import Tensor
from .arithmetic import as_float, floor_divide, maximum, minimum, remainder, true_divide, unary, where
from .base import full_of, tensor_of, to_float, unsupported, zero_of
from .registry import implements


def _float_unary(op):
    def f(x):
        return unary(op, x)
    f.__name__ = op
    return f


def _rounding(op):
    """floor, ceil, trunc: integers and bools stay as they are (NumPy 2); floats round."""
    def f(x):
        st = state_of(x)
        x = tensor_of(st, x)
        if x._dtype not in FLOAT:
            return x._fresh()  # a new array of the same values, as NumPy's
        return emit(st, op, [x])
    f.__name__ = op
    return f


def rint(x):
    st = state_of(x)
    x = tensor_of(st, x)
    if x._dtype == "bool":
        graph_break(st, "np.rint of a bool array (NumPy gives float16)")
    return emit(st, "rint", [to_float(x)])


def around(x, decimals=0, out=None):
    st = state_of(x)
    unsupported(st, "np.round", out=out)
    x = tensor_of(st, x)
    if x._dtype == "bool":
        graph_break(st, "np.round of a bool array (NumPy gives float16)")
    if x._dtype not in FLOAT:
        if decimals >= 0:
            return x._fresh()
        scale = float(10 ** (-decimals))  # half to even, as NumPy rounds ints too
        return (emit(st, "rint", [x.astype("f64") / scale]) * scale).astype(x._dtype)
    if decimals == 0:
        return emit(st, "rint", [x])
    scale = 10.0 ** decimals
    return emit(st, "rint", [x * scale]) / scale


def sign(x):
    st = state_of(x)
    x = tensor_of(st, x)
    zero = 0.0 if x._dtype in FLOAT else 0
    if x._dtype == "bool":
        graph_break(st, "np.sign of a bool array")
    s = (x > zero).astype(x._dtype) - (x < zero).astype(x._dtype)
    if x._dtype in FLOAT:
        s = where(isnan(x), x, s)
    return s


def signbit(x):
    st = state_of(x)
    x = tensor_of(st, x)
    if x._dtype not in FLOAT:
        return x < 0
    # -0.0 has its sign bit set: 1 / -0.0 is -inf.
    return (x < 0.0) | ((x == 0.0) & ((1.0 / x) < 0.0))


def copysign(a, b):
    st = state_of(a, b)
    a, b = (to_float(tensor_of(st, as_float(st, v))) for v in (a, b))
    a, b = promote(st, a, b)
    mag = abs(a)
    return where(signbit(b), -mag, mag)


def isnan(x):
    st = state_of(x)
    x = tensor_of(st, x)
    if x._dtype not in FLOAT:
        return full_of(x, False, "bool")
    return x != x


def isinf(x):
    st = state_of(x)
    x = tensor_of(st, x)
    if x._dtype not in FLOAT:
        return full_of(x, False, "bool")
    return abs(x) == math.inf


def isfinite(x):
    st = state_of(x)
    x = tensor_of(st, x)
    if x._dtype not in FLOAT:
        return full_of(x, True, "bool")
    return (x - x) == 0.0  # inf - inf and NaN are NaN


def fabs(x):
    st = state_of(x)
    return abs(to_float(tensor_of(st, x)))


def reciprocal(x):
    st = state_of(x)
    x = tensor_of(st, x)
    if x._dtype not in FLOAT:
        graph_break(st, "np.reciprocal of an integer array (integer division by each element)")
    return true_divide(1.0, x)


def _ignoring_nan(extreme):
    """np.fmax, np.fmin: `extreme` of the two, the other where one is NaN."""
    def f(a, b):
        st = state_of(a, b)
        a, b = promote(st, a, b)
        m = extreme(a, b)
        if m._dtype not in FLOAT:
            return m
        return where(isnan(a), b, where(isnan(b), a, m))
    return f


fmax = _ignoring_nan(maximum)
fmin = _ignoring_nan(minimum)


def _float_binary(op):
    def f(a, b):
        st = state_of(a, b)
        a, b = as_float(st, a), as_float(st, b)  # an int or a size: the float NumPy makes of it
        a, b = promote(st, a, b)
        a = to_float(a) if isinstance(a, Tensor) else float(a)
        b = to_float(b) if isinstance(b, Tensor) else float(b)
        a, b = promote(st, a, b)
        return emit(st, op, [a, b])
    f.__name__ = op
    return f


arctan2 = _float_binary("atan2")
hypot = _float_binary("hypot")
nextafter = _float_binary("nextafter")


def spacing(x):
    """The distance from x to the next float away from zero (toward +inf
    at 0 and -0: NumPy's), of x's sign; NaN at the infinities."""
    st = state_of(x)
    x = to_float(tensor_of(st, x))
    away = where(x < 0, -math.inf, math.inf).astype(x._dtype)
    return emit(st, "nextafter", [x, away]) - x


def frexp(x):
    """(m, e) with x = m * 2**e and 0.5 <= |m| < 1, e int32; (x, 0) at 0,
    the infinities and NaN. e is found from log2, then made exact: m's
    magnitude, found exactly by ldexp, moves it by one where it is off."""
    st = state_of(x)
    x = to_float(tensor_of(st, x))
    finite = isfinite(x) & (x != 0)
    magnitude = where(finite, abs(x), 1.0)
    e = emit(st, "floor", [unary("log2", magnitude)]).astype("i32") + 1
    m = ldexp(magnitude, -e)
    e = e + (m >= 1).astype("i32") - (m < 0.5).astype("i32")
    e = where(finite, e, 0)
    return where(finite, ldexp(x, -e), x), e


def _integers(st, what, a, b):
    """a and b as tensors of their promoted integer dtype; NumPy's own error
    (a graph break, that NumPy runs) for bools and floats."""
    a, b = promote(st, a, b)
    dt = a._dtype if isinstance(a, Tensor) else b._dtype
    if dt not in ("i32", "i64"):
        graph_break(st, f"np.{what} of {dt} (NumPy has no loop for it)")
    return tensor_of(st, a, dt), tensor_of(st, b, dt)


def gcd(a, b):
    """NumPy's: of the magnitudes, |INT_MIN| wrapping to itself."""
    st = state_of(a, b)
    return emit(st, "gcd", list(_integers(st, "gcd", a, b)))


def lcm(a, b):
    """|a // gcd(a, b) * b|, wrapping as NumPy's; 0 where both are 0 (the
    division by 0 is 0)."""
    st = state_of(a, b)
    a, b = _integers(st, "lcm", a, b)
    return emit(st, "abs", [emit(st, "mul", [emit(st, "div", [a, emit(st, "gcd", [a, b])]), b])])


def float_power(a, b):
    st = state_of(a, b)
    a = tensor_of(st, a).astype("f64")
    b = b.astype("f64") if isinstance(b, Tensor) else float(python_scalar(b))
    return emit(st, "pow", [a, b])


def logaddexp(a, b):
    st = state_of(a, b)
    a, b = (to_float(tensor_of(st, as_float(st, v))) for v in (a, b))
    a, b = promote(st, a, b)
    m = maximum(a, b)
    d = -abs(a - b)
    return where(a == b, a + math.log(2.0), m + unary("log1p", unary("exp", d)))


def logaddexp2(a, b):
    st = state_of(a, b)
    a, b = (to_float(tensor_of(st, as_float(st, v))) for v in (a, b))
    a, b = promote(st, a, b)
    m = maximum(a, b)
    d = -abs(a - b)
    return where(a == b, a + 1.0, m + unary("log1p", unary("exp2", d)) / math.log(2.0))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    st = state_of(a, b)
    a, b = promote(st, tensor_of(st, a), tensor_of(st, b))
    a, b = to_float(a), to_float(b)
    a, b = promote(st, a, b)
    # Within the tolerance where both are finite (an infinite b would make
    # any finite a close); an infinity is close to itself alone.
    close = (abs(a - b) <= atol + rtol * abs(b)) & isfinite(a) & isfinite(b)
    close = close | (a == b)
    if equal_nan:
        close = close | (isnan(a) & isnan(b))
    return close


def imag(x):
    st = state_of(x)
    x = tensor_of(st, x)
    return full_of(x, zero_of(x), x._dtype)


def deg2rad(x):
    st = state_of(x)
    return to_float(tensor_of(st, x)) * (math.pi / 180.0)


def rad2deg(x):
    st = state_of(x)
    return to_float(tensor_of(st, x)) * (180.0 / math.pi)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    st = state_of(x)
    x = tensor_of(st, x)
    if x._dtype not in FLOAT:
        return x._fresh()
    big = float(np.finfo(DTYPES[x._dtype]).max)
    y = where(isnan(x), nan, x)
    y = where(y == math.inf, big if posinf is None else posinf, y)
    return where(y == -math.inf, -big if neginf is None else neginf, y)


def fmod(a, b):
    """C's fmod: the remainder of the division truncated, the sign of the
    dividend's (NumPy's `%` takes the divisor's); an integer by 0 is 0."""
    st = state_of(a, b)
    a, b = promote(st, a, b)
    dt = a._dtype if isinstance(a, Tensor) else b._dtype
    if dt in FLOAT:
        return emit(st, "fmod", [tensor_of(st, a, dt), tensor_of(st, b, dt)])
    if dt == "bool":
        graph_break(st, "np.fmod of two bool arrays (NumPy gives int8)")
    r = remainder(a, b)
    a = tensor_of(st, a, dt)
    return where((r != 0) & ((r < 0) != (a < 0)), r - b, r)


def divmod_(a, b):
    """np.divmod: (a // b, a % b), NumPy's floor division and remainder."""
    return floor_divide(a, b), remainder(a, b)


def modf(x):
    """(the fraction, the whole part), both of x's sign; of an integer array, floats."""
    st = state_of(x)
    x = to_float(tensor_of(st, x))
    whole = emit(st, "trunc", [x])
    frac = where(isinf(x), 0.0, x - whole)
    return copysign(frac, x), whole


def heaviside(x1, x2):
    """0 below zero, 1 above, x2 at zero, NaN where x1 is NaN."""
    st = state_of(x1, x2)
    x1 = to_float(tensor_of(st, x1))
    x2 = tensor_of(st, x2, x1._dtype) if not isinstance(x2, Tensor) else x2
    out = where(x1 < 0, 0.0, where(x1 > 0, 1.0, x2))
    return where(isnan(x1), x1, out)


def ldexp(x, e):
    """x * 2**e, exact: the power split in two, so that neither half
    overflows where the product does not."""
    st = state_of(x, e)
    x = tensor_of(st, x)
    if x._dtype not in FLOAT:
        x = x.astype("f64")
    e = tensor_of(st, e)
    if e._dtype not in ("i32", "i64", "bool"):
        raise TypeError("ufunc 'ldexp' not supported for the input types, and the inputs could not be safely coerced")
    half = floor_divide(e, 2)
    two = lambda k: unary("exp2", k.astype(x._dtype))  # noqa: E731
    return x * two(half) * two(e - half)


def sinc(x):
    """sin(pi x) / (pi x), 1 at 0."""
    st = state_of(x)
    x = to_float(tensor_of(st, x))
    y = x * math.pi
    return where(x == 0, 1.0, unary("sin", y) / y)


def isneginf(x):
    st = state_of(x)
    x = tensor_of(st, x)
    return x == -math.inf if x._dtype in FLOAT else full_of(x, False, "bool")


def isposinf(x):
    st = state_of(x)
    x = tensor_of(st, x)
    return x == math.inf if x._dtype in FLOAT else full_of(x, False, "bool")


def isreal(x):
    return full_of(tensor_of(state_of(x), x), True, "bool")  # every dtype shapejit has is real


def iscomplex(x):
    return full_of(tensor_of(state_of(x), x), False, "bool")


def angle(z, deg=False):
    """The argument of a real: 0, or pi where it is negative (-0.0 too, as atan2 gives it)."""
    st = state_of(z)
    z = to_float(tensor_of(st, z))
    a = arctan2(full_of(z, 0.0, z._dtype), z)
    return a * (180.0 / math.pi) if deg else a


# -- the table's entries --------------------------------------------------------
for _ufunc, _op in ((np.tan, "tan"), (np.arcsin, "asin"), (np.arccos, "acos"), (np.arctan, "atan"), (np.sinh, "sinh"),
                    (np.cosh, "cosh"), (np.arcsinh, "asinh"), (np.arccosh, "acosh"), (np.arctanh, "atanh"), (np.log1p, "log1p"),
                    (np.expm1, "expm1"), (np.log2, "log2"), (np.log10, "log10"), (np.exp2, "exp2"), (np.cbrt, "cbrt")):
    implements(_ufunc)(_float_unary(_op))
floor, ceil, trunc = _rounding("floor"), _rounding("ceil"), _rounding("trunc")
implements(np.floor)(floor)
implements(np.ceil)(ceil)
implements(np.trunc, np.fix)(trunc)
implements(np.rint)(rint)
implements(np.round, np.around)(around)
implements(np.sign)(sign)
implements(np.signbit)(signbit)
implements(np.copysign)(copysign)
implements(np.isnan)(isnan)
implements(np.isinf)(isinf)
implements(np.isfinite)(isfinite)
implements(np.fabs)(fabs)
implements(np.reciprocal)(reciprocal)
implements(np.fmax)(fmax)
implements(np.fmin)(fmin)
implements(np.arctan2)(arctan2)
implements(np.hypot)(hypot)
implements(np.float_power)(float_power)
implements(np.logaddexp)(logaddexp)
implements(np.logaddexp2)(logaddexp2)
implements(np.deg2rad, np.radians)(deg2rad)
implements(np.rad2deg, np.degrees)(rad2deg)
implements(np.conjugate, np.real)(lambda x: x)  # every dtype shapejit has is real
implements(np.imag)(imag)
implements(np.nan_to_num)(nan_to_num)
implements(np.isclose)(isclose)
implements(np.fmod)(fmod)
implements(np.divmod)(divmod_)
implements(np.modf)(modf)
implements(np.heaviside)(heaviside)
implements(np.ldexp)(ldexp)
implements(np.nextafter)(nextafter)
implements(np.spacing)(spacing)
implements(np.frexp)(frexp)
implements(np.gcd)(gcd)
implements(np.lcm)(lcm)
implements(np.sinc)(sinc)
implements(np.isneginf)(isneginf)
implements(np.isposinf)(isposinf)
implements(np.isreal)(isreal)
implements(np.iscomplex)(iscomplex)
implements(np.isrealobj)(lambda x: True)
implements(np.iscomplexobj)(lambda x: False)
implements(np.angle)(angle)
