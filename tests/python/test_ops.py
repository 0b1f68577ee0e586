"""Every op of the op set, reached from Python, against NumPy, on edge shapes
(0, 1, broadcast, non-contiguous views) and through both CPU backends."""
import math

import numpy as np
import pytest

import shapejit as sj
from conftest import assert_close, erf_reference, jit

SHAPES = [(0, 3), (1, 1), (1, 5), (3, 1), (4, 7), (2, 3, 5), (67, 33)]


def rand(rng, shape, dtype=np.float32, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape).astype(dtype)


def views(rng, shape, dtype=np.float32):
    """The array as it is, and as a non-contiguous view of a bigger one."""
    a = rand(rng, shape, dtype)
    big = rand(rng, tuple(2 * d + 1 for d in shape), dtype)
    v = big[tuple(slice(1, None, 2) for _ in shape)]
    assert v.shape == a.shape
    return [a, v] if v.size > 1 else [a]


UNARY = {
    "exp": (sj.exp, np.exp), "log": (sj.log, lambda x: np.log(np.abs(x) + 0.5)),
    "sqrt": (sj.sqrt, lambda x: np.sqrt(np.abs(x))), "tanh": (sj.tanh, np.tanh),
    "sin": (sj.sin, np.sin), "cos": (sj.cos, np.cos), "neg": (lambda x: -x, np.negative),
    "abs": (abs, np.abs), "relu": (sj.relu, lambda x: np.maximum(x, 0)),
    "sigmoid": (sj.sigmoid, lambda x: 1 / (1 + np.exp(-x.astype(np.float64)))),
    "silu": (sj.silu, lambda x: x / (1 + np.exp(-x.astype(np.float64)))),
    "rsqrt": (sj.rsqrt, lambda x: 1 / np.sqrt(np.abs(x).astype(np.float64) + 0.5)),
    "erf": (sj.erf, erf_reference),
    "gelu": (sj.gelu, lambda x: 0.5 * x * (1 + erf_reference(x / math.sqrt(2)))),
    "gelu_tanh": (lambda x: sj.gelu(x, approximate="tanh"),
                  lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x.astype(np.float64) ** 3)))),
}
# Ops whose domain the test input is moved into first.
PREP = {"log": lambda x: abs(x) + 0.5, "sqrt": abs, "rsqrt": lambda x: abs(x) + 0.5}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("shape", SHAPES)
def test_unary(name, shape, rng, backend):
    ours, ref = UNARY[name]
    prep = PREP.get(name, lambda x: x)
    f = jit(lambda x: ours(prep(x)), backend)
    for x in views(rng, shape):
        want = ref(x)
        assert_close(f(x), np.asarray(want).astype(np.float32), rtol=2e-5, atol=2e-6)


BINARY = {
    "add": (lambda a, b: a + b), "sub": (lambda a, b: a - b), "mul": (lambda a, b: a * b),
    "div": (lambda a, b: a / b), "pow": (lambda a, b: abs(a) ** b), "maximum": np.maximum,
    "minimum": np.minimum, "eq": (lambda a, b: a == b), "ne": (lambda a, b: a != b),
    "lt": (lambda a, b: a < b), "le": (lambda a, b: a <= b), "gt": (lambda a, b: a > b),
    "ge": (lambda a, b: a >= b),
}
BROADCAST = [((4, 7), (4, 7)), ((4, 7), (1, 7)), ((4, 1), (1, 7)), ((2, 3, 5), (5,)), ((0, 3), (1, 3)), ((1, 1), (3, 1))]


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", BROADCAST)
def test_binary(name, shapes, rng, backend):
    op = BINARY[name]
    f = jit(op, backend)
    a, b = rand(rng, shapes[0]), rand(rng, shapes[1])
    if name in ("eq", "ne", "le", "ge"):  # coarse values, so that many compare equal
        a, b = np.round(a * 2) / 2, np.round(b * 2) / 2
    assert_close(f(a, b), op(a, b), rtol=2e-5)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_arithmetic(dtype, rng, backend):
    a = rng.integers(-50, 50, (5, 6)).astype(dtype)
    b = rng.integers(1, 9, (5, 6)).astype(dtype) * rng.choice([-1, 1], (5, 6)).astype(dtype)
    for op in (lambda x, y: x + y, lambda x, y: x - y, lambda x, y: x * y, lambda x, y: x // y,
               lambda x, y: x % y, np.maximum, np.minimum, lambda x, y: -x, lambda x, y: abs(x)):
        assert_close(jit(op, backend)(a, b), op(a, b))
    assert_close(jit(lambda x, y: x / y, backend)(a, b), a / b)  # true division: float64


def test_scalars_and_promotion(rng, backend):
    x = rand(rng, (3, 4))
    i = rng.integers(-5, 5, (3, 4)).astype(np.int32)
    cases = [
        (lambda x: x * 2 + 1, x), (lambda x: 2.5 - x, x), (lambda x: 1.0 / (x + 3), x), (lambda x: x ** 2, x),
        (lambda i: i * 0.5, i), (lambda i: i + 1, i), (lambda x, i: x + i, (x, i)),
        (lambda x: (x > 0) + 1, x), (lambda x: x.astype(np.float64) * x, x), (lambda x: -x // 0.7, x),
        (lambda x: x % 0.75, x),
    ]
    for fn, args in cases:
        args = args if isinstance(args, tuple) else (args,)
        assert_close(jit(fn, backend)(*args), fn(*args), rtol=2e-5)


def test_logical_where_cast(rng, backend):
    a, b = rand(rng, (5, 4)), rand(rng, (5, 4))
    cases = [
        lambda a, b: (a > 0) & (b > 0), lambda a, b: (a > 0) | (b > 0), lambda a, b: ~(a > b),
        lambda a, b: np.logical_not(a > b), lambda a, b: np.where(a > b, a, b), lambda a, b: np.where(a > 0, a, 0.0),
        lambda a, b: sj.where(a > 0, 1.0, b), lambda a, b: a.astype(np.int32), lambda a, b: (a > 0).astype(np.float32),
        lambda a, b: (a * 10).astype(np.int64).astype(np.float64), lambda a, b: np.clip(a, -0.5, 0.5),
        lambda a, b: (a > 0) ^ (b > 0),
    ]
    for fn in cases:
        assert_close(jit(fn, backend)(a, b), fn(a, b))


REDUCTIONS = [
    lambda x: x.sum(), lambda x: x.sum(axis=0), lambda x: x.sum(axis=-1, keepdims=True), lambda x: np.sum(x, axis=(0, 1)),
    lambda x: x.mean(axis=1), lambda x: np.mean(x), lambda x: x.max(axis=0), lambda x: np.max(x, axis=-1, keepdims=True),
    lambda x: x.min(axis=1), lambda x: np.amin(x), lambda x: x.argmax(axis=1), lambda x: np.argmax(x, axis=0),
    lambda x: x.argmax(), lambda x: x.argmin(axis=1),
]


@pytest.mark.parametrize("k", range(len(REDUCTIONS)))
@pytest.mark.parametrize("shape", [(1, 1), (3, 1), (4, 7), (67, 33), (2, 3, 5)])
def test_reductions(k, shape, rng, backend):
    fn = REDUCTIONS[k]
    f = jit(fn, backend)
    for x in views(rng, shape):
        assert_close(f(x), fn(x), rtol=3e-5, atol=3e-5)


def test_reductions_of_empty(backend):
    x = np.zeros((0, 4), np.float32)
    assert_close(jit(lambda x: x.sum(axis=0), backend)(x), x.sum(axis=0))
    assert_close(jit(lambda x: x.sum(axis=1), backend)(x), x.sum(axis=1))
    assert_close(jit(lambda x: x.max(axis=1), backend)(x), x.max(axis=1))


def softmax_ref(x, axis=-1):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("shape", [(1, 1), (3, 1), (4, 7), (2, 3, 65)])
def test_network_ops(shape, rng, backend):
    x = rand(rng, shape)
    w, b = rand(rng, shape[-1:]), rand(rng, shape[-1:])
    f32 = np.float32
    cases = [
        (lambda x: sj.softmax(x), lambda x: softmax_ref(x).astype(f32)),
        (lambda x: sj.softmax(x, axis=0), lambda x: softmax_ref(x, 0).astype(f32)),
        (lambda x: sj.log_softmax(x), lambda x: np.log(softmax_ref(x)).astype(f32)),
        (lambda x: sj.layer_norm(x, w, b), lambda x: (((x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)) * w + b).astype(f32)),
        (lambda x: sj.layer_norm(x, eps=1e-3), lambda x: ((x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-3)).astype(f32)),
        (lambda x: sj.rms_norm(x, w), lambda x: (x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6) * w).astype(f32)),
        (lambda x: sj.rms_norm(x), lambda x: (x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6)).astype(f32)),
    ]
    for fn, ref in cases:
        assert_close(jit(fn, backend)(x), ref(x), rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((1, 1), (1, 1)), ((2, 3, 4), (4, 6)), ((2, 1, 3, 4), (5, 4, 2)),
                                    ((4,), (4, 3)), ((3, 4), (4,)), ((0, 4), (4, 3)), ((3, 0), (0, 2)), ((65, 70), (70, 33))])
def test_matmul(shapes, rng, backend):
    a, b = rand(rng, shapes[0]), rand(rng, shapes[1])
    assert_close(jit(lambda a, b: a @ b, backend)(a, b), a @ b, rtol=1e-4, atol=1e-4)
    assert_close(jit(np.matmul, backend)(a, b), a @ b, rtol=1e-4, atol=1e-4)
    if a.ndim == 2 and b.ndim == 2:
        assert_close(jit(lambda a, b: a.T.T @ b.T.T, backend)(a, b), a @ b, rtol=1e-4, atol=1e-4)


LAYOUT = [
    lambda x: x.reshape(-1), lambda x: x.reshape(x.shape[0], -1, 1), lambda x: x.T, lambda x: x.transpose(1, 0, 2),
    lambda x: np.transpose(x), lambda x: x.swapaxes(0, 2), lambda x: np.broadcast_to(x[:, :1], (x.shape[0], 4, x.shape[2])),
    lambda x: x[None], lambda x: x[:, None, :, None], lambda x: x[..., 1:], lambda x: x[1], lambda x: x[-1, ::2],
    lambda x: x[:, 1:-1, ::3], lambda x: x[0, 0, 0], lambda x: np.expand_dims(x, (0, -1)), lambda x: x[:1].squeeze(0),
    lambda x: np.concatenate([x, x * 2], axis=1), lambda x: np.stack([x, x], axis=-1), lambda x: x.ravel(),
    lambda x: x[np.array([2, 0, 1, 0])], lambda x: np.take(x, np.array([1, 1]), axis=2), lambda x: x[:, [0, 2]],
    lambda x: x[..., -2:],
]


@pytest.mark.parametrize("k", range(len(LAYOUT)))
def test_layout(k, rng, backend):
    fn = LAYOUT[k]
    f = jit(fn, backend)
    for x in views(rng, (3, 4, 5)):
        assert_close(f(x), fn(x))


def test_gather_ops(rng, backend):
    table = rand(rng, (10, 4))
    ids = rng.integers(0, 10, (2, 3)).astype(np.int64)
    assert_close(jit(sj.embedding, backend)(table, ids), table[ids])
    assert_close(jit(lambda t, i: t[i], backend)(table, ids), table[ids])
    idx = np.array([3, 3, 0], np.int32)
    assert_close(jit(lambda t, i: sj.take(t, i, axis=0), backend)(table, idx), table[idx])
    assert_close(jit(lambda t, i: sj.index_select(t, 1, i), backend)(table, np.array([1, 0], np.int64)), table[:, [1, 0]])


def test_creation(backend):
    x = np.zeros((3, 5), np.float32)
    cases = [
        (lambda x: sj.arange(x.shape[1]), np.arange(5)),
        (lambda x: sj.arange(1, x.shape[0] * 4, 3, dtype=np.int32), np.arange(1, 12, 3, dtype=np.int32)),
        (lambda x: sj.full(x.shape, 2.5, np.float32), np.full((3, 5), 2.5, np.float32)),
        (lambda x: sj.zeros((x.shape[0], 2)), np.zeros((3, 2))),
        (lambda x: sj.ones_like(x), np.ones((3, 5), np.float32)),
        (lambda x: np.zeros_like(x) + 1, np.ones((3, 5), np.float32)),
        (lambda x: sj.full((x.shape[1] - 5,), 7), np.full((0,), 7)),
    ]
    for fn, want in cases:
        assert_close(jit(fn, backend)(x), want)


def test_data_dependent_shapes(rng, backend):
    x = rand(rng, (4, 6))
    assert_close(jit(lambda x: sj.argwhere(x > 0), backend)(x), np.argwhere(x > 0))
    assert_close(jit(lambda x: x[x > 0], backend)(x), x[x > 0])
    assert_close(jit(lambda x: sj.masked_select(x, x[:1] > 0), backend)(x), sj.masked_select(x, x[:1] > 0))
    rows, cols = jit(lambda x: np.nonzero(x > 0.5), backend)(x)
    assert_close(rows, np.nonzero(x > 0.5)[0])
    assert_close(cols, np.nonzero(x > 0.5)[1])
    assert_close(jit(lambda x: np.extract(x < 0, x) * 2, backend)(x), np.extract(x < 0, x) * 2)


def test_size_arithmetic_is_traced(rng, backend):
    def f(x):
        b, t = x.shape
        y = x.reshape(b * t // 2, 2)
        return y + sj.arange(sj.sym_min(t, 2)).astype(np.float32) + sj.sym_max(b, 0) * 0  # noqa
    g = jit(f, backend)
    for t in (4, 6, 8, 10):
        x = rand(rng, (3, t))
        assert_close(g(x), x.reshape(3 * t // 2, 2) + np.arange(2).astype(np.float32))
    assert g.stats()["compiles"] == 1  # one dynamic entry for every t


def test_every_op_of_the_op_set_is_reachable():
    """The op names the package emits, against the op set (TRACE_FORMAT.md's table and the ops added since)."""
    import re
    import pathlib
    package = pathlib.Path(sj.__file__).parent
    src = pathlib.Path(__file__).read_text() + "".join(f.read_text() for f in sorted(package.rglob("*.py")))
    ops = ("neg abs exp log sqrt rsqrt tanh sigmoid relu silu sin cos erf gelu cast not add sub mul div pow "
           "maximum minimum and or eq ne lt le gt ge where sum mean max min argmax softmax log_softmax layer_norm "
           "rms_norm matmul reshape permute transpose expand slice concat squeeze unsqueeze index_select embedding "
           "full arange nonzero masked_select sym_size sym_add sym_sub sym_mul sym_floordiv sym_mod sym_min sym_max "
           "tan asin acos atan sinh cosh asinh acosh atanh log1p expm1 log2 log10 exp2 cbrt floor ceil trunc rint "
           "atan2 hypot bitwise_and bitwise_or bitwise_xor left_shift right_shift invert prod cumsum cumprod").split()
    emitted = set(re.findall(r'"([a-z_0-9]+)"', src))
    missing = [op for op in ops if op not in emitted]
    assert not missing, missing


def test_hypot_is_within_two_ulps_of_numpys_and_its_special_cases_are_cs():
    f = sj.jit(lambda a, b: np.hypot(a, b))
    rng = np.random.default_rng(0)
    for dt, e in ((np.float64, 300), (np.float32, 35)):
        a = np.concatenate([rng.standard_normal(4000) * 10.0 ** rng.integers(-e, e, 4000), [0, 0, np.inf, -np.inf, np.nan, np.nan, 3]])
        b = np.concatenate([rng.standard_normal(4000) * 10.0 ** rng.integers(-e, e, 4000), [0, -0.0, np.nan, 1, np.inf, 2, 4]])
        a, b = a.astype(dt), b.astype(dt)
        want, got = np.hypot(a, b), f(a, b)
        finite = np.isfinite(want)
        assert np.array_equal(got[~finite], want[~finite], equal_nan=True) and np.array_equal(np.isfinite(got), finite)
        ulps = np.abs(got[finite] - want[finite]) / np.spacing(np.abs(want[finite]))
        assert ulps.max() <= 2, ulps.max()
