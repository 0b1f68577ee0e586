"""The second floor: NumPy's functions on tracing values, one table.

Each implementation is NumPy's function written over the op set, with
NumPy's results (values, dtypes, shapes) for the arguments it takes; what
it cannot take (an `out=`, a mode it lacks) is a graph break naming what,
never a wrong answer. Implementations register for the NumPy callables they
stand for (``registry.implements``), by family; a second registration of
one callable is an error at import. ``_methods`` (above) answers NumPy's
protocols (``__array_ufunc__``, ``__array_function__``) from the table, and
``_coverage`` lists what it holds.

    registry      the table: NumPy's callables -> implementations
    base          what the families share: the trace of a call, axes, sizes, fills
    arithmetic    NumPy's operators and arithmetic ufuncs, comparisons, where, matmul
    elementwise   the libm functions, roundings, signs and classes of floats
    reductions    sum, mean, prod, max, min, argmax, argmin, clip
    statistics    var, std, cumulative sums, nan-reductions, averages
    sorting       sort, argsort, median, searchsorted
    shapes        reshapes, transposes, joins and splits, flips, pads, triangles
    products      dot, inner, outer, tensordot, einsum, norms, convolutions
    creation      arrays from sizes and values: full, arange, linspace, eye, asarray
    selection     the data-dependent ones: nonzero, argwhere, compress, extract
    building      arrays built from others or from sizes: append, insert, delete, block, kron, the index arrays
    logic         choosing among arrays and comparing them whole: select, isin, copyto
    network       shapejit's ops beyond NumPy: softmax, layer_norm, gelu, embedding
    numerics      nan-reductions, quantiles, cov, corrcoef, trapezoid, cross, polyval, correlate, interp, gradient
    ufuncs        a ufunc's methods and keywords: reduce, accumulate, outer, dtype=
"""
from . import (arithmetic, building, creation, elementwise, logic, network, numerics, products, reductions,  # noqa: F401
               quantiles, selection, shapes, sorting, statistics, ufuncs)  # each registers its entries: the table is whole once the package is imported
