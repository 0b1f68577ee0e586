"""shapejit's functions: NumPy's names where NumPy has the op, plus the
network ops of the op set. Inside a trace they are the table's
implementations (shapejit._np); outside one (plain calls, or a graph break
run in NumPy) they compute with NumPy, so one function body serves both."""
from __future__ import annotations

import builtins
import math

import numpy as np

from ._indexing import take as _take
from ._np import arithmetic, creation, elementwise, network, products, reductions, selection, shapes
from ._trace.sizes import SymInt
from ._trace.state import as_tensor, current, emit, state_of
from ._trace.tensor import Tensor


def _tracing(*xs):
    return current() is not None or builtins.any(isinstance(x, (Tensor, SymInt)) for x in xs)


def _t(x):
    return as_tensor(state_of(x), x)


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
    if isinstance(axes, (int, SymInt)):
        axes = (axes,)
    return tuple(a % ndim for a in axes)


def _both(name, traced, eager):
    """A function that is `traced` while tracing and `eager` (NumPy's) otherwise."""
    def f(*args, **kwargs):
        return traced(*args, **kwargs) if _tracing(*args, *kwargs.values()) else eager(*args, **kwargs)
    f.__name__ = f.__qualname__ = name
    return f


# -- elementwise -----------------------------------------------------------------

def _unary(op, npf):
    def f(x):
        if _tracing(x):
            return arithmetic.unary(op, x)
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
    if _tracing(x):
        return network.gelu(x, approximate)
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate is 'none' or 'tanh', not {approximate!r}")
    x = _np_float(x)
    if approximate == "tanh":
        return (0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))).astype(x.dtype)
    return (0.5 * x * (1 + _np_erf(x / math.sqrt(2)))).astype(x.dtype)


astype = cast = _both("astype", arithmetic.astype, lambda x, dtype: np.asarray(x).astype(dtype))


def _binary(op, npf):
    return _both(npf.__name__, lambda a, b: arithmetic.binary(op, a, b), npf)


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
divide = true_divide = _both("divide", arithmetic.true_divide, np.divide)
floor_divide = _both("floor_divide", arithmetic.floor_divide, np.floor_divide)
remainder = _both("remainder", arithmetic.remainder, np.remainder)
logical_and = _both("logical_and", lambda a, b: _t(a).astype(bool) & _t(b).astype(bool), np.logical_and)
logical_or = _both("logical_or", lambda a, b: _t(a).astype(bool) | _t(b).astype(bool), np.logical_or)
logical_not = _both("logical_not", arithmetic.logical_not, np.logical_not)
where = _both("where", arithmetic.where, np.where)
clip = _both("clip", arithmetic.clip, np.clip)
floor = _both("floor", elementwise.floor, np.floor)


# -- reductions --------------------------------------------------------------------

def sum(x, axis=None, dtype=None, keepdims=False):  # noqa: A001
    return reductions.sum(x, axis, dtype, keepdims) if _tracing(x) else np.sum(x, axis=axis, dtype=dtype, keepdims=keepdims)


def mean(x, axis=None, dtype=None, keepdims=False):
    return reductions.mean(x, axis, dtype, keepdims) if _tracing(x) else np.mean(x, axis=axis, dtype=dtype, keepdims=keepdims)


def max(x, axis=None, keepdims=False):  # noqa: A001
    return reductions.max(x, axis, keepdims) if _tracing(x) else np.max(x, axis=axis, keepdims=keepdims)


def min(x, axis=None, keepdims=False):  # noqa: A001
    return reductions.min(x, axis, keepdims) if _tracing(x) else np.min(x, axis=axis, keepdims=keepdims)


amax, amin = max, min


def argmax(x, axis=None, keepdims=False):
    return reductions.argmax(x, axis, keepdims) if _tracing(x) else np.argmax(x, axis=axis, keepdims=keepdims)


def argmin(x, axis=None, keepdims=False):
    return reductions.argmin(x, axis, keepdims) if _tracing(x) else np.argmin(x, axis=axis, keepdims=keepdims)


# -- network ops -------------------------------------------------------------------

def softmax(x, axis=-1):
    if _tracing(x):
        return network.softmax(x, axis)
    x = _np_float(x)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return (e / np.sum(e, axis=axis, keepdims=True)).astype(x.dtype)


def log_softmax(x, axis=-1):
    if _tracing(x):
        return network.log_softmax(x, axis)
    x = _np_float(x)
    s = x - np.max(x, axis=axis, keepdims=True)
    return (s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True))).astype(x.dtype)


def layer_norm(x, weight=None, bias=None, axes=-1, eps=1e-5):
    """(x - mean) / sqrt(var + eps) over `axes`, times weight, plus bias."""
    if _tracing(x, weight, bias):
        return network.layer_norm(x, weight, bias, axes, eps)
    if bias is not None and weight is None:
        raise ValueError("layer_norm: a bias needs a weight (pass ones)")
    x = _np_float(x)
    ax = _axes_tuple(network.axes_of(axes), x.ndim)
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
    if _tracing(x, weight):
        return network.rms_norm(x, weight, axes, eps)
    x = _np_float(x)
    ax = _axes_tuple(network.axes_of(axes), x.ndim)
    y = x / np.sqrt((x * x).mean(axis=ax, keepdims=True) + eps)
    if weight is not None:
        y = y * weight
    return y.astype(x.dtype)


def embedding(table, ids):
    """Rows of a 2-D table: ids.shape + [table.shape[1]]."""
    if _tracing(table, ids):
        return network.embedding(table, ids)
    return np.asarray(table)[np.asarray(ids)]


matmul = _both("matmul", arithmetic.matmul, np.matmul)


dot = _both("dot", products.dot, np.dot)


# -- layout ------------------------------------------------------------------------

def reshape(x, shape, order="C"):
    return shapes.reshape(x, shape) if _tracing(x) else np.reshape(x, shape)


def transpose(x, axes=None):
    return shapes.transpose(x, axes) if _tracing(x) else np.transpose(x, axes)


permute = transpose
swapaxes = _both("swapaxes", shapes.swapaxes, np.swapaxes)
broadcast_to = _both("broadcast_to", shapes.broadcast_to, np.broadcast_to)


def squeeze(x, axis=None):
    return shapes.squeeze(x, axis) if _tracing(x) else np.squeeze(x, axis)


expand_dims = _both("expand_dims", shapes.expand_dims, np.expand_dims)


def concatenate(arrays, axis=0):
    arrays = list(arrays)
    return shapes.concatenate(arrays, axis) if _tracing(*arrays) else np.concatenate(arrays, axis)


def stack(arrays, axis=0):
    arrays = list(arrays)
    return shapes.stack(arrays, axis) if _tracing(*arrays) else np.stack(arrays, axis)


def take(x, indices, axis=None):
    return _take(x, indices, axis) if _tracing(x, indices) else np.take(x, indices, axis=axis)


def index_select(x, dim, index):
    return take(x, index, axis=dim)


ravel = _both("ravel", shapes.ravel, np.ravel)


# -- creation ----------------------------------------------------------------------

def full(shape, fill_value, dtype=None):
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if isinstance(fill_value, (SymInt, Tensor)) or _tracing(*shape):
        return creation.full(shape, fill_value, dtype)
    return np.full(shape, fill_value, dtype=dtype)


def zeros(shape, dtype=float):
    return full(shape, 0, dtype)


def ones(shape, dtype=float):
    return full(shape, 1, dtype)


def full_like(x, fill_value, dtype=None):
    return creation.full_like(x, fill_value, dtype) if _tracing(x) else np.full_like(x, fill_value, dtype=dtype)


def zeros_like(x, dtype=None):
    return full_like(x, 0, dtype)


def ones_like(x, dtype=None):
    return full_like(x, 1, dtype)


def arange(start, stop=None, step=1, dtype=None):
    if stop is None:
        start, stop = 0, start
    if _tracing(start, stop, step):
        return creation.arange(start, stop, step, dtype)
    return np.arange(start, stop, step, dtype=dtype)


# -- data-dependent shapes ---------------------------------------------------------

argwhere = _both("argwhere", selection.argwhere, np.argwhere)
nonzero = _both("nonzero", selection.nonzero, np.nonzero)
flatnonzero = _both("flatnonzero", selection.flatnonzero, np.flatnonzero)


def masked_select(x, mask):
    """The elements of x where mask (broadcast) holds, in row-major order."""
    if _tracing(x, mask):
        return selection.masked_select(x, mask)
    x, mask = np.asarray(x), np.asarray(mask)
    shape = np.broadcast_shapes(x.shape, mask.shape)
    return np.broadcast_to(x, shape)[np.broadcast_to(mask, shape)]


def compress(condition, a, axis=None, out=None):
    """The slices of `a` along `axis` (of a flattened, by default) where the
    1-d `condition` is nonzero; a True past the axis's end is an IndexError."""
    if out is not None or not _tracing(condition, a):
        return np.compress(condition, a, axis=axis, out=out)
    return selection.compress(condition, a, axis)


def extract(condition, arr):
    """The elements of arr (flattened) where condition (flattened) is nonzero."""
    return selection.extract(condition, arr) if _tracing(condition, arr) else np.extract(condition, arr)


# -- sizes ---------------------------------------------------------------------------

def sym_min(a, b):
    """min of two sizes, traced (Python's min compares, which guards)."""
    if isinstance(a, SymInt) or isinstance(b, SymInt):
        return emit(state_of(a, b), "sym_min", [a, b])
    return a if a <= b else b


def sym_max(a, b):
    if isinstance(a, SymInt) or isinstance(b, SymInt):
        return emit(state_of(a, b), "sym_max", [a, b])
    return a if a >= b else b


def shape(x):
    return _t(x).shape if isinstance(x, Tensor) else np.shape(x)


def ndim(x):
    return x.ndim if isinstance(x, Tensor) else np.ndim(x)
