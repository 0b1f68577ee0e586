import math
import os
import tempfile

import numpy as np
import pytest

import shapejit as sj

# Kernels the tests compile go to a folder of this run's, not the user's cache.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="shapejit-pytest-")


def erf_reference(x):
    """math.erf elementwise, in float64: the oracle for erf and gelu."""
    return np.vectorize(math.erf, otypes=[np.float64])(np.asarray(x, np.float64))


def assert_close(got, want, rtol=1e-5, atol=1e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"dtype {got.dtype} != {want.dtype}"
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(params=["llvm", "reference"])
def backend(request):
    """The config of each CPU backend (the LLVM kernels, and the oracle itself)."""
    return {"compile": {"backend": request.param}}


def jit(fn, config=None, **policy):
    cfg = dict(config or {})
    if policy:
        cfg["policy"] = dict(policy)
    return sj.jit(fn, config=cfg)
