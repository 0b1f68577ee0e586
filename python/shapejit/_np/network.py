"""shapejit's ops beyond NumPy's functions, on tracing values: the network
ops of the op set (softmax, log_softmax, layer_norm, rms_norm, gelu, erf,
embedding), each one node, in the float dtype NumPy would compute them in."""
from __future__ import annotations

import operator

from .._trace.dtypes import FLOAT
from .._trace.sizes import SymInt
from .._trace.state import as_tensor, emit, state_of


def _float(st, x):
    x = as_tensor(st, x)
    return x if x._dtype in FLOAT else x.astype("f64")


def softmax(x, axis=-1):
    st = state_of(x)
    return emit(st, "softmax", [_float(st, x)], {"dim": operator.index(axis)})


def log_softmax(x, axis=-1):
    st = state_of(x)
    return emit(st, "log_softmax", [_float(st, x)], {"dim": operator.index(axis)})


def axes_of(axes):
    """A normalization's axes argument as a list."""
    return [axes] if isinstance(axes, (int, SymInt)) else list(axes)


def layer_norm(x, weight=None, bias=None, axes=-1, eps=1e-5):
    """(x - mean) / sqrt(var + eps) over `axes`, times weight, plus bias."""
    if bias is not None and weight is None:
        raise ValueError("layer_norm: a bias needs a weight (pass ones)")
    st = state_of(x, weight, bias)
    ins = [as_tensor(st, v) for v in (x, weight, bias) if v is not None]
    return emit(st, "layer_norm", ins, {"axes": axes_of(axes), "eps": float(eps)})


def rms_norm(x, weight=None, axes=-1, eps=1e-6):
    """x / sqrt(mean(x^2) + eps) over `axes`, times weight."""
    st = state_of(x, weight)
    ins = [as_tensor(st, v) for v in (x, weight) if v is not None]
    return emit(st, "rms_norm", ins, {"axes": axes_of(axes), "eps": float(eps)})


def gelu(x, approximate="none"):
    """GELU: x * Phi(x) (approximate="none", the erf form) or its tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate is 'none' or 'tanh', not {approximate!r}")
    st = state_of(x)
    return emit(st, "gelu", [_float(st, x)], {"approximate": approximate})


def embedding(table, ids):
    """Rows of a 2-D table: ids.shape + [table.shape[1]]."""
    st = state_of(table, ids)
    return emit(st, "embedding", [as_tensor(st, table), as_tensor(st, ids)])
