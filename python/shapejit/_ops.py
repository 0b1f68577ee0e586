"""shapejit's functions: NumPy's names where NumPy has the op, plus the network
ops of the op set. Inside a trace they add nodes; outside one (a graph break
runs the function eagerly, or plain calls) they compute with NumPy, so one
function body serves both."""
from __future__ import annotations

import math
import operator

import numpy as np

from . import _tracing as T
from ._state import current
from ._tracing import SymInt, Tensor

_FLOAT = ("f32", "f64")


def _tracing(*xs):
    return current() is not None or any(isinstance(x, (Tensor, SymInt)) for x in xs)


def _st(*xs):
    return T._state_of(*xs)


def _t(x):
    st = _st(x)
    return T.as_tensor(st, x)


# -- NumPy references (eager) ----------------------------------------------------

def _np_erf(x):
    """erf to about 1.2e-7 relative (Numerical Recipes' Chebyshev erfc), elementwise."""
    x = np.asarray(x)
    a = np.abs(x.astype(np.float64))
    t = 1.0 / (1.0 + 0.5 * a)
    y = t * np.exp(-a * a - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
    r = np.where(x >= 0, 1.0 - y, y - 1.0)
    return r.astype(x.dtype if x.dtype.kind == "f" else np.float64)


def _np_float(x):
    x = np.asarray(x)
    return x if x.dtype.kind == "f" else x.astype(np.float64)


def _axes_tuple(axes, ndim):
    if isinstance(axes, (int, T.SymInt)):
        axes = (axes,)
    return tuple(a % ndim for a in axes)


# -- elementwise -----------------------------------------------------------------

def _unary(op, npf):
    def f(x):
        if _tracing(x):
            return T.unary(op, x)
        return npf(_np_float(x)) if op not in ("neg", "abs", "relu") else npf(np.asarray(x))
    f.__name__ = op
    return f


exp = _unary("exp", np.exp)
log = _unary("log", np.log)
sqrt = _unary("sqrt", np.sqrt)
rsqrt = _unary("rsqrt", lambda x: (1 / np.sqrt(x)).astype(x.dtype))
tanh = _unary("tanh", np.tanh)
sigmoid = _unary("sigmoid", lambda x: (1 / (1 + np.exp(-x))).astype(x.dtype))
relu = _unary("relu", lambda x: np.maximum(x, 0).astype(x.dtype))
silu = _unary("silu", lambda x: (x / (1 + np.exp(-x))).astype(x.dtype))
sin = _unary("sin", np.sin)
cos = _unary("cos", np.cos)
erf = _unary("erf", _np_erf)
negative = _unary("neg", np.negative)
abs = _unary("abs", np.abs)  # noqa: A001 (NumPy's name)
absolute = abs


def gelu(x, approximate="none"):
    """GELU: x * Phi(x) (approximate="none", the erf form) or its tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate is 'none' or 'tanh', not {approximate!r}")
    if _tracing(x):
        x = _t(x)
        if x._dtype not in _FLOAT:
            x = x.astype("f64")
        return T.emit(_st(x), "gelu", [x], {"approximate": approximate})
    x = _np_float(x)
    if approximate == "tanh":
        return (0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))).astype(x.dtype)
    return (0.5 * x * (1 + _np_erf(x / math.sqrt(2)))).astype(x.dtype)


def astype(x, dtype):
    if _tracing(x):
        return _t(x).astype(dtype)
    return np.asarray(x).astype(dtype)


cast = astype


def _binary(op, npf):
    def f(a, b):
        if _tracing(a, b):
            return T.binary(op, a, b)
        return npf(a, b)
    f.__name__ = op
    return f


add = _binary("add", np.add)
subtract = _binary("sub", np.subtract)
multiply = _binary("mul", np.multiply)
power = _binary("pow", np.power)
maximum = _binary("maximum", np.maximum)
minimum = _binary("minimum", np.minimum)
equal = _binary("eq", np.equal)
not_equal = _binary("ne", np.not_equal)
less = _binary("lt", np.less)
less_equal = _binary("le", np.less_equal)
greater = _binary("gt", np.greater)
greater_equal = _binary("ge", np.greater_equal)


def divide(a, b):
    return T.true_divide(a, b) if _tracing(a, b) else np.divide(a, b)


true_divide = divide


def floor_divide(a, b):
    return T.floor_divide(a, b) if _tracing(a, b) else np.floor_divide(a, b)


def remainder(a, b):
    return T.remainder(a, b) if _tracing(a, b) else np.remainder(a, b)


def logical_and(a, b):
    return _t(a).astype(bool) & _t(b).astype(bool) if _tracing(a, b) else np.logical_and(a, b)


def logical_or(a, b):
    return _t(a).astype(bool) | _t(b).astype(bool) if _tracing(a, b) else np.logical_or(a, b)


def logical_not(x):
    return ~_t(x).astype(bool) if _tracing(x) else np.logical_not(x)


def where(condition, x, y):
    return T.where(condition, x, y) if _tracing(condition, x, y) else np.where(condition, x, y)


def clip(x, a_min=None, a_max=None):
    return _t(x).clip(a_min, a_max) if _tracing(x) else np.clip(x, a_min, a_max)


# -- reductions --------------------------------------------------------------------

def sum(x, axis=None, dtype=None, keepdims=False):  # noqa: A001
    return _t(x).sum(axis, dtype, keepdims) if _tracing(x) else np.sum(x, axis=axis, dtype=dtype, keepdims=keepdims)


def mean(x, axis=None, dtype=None, keepdims=False):
    return _t(x).mean(axis, dtype, keepdims) if _tracing(x) else np.mean(x, axis=axis, dtype=dtype, keepdims=keepdims)


def max(x, axis=None, keepdims=False):  # noqa: A001
    return _t(x).max(axis, keepdims) if _tracing(x) else np.max(x, axis=axis, keepdims=keepdims)


def min(x, axis=None, keepdims=False):  # noqa: A001
    return _t(x).min(axis, keepdims) if _tracing(x) else np.min(x, axis=axis, keepdims=keepdims)


amax, amin = max, min


def argmax(x, axis=None, keepdims=False):
    return _t(x).argmax(axis, keepdims) if _tracing(x) else np.argmax(x, axis=axis, keepdims=keepdims)


def argmin(x, axis=None, keepdims=False):
    return _t(x).argmin(axis, keepdims) if _tracing(x) else np.argmin(x, axis=axis, keepdims=keepdims)


# -- network ops -------------------------------------------------------------------

def softmax(x, axis=-1):
    if _tracing(x):
        x = _t(x)
        x = x if x._dtype in _FLOAT else x.astype("f64")
        return T.emit(_st(x), "softmax", [x], {"dim": operator.index(axis)})
    x = _np_float(x)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return (e / np.sum(e, axis=axis, keepdims=True)).astype(x.dtype)


def log_softmax(x, axis=-1):
    if _tracing(x):
        x = _t(x)
        x = x if x._dtype in _FLOAT else x.astype("f64")
        return T.emit(_st(x), "log_softmax", [x], {"dim": operator.index(axis)})
    x = _np_float(x)
    s = x - np.max(x, axis=axis, keepdims=True)
    return (s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True))).astype(x.dtype)


def layer_norm(x, weight=None, bias=None, axes=-1, eps=1e-5):
    """(x - mean) / sqrt(var + eps) over `axes`, times weight, plus bias."""
    if bias is not None and weight is None:
        raise ValueError("layer_norm: a bias needs a weight (pass ones)")
    axes_list = [axes] if isinstance(axes, (int, T.SymInt)) else list(axes)
    if _tracing(x, weight, bias):
        st = _st(x, weight, bias)
        ins = [T.as_tensor(st, v) for v in (x, weight, bias) if v is not None]
        return T.emit(st, "layer_norm", ins, {"axes": axes_list, "eps": float(eps)})
    x = _np_float(x)
    ax = _axes_tuple(axes_list, x.ndim)
    m = x.mean(axis=ax, keepdims=True)
    v = ((x - m) ** 2).mean(axis=ax, keepdims=True)
    y = (x - m) / np.sqrt(v + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y.astype(x.dtype)


def rms_norm(x, weight=None, axes=-1, eps=1e-6):
    """x / sqrt(mean(x^2) + eps) over `axes`, times weight."""
    axes_list = [axes] if isinstance(axes, (int, T.SymInt)) else list(axes)
    if _tracing(x, weight):
        st = _st(x, weight)
        ins = [T.as_tensor(st, v) for v in (x, weight) if v is not None]
        return T.emit(st, "rms_norm", ins, {"axes": axes_list, "eps": float(eps)})
    x = _np_float(x)
    ax = _axes_tuple(axes_list, x.ndim)
    y = x / np.sqrt((x * x).mean(axis=ax, keepdims=True) + eps)
    if weight is not None:
        y = y * weight
    return y.astype(x.dtype)


def embedding(table, ids):
    """Rows of a 2-D table: ids.shape + [table.shape[1]]."""
    if _tracing(table, ids):
        st = _st(table, ids)
        return T.emit(st, "embedding", [T.as_tensor(st, table), T.as_tensor(st, ids)])
    return np.asarray(table)[np.asarray(ids)]


def matmul(a, b):
    return T.matmul(a, b) if _tracing(a, b) else np.matmul(a, b)


def dot(a, b):
    if _tracing(a, b):
        if _t(a).ndim > 2 or _t(b).ndim > 2:
            T._break(_st(a, b), "np.dot of arrays above rank 2 has no op (use matmul)")
        return T.matmul(a, b)
    return np.dot(a, b)


# -- layout ------------------------------------------------------------------------

def reshape(x, shape, order="C"):
    if _tracing(x):
        return _t(x).reshape(*(shape if isinstance(shape, (tuple, list)) else (shape,)))
    return np.reshape(x, shape)


def transpose(x, axes=None):
    if _tracing(x):
        return _t(x).transpose(*(axes or ()))
    return np.transpose(x, axes)


permute = transpose


def swapaxes(x, axis1, axis2):
    return _t(x).swapaxes(axis1, axis2) if _tracing(x) else np.swapaxes(x, axis1, axis2)


def broadcast_to(x, shape):
    if _tracing(x):
        shape = tuple(T._shape_operand(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        expand = lambda p: T.emit(p._st, "expand", [p, *shape])  # noqa: E731
        x = _t(x)
        return T._View.of(expand(x), x, "broadcast_to", expand)  # a read-only view in NumPy
    return np.broadcast_to(x, shape)


def squeeze(x, axis=None):
    return _t(x).squeeze(axis) if _tracing(x) else np.squeeze(x, axis)


def expand_dims(x, axis):
    return T.expand_dims(x, axis) if _tracing(x) else np.expand_dims(x, axis)


def concatenate(arrays, axis=0):
    arrays = list(arrays)
    return T.concatenate(arrays, axis) if _tracing(*arrays) else np.concatenate(arrays, axis)


def stack(arrays, axis=0):
    arrays = list(arrays)
    return T.stack(arrays, axis) if _tracing(*arrays) else np.stack(arrays, axis)


def take(x, indices, axis=None):
    if _tracing(x, indices):
        st = _st(x, indices)
        from ._indexing import _check_constant_indices, _from_the_end, _index_list
        x = T.as_tensor(st, x)
        if axis is None or x.ndim == 0:  # a 0-d array takes as a 1-d one
            x, axis = x.reshape(-1), 0
        axis = operator.index(axis)
        # Negative indices count from the end, as in NumPy's take; indices
        # known now are checked now, in NumPy's order.
        _check_constant_indices(x, axis, indices)
        if isinstance(indices, list):
            idx = _index_list(x, axis, indices)
        else:
            idx = _from_the_end(x, axis, indices, T.as_tensor(st, indices, "i64", index=True))
        if idx.ndim != 1:
            T._break(st, "np.take with a multi-dimensional index")
        return T.emit(st, "index_select", [x, idx], {"dim": axis})
    return np.take(x, indices, axis=axis)


def index_select(x, dim, index):
    return take(x, index, axis=dim)


def ravel(x):
    return _t(x).reshape(-1) if _tracing(x) else np.ravel(x)


# -- creation ----------------------------------------------------------------------

def _fill_dtype(value, dtype):
    if dtype is not None:
        return T.dtype_name(dtype)
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "i64"
    return "f64"


def full(shape, fill_value, dtype=None):
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if isinstance(fill_value, (SymInt, T.Tensor)):
        # A traced value fills as it is (a size: an int64), never read as a number.
        fill = T.as_tensor(_st(fill_value, *shape), fill_value)
        return full(shape, 0, dtype or fill.dtype) + fill.astype(dtype or fill.dtype)
    if _tracing(*shape):
        dt = _fill_dtype(fill_value, dtype)
        if type(fill_value) is int:
            if dtype is None and not -2**63 <= fill_value < 2**63:
                T._break(_st(*shape), f"np.full of {fill_value}, which NumPy makes an unsigned or object array")
            T.python_int_fits(fill_value, dt)
        v = float(fill_value) if dt in _FLOAT else int(fill_value)
        return T.emit(_st(*shape), "full", [T._shape_operand(s) for s in shape], {"value": v, "dtype": dt})
    return np.full(shape, fill_value, dtype=dtype)


def zeros(shape, dtype=float):
    return full(shape, 0, dtype)


def ones(shape, dtype=float):
    return full(shape, 1, dtype)


def full_like(x, fill_value, dtype=None):
    if _tracing(x):
        x = _t(x)
        return full(x.shape, fill_value, dtype or x.dtype)
    return np.full_like(x, fill_value, dtype=dtype)


def zeros_like(x, dtype=None):
    return full_like(x, 0, dtype)


def ones_like(x, dtype=None):
    return full_like(x, 1, dtype)


def arange(start, stop=None, step=1, dtype=None):
    if stop is None:
        start, stop = 0, start
    if _tracing(start, stop, step):
        for v in (start, stop, step):
            if not isinstance(v, (int, np.integer, SymInt)):
                raise TypeError("shapejit.arange takes integer bounds while tracing")
        dt = T.dtype_name(dtype) if dtype is not None else "i64"
        st = _st(start, stop, step)
        return T.emit(st, "arange", [T._shape_operand(start), T._shape_operand(stop), T._shape_operand(step)], {"dtype": dt})
    return np.arange(start, stop, step, dtype=dtype)


# -- data-dependent shapes ---------------------------------------------------------

def argwhere(x):
    """Indices of the nonzero elements, [count, rank] (the op set's `nonzero`)."""
    return T.emit(_st(x), "nonzero", [_t(x)]) if _tracing(x) else np.argwhere(x)


def nonzero(x):
    """NumPy's nonzero: one index array per dim."""
    if _tracing(x):
        idx = argwhere(x)
        return tuple(idx[:, d] for d in range(_t(x).ndim))
    return np.nonzero(x)


def masked_select(x, mask):
    """The elements of x where mask (broadcast) holds, in row-major order."""
    if _tracing(x, mask):
        st = _st(x, mask)
        return T.emit(st, "masked_select", [T.as_tensor(st, x), T.as_tensor(st, mask)])
    x, mask = np.asarray(x), np.asarray(mask)
    return np.broadcast_to(x, np.broadcast_shapes(x.shape, mask.shape))[np.broadcast_to(mask, np.broadcast_shapes(x.shape, mask.shape))]


def flatnonzero(a):
    """Indices of the nonzero elements of a flattened."""
    return argwhere(ravel(a)).reshape(-1) if _tracing(a) else np.flatnonzero(a)


def compress(condition, a, axis=None, out=None):
    """The slices of `a` along `axis` (of a flattened, by default) where the
    1-d `condition` is nonzero; a True past the axis's end is an IndexError."""
    if out is not None or not _tracing(condition, a):
        return np.compress(condition, a, axis=axis, out=out)
    st = _st(condition, a)
    condition = T.as_tensor(st, condition)
    if condition.ndim != 1:
        raise ValueError("condition must be a 1-d array")
    return take(a, flatnonzero(condition), axis=axis)


def extract(condition, arr):
    """The elements of arr (flattened) where condition (flattened) is nonzero."""
    if not _tracing(condition, arr):
        return np.extract(condition, arr)
    st = _st(condition, arr)
    condition, arr = T.as_tensor(st, condition), T.as_tensor(st, arr)
    if condition._dtype == "bool" and condition.ndim == arr.ndim and all(c == a for c, a in zip(condition.shape, arr.shape)):
        return masked_select(arr, condition)  # one pass: the values where the mask holds
    return take(ravel(arr), flatnonzero(condition))


# -- sizes ---------------------------------------------------------------------------

def sym_min(a, b):
    """min of two sizes, traced (Python's min compares, which guards)."""
    if isinstance(a, SymInt) or isinstance(b, SymInt):
        return T.emit(_st(a, b), "sym_min", [a, b])
    return a if a <= b else b


def sym_max(a, b):
    if isinstance(a, SymInt) or isinstance(b, SymInt):
        return T.emit(_st(a, b), "sym_max", [a, b])
    return a if a >= b else b


def shape(x):
    return _t(x).shape if isinstance(x, Tensor) else np.shape(x)


def ndim(x):
    return x.ndim if isinstance(x, Tensor) else np.ndim(x)


def floor(x):
    return T.floor(T._float(x)) if _tracing(x) else np.floor(x)


# NumPy ufuncs and functions a Tensor answers to (__array_ufunc__, __array_function__).
T._UFUNCS.update({
    np.add: add, np.subtract: subtract, np.multiply: multiply, np.true_divide: divide,
    np.floor_divide: floor_divide, np.remainder: remainder, np.power: power, np.matmul: matmul,
    np.maximum: maximum, np.minimum: minimum, np.equal: equal, np.not_equal: not_equal,
    np.less: less, np.less_equal: less_equal, np.greater: greater, np.greater_equal: greater_equal,
    np.negative: negative, np.positive: lambda x: x, np.absolute: abs, np.exp: exp, np.log: log,
    np.sqrt: sqrt, np.tanh: tanh, np.sin: sin, np.cos: cos, np.floor: floor,
    np.square: lambda x: multiply(x, x), np.reciprocal: lambda x: divide(1.0, x),
    np.logical_and: logical_and, np.logical_or: logical_or, np.logical_not: logical_not,
    np.logical_xor: lambda a, b: not_equal(astype(a, bool), astype(b, bool)),
})
T._FUNCTIONS.update({
    np.sum: sum, np.mean: mean, np.max: max, np.amax: max, np.min: min, np.amin: min,
    np.argmax: argmax, np.argmin: argmin, np.reshape: reshape, np.transpose: transpose,
    np.swapaxes: swapaxes, np.squeeze: squeeze, np.expand_dims: expand_dims,
    np.concatenate: concatenate, np.stack: stack, np.where: where, np.dot: dot,
    np.broadcast_to: broadcast_to, np.take: take, np.argwhere: argwhere, np.nonzero: nonzero,
    np.extract: extract, np.compress: compress, np.flatnonzero: flatnonzero, np.clip: clip, np.zeros_like: zeros_like, np.ones_like: ones_like,
    np.full_like: full_like, np.shape: shape, np.ndim: ndim, np.ravel: ravel,
})
if hasattr(np, "astype"):
    T._FUNCTIONS[np.astype] = astype

from . import _numpy  # noqa: E402  (the rest of NumPy's table, over these functions)

T._UFUNCS.update(_numpy.UFUNCS)
T._FUNCTIONS.update(_numpy.FUNCTIONS)
