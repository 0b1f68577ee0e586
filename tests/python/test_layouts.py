"""Inputs in every layout NumPy hands over: each compiled entry assumes its
inputs' layout (contiguous, dense in a permuted order of the dims as `W.T`,
a Fortran-order array or swapped heads are, or strided) and guards it, so
that a weight passed transposed is read in place and a call in another
layout compiles its own entry instead of taking a slow one. NumPy is the
oracle for every op and layout, edge sizes included."""
import numpy as np
import pytest

import shapejit as sj
from conftest import jit

rng = np.random.default_rng(11)


def layouts(shape, dtype=np.float32):
    """The same values of `shape` as a C-ordered array and in every other
    layout a caller passes: transposed views, Fortran order, permuted dims,
    a slice."""
    x = rng.standard_normal(shape).astype(dtype)
    out = {"c": x, "fortran": np.asfortranarray(x)}
    if x.ndim >= 2:
        out["transposed"] = np.ascontiguousarray(np.swapaxes(x, -1, -2)).swapaxes(-1, -2)
        wide = np.zeros(shape[:-1] + (2 * shape[-1],), dtype)
        wide[..., ::2] = x
        out["every other"] = wide[..., ::2]
    if x.ndim == 3:
        out["heads first"] = np.ascontiguousarray(x.transpose(1, 0, 2)).transpose(1, 0, 2)
    for v in out.values():
        np.testing.assert_array_equal(v, x)
    return out


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


FUNCTIONS = {
    "pointwise": lambda x: np.tanh(x) * 2 + x,
    "sum rows": lambda x: x.sum(axis=0),
    "sum last": lambda x: x.sum(axis=-1),
    "softmax": lambda x: np.exp(x - x.max(axis=-1, keepdims=True)) / np.exp(x - x.max(axis=-1, keepdims=True)).sum(axis=-1, keepdims=True),
    "gram": lambda x: np.swapaxes(x, -1, -2) @ x,
    "outer": lambda x: x @ np.swapaxes(x, -1, -2),
}


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (7, 1), (5, 9), (64, 48), (0, 4), (3, 5, 6), (2, 1, 33)])
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_every_op_agrees_with_numpy_in_every_layout(name, shape):
    fn = FUNCTIONS[name]
    f = jit(fn)
    for layout, x in layouts(shape).items():
        got = f(x)
        assert got.shape == fn(x).shape, layout
        close(got, fn(x))


@pytest.mark.parametrize("m", [0, 1, 3, 16, 97])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_product_takes_b_in_every_layout(m, dtype):
    f = jit(lambda x, w, b: x @ w + b)
    x = rng.standard_normal((m, 40)).astype(dtype)
    b = rng.standard_normal(70).astype(dtype)
    for layout, w in layouts((40, 70), dtype).items():
        close(f(x, w, b), x @ w + b)


@pytest.mark.parametrize("spelling", ["matmul", "einsum", "tensordot"])
def test_batched_products_take_each_operand_in_every_layout(spelling):
    fn = {
        "matmul": lambda a, b: a @ b,
        "einsum": lambda a, b: np.einsum("bij,bjk->bik", a, b),
        "tensordot": lambda a, b: np.tensordot(a[0], b[0], axes=1),
    }[spelling]
    f = jit(fn)
    for la, a in layouts((3, 5, 6)).items():
        for lb, b in layouts((3, 6, 4)).items():
            close(f(a, b), fn(a, b))


def test_a_weight_captured_and_read_transposed_agrees():
    W = rng.standard_normal((96, 40)).astype(np.float32)
    b = rng.standard_normal(96).astype(np.float32)
    f = jit(lambda x: x @ W.T + b)
    for m in (1, 5, 64):
        x = rng.standard_normal((m, 40)).astype(np.float32)
        close(f(x), x @ W.T + b)


def test_each_layout_gets_its_own_entry_and_keeps_it():
    f = jit(lambda x, w: x @ w)
    W = rng.standard_normal((48, 32)).astype(np.float32)
    x = rng.standard_normal((4, 32)).astype(np.float32)
    for w in (W.T, np.ascontiguousarray(W.T)):
        close(f(x, w), x @ w)
    compiles = f.stats()["compiles"]
    assert compiles == 2
    assert "is contiguous in dim order (1, 0)" in f.explain()
    for _ in range(3):
        for w in (W.T, np.ascontiguousarray(W.T)):
            close(f(x, w), x @ w)
    assert f.stats()["compiles"] == compiles  # each layout hits its own entry


@pytest.mark.parametrize("m", [1, 40])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_frozen_weight_in_either_layout_is_packed_once(m, dtype):
    # 300 outputs: the last panel of columns is partial; 300 x 250 is past
    # the size from which even a single row reads kept panels.
    W = rng.standard_normal((300, 250)).astype(dtype)  # [out, in], as PyTorch keeps it
    twin = np.ascontiguousarray(W.T)
    sj.freeze([W, twin])
    try:
        f = jit(lambda x, w: x @ w)
        x = rng.standard_normal((m, 250)).astype(dtype)
        for w in (W.T, twin):
            before = sj.frozen_stats()["made"]
            close(f(x, w), x @ w)
            assert sj.frozen_stats()["made"] == before + 1  # its panels, packed from the layout it has
            for _ in range(3):
                close(f(x, w), x @ w)
            assert sj.frozen_stats()["made"] == before + 1
    finally:
        sj.thaw([W, twin])
