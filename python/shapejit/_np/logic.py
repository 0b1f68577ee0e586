"""NumPy's functions that choose among arrays or compare them whole:
select, isin, and copyto (a write, as x[...] = v is)."""
from __future__ import annotations

import numpy as np

from .._trace.dtypes import NAMES
from .._trace.promotion import probe
from .._trace.state import as_tensor, graph_break, state_of
from .._trace.tensor import Tensor
from . import arithmetic
from .registry import implements


@implements(np.select)
def select(condlist, choicelist, default=0):
    """The first choice whose condition holds, element by element; `default` where none does."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(choicelist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    st = state_of(*condlist, *choicelist)
    conds = [as_tensor(st, c) for c in condlist]
    for i, c in enumerate(conds):
        if c._dtype != "bool":
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    # NumPy's dtype for the choices and the default together (a Python default is weak).
    stand_ins = [probe(c) for c in choicelist] + [probe(default)]
    if any(p is None for p in stand_ins):
        graph_break(st, "np.select of choices that are not arrays or numbers")
    if any(type(c) is int and not -2**63 <= c < 2**63 for c in [*choicelist, default]):
        graph_break(st, "np.select of a Python int past int64")  # NumPy's arrays of it (object, uint64): its to run, or refuse
    dtype = np.result_type(*stand_ins)
    if dtype not in NAMES:
        graph_break(st, f"np.select of choices of dtype {dtype}")
    out = as_tensor(st, np.asarray(default, dtype)[()]) if not isinstance(default, Tensor) else default.astype(dtype)
    for c, choice in reversed(list(zip(conds, choicelist))):
        choice = as_tensor(st, choice) if not isinstance(choice, (bool, int, float)) else choice
        out = arithmetic.where(c, choice, out)
    return out.astype(dtype) if out.dtype != dtype else out


@implements(np.isin)
def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """Whether each element is among test_elements: every element against
    every test element (NaN is never among them, as in NumPy)."""
    st = state_of(element, test_elements)
    e = as_tensor(st, element)
    t = as_tensor(st, test_elements, index=isinstance(test_elements, (list, tuple))).reshape(-1)
    found = (e[..., None] == t).any(axis=-1)
    return ~found if invert else found


@implements(np.copyto)
def copyto(dst, src, casting="same_kind", where=True):
    """dst[...] = src (where `where` holds), cast as `casting` allows: NumPy's TypeError where it does not."""
    st = state_of(dst, src)
    if not isinstance(dst, Tensor):
        graph_break(st, "np.copyto into an array that is not traced")
    stand_in = probe(src)
    if stand_in is None:
        graph_break(st, "np.copyto of a value that is not an array or a number")
    np.copyto(np.ones(1, dst.dtype), stand_in, casting=casting)  # NumPy's TypeError, on the same dtypes
    value = as_tensor(st, src, dst._dtype) if not isinstance(src, Tensor) else src
    if where is not True:
        value = arithmetic.where(where, value, dst)
    dst[...] = value

