"""The ndarray interface of a Tensor: its operators, in-place operators,
methods and NumPy's dispatch protocols (``__array_ufunc__``,
``__array_function__``), attached here, above the NumPy table and indexing
they call, as JAX's ``array_methods`` attaches its own. Importing this
module is what makes a Tensor answer NumPy; the package does it first.

An operator gives the dtype NumPy's operator gives (``conform``) and a 0-d
result as NumPy's scalar; an in-place operator is NumPy's ``ufunc(x, o,
out=x)``, written into x (and into the array x views) as ``x[...] = x op o``
is. A NumPy function or ufunc the table lacks is a graph break (a cut, in a
segmented run), and so is a ufunc's method or keyword it does not take.
"""
from __future__ import annotations

import operator

import numpy as np

from ._indexing import getitem, take
from ._scatters import put, ufunc_at
from ._writes import inplace, setitem
from ._np import arithmetic, elementwise, products, reductions, selection, shapes, sorting, statistics, ufuncs
from ._np.registry import FUNCTIONS, UFUNCS
from ._trace.promotion import conform, mark_weak
from ._trace.state import as_tensor, emit, fault
from ._trace.tensor import Tensor, as_array, as_scalar


def _operators(op, fn):
    """A Tensor's operator and its reflected form: `fn`, giving the dtype
    NumPy's operator gives (conform), a 0-d result as NumPy's scalar."""
    def forward(self, o):
        return as_scalar(conform(op, (self, o), lambda: fn(self, o)))

    def reflected(self, o):
        return as_scalar(conform(op, (o, self), lambda: fn(o, self)))
    return forward, reflected


def _inplace(op, ufunc, fn):
    """A Tensor's in-place operator (x += o): NumPy's ufunc(x, o, out=x),
    written into x (and into the array x views, if it is a view) as
    x[...] = x op o is, after NumPy's checks (_writes.inplace)."""
    def f(self, o):
        return inplace(self, ufunc, o, lambda: conform(op, (self, o), lambda: fn(self, o)))
    return f


def _binary(op):
    return lambda a, b: arithmetic.binary(op, a, b)


def _bitwise(op):
    return lambda a, b: arithmetic.bitwise(op, a, b)


# -- operators ------------------------------------------------------------------
_ARITHMETIC = (  # name, Python's operator, NumPy's ufunc, shapejit's function
    ("add", operator.add, np.add, _binary("add")),
    ("sub", operator.sub, np.subtract, _binary("sub")),
    ("mul", operator.mul, np.multiply, _binary("mul")),
    ("truediv", operator.truediv, np.true_divide, arithmetic.true_divide),
    ("floordiv", operator.floordiv, np.floor_divide, arithmetic.floor_divide),
    ("mod", operator.mod, np.remainder, arithmetic.remainder),
    ("pow", operator.pow, np.power, _binary("pow")),
    ("matmul", operator.matmul, np.matmul, arithmetic.matmul),
)
for _name, _op, _ufunc, _fn in _ARITHMETIC:
    _forward, _reflected = _operators(_op, _fn)
    setattr(Tensor, f"__{_name}__", _forward)
    setattr(Tensor, f"__r{_name}__", _reflected)
    setattr(Tensor, f"__i{_name}__", _inplace(_op, _ufunc, _fn))
for _name, _op in (("eq", operator.eq), ("ne", operator.ne), ("lt", operator.lt), ("le", operator.le), ("gt", operator.gt),
                   ("ge", operator.ge)):
    setattr(Tensor, f"__{_name}__", _operators(_op, _binary(_name))[0])
for _name, _op, _ufunc in (("and", "and", np.bitwise_and), ("or", "or", np.bitwise_or), ("xor", "xor", np.bitwise_xor),
                           ("lshift", "left_shift", np.left_shift), ("rshift", "right_shift", np.right_shift)):
    _fn = _bitwise(_op)
    setattr(Tensor, f"__{_name}__", lambda self, o, fn=_fn: fn(self, o))
    setattr(Tensor, f"__r{_name}__", lambda self, o, fn=_fn: fn(o, self))
    setattr(Tensor, f"__i{_name}__", _inplace(None, _ufunc, _fn))
Tensor.__divmod__ = lambda self, o: elementwise.divmod_(self, o)
Tensor.__rdivmod__ = lambda self, o: elementwise.divmod_(o, self)
Tensor.__neg__ = lambda self: mark_weak(emit(self._st, "neg", [self]), self)
Tensor.__pos__ = lambda self: self._fresh()
Tensor.__abs__ = lambda self: emit(self._st, "abs", [self])
Tensor.__invert__ = arithmetic.invert
Tensor.__getitem__ = getitem
Tensor.__setitem__ = setitem
Tensor.__hash__ = object.__hash__  # defining __eq__ above took it away


# -- ndarray's methods ------------------------------------------------------------
class _Methods:
    """ndarray's methods and properties, each NumPy's function of the
    array (the table's); attached to Tensor below, as they are here."""

    @property
    def T(self):  # noqa: N802 - NumPy's name
        return shapes.transpose(self)

    @property
    def mT(self):  # noqa: N802 - NumPy's name
        if self.ndim < 2:
            raise ValueError("matrix transpose with ndim < 2 is undefined")
        return shapes.swapaxes(self, -1, -2)

    @property
    def imag(self):
        return elementwise.imag(self)

    def conj(self):
        return self

    conjugate = conj

    def fill(self, value):
        self[...] = value

    def put(self, indices, values, mode="raise"):
        return put(self, indices, values, mode)

    def nonzero(self):
        return selection.nonzero(self)

    def searchsorted(self, v, side="left", sorter=None):
        return sorting.searchsorted(self, v, side, sorter)

    def astype(self, dtype, copy=True):
        return arithmetic.astype(self, dtype, copy)

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return shapes.reshape(self, shape)

    def flatten(self, order="C"):
        return shapes.reshape(self, -1)._fresh()  # always a copy in NumPy

    def ravel(self, order="C"):
        return shapes.reshape(self, -1)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return shapes.transpose(self, axes)

    def swapaxes(self, axis1, axis2):
        return shapes.swapaxes(self, axis1, axis2)

    def squeeze(self, axis=None):
        return shapes.squeeze(self, axis)

    def sum(self, axis=None, dtype=None, keepdims=False):
        return reductions.sum(self, axis, dtype, keepdims)

    def mean(self, axis=None, dtype=None, keepdims=False):
        return reductions.mean(self, axis, dtype, keepdims)

    def prod(self, axis=None, dtype=None, keepdims=False):
        return reductions.prod(self, axis, dtype, keepdims)

    def max(self, axis=None, keepdims=False):
        return reductions.max(self, axis, keepdims)

    def min(self, axis=None, keepdims=False):
        return reductions.min(self, axis, keepdims)

    def argmax(self, axis=None, keepdims=False):
        return reductions.argmax(self, axis, keepdims)

    def argmin(self, axis=None, keepdims=False):
        return reductions.argmin(self, axis, keepdims)

    def clip(self, a_min=None, a_max=None):
        return arithmetic.clip(self, a_min, a_max)

    def copy(self, order="K"):
        return self._fresh()

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
        return statistics.var(self, axis, dtype, out, ddof, keepdims, **kw)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
        return statistics.std(self, axis, dtype, out, ddof, keepdims, **kw)

    def any(self, axis=None, out=None, keepdims=False, **kw):
        return statistics.any(self, axis, out, keepdims, **kw)

    def all(self, axis=None, out=None, keepdims=False, **kw):
        return statistics.all(self, axis, out, keepdims, **kw)

    def round(self, decimals=0, out=None):
        return elementwise.around(self, decimals, out)

    def repeat(self, repeats, axis=None):
        return shapes.repeat(self, repeats, axis)

    def take(self, indices, axis=None):
        return take(self, indices, axis)

    def dot(self, other):
        return products.dot(self, other)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return shapes.diagonal(self, offset, axis1, axis2)

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        return shapes.trace(self, offset, axis1, axis2, dtype, out)

    def ptp(self, axis=None, out=None, keepdims=False):
        return statistics.ptp(self, axis, out, keepdims)

    def sort(self, axis=-1, kind=None, order=None, *, stable=None):
        self[...] = sorting.sort(self, axis, kind, order)  # in place: a write, into an input too

    def argsort(self, axis=-1, kind=None, order=None, *, stable=None):
        return sorting.argsort(self, axis, kind, order)

    def cumsum(self, axis=None, dtype=None, out=None):
        return statistics.cumsum(self, axis, dtype, out)

    def cumprod(self, axis=None, dtype=None, out=None):
        return statistics.cumprod(self, axis, dtype, out)

    # The array API standard's attributes: a tracing value is on the CPU.
    @property
    def device(self):
        return "cpu"

    def to_device(self, device, /, *, stream=None):
        if device != "cpu":
            raise ValueError(f"Unsupported device: {device}. Only 'cpu' is accepted.")
        return self


for _name, _member in vars(_Methods).items():
    if not _name.startswith("__"):
        setattr(Tensor, _name, _member)


# -- NumPy's protocols --------------------------------------------------------------
def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    what = ufunc if method == "__call__" else getattr(ufunc, method)
    if fault("numpy"):
        return self._st.call_numpy(what, inputs, kwargs, f"np.{ufunc.__name__} is not in the table (fault injected)")
    if kwargs.get("out") is not None:
        return _into_out(self, ufunc, method, inputs, kwargs)
    impl = UFUNCS.get(ufunc)
    out = ufuncs.NOT_TAKEN
    if method == "__call__" and impl is not None:
        if not kwargs:
            return as_scalar(_new_array(conform(ufunc, inputs, lambda: impl(*inputs)), inputs))
        if kwargs.get("dtype") is not None and set(kwargs) <= {"dtype", "casting", "out"}:
            out = ufuncs.call_with_dtype(ufunc, impl, inputs, kwargs["dtype"], kwargs.get("casting", "same_kind"))
            if out is not ufuncs.NOT_TAKEN:
                return as_scalar(_new_array(out, inputs))
    elif method == "reduce" and len(inputs) == 1:
        out = ufuncs.reduce(ufunc, inputs[0], **kwargs)
    elif method == "accumulate" and len(inputs) == 1:
        out = ufuncs.accumulate(ufunc, inputs[0], **kwargs)
    elif method == "reduceat" and len(inputs) == 2:
        out = ufuncs.reduceat(ufunc, *inputs, **kwargs)
    elif method == "outer" and impl is not None and not kwargs and len(inputs) == 2:
        out = ufuncs.outer(ufunc, *inputs)
    elif method == "at" and not kwargs and len(inputs) in (2, 3):
        done = ufunc_at(ufunc, *inputs)
        if done is not NotImplemented:
            return done
    if out is not ufuncs.NOT_TAKEN:
        return out
    suffix = "" if method == "__call__" else "." + method
    return self._st.call_numpy(what, inputs, kwargs, f"np.{ufunc.__name__}{suffix} has no shapejit op")


def _into_out(self, ufunc, method, inputs, kwargs):
    """ufunc(..., out=o[, where=m]): o[...] = where(m, ufunc(...), o),
    written into o as NumPy writes it, and o given back; what else
    NumPy's out= does (casting= other than same_kind, several outputs,
    an out that is not traced) breaks the graph."""
    out, mask = kwargs.pop("out"), kwargs.pop("where", True)
    out = out[0] if isinstance(out, tuple) and len(out) == 1 else out
    if method != "__call__" or ufunc not in UFUNCS or kwargs or not isinstance(out, Tensor) or ufunc.nout != 1:
        self._st.graph_break(f"np.{ufunc.__name__} with out=")
    value = ufunc(*inputs)
    if not isinstance(value, Tensor):
        value = as_tensor(self._st, value)
    if not np.can_cast(value.dtype, out.dtype, "same_kind"):
        self._st.graph_break(f"np.{ufunc.__name__} with out= of a dtype its result does not cast to")  # NumPy's UFuncTypeError
    if mask is not True:
        value = arithmetic.where(mask, value, out)
    out[...] = value
    return out


def _array_function(self, func, types, args, kwargs):
    impl = None if fault("numpy") else FUNCTIONS.get(func)
    if impl is None:
        return self._st.call_numpy(func, args, kwargs, f"np.{func.__name__} has no shapejit op")
    out = impl(*args, **kwargs)
    if func not in _GIVES_SCALARS:
        as_array(out)
    return out if func in _MAY_RETURN_ITS_ARGUMENT else _new_array(out, args)


def _array_namespace(self, *, api_version=None):
    """The array API standard's namespace of a tracing value: NumPy's own
    (NumPy 2's namespace is the standard's), whose functions dispatch to the
    table, and whose creation functions take sizes while a trace runs.
    Libraries written against the standard (einops, array-api-compat,
    scikit-learn's array API mode) trace through it as NumPy code does."""
    if api_version is not None and api_version not in ("2021.12", "2022.12", "2023.12", "2024.12"):
        raise ValueError(f"Unrecognized array API version: {api_version!r}")
    return np


Tensor.__array_ufunc__ = _array_ufunc
Tensor.__array_function__ = _array_function
Tensor.__array_namespace__ = _array_namespace


def _new_array(out, inputs):
    """`out`, a new array where an implementation gave back one of its
    inputs as it is (np.floor of an int array, np.nan_to_num of one), which
    NumPy's function copies: a write into the result must not reach the input."""
    if isinstance(out, Tensor) and any(out is x for x in inputs):
        return out._fresh()
    if isinstance(out, (tuple, list)) and any(isinstance(o, Tensor) and any(o is x for x in inputs) for o in out):
        return type(out)(o._fresh() if isinstance(o, Tensor) and any(o is x for x in inputs) else o for o in out)
    return out


# NumPy's functions that give back their argument itself, or a view of it,
# where an implementation may give back the tensor as it is.
_MAY_RETURN_ITS_ARGUMENT = {np.asarray, np.asanyarray, np.ascontiguousarray, np.real, np.atleast_1d, np.atleast_2d,
                            np.atleast_3d, np.squeeze, np.transpose, np.reshape, np.ravel, np.moveaxis, np.rollaxis,
                            np.swapaxes, np.expand_dims, np.broadcast_to, np.broadcast_arrays, np.flip, np.fliplr,
                            np.flipud, np.diagonal, np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit, np.diff,
                            np.linalg.matrix_power, np.real_if_close, np.ascontiguousarray, np.asfortranarray}
_MAY_RETURN_ITS_ARGUMENT |= {getattr(np, n) for n in ("unstack", "matrix_transpose", "permute_dims") if hasattr(np, n)}
# NumPy's functions whose 0-d results are scalars (reductions, products of
# vectors); the others give arrays, even where shapejit computes them with
# operators, whose 0-d results are scalars.
_GIVES_SCALARS = {np.sum, np.prod, np.mean, np.std, np.var, np.min, np.max, np.amin, np.amax, np.ptp, np.median,
                  np.average, np.any, np.all, np.count_nonzero, np.argmax, np.argmin, np.dot, np.vdot, np.inner, np.trace,
                  np.linalg.norm, np.nansum, np.nanmean, np.nanmax, np.nanmin, np.round, np.around, np.clip,
                  np.searchsorted, np.isclose, np.nanargmax, np.nanargmin, np.flip, np.nanmedian, np.nanvar, np.nanstd,
                  np.nanprod, np.quantile, np.percentile, np.nanquantile, np.nanpercentile, np.corrcoef, np.polyval,
                  np.interp, np.linalg.vector_norm, np.linalg.matrix_norm, np.linalg.trace, np.linalg.vecdot}
# (np.flip of a 0-d array is its element; a write into v[None] of such a
# scalar must not reach it.)
_GIVES_SCALARS |= {getattr(np, n) for n in ("trapezoid", "vecdot") if hasattr(np, n)}
