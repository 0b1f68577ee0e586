"""NumPy's numerical functions on tracing values, each composed as NumPy's
own code composes it: the NaN-ignoring reductions (nanprod, nanvar,
nanstd, nancumsum, nancumprod), cov and corrcoef, trapezoid, cross, polyval, correlate, interp and
gradient, logspace and geomspace, windows, polynomials and histograms
(quantiles are quantiles.py's)."""
from __future__ import annotations

import math

import numpy as np

from .._trace.dtypes import FLOAT, dtype_name
from .._trace.state import as_tensor, emit, graph_break, state_of
from .._trace.tensor import Tensor, as_scalar
from . import arithmetic, elementwise, products, shapes, sorting, statistics
from .base import checked_axis, tensor_of, to_float, unsupported
from .creation import asarray, linspace, zeros_like
from .registry import implements

isnan = elementwise.isnan
where = arithmetic.where


# -- the NaN-ignoring reductions ---------------------------------------------------------

@implements(np.nanprod)
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
    st = state_of(a)
    unsupported(st, "np.nanprod", out=out, **kw)
    x = tensor_of(st, a)
    if x._dtype in FLOAT:
        x = where(isnan(x), 1.0, x)
    return statistics.prod(x, axis, dtype, keepdims=keepdims)


def _nan_scan(scan, fill):
    def f(a, axis=None, dtype=None, out=None):
        st = state_of(a)
        unsupported(st, f"np.nan{scan.__name__}", out=out)
        x = tensor_of(st, a)
        if x._dtype in FLOAT:
            x = where(isnan(x), fill, x)
        return scan(x, axis, dtype)
    f.__name__ = "nan" + scan.__name__
    return f


nancumsum = implements(np.nancumsum)(_nan_scan(statistics.cumsum, 0.0))
nancumprod = implements(np.nancumprod)(_nan_scan(statistics.cumprod, 1.0))


@implements(np.nanvar)
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=np._NoValue, correction=np._NoValue):
    """The variance of the values that are not NaN: their mean, the squares
    of their deviations; NaN where no more than `ddof` of them are left."""
    st = state_of(a)
    unsupported(st, "np.nanvar", out=out)
    if where is not True or mean is not np._NoValue:
        graph_break(st, "np.nanvar with where= or mean=")
    if correction is not np._NoValue:
        ddof = correction
    x = tensor_of(st, a)
    if x._dtype not in FLOAT:
        return statistics.var(x, axis, dtype, None, ddof, keepdims)
    if dtype is not None:
        x = x.astype(dtype)
    nan = isnan(x)
    count = (~nan).astype("i64").sum(axis=axis, keepdims=True)
    # Divided in the values' own dtype, as NumPy's divide by the count is (out= them).
    avg = arithmetic.true_divide(arithmetic.where(nan, 0.0, x).sum(axis=axis, keepdims=True), count).astype(x._dtype)
    dev = arithmetic.where(nan, 0.0, x - avg)
    var = (dev * dev).sum(axis=axis, keepdims=keepdims)
    dof = count.sum(axis=axis, keepdims=keepdims) - ddof if not keepdims else count - ddof
    var = arithmetic.true_divide(var, dof).astype(x._dtype)
    return as_scalar(arithmetic.where(dof <= 0, math.nan, var).astype(var._dtype))


@implements(np.nanstd)
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=np._NoValue,
           correction=np._NoValue):
    v = nanvar(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean, correction=correction)
    return as_scalar(arithmetic.unary("sqrt", v))


# -- covariance ----------------------------------------------------------------------

@implements(np.cov)
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    st = state_of(m, y)
    if fweights is not None or aweights is not None:
        graph_break(st, "np.cov with weights")
    m = tensor_of(st, m)
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        y = tensor_of(st, y)
        if y.ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    want = np.result_type(m.dtype, *([y.dtype] if y is not None else []), np.float64) if dtype is None else np.dtype(dtype)
    x = m.astype(want)
    x = x.reshape(1, -1) if x.ndim < 2 else x
    if not rowvar and m.ndim != 1:
        x = x.T
    if x.shape[0] == 0:
        return emit(st, "full", [0, 0], {"value": 0.0, "dtype": "f64"})
    if y is not None:
        yy = y.astype(want)
        yy = yy.reshape(1, -1) if yy.ndim < 2 else yy
        if not rowvar and yy.shape[0] != 1:
            yy = yy.T
        x = shapes.concatenate([x, yy], axis=0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    fact = x.shape[1] - ddof
    avg = x.mean(axis=1)
    x = x - avg[:, None]
    c = arithmetic.matmul(x, x.T)
    # A count of 0 or fewer is NumPy's 0.0 (it warns): the covariance times 1 / 0.0, inf or NaN.
    c = c * (math.inf if fact <= 0 else arithmetic.true_divide(1, fact))
    return shapes.squeeze(c.astype(dtype_name(want)))


@implements(np.corrcoef)
def corrcoef(x, y=None, rowvar=True, *, dtype=None, **kw):
    st = state_of(x, y)
    unsupported(st, "np.corrcoef", **kw)
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c  # NumPy: one variable's is its own ratio (1, or NaN)
    d = shapes.diag(c)
    stddev = arithmetic.unary("sqrt", d)
    c = c / stddev[:, None]
    c = c / stddev[None, :]
    return arithmetic.clip(c, -1, 1)


# -- calculus and polynomials -----------------------------------------------------------------

@implements(np.trapezoid)
def trapezoid(y, x=None, dx=1.0, axis=-1):
    st = state_of(y, x)
    y = tensor_of(st, y)
    axis = checked_axis(axis, y.ndim)
    if x is None:
        d = dx
    else:
        x = tensor_of(st, x)
        if x.ndim == 1:
            d = shapes.diff(x)
            shape = [1] * y.ndim
            shape[axis] = d.shape[0]
            d = d.reshape(*shape)
        else:
            d = shapes.diff(x, axis=axis)
    n = y.shape[axis]
    hi = emit(st, "slice", [y, 1, n, 1], {"dim": axis})
    lo = emit(st, "slice", [y, 0, n - 1, 1], {"dim": axis})
    return as_scalar((d * (hi + lo) / 2.0).sum(axis=axis))


@implements(np.cross)
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    st = state_of(a, b)
    a, b = tensor_of(st, a), tensor_of(st, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a = shapes.moveaxis(a, axisa, -1)
    b = shapes.moveaxis(b, axisb, -1)
    if a.shape[-1] != 3 or b.shape[-1] != 3:
        graph_break(st, "np.cross of 2-vectors (deprecated in NumPy 2) or of other lengths")
    a0, a1, a2 = (a[..., i] for i in range(3))
    b0, b1, b2 = (b[..., i] for i in range(3))
    out = shapes.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return shapes.moveaxis(out, -1, axisc)


@implements(np.polyval)
def polyval(p, x):
    """Horner's rule over the coefficients, highest power first."""
    p = asarray(p)
    x = asarray(x)
    y = zeros_like(x)
    for i in range(int(p.shape[0])):
        y = y * x + p[i]
    return y


@implements(np.correlate)
def correlate(a, v, mode="valid"):
    """NumPy's correlation of real sequences: the convolution with v reversed."""
    st = state_of(a, v)
    v = tensor_of(st, v)
    return products.convolve(a, v[::-1], mode)


@implements(np.interp)
def interp(x, xp, fp, left=None, right=None, period=None):
    """Linear interpolation in the table (xp, fp), as NumPy's C code: left
    and right beyond it, fp[j] exactly at xp[j], the slope's NaN retried
    from the other end; in float64."""
    st = state_of(x, xp, fp)
    if period is not None:
        graph_break(st, "np.interp with period=")
    x, xp, fp = (to_float(asarray(v)).astype("f64") for v in (x, xp, fp))
    if xp.ndim != 1 or fp.ndim != 1:
        raise ValueError("object too deep for desired array")
    n = xp.shape[0]
    if fp.shape[0] != n:
        raise ValueError("fp and xp are not of the same length.")
    if n == 0:
        raise ValueError("array of sample points is empty")
    lo = fp[0] if left is None else as_tensor(st, float(left))
    hi = fp[-1] if right is None else as_tensor(st, float(right))
    if n == 1:
        return as_scalar(where(x < xp[0], lo, where(x > xp[0], hi, fp[0])))
    j = sorting.searchsorted(xp, x, side="right") - 1
    j = arithmetic.clip(j, 0, n - 2)
    take = lambda t, i: emit(st, "index_select", [t, i.reshape(-1)], {"dim": 0}).reshape(*i.shape)  # noqa: E731
    x0, x1, y0, y1 = take(xp, j), take(xp, j + 1), take(fp, j), take(fp, j + 1)
    slope = (y1 - y0) / (x1 - x0)
    res = slope * (x - x0) + y0
    res = where(isnan(res), slope * (x - x1) + y1, res)
    res = where(isnan(res) & (y0 == y1), y0, res)
    res = where(x == x0, y0, res)
    res = where(x == xp[-1], fp[-1], res)
    res = where(x < xp[0], lo, where(x > xp[-1], hi, res))
    return as_scalar(where(isnan(x), math.nan, res))


@implements(np.gradient)
def gradient(f, *varargs, axis=None, edge_order=1):
    """Central differences inside, one-sided ones at the ends (edge_order 1),
    with uniform scalar spacings; one array per axis."""
    st = state_of(f)
    f = tensor_of(st, f)
    axes = list(range(f.ndim)) if axis is None else [checked_axis(a, f.ndim) for a in (axis if isinstance(axis, (list, tuple)) else [axis])]
    if edge_order != 1:
        graph_break(st, "np.gradient with edge_order=2")
    if len(varargs) == 0:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacing = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes) and all(np.ndim(v) == 0 for v in varargs):
        spacing = list(varargs)
    else:
        graph_break(st, "np.gradient with coordinate arrays")
    f = to_float(f)
    out = []
    for ax, h in zip(axes, spacing):
        n = f.shape[ax]
        if n < 2:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at least (edge_order + 1) "
                             "elements are required.")
        part = lambda a, b: emit(st, "slice", [f, a, b, 1], {"dim": ax})  # noqa: E731
        inner = (part(2, n) - part(0, n - 2)) / (2.0 * h)
        first = (part(1, 2) - part(0, 1)) / h
        last = (part(n - 1, n) - part(n - 2, n - 1)) / h
        out.append(shapes.concatenate([first, inner, last], axis=ax))
    return out[0] if len(out) == 1 else tuple(out)


@implements(np.logspace)
def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    st = state_of(start, stop, num)
    y = linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    p = arithmetic.binary("pow", as_tensor(st, base).astype("f64") if not isinstance(base, Tensor) else base, y)
    return p.astype(dtype) if dtype is not None else p


@implements(np.geomspace)
def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """np.geomspace, as NumPy computes it: logspace between the logs of the
    ends rotated to positive, the ends then written exactly, the sign put
    back. Ends that are traced values are NumPy's (it checks them for
    zero first)."""
    st = state_of(start, stop, num)
    if isinstance(start, Tensor) or isinstance(stop, Tensor) or isinstance(start, complex) or isinstance(stop, complex):
        graph_break(st, "np.geomspace between traced values or complex ones")
    start, stop = np.asarray(start) * 1.0, np.asarray(stop) * 1.0
    if start.ndim or stop.ndim:
        graph_break(st, "np.geomspace between arrays of ends")
    if start == 0 or stop == 0:
        raise ValueError("Geometric sequence cannot include zero")
    dt = np.result_type(start, stop, float(1), np.zeros((), dtype))
    sign = np.sign(start)
    lo, hi = start / sign, stop / sign
    with np.errstate(invalid="ignore"):
        log_lo, log_hi = np.log10(lo), np.log10(hi)
    result = logspace(log_lo.item(), log_hi.item(), num=num, endpoint=endpoint, base=10.0, dtype=dt)
    if num > 0:
        result[0] = lo.item()
        if num > 1 and endpoint:
            result[-1] = hi.item()
    result = result * sign.item()
    if axis != 0:
        result = shapes.moveaxis(result, 0, axis)
    return result.astype(dtype) if dtype is not None else result


implements(getattr(np.linalg, "cross", None))(lambda x1, x2, /, *, axis=-1: cross(x1, x2, axis=axis))


# -- windows, polynomials, histograms ---------------------------------------------------------

def _window(M, shape):
    """NumPy's window of M points (at least float64): `shape` of n, the
    odd integers from 1 - M to M - 1, where M > 1."""
    st = state_of(M)
    if M < 1:
        return emit(st, "full", [0], {"value": 0.0, "dtype": "f64"})
    if M == 1:
        return emit(st, "full", [1], {"value": 1.0, "dtype": "f64"})
    n = emit(st, "arange", [0, M, 1], {"dtype": "f64"}) * 2.0 + as_tensor(st, 1 - M).astype("f64")
    return shape(n, M - 1)


def hanning(M):
    return _window(M, lambda n, m: 0.5 + 0.5 * arithmetic.unary("cos", math.pi * n / m))


def hamming(M):
    return _window(M, lambda n, m: 0.54 + 0.46 * arithmetic.unary("cos", math.pi * n / m))


def blackman(M):
    return _window(M, lambda n, m: 0.42 + 0.5 * arithmetic.unary("cos", math.pi * n / m) +
                   0.08 * arithmetic.unary("cos", 2.0 * math.pi * n / m))


def bartlett(M):
    return _window(M, lambda n, m: where(n <= 0, 1 + n / m, 1 - n / m))


@implements(np.vander)
def vander(x, N=None, increasing=False):
    """Powers of x, by repeated multiplication as NumPy's accumulate makes them."""
    st = state_of(x, N)
    x = asarray(x)
    if x.ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    rows = x.shape[0]
    N = rows if N is None else N
    dtype = np.promote_types(x.dtype, int)
    x = x.astype(dtype)
    columns = []
    if N > 0:
        columns.append(emit(st, "full", [rows, 1], {"value": 1, "dtype": x._dtype}))
    if N > 1:
        columns.append(statistics.cumprod(shapes.broadcast_to(x[:, None], (rows, N - 1)), axis=1))
    if not columns:
        return emit(st, "full", [rows, 0], {"value": 0, "dtype": x._dtype})
    v = shapes.concatenate(columns, axis=1) if len(columns) > 1 else columns[0]
    return v if increasing else shapes.flip(v, 1)._fresh()


@implements(np.polyder)
def polyder(p, m=1):
    m = int(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    p = asarray(p)
    for _ in range(m):
        n = p.shape[0] - 1
        p = p[:-1] * emit(p._st, "arange", [n, 0, -1], {"dtype": "i64"})
    return p


def _poly_combine(op):
    def f(a1, a2):
        a1, a2 = shapes.atleast_1d(asarray(a1)), shapes.atleast_1d(asarray(a2))
        diff = a2.shape[0] - a1.shape[0]
        if diff == 0:
            return op(a1, a2)
        if diff > 0:
            return op(shapes.concatenate([emit(a1._st, "full", [diff], {"value": 0, "dtype": a1._dtype}), a1]), a2)
        return op(a1, shapes.concatenate([emit(a2._st, "full", [-diff], {"value": 0, "dtype": a2._dtype}), a2]))
    return f


polyadd = implements(np.polyadd)(_poly_combine(lambda a, b: a + b))
polysub = implements(np.polysub)(_poly_combine(lambda a, b: a - b))
implements(np.real_if_close)(lambda a, tol=100: asarray(a))  # every dtype shapejit has is real


def _constant_range(st, range_, what):
    if range_ is None:
        graph_break(st, f"np.{what} without range= (its edges are the data's min and max, checked finite)")
    first, last = (float(v) for v in range_)
    if first > last:
        raise ValueError("max must be larger than min in range parameter.")
    if not (np.isfinite(first) and np.isfinite(last)):
        raise ValueError(f"supplied range of [{first}, {last}] is not finite")
    if first == last:
        first, last = first - 0.5, last + 0.5
    return first, last


def _uniform_edges(st, a, bins, range_, what):
    if isinstance(bins, str) or not isinstance(bins, (int, np.integer)):
        graph_break(st, f"np.{what} with bins that are not a count")
    if bins < 1:
        raise ValueError("`bins` must be positive, when an integer")
    first, last = _constant_range(st, range_, what)
    dtype = np.result_type(first, last, a.dtype) if a._dtype in FLOAT else np.dtype(np.float64)
    return linspace(first, last, int(bins) + 1, endpoint=True, dtype=dtype)


@implements(np.histogram_bin_edges)
def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002 - NumPy's name
    st = state_of(a)
    return _uniform_edges(st, asarray(a).reshape(-1), bins, range, "histogram_bin_edges")


@implements(np.histogram)
def histogram(a, bins=10, range=None, density=None, weights=None):  # noqa: A002 - NumPy's name
    """Counts in equal bins over a given range (the last bin closed), each
    value compared with the edges as NumPy's corrections compare it."""
    st = state_of(a, weights)
    a = asarray(a).reshape(-1)
    edges = _uniform_edges(st, a, bins, range, "histogram")
    x = a.astype(edges._dtype)[:, None] if a._dtype != edges._dtype else a[:, None]
    nb = int(bins)
    lo, hi = edges[None, :nb], edges[None, 1:]
    inside = (x >= lo) & ((x < hi) | ((x <= hi) & (emit(st, "arange", [0, nb, 1], {"dtype": "i64"}) == nb - 1)[None, :]))
    if weights is None:
        counts = inside.astype("i64").sum(axis=0)
    else:
        w = asarray(weights).reshape(-1)
        if w.shape[0] != a.shape[0]:
            raise ValueError("weights should have the same shape as a.")
        counts = where(inside, w[:, None], 0).sum(axis=0)
    if density:
        widths = shapes.diff(edges)
        return arithmetic.true_divide(arithmetic.true_divide(counts, widths), counts.sum()), edges
    return counts, edges


@implements(np.digitize)
def digitize(x, bins, right=False):
    """The bin of each value, for bins known while tracing (NumPy checks that they are monotonic)."""
    st = state_of(x, bins)
    if isinstance(bins, Tensor):
        graph_break(st, "np.digitize into traced bins (NumPy checks their order on the data)")
    b = np.asarray(bins)
    if b.ndim != 1:
        raise ValueError("object too deep for desired array")
    d = np.diff(b)
    if np.all(d >= 0):
        return sorting.searchsorted(as_tensor(st, b.tolist(), index=True), x, side="left" if right else "right")
    if np.all(d <= 0):
        ascending = as_tensor(st, b[::-1].tolist(), index=True)
        return len(b) - sorting.searchsorted(ascending, x, side="right" if right else "left")
    raise ValueError("bins must be monotonically increasing or decreasing")


@implements(np.unwrap)
def unwrap(p, discont=None, axis=-1, *, period=2 * math.pi):
    st = state_of(p)
    p = asarray(p)
    axis = checked_axis(axis, p.ndim)
    dd = shapes.diff(p, axis=axis)
    if discont is None:
        discont = period / 2
    dtype = np.result_type(dd.dtype, period)
    if np.issubdtype(dtype, np.integer):
        high, rem = divmod(period, 2)
        ambiguous = rem == 0
    else:
        high, ambiguous = period / 2, True
    low = -high
    ddmod = arithmetic.remainder(dd - low, period) + low
    if ambiguous:
        ddmod = where((ddmod == low) & (dd > 0), high, ddmod)
    correct = where(abs(dd) < discont, 0, ddmod - dd)
    up = p.astype(dtype)
    n = p.shape[axis]
    head = emit(st, "slice", [up, 0, 1, 1], {"dim": axis})
    rest = emit(st, "slice", [p, 1, n, 1], {"dim": axis}) + statistics.cumsum(correct, axis=axis)
    return shapes.concatenate([head, rest.astype(up._dtype)], axis=axis)
