"""shapejit: a JIT specialization service for tensor programs, as CPython's JIT.

    import numpy as np
    import shapejit as sj

    @sj.jit
    def f(x, w):
        n = x.shape[1]              # a SymInt: arithmetic on it is traced
        if n > 512:                 # guards the predicate only
            x = x[:, :512]
        return sj.gelu(x @ w)

    y = f(np.ones((8, 128, 64), np.float32), np.ones((64, 32), np.float32))

A call's arrays (NumPy, or anything with __dlpack__ on the CPU) are passed
without copies; results are NumPy arrays over the kernels' buffers. The first
call of a new guard pattern traces the function on tracing values; later
calls dispatch on guards in C++. `f.stats()`, `f.explain()`, and recompile
lines on the "shapejit" logger tell what happened.
"""
from ._shapejit import GraphBreak, ShapeError
from . import _methods  # noqa: F401 - first: a Tensor answers NumPy from here on
from ._coverage import coverage
from ._frozen import freeze, frozen, frozen_stats, thaw
from ._jit import get_jit, jit, record
from ._runtime.calls import NotCompiled
from ._trace.sizes import SymBool, SymInt
from ._trace.tensor import Tensor
from ._functions import (
    abs, absolute, add, amax, amin, arange, argmax, argmin, argwhere, astype, broadcast_to, cast, clip,
    compress, concatenate, cos, divide, dot, embedding, equal, erf, exp, expand_dims, extract, flatnonzero, floor,
    floor_divide, full, full_like, gelu, greater, greater_equal, index_select, layer_norm, less, less_equal, log,
    log_softmax, logical_and, logical_not, logical_or, masked_select, matmul, max, maximum, mean, min,
    minimum, multiply, ndim, negative, nonzero, not_equal, ones, ones_like, permute, power, ravel,
    relu, remainder, reshape, rms_norm, rsqrt, shape, sigmoid, silu, sin, softmax, sqrt, squeeze,
    stack, subtract, sum, swapaxes, sym_max, sym_min, take, tanh, transpose, true_divide, where,
    zeros, zeros_like,
)

__version__ = "0.1.0"
