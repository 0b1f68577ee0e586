"""What a jitted function reads besides its arguments, from Python: the
values its compiled entries hold as constants are watched (a global, a
closure's, a dict's item, an attribute, a class's value), a float that
keeps changing becomes an input, and a method jitted on its class serves
every instance of one structure."""
import logging

import numpy as np

from conftest import jit


SCALE = 2.0
CONFIG_D = {"scale": 3.0, "mode": "add"}


def _act(x):
    return x * 2


def _scaled(x):
    y = x * SCALE + CONFIG_D["scale"]
    return y + 1 if CONFIG_D["mode"] == "add" else y - 1


def _activated(x):
    return _act(x) + 1


def test_values_the_function_reads_besides_its_arguments_are_read_again():
    # What a compiled call holds as constants (a global float, a dict's
    # item, a string it branches on, a function bound to a global) is
    # compared before every call: a call that finds one changed is traced
    # with the new value, or served by the entries traced with it before.
    global SCALE, _act
    f = jit(_scaled)
    x = np.arange(4.0)
    np.testing.assert_array_equal(f(x), _scaled(x))
    SCALE, CONFIG_D["scale"] = 5.0, -1.0
    np.testing.assert_array_equal(f(x), _scaled(x))
    CONFIG_D["mode"] = "sub"
    np.testing.assert_array_equal(f(x), _scaled(x))
    SCALE, CONFIG_D["scale"], CONFIG_D["mode"] = 2.0, 3.0, "add"  # the first values again: their entries
    np.testing.assert_array_equal(f(x), _scaled(x))
    s = f.stats()
    assert s["compiles"] == 3 and s["value_changes"] == 3 and s["hits"] == 1
    saved = _act
    try:
        g = jit(_activated)
        np.testing.assert_array_equal(g(x), x * 2 + 1)
        _act = np.negative
        np.testing.assert_array_equal(g(x), 1 - x)
    finally:
        _act = saved


def test_an_instance_attribute_and_a_closure_value_are_read_again():
    class Model:
        def __init__(self, t):
            self.t, self.n, self.w = t, 2, np.ones(3)

        def __call__(self, x):
            return x * self.t + self.w * self.n

    Model.__call__ = jit(Model.__call__)
    m, x = Model(2.0), np.arange(3.0)
    np.testing.assert_array_equal(m(x), x * 2 + 2)
    m.t, m.n = 5.0, 3
    np.testing.assert_array_equal(m(x), x * 5 + 3)
    m.t = -0.0  # not 0.0: its own value
    np.testing.assert_array_equal(m(x), x * -0.0 + 3)
    del m.t  # the class's value, read through the instance
    Model.t = 4.0
    np.testing.assert_array_equal(m(x), x * 4 + 3)
    Model.t = 6.0
    np.testing.assert_array_equal(m(x), x * 6 + 3)

    def make():
        k = 2

        def g(x):
            return x * k

        def set_k(v):
            nonlocal k
            k = v
        return g, set_k
    g, set_k = make()
    jg = jit(g)
    np.testing.assert_array_equal(jg(x), x * 2)
    set_k(4)
    np.testing.assert_array_equal(jg(x), x * 4)


def test_a_value_that_keeps_changing_is_numpys_to_run():
    # A site keeps a few variants; past them, the calls with other values
    # are NumPy's (right, and said so), the variants it has still compiled.
    state = {"step": 0}

    def f(x):
        return x * state["step"]
    j = jit(f)
    x = np.arange(3.0)
    for i in range(12):
        state["step"] = i
        np.testing.assert_array_equal(j(x), x * i)
    s = j.stats()
    assert s["compiles"] == 8 and s["eager_calls"] == 4
    assert "changed past 8 variants of a site: 4" in j.explain() and "7 variants traced with other values" in j.explain()
    state["step"] = 3
    j(x)
    assert j.stats()["hits"] == 1


def test_a_nan_and_an_unchanged_float_are_no_change():
    nan = {"v": float("nan")}
    f = jit(lambda x: x + nan["v"])
    for _ in range(3):
        f(np.ones(2))
    assert f.stats()["value_changes"] == 0 and f.stats()["compiles"] == 1


class _Layer:
    def __init__(self, k):
        self.w = np.full(3, float(k))
        self.eps = 1e-3

    def norm(self, h):
        return h / (np.abs(h).sum() + self.eps)


class _Net:
    def __init__(self, k, n=2):
        self.layers = [_Layer(k), _Layer(k + 1)]
        self.n = n

    def __call__(self, x):
        for layer in self.layers:
            x = np.tanh(layer.norm(x * layer.w))
        return x * self.n


def test_a_method_jitted_on_its_class_serves_every_instance():
    # Instances of the program's classes are keyed by type: their arrays are
    # read from the instance each call passes, the values read through it
    # watched on paths from the call's arguments.
    call = _Net.__call__
    jitted = jit(call)
    nets, x = [_Net(k) for k in range(1, 6)], np.arange(3.0)
    try:
        _Net.__call__ = jitted
        for _ in range(2):
            for net in nets:
                np.testing.assert_allclose(net(x), call(net, x))
        s = jitted.stats()
        assert s["compiles"] == 1 and s["hits"] == 9 and s["sites"] == 1
        assert "args[0].layers[1].w" in jitted.explain()
        nets[0].layers[1].eps = 0.5                    # a value read in a method of a held object
        np.testing.assert_allclose(nets[0](x), call(nets[0], x))
        np.testing.assert_allclose(nets[1](x), call(nets[1], x))
        nets[2].layers.append(_Layer(9))               # another structure: traced again
        np.testing.assert_allclose(nets[2](x), call(nets[2], x))
        np.testing.assert_allclose(nets[3](x), call(nets[3], x))
    finally:
        _Net.__call__ = call


def test_an_object_that_makes_attributes_as_read_is_keyed_by_identity():
    class Lazy:
        def __init__(self, k):
            self.k = k

        def __getattr__(self, name):
            if name != "w":
                raise AttributeError(name)
            return np.full(2, float(self.k))

    f = jit(lambda o, x: x + o.w)
    a, b = Lazy(1), Lazy(2)
    np.testing.assert_array_equal(f(a, np.zeros(2)), [1, 1])
    np.testing.assert_array_equal(f(b, np.zeros(2)), [2, 2])
    assert f.stats()["sites"] == 2


def test_a_float_read_besides_the_arguments_that_keeps_changing_becomes_an_input(caplog):
    # A learning rate on the optimizer, a global temperature: past the
    # backoff (2 changes) the place is an input, weak as NumPy treats a
    # Python float (float32 stays float32), and every later value hits.
    class Opt:
        def __init__(self):
            self.lr, self.w = 0.1, np.ones(3, np.float32)

        def step(self, g):
            self.w -= self.lr * g
            return self.w * 1

    step = Opt.step
    try:
        Opt.step = jit(step)
        mine, theirs, g = Opt(), Opt(), np.full(3, 0.5, np.float32)
        with caplog.at_level(logging.INFO, logger="shapejit"):
            for i in range(12):
                mine.lr = theirs.lr = 0.1 * 0.9 ** i
                got, want = mine.step(g), step(theirs, g)
                assert got.dtype == want.dtype == np.float32
                np.testing.assert_array_equal(got, want)
        s = Opt.step.stats()
        assert s["compiles"] == 3 and s["hits"] == 9 and s["eager_calls"] == 0
        assert "args[0].lr" in Opt.step.explain()
        assert any("args[0].lr took 3 values" in r.getMessage() for r in caplog.records)
        mine.lr = theirs.lr = 2  # an int there now: a value again, traced with it
        np.testing.assert_array_equal(mine.step(g), step(theirs, g))
    finally:
        Opt.step = step
