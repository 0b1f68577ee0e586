"""Arrays across the boundary: NumPy in without copies (any strides), DLPack
from PyTorch when it is installed, results as NumPy arrays that own the
kernel's buffer and outlive the function; threads."""
import gc
import threading

import numpy as np
import pytest

import shapejit as sj
from conftest import jit


def test_results_are_numpy_arrays_over_the_kernel_buffer():
    f = jit(lambda x: x * 2)
    y = f(np.ones((3, 4), np.float32))
    assert type(y) is np.ndarray and y.flags.writeable and y.flags.c_contiguous
    assert y.base is not None  # held by the kernel's buffer, not copied into NumPy's own
    y[0, 0] = 7  # ours to write
    z = f(np.ones((3, 4), np.float32))
    assert z[0, 0] == 2  # a new buffer per call
    assert not np.shares_memory(y, z)


def test_results_outlive_the_function():
    f = jit(lambda x: sj.exp(x) + 1)
    y = f(np.zeros((1000,), np.float32))
    del f
    gc.collect()
    junk = [np.random.rand(1000) for _ in range(100)]  # reuse freed memory, if any was freed
    np.testing.assert_array_equal(y, np.full(1000, 2, np.float32))
    del junk


def test_a_call_leaves_no_reference_cycles():
    # A decode loop returns a cache of megabytes a call: a call whose walk
    # over its arguments or results left a cycle behind held those buffers
    # until the cyclic collector ran, and until then every call's results
    # were fresh memory (page faults: 4x a decode step's time).
    f = jit(lambda x, pair: (x * 2, [x + pair[0], {"k": pair[1] - 1}]))
    args = lambda: (np.ones((4, 5), np.float32), (np.ones(5, np.float32), np.zeros(3, np.float32)))
    f(*args())  # compile
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        for _ in range(3):
            y, (z, d) = f(*args())
        del y, z, d
        assert gc.collect() == 0
    finally:
        if was_enabled:
            gc.enable()


def test_an_input_returned_is_the_callers_array_itself():
    # As NumPy gives it back: the object, written or not (code that swaps
    # buffers, `u, u0 = u0, u`, relies on it).
    f = jit(lambda x, y: (x, y + 1))
    x = np.arange(4, dtype=np.float32)
    a, b = f(x, x)
    assert a is x
    np.testing.assert_array_equal(b, np.arange(4, dtype=np.float32) + 1)

    def g(u, v):
        u += 1
        return v, u
    u, v = np.zeros(3), np.ones(3)
    r = jit(g)(u, v)
    assert r[0] is v and r[1] is u
    np.testing.assert_array_equal(u, np.ones(3))


def test_inputs_are_not_copied_and_views_keep_their_strides():
    f = jit(lambda x: x.sum(axis=0))
    big = np.arange(60, dtype=np.float64).reshape(6, 10)
    for view in (big[::2], big[:, ::3], big.T, big[1:, 2:7], np.broadcast_to(big[0], (4, 10))):
        np.testing.assert_allclose(f(view), view.sum(axis=0))
    rev = big[::-1]  # negative strides: copied for the call (DLPack cannot say it)
    np.testing.assert_allclose(f(rev), rev.sum(axis=0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_])
def test_every_dtype_round_trips(dtype):
    f = jit(lambda x: x)
    x = (np.arange(6) % 3).astype(dtype).reshape(2, 3)
    y = f(x)
    assert y.dtype == x.dtype
    np.testing.assert_array_equal(y, x)


def test_zero_size_and_scalars():
    f = jit(lambda x: x + 1)
    assert f(np.zeros((0, 5), np.float32)).shape == (0, 5)
    y = f(np.array(2.0, np.float32))
    assert y.shape == () and y == 3


def test_pytorch_tensors_by_dlpack():
    torch = pytest.importorskip("torch")
    f = jit(lambda x, y: x @ y + 1)
    a, b = torch.ones(3, 4), torch.full((4, 2), 0.5)
    out = f(a, b)
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, (a @ b + 1).numpy())
    t = torch.arange(12, dtype=torch.float64).reshape(3, 4).t()  # non-contiguous
    g = jit(lambda x: x * 2)
    np.testing.assert_array_equal(g(t), (t * 2).numpy())
    back = torch.from_dlpack(out)  # and back again without a copy
    assert back.data_ptr() == out.ctypes.data


def test_threads_with_shape_churn():
    f = jit(lambda x, y: sj.tanh(x) * y.sum(axis=-1, keepdims=True))
    errors = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(150):
                n, m = int(rng.integers(1, 9)), int(rng.integers(1, 5))
                x, y = rng.random((n, m), np.float32), rng.random((n, 3), np.float32)
                np.testing.assert_allclose(f(x, y), np.tanh(x) * y.sum(axis=-1, keepdims=True), rtol=1e-5, atol=1e-6)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    s = f.stats()
    assert s["calls"] == 8 * 150 and s["errors"] == 0
    assert s["compiles"] <= 9  # the 0/1 rule over two dims, then dynamic entries: not one per shape


def test_the_gil_is_released_while_a_kernel_runs():
    f = jit(lambda a, b: a @ b)
    a = np.ones((600, 600), np.float32)
    f(a, a)
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)

    t = threading.Thread(target=ticker)
    t.start()
    for _ in range(20):
        f(a, a)
    stop.set()
    t.join()
    assert len(ticks) > 20  # Python ran beside the kernels


@pytest.mark.parametrize("fn", [lambda x: x.sum(), lambda x: np.argmin(x), lambda x: x[1, 2], lambda x: np.nanargmax(x),
                                lambda x: (x * 2).max()], ids=["sum", "argmin", "element", "nanargmax", "max"])
def test_a_scalar_result_alone_is_numpys_scalar(fn):
    # Returned alone, not in a tuple: NumPy gives a scalar (np.float64), not a 0-d array.
    x = np.arange(12.0).reshape(3, 4)
    f = sj.jit(fn)
    for _ in range(2):
        got, want = f(x), fn(x)
        assert type(got) is type(want) and got == want
