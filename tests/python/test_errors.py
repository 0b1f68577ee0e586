"""Bad input raises a clear Python exception carrying the C++ message, and
leaves the cache usable."""
import json
import subprocess
import os
import pathlib

import numpy as np
import pytest

import shapejit as sj
from conftest import jit


def test_a_dtype_shapejit_does_not_take_is_numpys_call():
    f = jit(lambda x: x + 1)
    for dtype in (np.float16, np.uint8, np.complex128):
        got = f(np.ones(3, dtype))
        assert got.dtype == dtype and got.tolist() == [2, 2, 2]
    assert f(np.ones(3, np.float32)).tolist() == [2, 2, 2]
    assert f.stats()["eager_calls"] == 3
    with pytest.raises(sj.NotCompiled, match=r"argument 0: dtype float16 is not one shapejit takes"):
        sj.jit(lambda x: x + 1, strict=True)(np.ones(3, np.float16))


def test_a_list_instead_of_an_array_is_what_the_function_makes_of_it():
    f = jit(lambda x: sj.exp(x))
    np.testing.assert_allclose(f([1.0, 2.0]), np.exp([1.0, 2.0]))  # NumPy's call: sj.exp outside a trace is np.exp
    np.testing.assert_allclose(f(np.zeros(2, np.float32)), [1, 1])


def test_a_shape_the_graph_cannot_take_is_numpys_error():
    f = jit(lambda x, y: x + y)
    with pytest.raises(ValueError, match="could not be broadcast together with shapes"):
        f(np.ones((3, 4), np.float32), np.ones((5,), np.float32))
    np.testing.assert_array_equal(f(np.ones((3, 4), np.float32), np.ones((4,), np.float32)), np.full((3, 4), 2, np.float32))
    g = jit(lambda x: x.reshape(5, -1))
    with pytest.raises(ValueError, match="cannot reshape array of size 12"):
        g(np.ones(12, np.float32))
    assert g(np.ones(10, np.float32)).shape == (5, 2)


def test_mixed_dtypes_where_the_op_set_has_none():
    f = jit(lambda x, i: sj.embedding(x, i))
    with pytest.raises(IndexError, match="integer"):  # the function's own error, as NumPy runs it
        f(np.ones((3, 2), np.float32), np.zeros(2, np.float32))


def test_an_index_out_of_range_at_run_time():
    # The kernel finds it; NumPy runs the call, with its own error.
    f = jit(lambda t, i: t[i])
    t = np.arange(6, dtype=np.float32).reshape(3, 2)
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 3"):
        f(t, np.array([0, 7]))
    np.testing.assert_array_equal(f(t, np.array([2, 0])), t[[2, 0]])


@pytest.mark.parametrize("fn, args, error", [
    (lambda a: (lambda v: (v.__setitem__(Ellipsis, 1), v)[1])(2 ** a), (np.full((1, 2), -2, np.int32),), ValueError),
    (lambda a: (2 ** a, a + 1)[1], (np.array([3, -1]),), ValueError),
    (lambda a: (a.max(axis=0), a * 2)[1], (np.zeros((0, 3)),), ValueError),
    (lambda a, i: (a[i], a + 1)[1], (np.zeros(3), np.array([0, 5])), IndexError),
    (lambda a: np.nanargmax(a, axis=1), (np.array([[1.0, np.nan], [np.nan, np.nan]]),), ValueError),  # an all-NaN slice
    (lambda a: np.unravel_index(a, (2, 3)), (np.array([1, 6]),), ValueError),
    (lambda a: np.ravel_multi_index((a, a), (2, 3)), (np.array([0, -1]),), ValueError),
], ids=["overwritten", "unused", "empty-max", "unused-take", "all-nan", "unravel", "ravel"])
def test_an_error_numpy_raises_on_a_result_the_function_never_uses(fn, args, error):
    # NumPy computes it, and raises, whether or not the result is used; the
    # compiled call computes such an op as an output of its own.
    with pytest.raises(error):
        fn(*args)
    f = jit(fn)
    with pytest.raises(error):
        f(*args)


def test_the_functions_own_errors_come_through_unchanged():
    def bad(x):
        raise KeyError("mine")
    f = jit(bad)
    with pytest.raises(KeyError, match="mine"):
        f(np.ones(2, np.float32))
    assert f.stats()["errors"] == 1


def test_python_state_the_function_changes_is_numpys():
    # A list it appends to (a tracing value never escapes into it): the
    # trace's change is undone, and NumPy runs each call.
    kept = []
    f = jit(lambda x: kept.append(x) or x + 1)
    for _ in range(2):
        f(np.ones(2, np.float32))
    assert len(kept) == 2 and all(isinstance(k, np.ndarray) for k in kept)
    np.testing.assert_array_equal(kept[0] + 1, np.full(2, 2.0))


def test_bad_configs():
    with pytest.raises(ValueError, match="/policy/mode"):
        sj.jit(lambda x: x, config={"policy": {"mode": "sometimes"}})
    with pytest.raises(ValueError, match="unknown"):
        sj.jit(lambda x: x, config={"polcy": {}})
    with pytest.raises(OSError, match="no-such.json"):
        sj.jit(lambda x: x, config="/no-such.json")
    with pytest.raises(TypeError):
        sj.jit(lambda x: x, config=3)
    with pytest.raises(TypeError):
        sj.jit(3)


def test_writes_out_of_range_or_of_the_wrong_shape():
    def f(x, i):
        x[i] = 1
        return x
    x = np.ones(2, np.float32)
    with pytest.raises(IndexError, match="out of bounds"):
        jit(f)(x, 5)
    with pytest.raises(IndexError, match="out of bounds"):
        jit(f)(x, -3)
    np.testing.assert_array_equal(x, np.ones(2))  # nothing written

    def g(x, v):
        x[:1] = v
        return x
    with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(2,\) into shape \(1,\)"):
        jit(g)(x, np.ones(2, np.float32))
    np.testing.assert_array_equal(x, np.ones(2))


def test_record_then_replay(tmp_path):
    path = tmp_path / "calls.jsonl"
    f = jit(lambda x, w: sj.gelu(x @ w))
    w = np.ones((4, 3), np.float32)
    f(np.ones((2, 4), np.float32), w)  # before recording: its graph is written at the next call
    with sj.record(path):
        for n in (2, 5, 7):
            f(np.ones((n, 4), np.float32), w)
    f(np.ones((9, 4), np.float32), w)  # after: not recorded
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["format"] == "shapejit-trace"
    assert [line["kind"] for line in lines[1:]] == ["graph", "call", "call", "call"]
    assert [c["inputs"][0]["shape"] for c in lines[2:]] == [[2, 4], [5, 4], [7, 4]]
    tool = os.environ.get("SHAPEJIT_TOOL")
    if not tool or not pathlib.Path(tool).exists():
        pytest.skip("the shapejit command is not built here (SHAPEJIT_TOOL)")
    out = subprocess.run([tool, "replay", str(path), "--config", "/dev/stdin", "--json", "--no-progress"], input="{}",
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out.splitlines()[0])["calls"] == 3


def test_an_index_out_of_range_inside_a_fused_step():
    # The gather folds into the layer_norm's step; its bounds check must
    # still stop the call, which NumPy then runs and names the index.
    f = jit(lambda t, i: sj.layer_norm(sj.embedding(t, i) * 2))
    t = np.random.default_rng(0).random((5, 4), np.float32)
    with pytest.raises(IndexError, match="index 9 is out of bounds"):
        f(t, np.array([[1, 9]]))
    assert f(t, np.array([[1, 4]])).shape == (1, 2, 4)


@pytest.mark.parametrize("step", [2**63 - 1, 2**62, 2**40, 3])
def test_slices_with_huge_steps_are_numpys(step):
    # The size is ceil(3 / step): written so that no step overflows it (the
    # outside fuzz's x[0:3:2**63-1] once said "its size overflows int64").
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    f = jit(lambda x: (x[0:3:step], x[1::step, ::step], x[::-step]))
    for got, want in zip(f(x), (x[0:3:step], x[1::step, ::step], x[::-step])):
        np.testing.assert_array_equal(got, want)


# -- NumPy's errors, as NumPy raises them --------------------------------------

def test_numpys_error_is_cached_per_entry_and_raised_again_without_a_trace():
    f = jit(lambda x, i: x[i])
    x = np.arange(4.0)
    for i in (5, 5, 6, 5):
        with pytest.raises(IndexError, match=f"index {i} is out of bounds"):
            f(x, i)
    assert f.stats()["traces"] == 2 and f(x, 2) == 2.0  # one per index past the end; the site still works
    e1, e2 = None, None
    for _ in range(2):
        try:
            f(x, 5)
        except IndexError as e:
            e1, e2 = e2, e
    assert e1 is not e2 and e2.__traceback__ is not None  # a new error each time


def test_a_cached_error_is_dropped_when_what_the_function_reads_is_rebound():
    g = {"W": None}
    f = jit(lambda x: x @ g["W"])
    for _ in range(2):
        with pytest.raises(ValueError, match="matmul"):  # NumPy's: None is a 0-d object array
            f(np.ones((2, 3)))
    g["W"] = np.ones((3, 2))
    np.testing.assert_array_equal(f(np.ones((2, 3))), np.full((2, 2), 3.0))


@pytest.mark.parametrize("fn", [
    lambda x, n: np.pad(n * n, 1) + x,                                   # NumPy's own code reads .flags of what it made
    lambda x, n: x * 2 if isinstance(x, np.ndarray) else 1 / 0,         # the program checks the type
    lambda x, n: x + np.frombuffer(x.tobytes(), x.dtype)[n % 2],       # bytes of the data
], ids=["numpys-code", "isinstance", "tobytes"])
def test_what_a_tracing_value_cannot_do_runs_in_numpy(fn):
    x = np.arange(3.0)
    for n in (3, 4, 3):
        np.testing.assert_array_equal(jit(fn)(x, n), fn(x, n))


def test_the_functions_own_raise_depends_on_the_state_it_reads():
    # The raised entry runs the call in NumPy, which reads the state again.
    state = {"strict": True}

    def f(x):
        if state["strict"] and x.shape[0] > 3:
            raise ValueError("too long")
        return x * 2
    g = jit(f)
    with pytest.raises(ValueError, match="too long"):
        g(np.ones(5))
    state["strict"] = False
    np.testing.assert_array_equal(g(np.ones(5)), np.full(5, 2.0))


def test_writes_before_an_error_are_made_as_numpy_makes_them():
    def f(x, i):
        x[0] = 7.0
        return x[i]
    for _ in range(2):
        mine, theirs = np.zeros(3), np.zeros(3)
        with pytest.raises(IndexError):
            f(theirs, 5)
        with pytest.raises(IndexError):
            jit(f)(mine, 5)
        np.testing.assert_array_equal(mine, theirs)


def test_an_axis_out_of_range_is_an_axis_error_and_argmin_says_argmin():
    for fn in (lambda b: b.max(axis=1), lambda b: b.argmin(axis=1), lambda b: b.argmax(axis=-2)):
        with pytest.raises(np.exceptions.AxisError):
            jit(fn)(np.ones(0, np.float32))
    with pytest.raises(ValueError, match="attempt to get argmin of an empty sequence"):
        jit(lambda b: b.argmin(axis=0))(np.ones(0, np.float32))


def test_a_result_too_large_to_allocate_is_a_memory_error():
    with pytest.raises(MemoryError):
        jit(lambda x: np.zeros((x.shape[0], 2**20, 2**20)))(np.ones(4))


def test_generators_and_coroutines_run_as_python_runs_them():
    import asyncio

    def gen(x):
        yield x * 2
        yield x + 1

    async def co(x):
        return x * 3

    g = sj.jit(gen)
    np.testing.assert_array_equal(list(g(np.ones(2)))[1], np.full(2, 2.0))
    np.testing.assert_array_equal(asyncio.run(sj.jit(co)(np.ones(2))), np.full(2, 3.0))
    assert "not compiled" in g.explain() and g.stats()["calls"] == 1
    # A generator or a closure made while traced: NumPy's, on every call.
    f = jit(lambda x: ((y * 2 for y in x), lambda z: x + z))
    for _ in range(2):
        it, add = f(np.ones(2))
        assert [float(v) for v in it] == [2.0, 2.0]
        np.testing.assert_array_equal(add(1), np.full(2, 2.0))


def test_a_graph_break_is_not_an_exception_the_function_can_catch():
    def f(x):
        try:
            y = np.partition(x, 1)  # no op: a cut, or the call in NumPy
        except Exception:  # noqa: BLE001 - the user's: must not swallow shapejit's break
            y = None
        return y * 2
    np.testing.assert_array_equal(jit(f)(np.array([3.0, 1.0, 2.0])), np.partition(np.array([3.0, 1.0, 2.0]), 1) * 2)


def _strided(x):
    return x * (x.strides[0] // x.itemsize)


def _partitioned(x):
    y = x * 2
    y.partition(1)
    return y


def test_an_ndarray_attribute_a_tensor_lacks_is_numpys():
    # Its memory (strides) is the concrete array's, read at a cut; a method
    # that writes in place (partition) makes the call NumPy's.
    for f in (_strided, _partitioned):
        g = jit(f)
        for x in (np.array([3.0, 1.0, 2.0]), np.arange(8.0)[::-2]):
            np.testing.assert_array_equal(g(x), f(x))


def test_an_attribute_no_ndarray_has_raises_numpys_error():
    with pytest.raises(AttributeError, match="'numpy.ndarray' object has no attribute 'no_such'"):
        jit(lambda x: x.no_such)(np.ones(2))


def test_strict_raises_where_numpy_ran_a_call_shapejit_could_not_compile():
    g = sj.jit(_partitioned, strict=True)
    with pytest.raises(sj.NotCompiled, match="ndarray.partition"):
        g(np.array([3.0, 1.0, 2.0]))
    # The function's own error is NumPy's, strict or not; a compiled call is the answer.
    with pytest.raises(IndexError):
        sj.jit(lambda x: x[5], strict=True)(np.ones(3))
    np.testing.assert_array_equal(sj.jit(lambda x: x * 2, strict=True)(np.ones(3)), np.full(3, 2.0))

