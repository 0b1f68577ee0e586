"""Libraries written against the array API standard trace through a
jitted function: a tracing value answers `__array_namespace__` (NumPy 2's
own namespace, whose functions dispatch to the table) and has the
standard's attributes (`device`, `to_device`, `mT`); array-api-compat's
`array_namespace` finds it. Every call equal to NumPy's, compiled whole."""
import numpy as np
import pytest

import shapejit as sj

array_api_compat = pytest.importorskip("array_api_compat")  # python/requirements-dev.txt installs it


def standardize(x):
    """A function of a library written for any array API namespace."""
    xp = x.__array_namespace__()
    mean = xp.mean(x, axis=0, keepdims=True)
    std = xp.std(x, axis=0, keepdims=True)
    return xp.where(std > 0, (x - mean) / std, xp.zeros_like(x))


def gram(x):
    xp = array_api_compat.array_namespace(x)
    n = x.shape[0]
    y = xp.concat([x, xp.flip(x, axis=0)], axis=0)
    scale = xp.arange(x.shape[1], dtype=xp.float64)[:, None] * n  # an array the library makes, times a size
    return xp.matrix_transpose(y) @ y + scale + xp.sum(y.mT, axis=1)[:1] + xp.asarray(x.device == "cpu", dtype=xp.float64)


@pytest.mark.parametrize("fn", [standardize, gram])
def test_a_library_written_for_the_array_api_compiles_once(fn):
    j = sj.jit(fn)
    for n in (3, 4, 5, 4):
        x = np.random.default_rng(n).standard_normal((n, 3))
        np.testing.assert_allclose(j(x), fn(x), rtol=1e-12)
    s = j.stats()
    assert (s["compiles"], s["graph_breaks"], s["eager_calls"]) == (1, 0, 0), s


def test_the_namespace_and_the_standards_attributes():
    def f(x):
        xp = x.__array_namespace__(api_version="2023.12")
        assert xp is np and x.device == "cpu"
        return xp.permute_dims(x.to_device("cpu"), (1, 0)) + x.mT
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(sj.jit(f)(x), f(x))

    def other(x):
        return x.to_device("gpu")
    with pytest.raises(ValueError):
        sj.jit(other)(x)  # NumPy 2's own error for a device it lacks
    with pytest.raises(ValueError):
        other(x)


def test_an_array_the_function_makes_times_a_size_is_traced():
    # NumPy's ufunc of its own array and a size: the array is the trace's, the
    # size stays symbolic (one compile for every n, where reading the size
    # compiled one per n).
    f = sj.jit(lambda x: x[:, :1] * 2 + np.arange(3.0) * x.shape[0])
    for n in (3, 4, 5):
        x = np.ones((n, 3))
        np.testing.assert_array_equal(f(x), x[:, :1] * 2 + np.arange(3.0) * n)
    assert f.stats()["compiles"] == 1
