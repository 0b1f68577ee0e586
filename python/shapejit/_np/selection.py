"""NumPy's functions whose result's size is the data's: nonzero, argwhere,
flatnonzero, compress, extract. Each is the op set's `nonzero` or
`masked_select`, whose count is an unbacked size the kernel computes."""
from __future__ import annotations

import numpy as np

from .._trace.state import as_tensor, emit, state_of
from .registry import implements


def _tensor(x):
    return as_tensor(state_of(x), x)


def argwhere(x):
    """Indices of the nonzero elements, [count, rank] (the op set's `nonzero`)."""
    return emit(state_of(x), "nonzero", [_tensor(x)])


def nonzero(x):
    """NumPy's nonzero: one index array per dim."""
    idx = argwhere(x)
    return tuple(idx[:, d] for d in range(_tensor(x).ndim))


def masked_select(x, mask):
    """The elements of x where mask (broadcast) holds, in row-major order."""
    st = state_of(x, mask)
    return emit(st, "masked_select", [as_tensor(st, x), as_tensor(st, mask)])


def flatnonzero(a):
    """Indices of the nonzero elements of a flattened."""
    return argwhere(_tensor(a).reshape(-1)).reshape(-1)


def compress(condition, a, axis=None, out=None):
    """The slices of `a` along `axis` (of a flattened, by default) where the
    1-d `condition` is nonzero; a True past the axis's end is an IndexError."""
    st = state_of(condition, a)
    if out is not None:
        st.call_numpy(np.compress, (condition, a), {"axis": axis, "out": out}, "np.compress with out=")
    condition = as_tensor(st, condition)
    if condition.ndim != 1:
        raise ValueError("condition must be a 1-d array")
    return as_tensor(st, a).take(flatnonzero(condition), axis=axis)


def extract(condition, arr):
    """The elements of arr (flattened) where condition (flattened) is nonzero."""
    st = state_of(condition, arr)
    condition, arr = as_tensor(st, condition), as_tensor(st, arr)
    if condition._dtype == "bool" and condition.ndim == arr.ndim and all(c == a for c, a in zip(condition.shape, arr.shape)):
        return masked_select(arr, condition)  # one pass: the values where the mask holds
    return arr.reshape(-1).take(flatnonzero(condition))


implements(np.argwhere)(argwhere)
implements(np.nonzero)(nonzero)
implements(np.flatnonzero)(flatnonzero)
implements(np.compress)(compress)
implements(np.extract)(extract)
