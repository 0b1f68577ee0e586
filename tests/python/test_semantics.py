"""The seeds' semantics from Python, with recompile counts: start dynamic,
specialize only what the code reads as a number, back off, the 0/1 rule,
graph breaks, the recompile limit, values guarded by value, captures."""
import logging

import numpy as np
import pytest

import shapejit as sj
from conftest import jit


def ones(*shape):
    return np.ones(shape, np.float32)


def test_a_size_read_as_int_specializes_then_backs_off():
    f = jit(lambda x: x * int(x.shape[1]))
    for n in (4, 5, 6, 7, 8):
        np.testing.assert_array_equal(f(ones(3, n)), np.full((3, n), n, np.float32))
    s = f.stats()
    # 4 and 5 compile (the second a recompile caused by dim 1); the next
    # change backs the dim off, and int() of a backed-off dim breaks the graph.
    assert (s["compiles"], s["recompiles"], s["graph_breaks"]) == (2, 1, 3)
    assert s["recompile_reasons"] == {"interpreter needs int": 1}
    # The break is cached: the calls after it did not trace again.
    assert s["traces"] == 3


def test_backed_off_int_recompile_keeps_specializing():
    f = sj.jit(lambda x: x * int(x.shape[1]), config={"policy": {"backed_off_int": "recompile", "cache_size_limit": 4}})
    for n in (4, 5, 6, 7):
        np.testing.assert_array_equal(f(ones(2, n)), np.full((2, n), n, np.float32))
    assert f.stats()["compiles"] == 4 and f.stats()["graph_breaks"] == 0


def test_a_compared_size_guards_only_the_predicate():
    f = jit(lambda x: x + 1 if x.shape[1] > 512 else x - 1)
    for n in (4, 5, 600, 7, 800):
        want = ones(3, n) + (1 if n > 512 else -1)
        np.testing.assert_array_equal(f(ones(3, n)), want)
    s = f.stats()
    assert (s["compiles"], s["hits"]) == (2, 3)  # one entry per outcome, each dynamic in n
    assert s["recompile_reasons"] == {"interpreter branch": 1}


def test_range_and_indexing_read_the_number():
    def f(x):
        return sj.concatenate([x[i:i + 1] * i for i in range(x.shape[0])], axis=0)
    g = jit(f)
    for n in (2, 3, 2):
        np.testing.assert_array_equal(g(ones(n, 4)), np.arange(n, dtype=np.float32)[:, None] * ones(n, 4))
    assert g.stats()["compiles"] == 2 and g.stats()["hits"] == 1


def test_zero_one_rule():
    f = jit(lambda x: x + 1)
    for n in (1, 4, 5, 1, 6, 0):
        assert f(ones(n, 3)).shape == (n, 3)
    s = f.stats()
    assert s["compiles"] == 3  # size 1, then one dynamic entry for n >= 2, then size 0
    assert s["recompile_reasons"] == {"0/1 specialization": 2}
    g = sj.jit(lambda x: x + 1, config={"policy": {"specialize_zero_one": False}})
    for n in (1, 4, 0):
        assert g(ones(n, 3)).shape == (n, 3)
    assert g.stats()["compiles"] == 1


def test_graph_break_runs_eagerly_and_is_cached():
    def f(x):
        if x.sum() > 0:  # a branch on tensor data
            return sj.gelu(x) * 2
        return x * 3
    g = jit(f)
    x = np.linspace(-1, 1, 5, dtype=np.float32) + 0.5
    np.testing.assert_allclose(g(x), f(x), rtol=1e-6)
    np.testing.assert_allclose(g(-x), f(-x), rtol=1e-6)
    s = g.stats()
    assert (s["graph_breaks"], s["compiles"], s["traces"]) == (2, 0, 1)


@pytest.mark.parametrize("breaker", [
    lambda x: x * x.max().item(),
    lambda x: x + sum(x.tolist()),     # tensor data as Python values
    lambda x: x + float(x[0]),
    lambda x: np.argpartition(x, 1),   # a NumPy function with no op
    lambda x: np.partition(x, 1),      # another
    lambda x: np.unique_values(x),     # and another
])
def test_what_cannot_be_traced_breaks_the_graph(breaker):
    f = jit(breaker)
    x = np.array([0.5, 2.0, -1.0], np.float32)
    np.testing.assert_allclose(f(x), breaker(x), rtol=1e-6)
    assert f.stats()["graph_breaks"] == 1


def test_recompile_limit():
    f = sj.jit(lambda x: x + 1, config={"policy": {"mode": "always_static", "cache_size_limit": 2}})
    for n in (2, 3, 4, 5, 6):
        assert f(ones(n)).shape == (n,)
    s = f.stats()
    assert (s["compiles"], s["hits"]) == (3, 2)  # 2 static entries, then the generic one
    g = sj.jit(lambda x: x + 1, config={"policy": {"mode": "always_static", "cache_size_limit": 2, "on_limit": "eager"}})
    for n in (2, 3, 4, 5):
        np.testing.assert_array_equal(g(ones(n)), ones(n) + 1)
    assert g.stats()["compiles"] == 2


def test_every_mode_runs_the_same_function():
    def f(x, y):
        return sj.softmax(x @ y, axis=-1)
    rng = np.random.default_rng(0)
    for mode in ("start_dynamic", "start_static", "always_static", "always_dynamic", "bucketed"):
        g = sj.jit(f, config={"policy": {"mode": mode}})
        for n in (3, 5, 9, 5):
            x, y = rng.random((n, 4), np.float32), rng.random((4, 6), np.float32)
            np.testing.assert_allclose(g(x, y), sj.softmax(x @ y), rtol=1e-5, atol=1e-6)


def test_python_values_are_guarded_by_value():
    f = jit(lambda x, a, scale=1.0: x * a * scale)  # floats (an int is a size, below)
    x = ones(2)
    assert f(x, 2.0).tolist() == [2, 2]
    assert f(x, 3.0).tolist() == [3, 3]
    assert f(x, 2.0).tolist() == [2, 2]
    assert f(x, 2.0, scale=0.5).tolist() == [1, 1]
    assert f(x, 2).tolist() == [2, 2]  # an int is another value than the float 2.0
    s = f.stats()
    assert (s["compiles"], s["hits"], s["sites"]) == (4, 1, 4)


def test_int_arguments_are_sizes_of_one_site():
    # A position that grows every call: one site, a symbol like an array's
    # dim (0 and 1 specialized by the 0/1 rule), so a decode loop compiles a
    # bounded number of times whatever the count of positions.
    f = jit(lambda x, pos: x[pos:pos + 2] * 2)
    x = np.arange(40, dtype=np.float32)
    for pos in range(30):
        np.testing.assert_array_equal(f(x, pos), x[pos:pos + 2] * 2)
    s = f.stats()
    assert (s["compiles"], s["sites"], s["graph_breaks"]) == (3, 1, 0)
    # A negative int is its own site (the key holds the sign), as symbolic.
    for pos in (-3, -4, -7):
        np.testing.assert_array_equal(f(x, pos), x[pos:pos + 2] * 2)
    assert f.stats()["sites"] == 2 and f.stats()["compiles"] == 4
    # ints nested in a pytree, and as keywords
    g = jit(lambda x, dims, k=1: x.reshape(dims) * k)
    for n in (2, 3, 4):
        np.testing.assert_array_equal(g(ones(n * 6), (n, 6), k=n), ones(n, 6) * n)
    assert g.stats()["sites"] == 1


def test_an_int_argument_read_as_a_number_is_guarded_and_backs_off():
    # range(n) needs the number: specialized, a recompile per new value, then
    # backed off, where int() is a graph break (the call runs in NumPy).
    f = jit(lambda x, n: sum(x[i] for i in range(n)))
    x = np.arange(10, dtype=np.float32)
    for n in (3, 4, 5, 6, 3):
        assert f(x, n) == x[:n].sum()
    s = f.stats()
    assert s["recompile_reasons"] == {"interpreter needs int": 1}
    assert s["graph_breaks"] >= 1 and s["sites"] == 1
    # start_static specializes every int at first and makes it dynamic after
    # the backoff (TorchDynamo's automatic dynamic shapes do this for ints).
    g = jit(lambda x, pos: x[pos:] + 1, mode="start_static", backoff_after=1)
    for pos in (2, 3, 4, 5, 6):
        np.testing.assert_array_equal(g(x, pos), x[pos:] + 1)
    assert g.stats()["compiles"] == 2


def test_arrays_of_an_instance_are_inputs_read_through_it():
    class Model:
        def __init__(self):
            self.w = np.eye(3, dtype=np.float32)
            self.blocks = [{"b": np.ones(3, np.float32)}]

        def __call__(self, x, pos):
            return (x @ self.w + self.blocks[0]["b"])[pos:]

    Model.__call__ = sj.jit(Model.__call__)  # jitted the way a newcomer would
    m = Model()
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    for pos in range(4):
        np.testing.assert_array_equal(m(x, pos), (x + 1)[pos:])
    m.w = 2 * np.eye(3, dtype=np.float32)  # rebound: read through self, no recompile
    m.blocks[0]["b"][:] = 5  # in place: seen
    np.testing.assert_array_equal(m(x, 2), (2 * x + 5)[2:])
    s = Model.__call__.stats()
    assert s["compiles"] == 3 and s["graph_breaks"] == 0
    assert "2 captured arrays" in Model.__call__.explain()


def test_pytrees_in_and_out():
    @sj.jit
    def f(xs, d):
        a, b = xs
        return {"sum": a + b, "both": (a * d["k"], b.shape[0])}
    out = f([ones(3), ones(3) * 2], {"k": ones(3) * 4})
    assert set(out) == {"sum", "both"}
    np.testing.assert_array_equal(out["sum"], ones(3) * 3)
    np.testing.assert_array_equal(out["both"][0], ones(3) * 4)
    assert out["both"][1] == 3 and isinstance(out["both"][1], int)


def test_result_trees_of_arrays_come_back_alike_on_every_call():
    # No sizes among the results and no writes: the extension builds the
    # tree itself (pytree.cpp build_tree), on the first call and on hits.
    import collections
    P = collections.namedtuple("P", "a b")

    @sj.jit
    def f(x):
        return {"t": (x + 1, [x * 2, None], "tag"), "p": P(x - 1, {"k": x * x}), "last": [x], "empty": ()}

    for n in (3, 3, 4):
        x = np.arange(n, dtype=np.float32)
        out = f(x)
        assert list(out) == ["t", "p", "last", "empty"]
        t = out["t"]
        assert type(t) is tuple and len(t) == 3 and t[2] == "tag"
        assert type(t[1]) is list and t[1][1] is None
        np.testing.assert_array_equal(t[0], x + 1)
        np.testing.assert_array_equal(t[1][0], x * 2)
        assert type(out["p"]) is P and list(out["p"].b) == ["k"]
        np.testing.assert_array_equal(out["p"].a, x - 1)
        np.testing.assert_array_equal(out["p"].b["k"], x * x)
        assert type(out["last"]) is list and len(out["last"]) == 1 and out["empty"] == ()
        np.testing.assert_array_equal(out["last"][0], x)
    assert f.stats()["graph_breaks"] == 0


def test_results_of_another_structure_run_as_numpy():
    # Entries of one site give back one structure; a trace that gives
    # another is a graph break for the calls its decisions take.
    f = jit(lambda x: (x, x * 2) if x.shape[0] > 3 else x)
    assert f(ones(2)).shape == (2,)
    for _ in range(2):
        a, b = f(ones(5))
        np.testing.assert_array_equal(b, ones(5) * 2)
    assert f(ones(2)).shape == (2,)  # the site still works
    assert f.stats()["graph_breaks"] >= 1


def test_numbers_among_the_results_are_each_entrys_own():
    f = jit(lambda x: (x * 2, 1 / x.shape[0], int(x.shape[0]) * 3, x.shape[0] > 2, np.float32(x.shape[0])), mode="always_static")
    for n in (2, 3, 4, 2):
        got = f(ones(n))
        assert got[1:4] == (1 / n, n * 3, n > 2) and type(got[1]) is float and type(got[2]) is int and type(got[3]) is bool
        assert got[4] == np.float32(n) and got[4].dtype == np.float32
    assert f.stats()["graph_breaks"] == 0


W = np.full((4, 3), 0.5, np.float32)


def uses_global(x):
    return x @ W


def test_closure_and_global_arrays_are_inputs():
    global W
    f = jit(uses_global)
    x = ones(2, 4)
    np.testing.assert_array_equal(f(x), x @ W)
    W[:] = 2.0  # in place: seen, no recompile
    np.testing.assert_array_equal(f(x), x @ W)
    W = np.full((4, 3), 3.0, np.float32)  # rebound: the new array, same entry
    np.testing.assert_array_equal(f(x), x @ W)
    W = np.full((4, 5), 1.0, np.float32)  # rebound to another shape: guarded like any input
    np.testing.assert_array_equal(f(x), x @ W)
    assert f.stats()["compiles"] == 1  # every dim of W is dynamic

    b = np.zeros(3, np.float32)
    params = {"w": np.eye(3, dtype=np.float32), "b": b}
    g = jit(lambda x: x @ params["w"] + params["b"])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(g(x), x)
    params["b"] = np.ones(3, np.float32)
    np.testing.assert_array_equal(g(x), x + 1)
    assert g.stats()["compiles"] == 1
    assert "2 captured arrays" in g.explain()


def test_captures_along_shared_paths_are_each_read_again():
    # A model's weights, p["layers"][i][name] and self.layers[i].name: paths
    # that share their first steps (refresh resumes from the step where one
    # parts from the one before). Each rebinding is seen on the next call.
    class Layer:
        def __init__(self, s):
            self.w = np.full(3, s, np.float32)

    class Model:
        def __init__(self):
            self.layers = [Layer(1), Layer(2)]

    m = Model()
    p = {"layers": [{"w": np.full(3, 1.0, np.float32), "b": np.zeros(3, np.float32)} for _ in range(3)], "out": np.ones(3, np.float32)}

    def f(x):
        for L in p["layers"]:
            x = x * L["w"] + L["b"]
        for L in m.layers:
            x = x + L.w
        return x * p["out"]

    g = jit(f)
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(g(x), f(x))
    p["layers"][1]["w"] = np.full(3, 2.0, np.float32)  # the middle of a run of shared paths
    np.testing.assert_array_equal(g(x), f(x))
    p["layers"][2] = {"w": np.full(3, 3.0, np.float32), "b": np.ones(3, np.float32)}  # a shared step's object
    np.testing.assert_array_equal(g(x), f(x))
    p["layers"][0]["b"] = np.full(3, -1.0, np.float32)  # the second of two paths from one dict
    m.layers[1].w = np.full(3, 5.0, np.float32)  # through attributes
    np.testing.assert_array_equal(g(x), f(x))
    m.layers[0] = Layer(7)
    np.testing.assert_array_equal(g(x), f(x))
    p["out"] = np.full(3, 0.5, np.float32)  # a path that shares nothing with the one before
    np.testing.assert_array_equal(g(x), f(x))
    assert g.stats()["compiles"] == 1
    assert "9 captured arrays" in g.explain()
    del p["layers"][1]["w"]  # a path that is gone: traced again, and the trace raises as NumPy does
    with pytest.raises(KeyError):
        g(x)


def test_arrays_made_in_the_body_are_constants():
    f = jit(lambda x: x[np.array([2, 0])] + np.array([1.0, 2.0], np.float32))
    x = np.arange(3, dtype=np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(f(x), np.array([3.0, 2.0], np.float32))
    assert f.stats()["compiles"] == 1


def test_nested_jit_functions_trace_through():
    inner = jit(lambda x: sj.tanh(x) * 2)
    outer = jit(lambda x: inner(x) + 1)
    x = np.linspace(-1, 1, 4, dtype=np.float32)
    np.testing.assert_allclose(outer(x), np.tanh(x) * 2 + 1, rtol=1e-6)
    assert inner.stats()["calls"] == 0  # traced into outer's graph
    np.testing.assert_allclose(inner(x), np.tanh(x) * 2, rtol=1e-6)


def test_methods():
    class Layer:
        def __init__(self, w):
            self.w = w

        @sj.jit
        def __call__(self, x):
            return x @ self.w

    a, b = Layer(np.eye(2, dtype=np.float32)), Layer(2 * np.eye(2, dtype=np.float32))
    x = ones(1, 2)
    np.testing.assert_array_equal(a(x), x)
    np.testing.assert_array_equal(b(x), 2 * x)


def test_recompile_lines_go_to_logging(caplog):
    f = jit(lambda x: x + 1)
    with caplog.at_level(logging.INFO, logger="shapejit"):
        f(ones(1, 3))
        f(ones(4, 3))
    lines = [r.getMessage() for r in caplog.records if r.name == "shapejit"]
    assert any("recompile #1" in line and "0/1 specialization" in line for line in lines), lines


def test_explain_lists_entries_and_guards():
    f = jit(lambda x: x * int(x.shape[0]))
    f(ones(3, 2))
    text = f.explain()
    assert "entry 0" in text and "input 0 dim 0 == 3" in text and "input 0 dtype == f32" in text
    assert "inputs: 0 args[0]\n" in text


BIAS = np.full(3, 0.5, np.float32)


def test_explain_names_each_input_by_where_the_call_passes_it():
    class Params:
        def __init__(self):
            self.w = np.eye(3, dtype=np.float32)

    p = Params()
    g = jit(lambda x, pos, d, params: (x @ params.w + d["b"] + BIAS)[pos:])
    g(ones(2, 3), 1, {"b": ones(3)}, p)
    text = g.explain()
    assert "inputs: 0 args[0], 1 args[1] (int), 2 args[2]['b'], 3 args[3].w, 4 BIAS\n" in text, [l for l in text.splitlines() if "inputs" in l]


def test_config_from_a_path(tmp_path):
    p = tmp_path / "c.json"
    p.write_text('{"policy": {"mode": "always_static"}}')
    f = sj.jit(lambda x: x + 1, config=p)
    f(ones(2))
    f(ones(3))
    assert f.stats()["compiles"] == 2
    assert sj.get_jit(p) is sj.get_jit({"policy": {"mode": "always_static"}})  # one Jit per config


def test_namedtuples_are_trees_in_arguments_results_and_eager_calls():
    import collections
    P = collections.namedtuple("P", "w b")
    p = P(np.ones((3, 2), np.float32), np.full((2,), 0.5, np.float32))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)

    def f(p, x):
        y = x @ p.w + p.b
        return P(y, y.shape[0])

    got = jit(f)(p, x)
    assert isinstance(got, P)
    np.testing.assert_allclose(got.w, x @ p.w + p.b)
    assert got.b == 2 and isinstance(got.b, int)

    def g(p, x):  # breaks: the eager call gets NumPy arrays inside the namedtuple too
        if (x @ p.w).sum() > 0:
            return p.w.T @ np.ones(3, np.float32) + p.b
        return p.b

    gj = jit(g)
    np.testing.assert_allclose(gj(p, x), g(p, x))
    assert gj.stats()["graph_breaks"] == 1


def test_len_and_range_of_sizes_stay_symbolic():
    # Python forces __len__ to an int; while a trace is recorded, len() of a
    # tensor is its first size and range() of sizes a traced range, so
    # wpe[range(len(ids))] does not freeze the length.
    def f(ids, table):
        return table[ids] + table[range(len(ids))] + np.asarray(range(len(ids)))[:, None]
    g = jit(f)
    table = np.arange(40, dtype=np.float32).reshape(10, 4)
    for n in range(2, 9):
        ids = np.arange(n)[::-1].copy()
        np.testing.assert_array_equal(g(ids, table), f(ids, table))
    s = g.stats()
    assert (s["compiles"], s["graph_breaks"]) == (1, 0)


def test_iterating_a_range_of_sizes_reads_the_number():
    def f(x):
        total = x[0] * 0
        for i in range(len(x)):   # Python iterates: the size is observed
            total = total + x[i] * i
        assert isinstance(range(3), range) and isinstance(range(len(x)), range)
        return total, len(range(1, len(x))), 2 in range(len(x))
    g = jit(f)
    for n in (3, 4, 3):
        x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
        got, want = g(x), f(x)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:]
    assert g.stats()["compiles"] == 2 and g.stats()["recompile_reasons"] == {"interpreter needs int": 1}


def test_pytree_calls_after_the_first_pick_their_site_in_cpp():
    # The second call of each signature takes the C++ walk: every kind of
    # value in a tree, each picking the site its Python key picks.
    import collections
    Pair = collections.namedtuple("Pair", "a b")

    class Obj:
        pass

    o1, o2 = Obj(), Obj()
    f = jit(lambda tree, x: x * tree["k"] + tree["p"].a.sum() + len(tree["l"]) * tree["f"]
            + (1 if tree["flag"] else 0) + (2 if tree["s"] == "two" else 0) + (3 if tree["o"] is o1 else 0))
    x = np.ones(3, np.float32)
    for _ in range(3):
        for k in (2, 5):
            for flag, s, o, fl in ((True, "two", o1, 0.5), (False, "one", o2, 1.5), (None, "".join(["tw", "o"]), o1, -0.0)):
                tree = {"k": k, "p": Pair(np.full(2, k, np.float32), 1), "l": [x, x], "f": fl,
                        "flag": flag, "s": s, "o": o}
                want = x * k + 2 * k + 2 * fl + (1 if flag else 0) + (2 if s == "two" else 0) + (3 if o is o1 else 0)
                np.testing.assert_array_equal(f(tree, x), want)
    # a dict with other keys than strings, an int too big to be a size, a
    # NumPy scalar: the Python flatten every time, still right
    g = jit(lambda d, x: x * d[1] + d[2])
    for v in (np.int64(3), 2**70, 4):
        np.testing.assert_array_equal(g({1: 2.0, 2: float(v)}, x), x * 2 + float(v))


def test_float_arguments_that_change_become_inputs(caplog):
    # A temperature that changes: by value for the first two, then every
    # float argument of the function is an input (one more compile, then
    # hits), promoting as a Python float (float32 stays float32).
    def sample(logits, temperature, scale=1.0):
        z = logits / temperature
        z = z - z.max(axis=-1, keepdims=True)
        return np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True) * (scale * 2 + 1e-6) - temperature
    f = jit(sample)
    x = np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32)
    with caplog.at_level(logging.INFO, logger="shapejit"):
        for t in (0.5, 0.7, 0.9, 1.1, 1.3, 0.7, 2.0, 3.5):
            got, want = f(x, t), sample(x, t)
            assert got.dtype == want.dtype == np.float32
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        got = f(x, 0.25, scale=3.0)
        np.testing.assert_allclose(got, sample(x, 0.25, scale=3.0), rtol=1e-5, atol=1e-6)
    s = f.stats()
    assert s["compiles"] == 4 and s["graph_breaks"] == 0  # 0.5, 0.7, the dynamic entry, and with scale
    assert any("float arguments took 3 values" in r.getMessage() for r in caplog.records)


def test_a_branch_on_a_float_input_reads_it_at_a_cut():
    def f(x, t):
        if t > 1.0:
            return x * t
        return x - t
    g = jit(f)
    x = np.arange(4, dtype=np.float32)
    for t in (0.5, 1.5, 2.5, 0.25, 3.0, 0.1):
        got = g(x, t)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, f(x, t), rtol=1e-6)
    assert g.stats()["segmented_calls"] >= 1


W2 = np.eye(3, dtype=np.float32)


def test_views_of_a_global_follow_the_global():
    # W2.T and W2[0] are traced views of W2, an input read from the globals
    # on every call: writing into W2 is seen through them, and rebinding W2
    # takes the new array, with no new trace.
    global W2
    f = jit(lambda x: x @ W2.T + W2[0])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(f(x), x @ W2.T + W2[0])
    W2[0, 1] = 5  # in place: seen through the views
    np.testing.assert_array_equal(f(x), x @ W2.T + W2[0])
    W2 = np.full((3, 3), 2, np.float32)  # rebound
    np.testing.assert_array_equal(f(x), x @ W2.T + W2[0])
    assert f.stats()["compiles"] == 1 and "1 W2" in f.explain()


@pytest.mark.parametrize("make", [
    lambda: np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0]),
    lambda: np.matrix([[1.0, 2.0], [3.0, 4.0]]),
], ids=["masked", "matrix"])
def test_subclasses_that_change_numpys_semantics_run_as_numpy(make):
    # The fifth program: the mask was dropped (12.0 for 8.0).
    for fn in (lambda v: (v * 2).sum(), lambda v: v * v, lambda d: d["a"] * 2):
        x = make() if fn.__code__.co_varnames[0] != "d" else {"a": make()}
        got, want = jit(fn)(x), fn(x)
        assert type(got) is type(want)
        np.testing.assert_array_equal(np.ma.getdata(got), np.ma.getdata(want))
        np.testing.assert_array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(want))


M = np.ma.array([1.0, 2.0], mask=[1, 0])
H16 = np.arange(3, dtype=np.float16)


def test_a_global_subclass_or_a_dtype_shapejit_lacks_is_numpys_on_every_call():
    f = jit(lambda x: x + M.sum())
    g = jit(lambda x: x + H16.sum())
    for k in range(3):
        M[1] = k
        H16[0] = k
        np.testing.assert_array_equal(f(np.ones(2)), np.ones(2) + M.sum())
        np.testing.assert_array_equal(g(np.ones(2)), np.ones(2) + H16.sum())


def test_a_memory_map_is_an_array(tmp_path):
    m = np.memmap(tmp_path / "w.bin", dtype=np.float32, mode="w+", shape=(3,))
    m[:] = [1, 2, 3]
    f = jit(lambda x, w: x * w)
    np.testing.assert_array_equal(f(np.ones(3, np.float32), m), [1, 2, 3])
    assert f.stats()["compiles"] == 1 and f.stats()["eager_calls"] == 0
