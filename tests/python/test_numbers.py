"""Python's ints as NumPy 2 takes them (weak scalars: exact comparisons, an
OverflowError where an array's dtype cannot hold one), size arithmetic
never wrapped at 64 bits (Python's answer, by NumPy running the call), and
NumPy's float floor division and remainder, exact however large the
quotient."""
import numpy as np
import pytest

from conftest import jit


def same(fn, *args, **policy):
    """fn jitted and fn itself give the same answer, or raise the same type."""
    try:
        want = fn(*args)
    except Exception as e:  # noqa: BLE001 - NumPy's exception is the answer
        with pytest.raises(type(e)):
            jit(fn, **policy)(*args)
        return None
    got = jit(fn, **policy)(*args)
    if isinstance(want, (int, float, bool)):
        assert type(got) is type(want) and got == want
    else:
        np.testing.assert_array_equal(got, want)
        assert np.asarray(got).dtype == np.asarray(want).dtype
    return got


X32 = np.arange(3, dtype=np.int32)
X64 = np.arange(3, dtype=np.int64)


@pytest.mark.parametrize("fn", [
    lambda x: x == 2**40, lambda x: x != -2**40, lambda x: x < 2**31, lambda x: x >= -2**31 - 1, lambda x: 2**40 > x,
    lambda x: np.equal(x, 2**40), lambda x: np.greater(x, -2**63 - 1),
], ids=["eq", "ne", "lt", "ge", "reflected", "np.equal", "past-int64"])
def test_comparisons_with_ints_past_the_dtype_are_exact(fn):
    same(fn, X32)
    same(fn, X64)


@pytest.mark.parametrize("fn", [
    lambda x: x + 2**31, lambda x: x - 2**31, lambda x: x * 2**40, lambda x: x // 2**40, lambda x: x % 2**40,
    lambda x: x ** 2**31, lambda x: x & 2**40, lambda x: np.maximum(x, 2**31), lambda x: x + 2**63,
    lambda x: x.__setitem__(0, 2**40), lambda x: np.full(x.shape, 2**40, np.int32),
], ids=["add", "sub", "mul", "floordiv", "mod", "pow", "and", "maximum", "past-int64", "setitem", "full"])
def test_arithmetic_with_ints_past_the_dtype_is_numpys_overflow_error(fn):
    same(fn, X32.copy())


@pytest.mark.parametrize("fn", [
    lambda x: x + (-2**31), lambda x: x / 2**40, lambda x: x / 2**70, lambda x: np.clip(x, -2**40, 2**40),
    lambda x: np.where(x > 0, x, 2**31), lambda x: x * 2**62 if x.dtype == np.int64 else x,
], ids=["edge", "truediv", "truediv-past-int64", "clip", "where-wraps", "int64"])
def test_ints_numpy_takes_without_error(fn):
    same(fn, X32)
    same(fn, X64)


def test_floats_and_bools_with_big_ints():
    same(lambda x: x < 2**200, np.ones(3, np.float32))
    same(lambda x: x + 2**2000, np.ones(3))               # NumPy: int too large to convert to float
    same(lambda x: x == 2**70, np.array([True, False]))    # NumPy: too large for the bool's int64
    same(lambda x: x.__setitem__(0, 2**70) or x, np.array([True, False]))  # a bool array takes it


def test_size_arithmetic_is_pythons_past_int64():
    # The programs: 0 where Python's answer is 2**80 and 2.
    assert same(lambda x, n: n * n, np.arange(2), 2**40) == 2**80
    assert same(lambda x: x.shape[0] * 2**61 % 7, np.arange(8)) == 2
    f = jit(lambda x, n: n * n)
    assert f(np.arange(2), 3) == 9 and f(np.arange(2), 2**40) == 2**80 and f(np.arange(2), 5) == 25
    same(lambda x, n: x + n * n, np.arange(2), 2**40)      # NumPy: OverflowError
    same(lambda x, n: n * 2**70 + x.shape[0], np.arange(2), 5)
    same(lambda x, n: (n < 2**70, n == 2**64, n > -2**70), np.arange(2), 5)
    same(lambda x: x[:2**64] + x[-2**70:2**63:2**65], np.arange(5.0))


def test_a_tensor_too_large_for_int64_or_memory_is_numpys_error():
    same(lambda x: np.zeros((x.shape[0], 2**20, 2**20)), np.ones(4))    # NumPy: MemoryError
    same(lambda x, n: np.zeros((n, n, n)), np.ones(1), 2**22)           # 2^66 elements: NumPy's ValueError


def test_a_size_against_an_int32_array_is_a_python_int():
    same(lambda x, n: x < n, X32, 2**31)
    same(lambda x, n: x + n, X32, 2**31)                  # NumPy: OverflowError
    f = jit(lambda x, n: x + n)
    np.testing.assert_array_equal(f(X32, 5), X32 + 5)
    with pytest.raises(OverflowError):
        f(X32, 2**31)
    np.testing.assert_array_equal(f(X32, 7), X32 + 7)


@pytest.mark.parametrize("cmp", ["<", "<=", ">", ">=", "==", "!="])
def test_a_size_against_a_float_guards_a_predicate(cmp):
    f = eval(f"lambda x: x.shape[0] {cmp} 2.5")  # noqa: S307 - the test's own
    g = jit(f)
    for n in (1, 2, 3, 4, 2):
        assert g(np.ones(n)) == f(np.ones(n))
    assert jit(eval(f"lambda x: x.shape[0] {cmp} float('nan')"))(np.ones(3)) == eval(f"3 {cmp} float('nan')")  # noqa: S307


def test_sizes_where_python_needs_the_number():
    f = jit(lambda x, n: (n & 0xff, n | 1, n ^ 3, n << 2, n >> 1, ~n, abs(n), divmod(n, 3), round(n), n.bit_length()))
    assert f(np.ones(2), 300) == (300 & 0xff, 300 | 1, 300 ^ 3, 300 << 2, 300 >> 1, ~300, 300, divmod(300, 3), 300, 9)
    same(lambda x, n: np.round(n) + x, np.ones(2), 7)


@pytest.mark.parametrize("fn", [
    lambda x: x + (x.shape[0] > 2), lambda x: np.exp(x.shape[0] == 3) * x, lambda x: np.full(2, x.shape[0] > 1) & (x > 0),
    lambda x: (x.shape[0] < np.int64(5)) + 0 * x, lambda x: x * np.array(2**70 // 2**60),
], ids=["bool-operand", "float-function", "full-of-bool", "against-numpy-int", "big-int-divided"])
def test_comparisons_of_sizes_are_the_bools_numpy_sees(fn):
    same(fn, np.arange(3.0))
    assert type(jit(lambda x: x.shape[0] < np.int64(5))(np.ones(3))) is np.bool_


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_floor_division_and_remainder_are_numpys(dtype):
    v = np.array([-0.5, 0.5, -0.0, 0.0, 2147483649.0, 7.0, -7.0, np.inf, -np.inf, np.nan, 1e30, 3.0, -3.0, 1e-30], dtype)
    a, b = np.meshgrid(v, v)
    with np.errstate(all="ignore"):
        want = (a // b, a % b)
    for backend in ("llvm", "reference"):
        got = jit(lambda x, y: (x // y, x % y), {"compile": {"backend": backend}})(a, b)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
            assert np.array_equal(np.signbit(g[~np.isnan(w)]), np.signbit(w[~np.isnan(w)]))  # signed zeros too
