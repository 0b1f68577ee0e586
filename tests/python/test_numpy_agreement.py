"""What the differential fuzzer (fuzz/fuzz_numpy.py) found, written out as
plain tests: each a NumPy rule the front end once broke, checked against
NumPy itself on the values that show it."""
import numpy as np
import pytest

from conftest import jit


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    # Bit for bit where it matters (signed zeros, NaN): compare 1 / x too.
    assert np.array_equal(got, want, equal_nan=True), (got, want)
    if got.dtype.kind == "f":
        with np.errstate(divide="ignore"):
            assert np.array_equal(1 / got, 1 / want, equal_nan=True), (got, want)


CASES = {
    "int % 0 is 0": (lambda a, b: (a % b, a % 0, 7 % b), np.arange(-3, 3, dtype=np.int32), np.array([2, 0, -2, 0, 3, -1], np.int32)),
    "a zero remainder has the divisor's sign": (lambda a, b: (a % b, a % -2.0), np.array([-2., 2., 4., 0.], np.float32),
                                              np.array([-2., -2., 2., -1.], np.float32)),
    "floor division by zero and of NaN": (lambda a, b: a // b, np.array([0., 1., -1., np.nan], np.float64), np.zeros(4)),
    "bool + bool is or, bool * bool is and": (lambda a, b: (a + b, a * b, np.maximum(a, b)), np.array([True, False, True]),
                                             np.array([True, False, False])),
    "a strong NumPy scalar promotes": (lambda a, b: (np.int32(3) * a, np.float64(2) * a, a * 2.5), np.ones(2, np.float32), None),
    "bool ** 2 is int8 (a break)": (lambda a, b: (a ** 2, np.exp(a), np.round(a)), np.array([True, False]), None),
    "np.where of two numbers": (lambda a, b: np.where(a > 0, np.float32(2), 0), np.array([1., -1.], np.float32), None),
    "integer and bool matmul, exact": (lambda a, b: (a @ b, (a > 0) @ (b > 0)), np.arange(6, dtype=np.int64).reshape(2, 3) - 2,
                                       np.arange(6, dtype=np.int64).reshape(3, 2) - 3),
    "np.full of a size is int64": (lambda a, b: np.full(a.shape, len(a)), np.ones(3, np.float32), None),
    "np.take counts from the end": (lambda a, b: (np.take(a, [-1, 0]), np.take(a, np.array([-2]), axis=0)), np.arange(4.), None),
    "0-d arrays as NumPy treats them": (lambda a, b: (np.repeat(a, 2, axis=0), np.cumsum(a, axis=0), np.argsort(a), a.sum(axis=0),
                                                      np.expand_dims(a, 0), np.stack([a, a])), np.array(3, np.int32), None),
    "a middle element broadcast (np.median)": (lambda a, b: (a + np.median(a, axis=0, keepdims=True), a + a[(len(a) - 1) // 2:][:1]),
                                              np.array([-1.5, -2.5, 4.0, 1.0], np.float32), None),
    "np.roll of an empty axis": (lambda a, b: np.roll(a, 1, axis=0), np.zeros((0, 2), np.float32), None),
    "reshape to -1 over a dim of its own size": (lambda a, b: a + a.reshape(a.shape[0], -1)[..., None], np.ones((2, 2, 1), np.float32), None),
    "a slice to the end, broadcast": (lambda a, b: a[:, 1:] + a[:, :1], np.arange(6, dtype=np.float32).reshape(2, 3), None),
    "np.isclose beside infinities": (lambda a, b: np.isclose(a, b), np.array([0, np.inf, 1], np.float32), np.array([np.inf, np.inf, 1], np.float32)),
}


@pytest.mark.parametrize("name", CASES)
def test_agrees_with_numpy(name):
    fn, a, b = CASES[name]
    args = (a,) if b is None else (a, b)
    f = jit(lambda *xs: fn(*xs, *([None] if b is None else [])))
    with np.errstate(all="ignore"):
        want = fn(a, b)
        got = f(*args)
    for g, w in zip(got if isinstance(want, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        same(g, w)


@pytest.mark.parametrize("shape,axis", [((0, 0), 0), ((3, 0), 1), ((0, 3), 0), ((0,), None)])
def test_reductions_with_no_identity_raise_as_numpy_does(shape, axis):
    x = np.zeros(shape, np.float32)
    for op in (lambda x: x.max(axis=axis), lambda x: x.min(axis=axis), lambda x: np.argmax(x, axis=axis)):
        with pytest.raises(ValueError):
            op(x)
        with pytest.raises(ValueError):
            jit(op)(x)
    # Before what follows it, as NumPy runs it: the max's error, not the index's.
    f = jit(lambda x: (x.max(), x[0]))
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        f(np.zeros(0, np.float32))


def test_an_index_into_an_empty_dim_is_an_error_even_when_nothing_is_read():
    # Indices the function is given: checked by the kernel, though the
    # gather's result is empty and reads none of them.
    f = jit(lambda a, i: (np.exp(a), a[i]))
    f(np.ones((1, 1), np.float32), np.array([0]))
    with pytest.raises(IndexError, match="index 0 is out of bounds for axis 0 with size 0"):
        f(np.ones((0, 0), np.float32), np.array([0]))
    # Indices known while tracing: checked then, in NumPy's order and words.
    g = jit(lambda a, b: (a[np.array([0], dtype=np.int64)], a + b))
    g(np.ones(1, np.float32), np.ones(1, np.float32))
    with pytest.raises(IndexError, match="index 0 is out of bounds for axis 0 with size 0"):
        g(np.ones(0, np.float32), np.ones(2, np.float32))


def test_integer_matmul_checks_its_core_dims():
    f = jit(lambda a: a @ a)
    f(np.ones((1, 1), np.int32))
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        f(np.ones((0, 1), np.int32))


def test_a_negative_integer_power_is_numpys_value_error():
    with pytest.raises(ValueError, match="negative integer powers"):
        jit(lambda a: a ** a)(np.array([2, -1], np.int32))


def test_an_axis_a_0_d_array_lacks():
    # NumPy's ufunc reductions take axis 0 of a 0-d array; its mean does not.
    a = np.array(3, np.int32)
    np.testing.assert_array_equal(jit(lambda a: a.sum(axis=0))(a), a.sum(axis=0))
    with pytest.raises(np.exceptions.AxisError):
        jit(lambda a: a.mean(axis=0))(a)
