"""Equivalent spellings of one computation, as others write them, agree with
NumPy: a softmax or log-softmax written out (which the lowering rewrites to
the op, so that attention fuses on it), the same with its parts read
elsewhere (left as written), and the unshifted exp(x) / sum(exp(x)), which
overflows in NumPy and must overflow here too."""
import math

import numpy as np
import pytest

from conftest import jit

rng = np.random.default_rng(5)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis):
    d = x - x.max(axis=axis, keepdims=True)
    return d - np.log(np.exp(d).sum(axis=axis, keepdims=True))


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("fn", [softmax, log_softmax])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_written_out_softmax_agrees_on_every_axis(fn, axis, dtype):
    f = jit(lambda x: fn(x, axis))
    empty = [2, 3, 4]
    empty[(axis + 1) % 3] = 0  # an empty array, reduced along an axis that is not (NumPy's max has no identity)
    for shape in [(1, 1, 1), (3, 1, 7), (4, 5, 33), tuple(empty)]:
        x = (rng.standard_normal(shape) * 4).astype(dtype)
        np.testing.assert_allclose(f(x), fn(x, axis), rtol=1e-5, atol=1e-5)


def attention(q, k, v, mask):
    s = (q @ k.transpose(0, 1, 3, 2)) / math.sqrt(q.shape[-1])
    s = s + (1.0 - mask[:, None, None, :].astype(np.float32)) * np.finfo(np.float32).min
    return softmax(s, -1) @ v


def test_attention_with_a_written_out_softmax_and_a_pytorch_mask_agrees():
    f = jit(attention)
    for b, t in [(1, 1), (1, 9), (3, 17)]:
        q, k, v = (rng.standard_normal((b, 4, t, 8)).astype(np.float32) for _ in range(3))
        mask = np.ones((b, t), np.int64)
        mask[-1, t // 2 + 1:] = 0  # padding
        np.testing.assert_allclose(f(q, k, v, mask), attention(q, k, v, mask), rtol=1e-4, atol=1e-5)


def test_a_spelling_whose_parts_are_read_elsewhere_agrees():
    def both(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True), e
    f = jit(both)
    x = rng.standard_normal((5, 6)).astype(np.float32)
    for got, want in zip(f(x), both(x)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_an_unshifted_softmax_overflows_as_numpys_does():
    f = jit(lambda x: np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True))
    x = np.array([[1.0, 2.0, 3.0], [100.0, 1.0, 0.0]], np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        want = np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)
    got = f(x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    assert np.isnan(got[1, 0]) and np.isnan(want[1, 0])  # inf / inf, not the op's 1.0
