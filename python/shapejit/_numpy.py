"""NumPy's functions on tracing values: the table a Tensor answers NumPy with.

Each entry is NumPy's function written over the op set, with NumPy's
results (values, dtypes, shapes) for the arguments it takes; what it cannot
take (an `out=`, a mode it lacks) is a graph break naming what, never a
wrong answer. The functions live by family in `_np_elementwise`,
`_np_statistics`, `_np_sorting`, `_np_shapes`, `_np_products` and `_np_creation` (with
what they share in `_np_base`); this module maps NumPy's callables to them
(`__array_ufunc__`, `__array_function__`). `_coverage` lists what the table
holds and what NumPy functions model code uses that it does not.

NumPy's creation functions (`np.arange(n)`, `np.zeros((n, d))`, `np.tri(n)`)
do not dispatch on a SymInt argument, and Python's `len` must return an int,
so while a trace is recorded they are wrapped (`size_functions`): given a
SymInt (or a tensor, for `len`), they trace a symbolic op, `len(x)` is
`x.shape[0]` and `range(n)` a `SymRange`; given anything else, they are
NumPy's and Python's own.
"""
from __future__ import annotations

import builtins
import contextlib
import threading

import numpy as np

from . import _tracing as T
from ._np_base import _st, _t
from ._np_creation import array, asarray, empty, empty_like, linspace, meshgrid
from ._np_elementwise import (_float_binary, _float_unary, _rounding, around, arctan2, copysign, deg2rad, float_power, fmax, fmin,
                              fabs, hypot, imag, isclose, isfinite, isinf, isnan, logaddexp, logaddexp2, nan_to_num, rad2deg,
                              reciprocal, rint, sign, signbit)
from ._np_products import convolve, einsum, inner, norm, outer, take_along_axis, tensordot, vdot, vecdot
from ._np_shapes import (array_split, atleast_1d, atleast_2d, atleast_3d, broadcast_arrays, column_stack, diag, diagonal, diff,
                         dsplit, dstack, eye, fill_diagonal, flip, fliplr, flipud, hsplit, hstack, identity, matrix_transpose, moveaxis, pad,
                         repeat, roll, rollaxis, split, tile, trace, tri, tril, triu, unstack, vsplit, vstack)
from ._np_sorting import argsort, median, searchsorted, sort
from ._np_statistics import (all, any, average, count_nonzero, cumprod, cumsum, cumulative_sum, nanmax, nanmean, nanmin,  # noqa: A004
                             nansum, prod, ptp, std, var)
from ._state import current
from ._tracing import SymInt, Tensor

# -- the table --------------------------------------------------------------------------------

UFUNCS = {
    np.tan: _float_unary("tan"), np.arcsin: _float_unary("asin"), np.arccos: _float_unary("acos"),
    np.arctan: _float_unary("atan"), np.sinh: _float_unary("sinh"), np.cosh: _float_unary("cosh"),
    np.arcsinh: _float_unary("asinh"), np.arccosh: _float_unary("acosh"), np.arctanh: _float_unary("atanh"),
    np.log1p: _float_unary("log1p"), np.expm1: _float_unary("expm1"), np.log2: _float_unary("log2"),
    np.log10: _float_unary("log10"), np.exp2: _float_unary("exp2"), np.cbrt: _float_unary("cbrt"),
    np.floor: _rounding("floor"), np.ceil: _rounding("ceil"), np.trunc: _rounding("trunc"), np.rint: rint,
    np.sign: sign, np.signbit: signbit, np.copysign: copysign, np.isnan: isnan, np.isinf: isinf,
    np.isfinite: isfinite, np.fabs: fabs, np.reciprocal: reciprocal, np.fmax: fmax, np.fmin: fmin,
    np.arctan2: arctan2, np.hypot: hypot, np.float_power: float_power, np.logaddexp: logaddexp,
    np.logaddexp2: logaddexp2, np.deg2rad: deg2rad, np.radians: deg2rad, np.rad2deg: rad2deg,
    np.degrees: rad2deg, np.conjugate: lambda x: x,
    np.bitwise_and: lambda a, b: T.bitwise("and", a, b), np.bitwise_or: lambda a, b: T.bitwise("or", a, b),
    np.bitwise_xor: lambda a, b: T.bitwise("xor", a, b), np.invert: lambda x: ~_t(_st(x), x),
    np.left_shift: lambda a, b: T.bitwise("left_shift", a, b), np.right_shift: lambda a, b: T.bitwise("right_shift", a, b),
}
FUNCTIONS = {
    np.round: around, np.around: around, np.fix: _rounding("trunc"), np.real: lambda x: x,
    np.nan_to_num: nan_to_num, np.isclose: isclose, np.imag: imag,
    np.var: var, np.std: std, np.ptp: ptp, np.prod: prod, np.cumsum: cumsum, np.cumprod: cumprod, np.any: any, np.all: all, np.count_nonzero: count_nonzero,
    np.average: average, np.nansum: nansum, np.nanmean: nanmean, np.nanmax: nanmax, np.nanmin: nanmin,
    np.atleast_1d: atleast_1d, np.atleast_2d: atleast_2d, np.atleast_3d: atleast_3d,
    np.hstack: hstack, np.vstack: vstack, np.dstack: dstack, np.column_stack: column_stack,
    np.split: split, np.array_split: array_split, np.hsplit: hsplit, np.vsplit: vsplit, np.dsplit: dsplit,
    np.moveaxis: moveaxis, np.rollaxis: rollaxis, np.flip: flip, np.fliplr: fliplr, np.flipud: flipud,
    np.roll: roll, np.repeat: repeat, np.tile: tile, np.pad: pad, np.broadcast_arrays: broadcast_arrays,
    np.tril: tril, np.triu: triu, np.diagonal: diagonal, np.diag: diag, np.trace: trace, np.outer: outer,
    np.inner: inner, np.vdot: vdot, np.convolve: convolve, np.tensordot: tensordot, np.einsum: einsum,
    np.take_along_axis: take_along_axis, np.linalg.norm: norm, np.diff: diff, np.meshgrid: meshgrid,
    np.empty_like: empty_like, np.fill_diagonal: fill_diagonal,
    np.sort: sort, np.argsort: argsort, np.median: median, np.searchsorted: searchsorted,
}
for _name, _f in (("unstack", unstack), ("matrix_transpose", matrix_transpose), ("vecdot", vecdot), ("cumulative_sum", cumulative_sum),
                  ("permute_dims", lambda x, axes=None: _t(_st(x), x).transpose(*(axes or ())))):
    if hasattr(np, _name):  # NumPy 2's; vecdot and matmul are ufuncs there
        (UFUNCS if isinstance(getattr(np, _name), np.ufunc) else FUNCTIONS)[getattr(np, _name)] = _f
if hasattr(np, "row_stack"):
    FUNCTIONS[np.row_stack] = vstack


# -- creation functions given sizes ----------------------------------------------------------

def _sizes_in(args, kwargs):
    """Whether the arguments hold a SymInt or a Tensor (in lists and tuples too)."""
    def has(x):
        if isinstance(x, (SymInt, Tensor, T.SymRange)):
            return True
        if isinstance(x, (list, tuple)):
            return builtins.any(has(e) for e in x)
        return False
    return builtins.any(has(a) for a in args) or builtins.any(has(v) for v in kwargs.values())


def creation_names():
    return set(_creation())


def _creation():
    from . import _ops
    return {
        "arange": _ops.arange, "zeros": _ops.zeros, "ones": _ops.ones, "full": _ops.full, "empty": empty,
        "eye": eye, "identity": identity, "tri": tri, "linspace": linspace, "asarray": asarray, "array": array,
    }


_len = builtins.len
_range = builtins.range


def _traced_len(obj):
    if isinstance(obj, Tensor):
        if obj.ndim == 0:
            raise TypeError("len() of unsized object")
        return obj.shape[0]
    if isinstance(obj, T.SymRange):
        return obj.size()
    return _len(obj)


class _RangeType(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, (_range, T.SymRange))

    def __subclasscheck__(cls, sub):
        return issubclass(sub, (_range, T.SymRange))

    def __call__(cls, *args):
        if current() is not None and builtins.any(isinstance(a, SymInt) for a in args):
            return T.SymRange(*args)
        return _range(*args)


class _TracedRange(metaclass=_RangeType):
    """builtins.range while traces are recorded: a type (isinstance(r, range)
    holds for ranges and SymRanges) whose call makes a SymRange of sizes."""
    __doc__ = _range.__doc__


def _patches():
    """(module, name, the function while tracing); a function is wrapped so
    that a thread not tracing gets the original, given `takes` is false."""
    out = [(np, name, _wrapped(name, getattr(np, name), traced, _sizes_in)) for name, traced in _creation().items()]
    takes_len = lambda args, kwargs: bool(args) and isinstance(args[0], (Tensor, T.SymRange))  # noqa: E731
    out.append((builtins, "len", _wrapped("len", _len, _traced_len, takes_len)))
    out.append((builtins, "range", _TracedRange))
    return out


_lock = threading.Lock()
_active = 0
_originals = []
_replacements = {}  # id(an original) -> what stands in for it while traces are recorded


def _wrapped(name, original, traced, takes):
    def f(*args, **kwargs):
        if current() is not None and takes(args, kwargs):
            return T.as_array(traced(*args, **kwargs))  # NumPy's creation gives arrays
        return original(*args, **kwargs)
    f.__name__ = name
    f.__doc__ = original.__doc__
    f.__wrapped__ = original
    return f


@contextlib.contextmanager
def size_functions():
    """While a trace is recorded, numpy's creation functions take SymInts
    (np.arange(n), np.zeros((n, d)), np.tri(n)) and trace symbolic ops, and
    len() and range() of sizes stay sizes. A thread that is not tracing
    still gets NumPy's and Python's own behaviour. Yields what stands in
    for each original, by id, for the trace to swap in where the program
    holds NumPy's function under another name (`from numpy import arange`,
    a namespace of NumPy's functions): _captures.swapped."""
    global _active
    with _lock:
        if _active == 0:
            for module, name, replacement in _patches():
                original = getattr(module, name)
                _originals.append((module, name, original))
                _replacements[id(original)] = replacement
                setattr(module, name, replacement)
        _active += 1
    try:
        yield _replacements
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                for module, name, original in _originals:
                    setattr(module, name, original)
                _originals.clear()
                _replacements.clear()
