"""Graph breaks that compile the pieces: a call that meets what cannot be
traced runs as compiled segments cut at each break, the break itself in
NumPy, with NumPy's results, every kind of break, sizes and writes across
cuts, and each segment graph compiled once."""
import numpy as np
import pytest

import shapejit as sj
from conftest import jit

W = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
LATE = np.arange(3, dtype=np.float32)  # read only after a break


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def partitioned_layer(x, w):
    h = np.tanh(x @ w)
    s = np.partition(h, 1, axis=-1)  # np.partition has no op: a cut
    return (s * 2 + 1).sum(axis=-1) + LATE.sum()


def test_a_numpy_call_without_an_op_is_a_cut_between_compiled_segments():
    f = jit(partitioned_layer)
    for n in (5, 6, 7, 5, 9):
        x = f32(n, 4, seed=n)
        np.testing.assert_allclose(f(x, W), partitioned_layer(x, W), rtol=1e-5)
    s = f.stats()
    assert s["graph_breaks"] >= 1 and s["segmented_calls"] >= 4
    # Before and after the partition, each compiled once, dynamic in n; the
    # first call also cut where it first read LATE (then a capture), and its
    # two graphs after the partition are not met again.
    assert s["segment_graphs"] == 4
    text = f.explain()
    assert "np.partition has no shapejit op" in text and "test_segments.py:" in text


def test_branches_on_data_and_items_read_the_values():
    def f(x):
        if x.sum() > 0:          # a cut: bool of a tensor
            y = x * 2
        else:
            y = x - 1
        scale = float(np.abs(y).max()) + 1.0  # a cut: a float
        return y / scale + int(x.shape[0] > 2)
    g = jit(f)
    for seed in range(6):
        x = f32(3 + seed % 2, 2, seed=seed)
        np.testing.assert_allclose(g(x), f(x), rtol=1e-6)
    assert g.stats()["graph_breaks"] >= 1


def test_sizes_and_arrays_live_across_cuts():
    def f(x, k):
        n = x.shape[0]
        first = x[0] * 3
        s = np.partition(x, 1, axis=0)
        m = np.percentile(s, 50, axis=0)  # another cut
        return s[: n // 2] * n + first + m + k, n
    g = jit(f)
    for n, k in ((4, 1), (6, 2), (7, 3), (6, 4)):
        x = f32(n, 3, seed=n)
        got, want = g(x, k), f(x, k)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
        assert got[1] == want[1]


def test_one_break_per_layer_compiles_a_few_graphs():
    def model(x, ws):
        for w in ws:
            x = np.tanh(x @ w)
            x = x - np.partition(x, 1, axis=-1)[..., 1:2]  # a break in every layer (np.partition has no op)
        return x
    ws = [f32(8, 8, seed=i) for i in range(6)]
    g = jit(model)
    for n in (3, 4, 5, 4):
        x = f32(n, 8, seed=n)
        np.testing.assert_allclose(g(x, ws), model(x, ws), rtol=1e-4, atol=1e-6)
    s = g.stats()
    assert s["segments"] >= 7 * 3  # 7 segments a call
    assert s["segment_graphs"] <= 3  # the first, every middle one alike, the last


def test_writes_across_a_cut_reach_the_caller():
    def f(cache, x, pos):
        cache[pos] = np.partition(x, 1)   # the partitioned row is an input of the segment after the cut
        cache[pos + 1] = x * 2
        return cache.sum()
    g = jit(f)
    for pos in (0, 2, 3):
        mine, theirs = np.zeros((6, 3), np.float32), np.zeros((6, 3), np.float32)
        x = f32(3, seed=pos)
        assert g(mine, x, pos) == pytest.approx(f(theirs, x, pos))
        np.testing.assert_array_equal(mine, theirs)


def test_what_a_cut_cannot_take_runs_the_call_eagerly():
    def f(x):
        y = np.partition(x, 1)
        y[0][1] = 5.0  # a write through a view: the whole call in NumPy
        return y
    g = jit(f)
    for seed in range(3):
        x = f32(2, 3, seed=seed)
        np.testing.assert_array_equal(g(x), f(x))


def test_a_function_that_builds_new_graphs_every_call_runs_its_breaks_eagerly():
    # int(n) of a backed-off size makes each n's graph another one: after a
    # few calls, the function's breaks run in NumPy instead of compiling.
    f = lambda x: np.partition(x * int(x.shape[0]), 1)  # noqa: E731
    g = jit(f)
    for n in range(3, 23):
        x = f32(n, seed=n)
        np.testing.assert_allclose(g(x), f(x), rtol=1e-6)
    assert g.stats()["segment_graphs"] <= 12


def test_a_call_numpy_reruns_after_a_break_no_cut_takes_is_counted_and_explained():
    # np.unique is a cut; an in-place partition is not: the call runs whole
    # in NumPy, counted as an eager call, its cause in explain(), and the
    # segments it threw away in the time outside kernels.
    def f(x):
        d = x * 2 + np.unique(x).size
        d.partition(1)
        return d

    g = jit(f)
    for n in (5, 5, 7):
        x = np.arange(n, dtype=np.float64)
        np.testing.assert_allclose(g(x), f(x))
    s = g.stats()
    assert s["eager_calls"] == 3 and s["outside_ms"] >= 0, s
    assert "calls NumPy ran whole" in g.explain() and "ndarray.partition" in g.explain()


def test_a_function_whose_segmented_runs_all_end_in_numpy_stops_segmenting():
    def f(x):
        d = x + np.unique(x).size  # a cut
        d.partition(1)  # no cut takes it
        return d

    g = jit(f)
    x = np.arange(4.0)
    for _ in range(3):
        np.testing.assert_allclose(g(x), f(x))
    segments = g.stats()["segments"]
    for _ in range(3):
        np.testing.assert_allclose(g(x), f(x))
    s = g.stats()
    assert s["segments"] == segments and s["eager_calls"] == 6, s
    assert "all ended in NumPy's" in g.explain()


def test_a_copy_of_an_argument_given_back_after_a_cut_is_not_the_argument():
    # y is NumPy's copy of x; x is written, then the call is cut: the
    # result is the copy's values, never the caller's array (found by the
    # fault-injection run: the last segment gave back x itself, written).
    def f(x):
        y = x.copy()
        x += 1
        if x.sum() > 0:
            pass
        return y
    mine, theirs = np.arange(3.0), np.arange(3.0)
    got, want = jit(f)(mine), f(theirs)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(mine, theirs)
    assert got is not mine


def test_an_array_made_outside_the_trace_and_written_before_the_next_cut_is_numpys():
    # v is NumPy's own array (from a NumPy scalar's method), read into w,
    # then written before the segment that computes w runs: the segment
    # would read the write, so NumPy runs the call.
    def h(x, s):
        v = s.reshape(-1)
        w = x + v
        v[0] = 7
        if x.sum() > 0:
            pass
        return w
    for _ in range(2):
        np.testing.assert_array_equal(jit(h)(np.arange(3.0), np.float64(2.0)), h(np.arange(3.0), np.float64(2.0)))


def test_an_unrolled_loop_compiles_its_steps_once():
    # A scan unrolled into one trace: its steps differ only by where they
    # read x[i], which each takes as a parameter, so two functions serve all.
    W16 = np.linspace(-0.2, 0.2, 64).reshape(8, 8)

    def scan(h, x):
        for i in range(x.shape[0]):
            h = np.tanh(h @ W16 + x[i])
        return h
    f = jit(scan)
    h, x = np.zeros((3, 8)), np.random.default_rng(0).standard_normal((120, 3, 8))
    np.testing.assert_allclose(f(h, x), scan(h, x), rtol=1e-12)
    s = f.stats()["steps"]
    assert s["steps"] >= 120 and s["distinct"] <= 3, s


def test_segmented_runs_slower_than_numpy_give_way_to_it():
    # A segmented run traces the function each call: on arrays this small
    # NumPy's whole call is far faster, so after the calls that compile and
    # a few timed, NumPy runs the calls, with the same answers, and says why.
    f = jit(partitioned_layer)
    x = f32(3, 4)
    for _ in range(16):
        np.testing.assert_allclose(f(x, W), partitioned_layer(x, W), rtol=1e-5)
    s = f.stats()
    assert 4 < s["segmented_calls"] < 16 and s["numpy_reruns"] > 0, s
    assert "segmented runs took" in f.explain() and "its breaks run eagerly" in f.explain(), f.explain()


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.float16, np.complex64])
def test_a_cast_to_a_dtype_shapejit_lacks_is_a_cut_and_its_array_is_given_back(dtype):
    # NumPy casts (and computes after the cast, on its own array); what came
    # before compiles; the array of that dtype is returned as NumPy made it.
    def f(x):
        y = np.sqrt(np.abs(x)) * 3
        m = (y > 1).astype(dtype) * 2
        return y + 1, m, m.astype(np.float32) + y
    f_jit = jit(f)
    for n in (4, 5, 4):
        x = f32(n, 3, seed=n)
        got, want = f_jit(x), f(x)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-6)
    s = f_jit.stats()
    assert s["segmented_calls"] == 3 and s["eager_calls"] == 0, s
    assert "a dtype shapejit lacks" in f_jit.explain()
