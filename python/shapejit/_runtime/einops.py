"""einops on tracing values: a backend of einops's own kind for Tensor.

einops finds a tensor's backend among the subclasses of its
AbstractBackend whose framework is imported; programs that `rearrange`,
`repeat`, `reduce` or `einsum` with einops trace through this one, whose
operations are NumPy's functions on tensors (the table of shapejit._np). Its
shape is a list of SymInts: unhashable, so einops takes its uncached path
for symbolic shapes and traces the arithmetic of its axis lengths instead of
reading each size as a number. Defined when a trace first meets einops
imported (shapejit never imports einops itself).
"""
from __future__ import annotations

import sys

from .._trace.tensor import Tensor


_defined = False
_backend = None  # the class: einops finds its backends as subclasses, held weakly


def register():
    """Makes einops know Tensor, if the program imported einops."""
    global _defined, _backend
    if _defined or "einops" not in sys.modules:
        return
    try:
        from einops._backends import NumpyBackend
    except ImportError:  # an einops without the module layout this knows: its own error where it meets a Tensor
        _defined = True
        return

    class ShapejitBackend(NumpyBackend):
        framework_name = "shapejit"

        def is_appropriate_type(self, tensor):
            return isinstance(tensor, Tensor)

        def shape(self, x):
            return list(x.shape)

        def is_float_type(self, x):
            return x.dtype.kind == "f"

    ShapejitBackend.__module__ = __name__
    _backend = ShapejitBackend
    _defined = True
