"""NumPy however a program reaches it: creation functions bound under the
program's own names (`from numpy import arange`, a namespace of NumPy's
functions, a closure's, a helper module's) trace sizes as `np.arange` does:
one compile for every size, never an object array, never a per-size entry."""
import sys
import types

import numpy
import numpy as np

from numpy import arange, linspace, ones, zeros  # noqa: I001 - the spelling under test
from conftest import jit

NPX = types.SimpleNamespace(**vars(numpy))  # a namespace holding NumPy's functions


def _sizes_compile_once(f, want, sizes=(3, 4, 5, 7)):
    for n in sizes:
        x = np.ones((n, 2))
        np.testing.assert_array_equal(f(x), want(x))
    s = f.stats()
    assert (s["compiles"], s["traces"], s["graph_breaks"], s["eager_calls"]) == (1, 1, 0, 0), s


def test_names_imported_from_numpy_trace_sizes():
    def f(x):
        n = x.shape[0]
        return x + arange(n)[:, None] + zeros((n, x.shape[1])) + ones(n)[:, None] + linspace(0, 1, n)[:, None]

    _sizes_compile_once(jit(f), f)


def test_a_namespace_of_numpys_functions_traces_sizes():
    def f(x):
        return x * NPX.arange(len(x))[:, None] + NPX.zeros(x.shape)

    _sizes_compile_once(jit(f), f)


def test_a_closure_holding_numpys_function_traces_sizes():
    def make():
        rng = np.arange
        full = np.full

        def f(x):
            return x + rng(x.shape[0])[:, None] + full(x.shape, 2.0)
        return f

    f = make()
    _sizes_compile_once(jit(f), f)


def test_a_helper_modules_own_import_traces_sizes():
    helpers = types.ModuleType("shapejit_test_helpers")
    exec("from numpy import arange, eye\n"  # noqa: S102 - a module of the test's own
         "def positions(x):\n"
         "    return arange(x.shape[0])[:, None] * eye(x.shape[0], x.shape[1])\n", vars(helpers))
    sys.modules[helpers.__name__] = helpers
    try:
        def f(x):
            return x + helpers.positions(x)

        _sizes_compile_once(jit(f), f)
    finally:
        del sys.modules[helpers.__name__]


def test_the_names_are_numpys_again_after_the_trace():
    f = jit(lambda x: x + arange(x.shape[0])[:, None])
    f(np.ones((3, 2)))
    assert arange is numpy.arange and NPX.zeros is numpy.zeros
    assert globals()["arange"] is numpy.arange


def test_numpy_given_a_size_it_cannot_trace_gets_the_int_not_an_object_array():
    # np.geomspace takes no size shapejit traces: NumPy is given the number
    # (observed, guarded), and the answer is NumPy's on every call.
    def f(x):
        return x * np.geomspace(1, 8, x.shape[0])[:, None]

    j = jit(f)
    for n in (3, 4, 3):
        x = np.ones((n, 2))
        got = j(x)
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, f(x))


def test_fill_diagonal_writes_in_place_compiled():
    def f(x, v):
        y = x * 1
        np.fill_diagonal(y, v)
        return y

    g = jit(f)
    for shape in ((3, 3), (2, 4), (4, 2), (2, 2, 2)):
        for dtype in (np.float64, np.int32):
            x = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
            got, want = g(x, -2.5), f(x, -2.5)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    assert g.stats()["graph_breaks"] == 0
