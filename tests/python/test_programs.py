"""Realistic NumPy programs (tests/python/programs/), written the way their
communities write them, each jitted with one line: every call equal to
NumPy's (results and the state it writes), and what it compiled and where
it broke, as the package does today. The counts are checked exactly, so
that a change in them is seen; docs/python.md says what breaks and why.
Under fault injection (SHAPEJIT_FAULTS, tests/python/fuzz/fault_run.py)
what compiled is the faults', and only the agreement with NumPy is checked."""
import copy
import os
import sys
import pathlib

import numpy as np
import pytest

import shapejit as sj

sys.path.insert(0, str(pathlib.Path(__file__).parent / "programs"))
import boids  # noqa: E402
import fluid  # noqa: E402
import image_filter  # noqa: E402
import kmeans  # noqa: E402
import mlp  # noqa: E402
import nbody  # noqa: E402
import rnn  # noqa: E402

CONFIG = {"log": {"recompiles": False}}
FAULTS = bool(os.environ.get("SHAPEJIT_FAULTS"))


def counts(f):
    s = f.stats()
    assert s["errors"] == 0 or s["eager_calls"] >= s["errors"], s  # a trace's error is NumPy's run, never the user's
    return {k: s[k] for k in ("compiles", "graph_breaks", "eager_calls", "segment_graphs")}


def compiled(f, **want):
    """What `f` compiled, broke on and ran in NumPy, as `want` says (the
    keys of counts() it names), but under fault injection."""
    if FAULTS:
        return
    c = counts(f)
    assert {k: c[k] for k in want} == want, c


def explains(f, *phrases):
    """`f.explain()` says one of `phrases`, but under fault injection."""
    if FAULTS:
        return
    text = f.explain()
    assert any(p in text for p in phrases), text


ALL = dict(compiles=1, graph_breaks=0, eager_calls=0, segment_graphs=0)  # one compile, nothing else


def close(a, b):
    single = np.asarray(b).dtype == np.float32
    np.testing.assert_allclose(a, b, rtol=1e-5 if single else 1e-9, atol=1e-6 if single else 1e-12)


def test_an_rnn_language_model_steps_one_int_token_at_a_time():
    params = rnn.init()
    mine, theirs = rnn.init_state(params), rnn.init_state(params)
    model = sj.jit(rnn.model, config=CONFIG)
    tokens = [3, 17, 5, 9, 9, 40, 2, 63, 0, 11, 3, 17]
    for t in tokens:
        close(model(params, t, mine), rnn.model(params, t, theirs))
        close(mine, theirs)
    # The token is a value: its first two calls specialize it, then it is
    # an input of the one kernel every later token runs.
    compiled(model, compiles=2, graph_breaks=0, eager_calls=0, segment_graphs=0)
    for t in range(20, 64):
        model(params, t, mine)
    compiled(model, compiles=2)


def test_a_state_space_model_written_with_einops():
    pytest.importorskip("einops")  # python/requirements-dev.txt installs it
    import ssm
    m = ssm.Mamba(ssm.init())
    step = sj.jit(ssm.Mamba.__call__, config=CONFIG)
    rng = np.random.default_rng(1)
    for length in (6, 6, 8, 6):
        x = rng.standard_normal((2, length, 16))
        close(step(m, x), m(x))
    # The positions' Python loop reads the length: a compile for each of
    # the first two, then a break that segments take.
    compiled(step, compiles=2, eager_calls=0)


def test_a_fluid_solver_advects_by_integer_index_arrays():
    rng = np.random.default_rng(0)
    state = [rng.standard_normal((10, 10)) * 0.1 for _ in range(4)]
    mine, theirs = [a.copy() for a in state], [a.copy() for a in state]
    vel = sj.jit(fluid.vel_step, config=CONFIG)
    for _ in range(3):
        u, v = vel(*mine, 1e-4, 0.1)
        uu, vv = fluid.vel_step(*theirs, 1e-4, 0.1)
        close(u, uu)
        close(v, vv)
        for a, b in zip(mine, theirs):
            close(a, b)
        # As the solver's callers do: its results are the next call's fields.
        assert (u is mine[2]) == (uu is theirs[2])
        mine, theirs = [u, v, mine[2], mine[3]], [uu, vv, theirs[2], theirs[3]]
    # From the second call on, u is u0 (the first call's results are its
    # inputs' arrays): a write into an input another one shares is NumPy's
    # to run, which reads it through both names.
    compiled(vel, compiles=1, graph_breaks=0, eager_calls=2, segment_graphs=0)


def test_an_mlp_training_loop():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 8))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0)
    mine = mlp.init(8, 16, 3)
    theirs = copy.deepcopy(mine)
    vm = {k: np.zeros_like(v) for k, v in mine.items()}
    vt = copy.deepcopy(vm)
    step = sj.jit(mlp.train_step, config=CONFIG)
    for epoch in range(2):
        for i in range(0, 120, 40):
            close(step(mine, vm, X[i:i + 40], y[i:i + 40]), mlp.train_step(theirs, vt, X[i:i + 40], y[i:i + 40]))
            for k in mine:
                close(mine[k], theirs[k])
    # `d[np.arange(n), y] -= 1`, a write at two index arrays, is a scatter:
    # the whole step compiles, once.
    compiled(step, **ALL)


def test_a_flock_of_boids():
    mine, theirs = boids.Flock(40), boids.Flock(40)
    step = sj.jit(boids.Flock.step, config=CONFIG)
    for _ in range(4):
        close(step(mine), theirs.step())
        close(mine.vel, theirs.vel)
    # np.subtract.outer and np.divide(..., out=, where=) compiled.
    compiled(step, **ALL)


def test_an_image_filter():
    rng = np.random.default_rng(0)
    edges = sj.jit(image_filter.edges, config=CONFIG)
    for shape in ((24, 24), (24, 24), (16, 30), (24, 24)):
        img = rng.random(shape)
        (mag, mask), (mag_n, mask_n) = edges(img), image_filter.edges(img)
        close(mag, mag_n)
        assert mask.dtype == mask_n.dtype and np.array_equal(mask, mask_n)
    # Python's max() of an array's max and a float branches on its data, and
    # the mask is cast to uint8, a dtype shapejit lacks: two cuts, the
    # uint8 mask NumPy's, given back as it made it.
    compiled(edges, graph_breaks=4, eager_calls=0, segment_graphs=2)
    explains(edges, "branches on tensor data")
    explains(edges, "a cast to uint8, a dtype shapejit lacks")


def test_k_means():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((90, 2))
    X[:30] += 4
    X[30:60] -= 4
    step = sj.jit(kmeans.kmeans_step, config=CONFIG)
    mine = theirs = X[:3].copy()
    for _ in range(5):
        mine, labels, inertia = step(X, mine)
        theirs, labels_n, inertia_n = kmeans.kmeans_step(X, theirs)
        close(mine, theirs)
        assert np.array_equal(labels, labels_n)
        close(inertia, inertia_n)
    compiled(step, **ALL)


def test_an_n_body_integrator():
    rng = np.random.default_rng(0)
    pos, vel, mass = rng.standard_normal((16, 3)), rng.standard_normal((16, 3)) * 0.1, rng.random(16)
    mine, theirs = (pos.copy(), vel.copy()), (pos.copy(), vel.copy())
    step = sj.jit(nbody.step, config=CONFIG)
    for _ in range(4):
        close(step(*mine, mass, 0.01), nbody.step(*theirs, mass, 0.01))
        close(mine[0], theirs[0])
        close(mine[1], theirs[1])
    compiled(step, **ALL)
