"""NumPy's creation functions and Python's len and range, given sizes, while
a trace is recorded.

NumPy's creation functions (`np.arange(n)`, `np.zeros((n, d))`, `np.tri(n)`)
do not dispatch on a SymInt argument, and Python's `len` must return an int,
so while a trace is recorded they are wrapped (`size_functions`): given a
SymInt (or a tensor, for `len`), they trace a symbolic op, `len(x)` is
`x.shape[0]` and `range(n)` a `SymRange`; given anything else, they are
NumPy's and Python's own. Where the program holds NumPy's function under a
name of its own, the trace swaps the wrapper in there too (captures.swapped).
"""
from __future__ import annotations

import builtins
import contextlib
import threading

import numpy as np

from .._np import building, creation, numerics, shapes
from .._trace.sizes import SymInt, SymRange
from .._trace.state import current
from .._trace.tensor import Tensor, as_array


def _sizes_in(args, kwargs):
    """Whether the arguments hold a SymInt or a Tensor (in lists and tuples too)."""
    def has(x):
        if isinstance(x, (SymInt, Tensor, SymRange)):
            return True
        if isinstance(x, (list, tuple)):
            return builtins.any(has(e) for e in x)
        return False
    return builtins.any(has(a) for a in args) or builtins.any(has(v) for v in kwargs.values())


# NumPy's creation functions that take sizes, by name: the traced one for each.
CREATION = {
    "arange": creation.arange, "zeros": creation.zeros, "ones": creation.ones, "full": creation.full, "empty": creation.empty,
    "eye": shapes.eye, "identity": shapes.identity, "tri": shapes.tri, "linspace": creation.linspace,
    "asarray": creation.asarray, "array": creation.array, "asanyarray": creation.asarray,
    "ascontiguousarray": creation.ascontiguousarray, "asfortranarray": creation.ascontiguousarray, "copy": creation.copy,
    "logspace": numerics.logspace, "geomspace": numerics.geomspace, "indices": building.indices, "tril_indices": building.tril_indices,
    "triu_indices": building.triu_indices, "diag_indices": building.diag_indices, "hanning": numerics.hanning,
    "hamming": numerics.hamming, "blackman": numerics.blackman, "bartlett": numerics.bartlett,
}


_len = builtins.len
_range = builtins.range


def _traced_len(obj):
    if isinstance(obj, Tensor):
        if obj.ndim == 0:
            raise TypeError("len() of unsized object")
        return obj.shape[0]
    if isinstance(obj, SymRange):
        return obj.size()
    return _len(obj)


class _RangeType(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, (_range, SymRange))

    def __subclasscheck__(cls, sub):
        return issubclass(sub, (_range, SymRange))

    def __call__(cls, *args):
        if current() is not None and builtins.any(isinstance(a, SymInt) for a in args):
            return SymRange(*args)
        return _range(*args)


class _TracedRange(metaclass=_RangeType):
    """builtins.range while traces are recorded: a type (isinstance(r, range)
    holds for ranges and SymRanges) whose call makes a SymRange of sizes."""
    __doc__ = _range.__doc__


def _patches():
    """(module, name, the function while tracing); a function is wrapped so
    that a thread not tracing gets the original, given `takes` is false."""
    out = [(np, name, _wrapped(name, getattr(np, name), traced, _sizes_in)) for name, traced in CREATION.items()]
    takes_len = lambda args, kwargs: bool(args) and isinstance(args[0], (Tensor, SymRange))  # noqa: E731
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
            return as_array(traced(*args, **kwargs))  # NumPy's creation gives arrays
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
    a namespace of NumPy's functions): captures.swapped."""
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
