"""A ufunc's methods and keywords, jitted, against NumPy itself: reduce
with every keyword it takes (axis, dtype, keepdims, initial, where),
accumulate, outer, a call's dtype= and casting=, and ufuncs passed around
as values; on empty, one-element, broadcast and strided arrays of every
dtype shapejit has. A call NumPy refuses raises NumPy's exception."""
import itertools

import numpy as np
import pytest

import shapejit as sj

SHAPES = [(0,), (1,), (4,), (2, 3), (0, 3), (3, 1)]
DTYPES = ["float32", "float64", "int32", "int64", "bool"]
REDUCIBLE = [np.add, np.multiply, np.maximum, np.minimum, np.logical_and, np.logical_or]


def array(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, size=shape)
    return (a > 0) if dtype == "bool" else a.astype(dtype)


def agree(fn, *args):
    """fn jitted gives what NumPy gives (value, dtype, shape), or raises its exception's type."""
    try:
        want = fn(*args)
    except Exception as e:  # noqa: BLE001 - NumPy's exception is the answer
        with pytest.raises(type(e)):
            sj.jit(fn)(*args)
        return
    got = sj.jit(fn)(*args)
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
    np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("ufunc", REDUCIBLE, ids=lambda u: u.__name__)
@pytest.mark.parametrize("dtype", DTYPES)
def test_reduce_over_every_axis_and_keepdims(ufunc, dtype):
    for shape in SHAPES:
        x = array(shape, dtype)
        for axis in [0, -1, None] + ([1, (0, 1)] if len(shape) == 2 else []):
            for keepdims in (False, True):
                agree(lambda v, a=axis, k=keepdims: ufunc.reduce(v, axis=a, keepdims=k), x)


@pytest.mark.parametrize("ufunc", REDUCIBLE, ids=lambda u: u.__name__)
def test_reduce_with_initial_where_and_dtype(ufunc):
    for shape, dtype in itertools.product([(0,), (3,), (2, 3), (0, 2)], ["float64", "int32", "bool"]):
        x = array(shape, dtype, seed=1)
        mask = np.asarray(array(shape[-1:], "bool", seed=2))
        agree(lambda v: ufunc.reduce(v, initial=2), x)
        agree(lambda v: ufunc.reduce(v, axis=None, initial=-1), x)
        agree(lambda v, m=mask: ufunc.reduce(v, axis=-1, where=m), x)  # max/min: NumPy's ValueError without initial
        agree(lambda v, m=mask: ufunc.reduce(v, axis=-1, where=m, initial=1), x)
        agree(lambda v: ufunc.reduce(v, dtype=np.float32), x)
        agree(lambda v: ufunc.reduce(v, 0, np.float64, None, True), x)  # positional, as NumPy takes them


def test_reduce_of_a_0d_array_and_of_a_strided_view():
    agree(lambda v: np.add.reduce(v), np.float32(3) * np.ones((), np.float32))
    agree(lambda v: np.maximum.reduce(v[::2, ::-1], axis=1), np.arange(24.0).reshape(6, 4))


@pytest.mark.parametrize("ufunc", [np.add, np.multiply], ids=lambda u: u.__name__)
@pytest.mark.parametrize("dtype", DTYPES)
def test_accumulate(ufunc, dtype):
    for shape in SHAPES:
        x = array(shape, dtype)
        for axis in [0, -1]:
            agree(lambda v, a=axis: ufunc.accumulate(v, axis=a), x)
        agree(lambda v: ufunc.accumulate(v, dtype=np.float64), x)
    agree(lambda v: np.add.accumulate(v), np.ones((), np.float32))  # NumPy's TypeError: a scalar


def test_a_call_with_dtype_and_casting():
    x, y = array((2, 3), "int32"), array((3,), "float64")
    agree(lambda a, b: np.add(a, b, dtype=np.float32), x, y)
    agree(lambda a: np.multiply(a, 3, dtype=np.float64), x)
    agree(lambda a, b: np.add(a, b, dtype=np.int32), x, y)  # NumPy's UFuncTypeError under same_kind
    agree(lambda a, b: np.add(a, b, dtype=np.int32, casting="unsafe"), x, y)
    agree(lambda a: np.sqrt(a, dtype=np.float32), x.astype(np.float64) ** 2)
    agree(lambda a: np.add(a, np.float64(0.5), dtype=np.float32), x)


def test_outer_and_ufuncs_as_values():
    a, b = array((3,), "float64"), array((2, 2), "int32")
    agree(lambda u, v: np.subtract.outer(u, v), a, b)
    agree(lambda u, v: np.multiply.outer(u, 2), a, b)

    def pick(x, largest):
        op = np.maximum if largest else np.minimum
        return op.reduce(x, axis=0) + op(x[0], x[-1])
    x = array((4, 3), "float32")
    agree(lambda v: pick(v, True), x)
    agree(lambda v: pick(v, False), x)


def test_what_is_not_taken_is_numpys():
    # Methods without an op (reduceat, at, a reduce of another ufunc) cut the
    # graph: NumPy computes them, on the arrays at hand.
    x = array((6,), "float64")
    agree(lambda v: np.add.reduceat(v, [0, 2, 4]), x)
    agree(lambda v: np.subtract.reduce(v), x)
    agree(lambda v: np.hypot.accumulate(v), x)
    f = sj.jit(lambda v: np.add.reduce(v, initial=1) * 2)
    f(x)
    assert f.stats()["graph_breaks"] == 0 and f.stats()["compiles"] == 1
