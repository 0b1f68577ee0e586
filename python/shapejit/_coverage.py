"""What of NumPy a jitted function can use without a graph break.

The list is the Python array API standard (2023.12) as NumPy names it, then
the NumPy functions model code uses beyond it, then the ndarray's methods
and operators. Each entry's status comes from the table the tracing values
answer NumPy with (shapejit._np's registry, and the creation functions
that take sizes, _runtime.patches), so it cannot drift from the code; the
test suite (tests/python/test_coverage.py) runs every entry marked compiled
against NumPy itself.
"""
from __future__ import annotations

import numpy as np

from . import _methods  # noqa: F401 - the methods a Tensor has are attached there
from ._np import ufuncs
from ._np.registry import FUNCTIONS, UFUNCS
from ._runtime.patches import CREATION
from ._trace.tensor import BREAKING_METHODS, Tensor

# Array API standard 2023.12, by NumPy's names (np.concat is NumPy 2's).
ARRAY_API = [
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and", "bitwise_left_shift",
    "bitwise_invert", "bitwise_or", "bitwise_right_shift", "bitwise_xor", "ceil", "clip", "conj", "copysign", "cos",
    "cosh", "divide", "equal", "exp", "expm1", "floor", "floor_divide", "greater", "greater_equal", "hypot", "imag",
    "isfinite", "isinf", "isnan", "less", "less_equal", "log", "log1p", "log2", "log10", "logaddexp", "logical_and",
    "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative", "not_equal",
    "positive", "pow", "real", "remainder", "round", "sign", "signbit", "sin", "sinh", "square", "sqrt", "subtract",
    "tan", "tanh", "trunc",
    "arange", "asarray", "empty", "empty_like", "eye", "full", "full_like", "linspace", "meshgrid", "ones",
    "ones_like", "tril", "triu", "zeros", "zeros_like",
    "astype",
    "take", "take_along_axis",
    "matmul", "matrix_transpose", "tensordot", "vecdot",
    "broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis", "permute_dims", "repeat",
    "reshape", "roll", "squeeze", "stack", "tile", "unstack",
    "argmax", "argmin", "nonzero", "searchsorted", "where",
    "unique_all", "unique_counts", "unique_inverse", "unique_values",
    "argsort", "sort",
    "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var",
    "all", "any",
]

# NumPy beyond the standard, as model code uses it.
NUMPY = [
    "concatenate", "split", "array_split", "hsplit", "vsplit", "dsplit", "hstack", "vstack", "dstack",
    "column_stack", "atleast_1d", "atleast_2d", "atleast_3d", "swapaxes", "transpose", "ravel", "rollaxis",
    "fliplr", "flipud", "pad", "tri", "identity", "diag", "diagonal", "trace", "outer", "inner", "dot", "vdot",
    "einsum", "linalg.norm", "diff", "cumsum", "cumprod", "ptp", "average", "median", "count_nonzero",
    "nansum", "nanmean", "nanmax", "nanmin", "amax", "amin", "fmax", "fmin", "fabs", "rint", "fix", "around",
    "nan_to_num", "deg2rad", "rad2deg", "radians", "degrees", "exp2", "cbrt", "reciprocal", "float_power",
    "logaddexp2", "arctan2", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "power",
    "true_divide", "mod", "absolute", "conjugate", "isclose", "argwhere", "extract", "compress", "flatnonzero", "full_like",
    "clip", "convolve", "fill_diagonal",
]

# NumPy's numerical and scientific functions beyond those, from the
# functions issue 58 names (convolve, correlate, interp, gradient, polyval,
# select, piecewise, histogram, bincount, unique, np.linalg, np.random,
# np.fft) and the NumPy functions of Numba's supported list (its nopython
# mode's checklist), with np.linalg's array API functions of NumPy 2.
SCIENTIFIC = [
    "fmod", "divmod", "modf", "heaviside", "ldexp", "sinc", "isneginf", "isposinf", "isreal", "iscomplex", "isrealobj",
    "iscomplexobj", "angle", "bitwise_not", "invert", "left_shift", "right_shift", "bitwise_count", "gcd", "lcm", "frexp",
    "nextafter", "spacing",
    "append", "insert", "delete", "resize", "rot90", "block", "kron", "ediff1d", "diagflat", "indices", "ix_", "tril_indices",
    "triu_indices", "diag_indices", "unravel_index", "ravel_multi_index", "select", "piecewise", "isin", "copyto", "put",
    "place", "putmask", "copy", "ascontiguousarray", "asanyarray", "asfortranarray", "logspace", "geomspace",
    "nanprod", "nancumsum", "nancumprod", "nanvar", "nanstd", "nanargmax", "nanargmin", "nanmedian", "nanquantile",
    "nanpercentile", "quantile", "percentile", "cov", "corrcoef", "histogram", "histogram2d", "bincount", "digitize",
    "cumulative_prod", "unique", "partition", "argpartition", "lexsort",
    "trapezoid", "cross", "polyval", "polyder", "polyadd", "polysub", "correlate", "interp", "gradient", "matvec", "vecmat",
    "vander", "unwrap", "real_if_close", "histogram_bin_edges", "hanning", "hamming", "blackman", "bartlett",
    "tril_indices_from", "triu_indices_from", "diag_indices_from", "size", "linalg.matrix_power",
    "linalg.matmul", "linalg.outer", "linalg.tensordot", "linalg.vecdot", "linalg.vector_norm", "linalg.matrix_norm",
    "linalg.matrix_transpose", "linalg.diagonal", "linalg.trace", "linalg.cross", "linalg.solve", "linalg.inv",
    "linalg.det", "linalg.cholesky", "linalg.qr", "linalg.eigh", "linalg.svd", "linalg.lstsq", "linalg.pinv",
    "random.default_rng", "random.rand", "random.normal", "fft.fft", "fft.rfft", "fft.ifft",
]

# The ufuncs' methods that the programs of issue 58 use (boids' subtract.outer,
# an MLP's add.at, a reduction through a ufunc passed as a value), and their
# neighbours.
UFUNC_METHODS = [
    "add.outer", "subtract.outer", "multiply.outer", "divide.outer", "maximum.outer", "equal.outer",
    "add.reduce", "multiply.reduce", "maximum.reduce", "minimum.reduce", "logical_and.reduce", "logical_or.reduce",
    "add.accumulate", "multiply.accumulate", "maximum.accumulate", "add.reduceat",
    "add.at", "subtract.at", "multiply.at", "maximum.at",
]

# The ndarray's methods and operators (x.name, or the operator's symbol).
NDARRAY = [
    "x + y", "x - y", "x * y", "x / y", "x // y", "x % y", "x ** y", "x @ y", "-x", "+x", "abs(x)", "~x",
    "x == y", "x != y", "x < y", "x <= y", "x > y", "x >= y", "x & y", "x | y", "x ^ y", "x << y", "x >> y",
    "x[i]", "x[a:b]", "x[::-1]", "x[None]", "x[...]", "x[int_array]", "x[bool_mask]", "x[range]",
    "x.T", "x.shape", "x.ndim", "x.size", "x.dtype", "len(x)",
    "x.reshape", "x.transpose", "x.swapaxes", "x.squeeze", "x.flatten", "x.ravel", "x.astype", "x.copy",
    "x.sum", "x.mean", "x.max", "x.min", "x.argmax", "x.argmin", "x.var", "x.std", "x.any", "x.all",
    "x.clip", "x.round", "x.repeat", "x.take", "x.dot", "x.diagonal", "x.trace", "x.cumsum", "x.cumprod", "x.prod",
    "x.nonzero", "x.sort", "x.argsort", "x[i] = v", "x[mask] = v", "x.mT", "x.conj", "x.fill", "x.searchsorted",
    "x += y", "x -= y", "x *= y", "x /= y", "x //= y", "x %= y", "x **= y", "x @= y", "x &= y", "x |= y", "x ^= y",
    "x <<= y", "x >>= y", "divmod(x, y)", "x[I, J]", "x[I, :, J]", "x[a:b] = v", "x[a:b] += v", "x[I] = v",
    "x.real", "x.imag", "x.conjugate", "x.itemsize", "x.nbytes", "x.device", "x.to_device", "x.__array_namespace__",
    "x[I, J] = v", "x[I] += v", "x[::s] = v", "x.put",
]

_OPERATORS = {"x + y", "x - y", "x * y", "x / y", "x // y", "x % y", "x ** y", "x @ y", "-x", "+x", "abs(x)",
              "x == y", "x != y", "x < y", "x <= y", "x > y", "x >= y", "~x", "x[i]", "x[a:b]", "x[::-1]",
              "x[None]", "x[...]", "x[int_array]", "x[bool_mask]", "x[range]", "x.T", "x.shape", "x.ndim", "x.size",
              "x.dtype", "len(x)", "x & y", "x | y", "x ^ y", "x << y", "x >> y", "x[i] = v", "x[mask] = v", "x.mT",
              "x += y", "x -= y", "x *= y", "x /= y", "x //= y", "x %= y", "x **= y", "x @= y", "x &= y", "x |= y",
              "x ^= y", "x <<= y", "x >>= y", "divmod(x, y)", "x[I, J]", "x[I, :, J]", "x[a:b] = v", "x[a:b] += v",
              "x.real", "x.itemsize", "x.nbytes", "x.device", "x[I] = v", "x[I, J] = v", "x[I] += v", "x[::s] = v"}
_PARTIAL = {"argsort": "equal elements keep their order, as kind='stable' (NumPy's default kind leaves it unspecified)",
            "x.argsort": "equal elements keep their order, as kind='stable'",
            "median": "over one axis or all of them", "searchsorted": "without sorter=",
            "x[mask] = v": "v a scalar or broadcast, not one value for each element picked", "quantile": "the linear method, constant quantiles",
            "percentile": "the linear method, constant percentiles", "insert": "at one integer position",
            "delete": "at one integer position", "cross": "of 3-vectors", "gradient": "uniform spacings, edge_order=1",
            "cov": "without weights", "histogram": "equal bins over a given range",
            "histogram_bin_edges": "a given range", "digitize": "into bins known while tracing",
            "unique": "flattened (axis=None), sorted", "lexsort": "of 1-d keys",
            "linalg.matrix_power": "to a power of 0 or more", "nanquantile": "the linear method, constant quantiles",
            "nanpercentile": "the linear method, constant percentiles",
            "add.at": "b in a's dtype (NumPy adds others in the promoted dtype)", "subtract.at": "b in a's dtype",
            "multiply.at": "b in a's dtype", "maximum.at": "b in a's dtype"}


def _numpy_callable(name):
    obj = np
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _traced(name):
    if name in CREATION:
        return True
    f = _numpy_callable(name)
    return f is not None and (f in UFUNCS or f in FUNCTIONS)


def _method(name):
    attr = name[2:]
    member = getattr(Tensor, attr, None)  # a method, or a property (x.imag, x.mT)
    return (callable(member) or isinstance(member, property)) and attr not in BREAKING_METHODS


def coverage():
    """Every entry of the list and whether a jitted function compiles it:
    {"array_api": {name: status}, "numpy": {...}, "scientific": {...},
    "ufunc_methods": {...}, "ndarray": {...}}, a status
    being "compiled", "compiled (<which arguments>)" or "graph break"."""
    def status(ok, note=None):
        if not ok:
            return "graph break"
        return "compiled" + (f" ({note})" if note else "")
    out = {"array_api": {}, "numpy": {}, "scientific": {}, "ufunc_methods": {}, "ndarray": {}}
    def note(name):
        return _PARTIAL.get(name)
    for name in ARRAY_API:
        out["array_api"][name] = status(_traced(name), note(name))
    for name in NUMPY:
        out["numpy"][name] = status(_traced(name), note(name))
    for name in SCIENTIFIC:
        out["scientific"][name] = status(_traced(name), note(name))
    for name in UFUNC_METHODS:
        ufunc, method = name.split(".")
        f = getattr(np, ufunc)
        out["ufunc_methods"][name] = status(ufuncs.takes(f, method, UFUNCS.get(f)), note(name))
    for name in NDARRAY:
        ok = name in _OPERATORS or (name.startswith("x.") and _method(name))
        out["ndarray"][name] = status(ok, note(name))
    return out


def coverage_counts():
    """(compiled, total) over every list."""
    table = coverage()
    statuses = [s for part in table.values() for s in part.values()]
    return sum(1 for s in statuses if s.startswith("compiled")), len(statuses)
