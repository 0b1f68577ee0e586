"""shapejit.freeze: weights a caller promises not to change until thawed.
Calls agree with NumPy frozen or not, frozen arrays are read-only, the
packed copy is made once and dropped at the thaw, a rewritten weight is read
anew after a thaw, and bad input is refused whole with a message that names
the array."""
import numpy as np
import pytest

import shapejit as sj
from conftest import jit


def weights(seed=0):
    rng = np.random.default_rng(seed)
    return {"w1": rng.standard_normal((32, 48)).astype(np.float32), "layers": [rng.standard_normal((48, 16)).astype(np.float32)]}


def test_frozen_weights_give_the_same_results_and_are_packed_once():
    p = weights()
    f = jit(lambda x: sj.gelu(x @ p["w1"]) @ p["layers"][0])
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((m, 32)).astype(np.float32) for m in (7, 130, 1)]
    want = [f(x).copy() for x in xs]
    before = sj.frozen_stats()
    assert sj.freeze(p) is p
    try:
        for _ in range(2):
            for x, w in zip(xs, want):
                np.testing.assert_allclose(f(x), w, rtol=1e-5, atol=1e-6)
        s = sj.frozen_stats()
        assert s["ranges"] == before["ranges"] + 2
        assert s["frozen_bytes"] == before["frozen_bytes"] + p["w1"].nbytes + p["layers"][0].nbytes
        assert s["made"] == before["made"] + 2  # one packed copy per weight, for every call
    finally:
        sj.thaw(p)
    assert sj.frozen_stats()["ranges"] == before["ranges"]


def test_frozen_numpy_arrays_are_read_only_until_thawed():
    p = weights()
    with sj.frozen(p):
        assert not p["w1"].flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            p["w1"][0, 0] = 1
        sj.freeze(p["w1"])  # frozen twice: still read-only after one thaw
        sj.thaw(p["w1"])
        assert not p["w1"].flags.writeable
    assert p["w1"].flags.writeable and p["layers"][0].flags.writeable
    ro = np.ones((4, 4), np.float32)
    ro.flags.writeable = False
    sj.freeze(ro)
    sj.thaw(ro)
    assert not ro.flags.writeable  # it was read-only before: it stays so


def test_a_weight_rewritten_after_a_thaw_is_read_anew():
    w = np.random.default_rng(2).standard_normal((24, 40)).astype(np.float32)
    f = jit(lambda x: x @ w)
    x = np.random.default_rng(3).standard_normal((50, 24)).astype(np.float32)
    with sj.frozen(w):
        np.testing.assert_allclose(f(x), x @ w, rtol=1e-4, atol=1e-5)
    w[:] = -w[::-1]
    with sj.frozen(w):
        np.testing.assert_allclose(f(x), x @ w, rtol=1e-4, atol=1e-5)


def test_bad_input_is_refused_whole_and_named():
    p = weights()
    before = sj.frozen_stats()["ranges"]
    with pytest.raises(ValueError, match=r"shapejit.thaw: \['w1'\]: not frozen"):
        sj.thaw(p)
    with pytest.raises(TypeError, match=r"shapejit.freeze: \['b'\]\[1\]: dtype float16"):
        sj.freeze({"a": p["w1"], "b": [p["layers"][0], np.zeros(3, np.float16)]})
    with pytest.raises(TypeError, match="a set, not an array"):
        sj.freeze({"a": {1, 2}})
    big = np.zeros((10, 10), np.float32)
    with sj.frozen(big):
        with pytest.raises(ValueError, match=r"shapejit.freeze: \[1\]: memory .* overlaps frozen memory"):
            sj.freeze([p["w1"], big[2:4]])
    with pytest.raises(ValueError, match="reversed or byte-misaligned view"):
        sj.freeze(p["w1"][::-1])
    # Nothing of a refused call stays frozen, and its arrays stay writable.
    assert sj.frozen_stats()["ranges"] == before
    assert p["w1"].flags.writeable
    # Arrays with no elements have nothing to freeze.
    sj.freeze(np.zeros((0, 3), np.float32))
    assert sj.frozen_stats()["ranges"] == before


def test_dlpack_arrays_freeze_too():
    torch = pytest.importorskip("torch")
    w = torch.randn(16, 8)
    f = jit(lambda x: x @ w)
    x = torch.randn(20, 16)
    with sj.frozen(w):
        np.testing.assert_allclose(f(x), (x @ w).numpy(), rtol=1e-4, atol=1e-5)
