"""The NumPy table: for each NumPy callable a Tensor answers to, the
implementation that traces it (NEP 18's `implements`, as torch._numpy and
JAX keep one). A ufunc is looked up by `__array_ufunc__`, any other function
by `__array_function__`; what the table lacks is a graph break."""
from __future__ import annotations

import numpy as np

UFUNCS = {}     # np.ufunc -> its implementation, called with the ufunc's inputs
FUNCTIONS = {}  # any other NumPy callable -> its implementation, called with the call's arguments


def numpy_has(name):
    """NumPy's callable `name`, or None where this NumPy lacks it (np.unstack before 2.1)."""
    return getattr(np, name, None)


def implements(*targets):
    """Registers the decorated function as the implementation of each NumPy
    callable in `targets` (a None, a callable this NumPy lacks, is passed
    over; two names of one callable, np.permute_dims and np.transpose in
    NumPy 2, are one entry). A callable registered twice is an error at
    import: one entry each, whatever the import order."""
    def register(fn):
        for target in {id(t): t for t in targets}.values():
            if target is None:
                continue
            table = UFUNCS if isinstance(target, np.ufunc) else FUNCTIONS
            held = table.get(target)
            if held is not None:
                raise RuntimeError(f"shapejit: np.{target.__name__} is implemented twice: by {_name(held)} and by {_name(fn)}")
            table[target] = fn
        return fn
    return register


def _name(fn):
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
