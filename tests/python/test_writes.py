"""Writes into arrays (x[k] = v), functionalized: traced as updates, the
caller's arrays written when the call returns, exactly NumPy's effects; what
cannot be traced so (a write through a reshape, one value for each element a
mask picks) is a graph break."""
import copy

import numpy as np
import pytest

import shapejit as sj
from conftest import jit


def same_as_numpy(fn, *args, calls=1, **policy):
    """fn jitted, called `calls` times on copies of args, against fn itself:
    results and every argument after each call (the writes) equal NumPy's."""
    f = jit(fn, **policy)
    mine, theirs = copy.deepcopy(args), copy.deepcopy(args)
    for _ in range(calls):
        got, want = f(*mine), fn(*theirs)
        np.testing.assert_array_equal(got, want)
        for a, b in zip(mine, theirs):
            np.testing.assert_array_equal(a, b)
    return f.stats()


def f32(*shape):
    return np.arange(np.prod(shape), dtype=np.float32).reshape(shape)


@pytest.mark.parametrize("key", [
    np.s_[1:3], np.s_[2], np.s_[-1], np.s_[:, 1], np.s_[1:, :2], np.s_[..., 0], np.s_[-3:-1, 1:],
    np.s_[5:2], np.s_[0:100], np.s_[1, 2], np.s_[:],
], ids=str)
def test_a_block_written_into_an_argument(key):
    def fn(x, v):
        x[key] = v
        return x * 2
    for v in (np.float32(7), np.full(f32(4, 3)[key].shape, 5.0, np.float32)):
        s = same_as_numpy(fn, f32(4, 3), v)
        assert s["graph_breaks"] == 0


def test_a_write_casts_and_broadcasts_as_numpy():
    def fn(x, v):
        x[1:3] = v      # a row broadcast over two rows, float64 into float32
        x[0] = 2        # an int
        x[3, :] = v[0] * 0.5
        return x
    assert same_as_numpy(fn, f32(4, 3), np.array([1.5, 2.5, 3.5]))["graph_breaks"] == 0
    with pytest.raises(ValueError):  # NumPy: could not broadcast (3,) into (2,)
        jit(fn)(f32(4, 2), np.ones(3))


def test_blocks_written_into_any_layout_and_dtype():
    # The extension copies a block of the target's own dtype into it (any
    # strides); NumPy casts the others. Each call writes at a new position.
    def fn(x, cache, wide, pos):
        x[pos % 4, 1:3] = x[0, :2] + pos
        cache[:, pos:pos + 2] = x[:2, :2] * 2   # F-ordered or strided targets
        wide[pos] = cache[0, pos]               # float32 values into float64
        return x.sum()

    def check(make):
        g = jit(fn)
        mine, theirs = make(), make()
        for pos in range(7):
            np.testing.assert_array_equal(g(*mine, pos), fn(*theirs, pos))
            for a, b in zip(mine, theirs):
                np.testing.assert_array_equal(a, b)
        assert g.stats()["graph_breaks"] == 0

    for order in ("C", "F"):
        check(lambda: (np.asarray(f32(4, 3), order=order), np.zeros((2, 9), np.float32, order=order), np.zeros(9)))
    # A strided view as the target: its base sees the writes.
    bases = []

    def strided():
        bases.append(np.zeros((4, 30), np.float32))
        return f32(4, 3), bases[-1][:, ::3][:2], np.zeros(9)
    check(strided)
    np.testing.assert_array_equal(bases[0], bases[1])


def test_writes_at_sizes_stay_symbolic():
    # A cache written at a position that grows each call, read up to it.
    def step(cache, x, pos):
        cache[pos:pos + x.shape[0]] = x
        return cache[:pos + x.shape[0]].sum(axis=0)
    f = jit(step)
    mine, theirs = np.zeros((16, 4), np.float32), np.zeros((16, 4), np.float32)
    pos = 0
    for n in (5, 1, 1, 1, 1, 1, 1, 2):
        x = np.full((n, 4), pos + 1, np.float32)
        np.testing.assert_array_equal(f(mine, x, pos), step(theirs, x, pos))
        np.testing.assert_array_equal(mine, theirs)
        pos += n
    s = f.stats()
    assert s["graph_breaks"] == 0 and s["compiles"] <= 3


def test_a_masked_write_and_repeated_writes():
    def fn(x):
        x[x < 3] = -1
        x[1] += 10      # read after the first write, then written again
        x[1:3] *= 2
        return x.sum()
    assert same_as_numpy(fn, f32(3, 4), calls=2)["graph_breaks"] == 0


def test_an_array_made_in_the_body_is_filled_in_place():
    def fn(x):
        out = np.zeros((x.shape[0], 2), np.float32)
        out[:, 0] = x.sum(axis=1)
        out[:, 1] = x.max(axis=1)
        return out
    assert same_as_numpy(fn, f32(5, 3))["graph_breaks"] == 0


def test_a_copy_is_written_alone():
    def fn(x):
        y = x.copy()
        y[0] = 100
        z = np.array(x)
        z[1] = 50
        w = x.astype(np.float32)
        w[2] = 25
        return y + z + w
    assert same_as_numpy(fn, f32(3, 2))["graph_breaks"] == 0


@pytest.mark.parametrize("fn", [
    lambda x: x[0].__setitem__(1, 9.0),              # x[0][1] = 9: a view of x
    lambda x: x.T.__setitem__(0, 9.0),               # through a transpose
    lambda x: x[1:, None][0].__setitem__(np.s_[..., :2], 9.0),
    lambda x: x[None].transpose(2, 0, 1)[1:3].__imul__(2.0),
], ids=["view", "transpose", "chain", "in-place"])
def test_a_write_through_a_view_writes_the_array_it_views(fn):
    def g(x):
        fn(x)
        return x + 1
    s = same_as_numpy(g, f32(3, 4), calls=2)
    assert s["graph_breaks"] == 0


@pytest.mark.parametrize("fn", [
    lambda x: x.reshape(-1).__setitem__(0, 9.0),
    lambda x: x.__setitem__(x > 5, x[x > 5] * 2),    # one value for each element a mask picks
], ids=["reshape", "mask-values"])
def test_what_a_write_cannot_trace_breaks_the_graph(fn):
    def g(x):
        fn(x)
        return x + 1
    s = same_as_numpy(g, f32(3, 4), calls=2)
    assert s["graph_breaks"] >= 1


def test_an_instance_cache_written_in_place():
    class Attention:
        def __init__(self):
            self.cache = np.zeros((2, 12, 3), np.float32)
            self.w = np.eye(3, dtype=np.float32)

        def __call__(self, x, pos):
            n = x.shape[1]
            self.cache[:, pos:pos + n] = x @ self.w
            return self.cache[:, :pos + n].mean(axis=1)

    class Model:
        def __init__(self):
            self.layers = [Attention(), Attention()]

        def __call__(self, x, pos):
            for layer in self.layers:
                x = x + layer(x, pos)[:, None, :]
            return x

    plain = Model.__call__
    Model.__call__ = sj.jit(Model.__call__)
    mine, theirs = Model(), Model()
    rng = np.random.default_rng(0)
    pos = 0
    for n in (4, 1, 1, 1, 1, 1, 1):
        x = rng.random((2, n, 3), np.float32)
        np.testing.assert_allclose(mine(x, pos), plain(theirs, x, pos), rtol=1e-6)
        for a, b in zip(mine.layers, theirs.layers):
            np.testing.assert_allclose(a.cache, b.cache, rtol=1e-6)
        pos += n
    s = Model.__call__.stats()
    assert s["graph_breaks"] == 0 and s["compiles"] == 2 and s["sites"] == 1  # pos 0, then every pos


def test_rebinding_an_attribute_breaks_the_graph():
    class Grow:
        def __init__(self):
            self.cache = np.zeros((0, 2), np.float32)

        def __call__(self, x):
            self.cache = np.concatenate([self.cache, x])
            return self.cache.sum()

    plain = Grow.__call__
    Grow.__call__ = sj.jit(Grow.__call__)
    mine, theirs = Grow(), Grow()
    for n in (1, 2, 3):
        x = np.ones((n, 2), np.float32)
        assert mine(x) == plain(theirs, x)
        np.testing.assert_array_equal(mine.cache, theirs.cache)
    assert Grow.__call__.stats()["graph_breaks"] >= 1


def test_writes_that_change_between_traces_break_the_graph():
    def fn(x):
        if x.shape[0] > 2:
            x[0] = 1
        return x * 2
    f = jit(fn)
    for n in (2, 3, 4, 2):
        mine, theirs = f32(n, 2), f32(n, 2)
        np.testing.assert_array_equal(f(mine), fn(theirs))
        np.testing.assert_array_equal(mine, theirs)


def test_an_int_argument_as_an_index_reads_and_writes_as_numpy():
    def fn(x, i):
        y = x[i] * 2
        x[i] = -1
        return y
    f = jit(fn)
    for i in (0, 1, 2, 3, -1, -2, -4, 3, -1):
        mine, theirs = f32(4, 2), f32(4, 2)
        np.testing.assert_array_equal(f(mine, i), fn(theirs, i))
        np.testing.assert_array_equal(mine, theirs)
    for i in (4, -5):
        with pytest.raises(IndexError):
            f(f32(4, 2), i)


def test_negative_indices_in_index_arrays_count_from_the_end():
    def fn(x, idx):
        return x[:, [-1, 0]].sum(axis=1) + x[[-2]].sum() + x[idx].sum(axis=1)[:3]
    f = jit(fn)
    for idx in (np.array([0, -1, -3]), np.array([1, 2, 0])):
        np.testing.assert_array_equal(f(f32(3, 4), idx), fn(f32(3, 4), idx))


def test_a_ufunc_writes_its_out_array_where_asked():
    def f(a, b):
        o = np.zeros_like(a)
        r = np.divide(a, b, out=o, where=b != 0)
        np.add(a, 1, out=a)  # into an argument
        return o, r is o

    g = jit(f)
    for a, b in [(np.arange(4.0), np.array([0.0, 1, 2, 0])), (np.arange(6.0).reshape(2, 3), np.array([1.0, 0, 2]))]:
        mine, theirs = a.copy(), a.copy()
        got, want = g(mine, b), f(theirs, b)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] is True and want[1] is True
        np.testing.assert_array_equal(mine, theirs)
    assert g.stats()["graph_breaks"] == 0 and g.stats()["eager_calls"] == 0


def test_an_out_its_result_does_not_cast_to_is_numpys_error():
    def f(a):
        o = np.zeros(a.shape, np.int64)
        np.divide(a, 2, out=o)
        return o
    with pytest.raises(np.exceptions.UFuncTypeError if hasattr(np.exceptions, "UFuncTypeError") else TypeError):
        jit(f)(np.arange(3))


def test_writes_into_several_inputs_are_all_made_or_none():
    """NumPy refuses a write into a read-only array before it writes: the
    compiled call's writes are made all, or none where one target is
    read-only (the extension checks every target first)."""
    def fn(a, b):
        a[0] = 1.0
        b[1:] = 2.0
        return a + b
    f = jit(fn)
    a, b = np.zeros(3, np.float32), np.zeros(3, np.float32)
    np.testing.assert_array_equal(f(a, b), fn(np.zeros(3, np.float32), np.zeros(3, np.float32)))
    a, b = np.zeros(3, np.float32), np.zeros(3, np.float32)
    b.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        f(a, b)
    np.testing.assert_array_equal(a, np.zeros(3, np.float32))  # not written either


def test_an_input_written_all_over_is_written_back_once_whole(monkeypatch):
    """A solver's sweeps write a grid's interior and its edges again and
    again: the call writes the grid back once, whole, where the blocks add
    up to its size; a few small blocks stay blocks. Both as NumPy writes."""
    from shapejit._runtime import calls
    specs = []
    results = calls._results
    monkeypatch.setattr(calls, "_results", lambda st, out: specs.append(r := results(st, out)) or r)

    def sweeps(x, y):
        for _ in range(3):
            x[1:-1, 1:-1] = (x[:-2, 1:-1] + x[2:, 1:-1]) * 0.5
            x[0, :] = x[1, :]
            x[-1, :] = -x[-2, :]
        y[2] = 1.0  # another input, written once
        return x.sum()

    def points(x, y):
        x[0, 0] = 1.0
        x[2, 3] = x[0, 0] + 5.0
        y[...] = 2.0
        y[1] += 1.0
        return x

    same_as_numpy(sweeps, f32(6, 6), f32(4, 3), calls=2)
    assert list(specs[-1][0].writes) == [(0, None), (1, (0,))]
    same_as_numpy(points, f32(6, 6), f32(4, 3), calls=2)
    assert list(specs[-1][0].writes) == [(0, (0, 1)), (0, (0, 1)), (1, None)]


def test_a_segmented_run_writes_as_a_compiled_call_does():
    # A branch on data cuts the call into segments; the writes after it
    # (a block, cast from float64, and a whole array) are the extension's.
    def fn(x, cache, pos):
        if x.sum() > 0:
            cache[pos:pos + 2] = x[:2] * np.float64(0.5)
        else:
            cache[...] = -1
        x += 1
        return x
    for values in (f32(4) + 1, -f32(4) - 1):
        s = same_as_numpy(fn, values, np.zeros(6, np.float32), 3, calls=3)
        assert s["segmented_calls"] >= 1 and s["eager_calls"] == 0


@pytest.mark.parametrize("value", [3e9, float("inf"), float("nan"), np.float32(3e9), 2.7, -2.7, np.int64(2**40), np.int64(5)],
                         ids=repr)
def test_a_scalar_written_into_an_integer_array_is_converted_as_numpy_converts_it(value):
    # NumPy converts a scalar (Python's or its own) into an integer array as
    # int() does: NaN a ValueError, out of the dtype's range an OverflowError.
    def w(t, v):
        t[...] = v
        return t
    t = np.zeros(2, np.int32)
    try:
        want = w(t.copy(), value)
    except Exception as e:  # noqa: BLE001 - NumPy's exception is the answer
        with pytest.raises(type(e)):
            jit(w)(t.copy(), value)
        return
    np.testing.assert_array_equal(jit(w)(t.copy(), value), want)


def test_a_traced_scalar_written_into_an_integer_array_is_read_as_numpy_reads_it():
    def w(t, a):
        t[...] = a.sum()
        return t
    for a, error in ((np.array([1e9, 2e9]), OverflowError), (np.array([np.nan]), ValueError), (np.array([2.0**40, 1]), OverflowError)):
        with pytest.raises(error):
            w(np.zeros(2, np.int32), a)
        with pytest.raises(error):
            jit(w)(np.zeros(2, np.int32), a)
    np.testing.assert_array_equal(jit(w)(np.zeros(2, np.int32), np.array([1.5, -0.2])), [1, 1])


@pytest.mark.parametrize("fn", [
    lambda x, I, J: x.__setitem__((I, J), 7.0),                 # u[I, J] = v
    lambda x, I, J: x.__setitem__((I, J), x[J, I] * 2),         # values of the key's shape
    lambda x, I, J: x.__setitem__(I, x[0] + 1),                 # whole rows, a row broadcast
    lambda x, I, J: x.__setitem__((slice(None), J), -1.0),      # a slice before the array
    lambda x, I, J: x.__setitem__((I[:, None], J[None, :]), 3.0),  # np.ix_'s form: broadcast together
    lambda x, I, J: x.__setitem__(np.ix_(I, J), x[:2, :2]),
    lambda x, I, J: x.__setitem__(x[:, 0] > 3, x[0]),            # the rows a mask picks, a row broadcast
    lambda x, I, J: x.__setitem__((I, slice(1, 3)), 0.5),
    lambda x, I, J: x.__setitem__(np.s_[::2], 9.0),             # a strided block
    lambda x, I, J: x.__setitem__(np.s_[:, ::-2], x[:, :2] + 1),
    lambda x, I, J: x.__setitem__(np.s_[None, 1], 5.0),         # None in the key
], ids=["pairs", "values", "rows", "columns", "broadcast", "ix_", "mask", "mixed", "strided", "reversed", "none"])
def test_a_scatter_is_written_as_numpy_writes_it(fn):
    def g(x, I, J):
        fn(x, I, J)
        return x * 2
    I, J = np.array([2, 0]), np.array([1, -1])
    s = same_as_numpy(g, f32(3, 4), I, J, calls=2)
    assert s["graph_breaks"] == 0 and s["compiles"] == 1


def test_a_repeated_index_keeps_its_last_write_and_add_at_adds_each():
    def assign(x, I, v):
        x[I] = v              # the last of the repeats is written
        x[I] += 1             # NumPy's no-accumulation: each repeat once
        return x
    def add_at(x, I, v):
        np.add.at(x, I, v)
        np.subtract.at(x, (I, I % 2), 1.5)
        return x
    I, v = np.array([1, 1, 0, 1]), np.array([10.0, 20.0, 30.0, 40.0])
    assert same_as_numpy(assign, np.zeros(3), I, v, calls=2)["graph_breaks"] == 0
    s = same_as_numpy(add_at, np.zeros((3, 2)), I, v[:, None], calls=2)
    assert s["graph_breaks"] == 0 and s["compiles"] == 1


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_add_at_in_every_dtype_it_keeps(dtype):
    def fn(x, I):
        np.add.at(x, I, 3)
        return x
    assert same_as_numpy(fn, np.arange(5, dtype=dtype), np.array([4, 0, 4, -1]))["graph_breaks"] == 0


def test_what_add_at_cannot_keep_in_its_dtype_is_numpys():
    # float values into an int array: NumPy adds in float64, casting each
    # sum back; np.maximum.at is no scatter the op set has; both are breaks
    # that run NumPy's own.
    def fn(x, I):
        np.add.at(x, I, 0.6)
        np.maximum.at(x, I, 2)
        return x
    same_as_numpy(fn, np.arange(5), np.array([1, 1, 3]))


def test_a_scatter_out_of_range_is_numpys_index_error():
    def fn(x, I):
        x[I] = 1.0
        return x
    f = jit(fn)
    f(np.zeros(4), np.array([0, 3]))
    for bad in (np.array([0, 4]), np.array([-5])):
        x = np.zeros(4)
        with pytest.raises(IndexError):
            f(x, bad)
        assert not x.any()    # nothing written
    with pytest.raises(IndexError):
        jit(lambda x, I: np.add.at(x, I, 1))(np.zeros(2), np.array([2]))


def test_an_advanced_index_reads_a_copy():
    def fn(x, I):
        y = x[I]
        y[0] = 50.0           # a copy: x is unchanged
        z = x[I, 1:]
        z += 1
        return x + y.sum() + z.sum()
    assert same_as_numpy(fn, f32(3, 4), np.array([2, 0]), calls=2)["graph_breaks"] == 0
