"""Random NumPy programs, for the differential fuzzer (fuzz_numpy.py).

A program is data (a dict that JSON keeps): its inputs, each a dtype, a shape
over the size variables s0, s1, s2 (or 1), and how it is passed (a view that
is not contiguous, a place in a pytree); the source of a function written in
plain NumPy; the policy mode it is jitted under; and the sizes of each call.
The source is built step by step against NumPy itself on the first call's
arrays, so that most programs run (a step NumPy refuses there is drawn
again); later calls change the sizes, and may then fail: NumPy's exception
is then the answer shapejit must give too.

`check(program)` runs every call through NumPy and through @shapejit.jit and
returns the first difference (value, dtype, shape, pytree, exception type),
or None.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
from hypothesis import strategies as st

SIZE_VARS = ("s0", "s1", "s2")
SIZES = (0, 1, 2, 3, 4, 5, 7)
DTYPES = ("float32", "float64", "int32", "int64", "bool")
MODES = ("start_dynamic", "start_static", "always_dynamic", "always_static", "bucketed")
# Masks draw the data-dependent steps too (row masks, nonzero, argwhere,
# flatnonzero, extract, compress): fuzz_numpy.py --data-dependent. Off, the
# draws are the ones from before these steps, so that the CI smoke's fixed
# seed keeps drawing the programs it always drew (any other draw shifts
# every program after it).
DATA_DEPENDENT_STEPS = False
# compile.async (fuzz_numpy.py --async): calls run on stand-ins while their
# kernels compile, whichever runner a stand-in picks.
ASYNC_COMPILE = False

UNARY = ("np.exp({})", "np.log({})", "np.sqrt({})", "np.abs({})", "-{}", "np.tanh({})", "np.sin({})", "np.floor({})",
         "np.ceil({})", "np.round({})", "np.sign({})", "np.square({})", "np.log1p({})", "np.expm1({})",
         "np.arctan({})", "np.isnan({})", "np.isfinite({})", "np.logical_not({})", "~{}", "np.reciprocal({})",
         "np.trunc({})", "np.cbrt({})", "{}.astype(np.float32)", "np.clip(np.nan_to_num({}), -1e6, 1e6).astype(np.int64)",
         "{}.astype(bool)", "np.clip({}, -1, 2)", "np.nan_to_num({})")
# Not drawn: a cast of NaN or inf to an integer (NumPy's value is the
# platform's), and np.signbit / np.copysign of a NaN (NumPy leaves a NaN's
# sign to the platform's math library).
BINARY = ("{} + {}", "{} - {}", "{} * {}", "{} / {}", "{} // {}", "{} % {}", "{} ** {}", "np.maximum({}, {})",
          "np.minimum({}, {})", "{} < {}", "{} == {}", "{} >= {}", "{} & {}", "{} | {}", "np.arctan2({}, {})",
          "np.hypot({}, {})", "np.where({} > 0, {}, 0)", "np.logaddexp({}, {})", "np.fmax({}, {})",
          "{} @ {}", "np.concatenate([{}, {}], axis=0)", "np.stack([{}, {}])",
          "np.isclose({}, {})")
SCALAR = ("{} + 1.5", "{} * 2", "3 - {}", "{} / 2", "{} // 2", "{} % 3", "{} ** 2", "2 ** {}", "{} > 1",
          "{} * np.float32(0.5)", "np.int32(3) * {}")
REDUCE = ("{}.sum({})", "{}.mean({})", "{}.max({})", "{}.min({})", "{}.prod({})", "{}.any({})", "{}.all({})",
          "np.var({}{})", "np.std({}{})", "{}.argmax({})", "np.cumsum({}{})", "np.sort({}{})", "np.argsort({}{}, kind=\"stable\")",
          "np.count_nonzero({}{})", "np.median({}{})", "np.ptp({}{})")
SHAPE = ("{}.T", "{}.reshape(-1)", "{}[None]", "{}[..., None]", "np.expand_dims({}, 0)", "np.squeeze({})",
         "np.flip({}, 0)", "np.flip({})", "{}[::-1]", "np.tile({}, 2)", "np.repeat({}, 2, axis=0)", "np.pad({}, 1)",
         "np.tril({})", "np.triu({}, 1)", "np.moveaxis({}, 0, -1)", "np.swapaxes({}, 0, -1)", "{}.copy()",
         "np.ravel({})", "np.cumprod({}, axis=0)", "np.diff({}, axis=0)", "np.roll({}, 1, axis=0)",
         "np.atleast_2d({})", "np.broadcast_to({}, (2,) + {}.shape)")
SIZED = ("np.arange({0}.shape[0])", "np.zeros({0}.shape)", "np.ones_like({0}) * {0}.size",
         "{0} * {0}.shape[0]", "{0} / float({0}.shape[-1]) ** 0.5", "np.full({0}.shape, len({0}))",
         "{0} + np.arange({0}.shape[-1])", "np.eye({0}.shape[0])", "{0}.reshape({0}.shape[0], -1)",
         "{0} / np.sqrt({0}.shape[-1])")


# What rounds (its result is within an ulp or two of NumPy's, not equal:
# shapejit's exp and NumPy's are different approximations), and what turns
# an ulp into a different answer; the second is not drawn over the first.
INEXACT = ("np.exp", "np.log", "np.sqrt", "np.tanh", "np.sin", "np.arctan", "np.expm1", "np.log1p", "np.cbrt",
           "np.hypot", "np.logaddexp", "np.reciprocal", " / ", ".mean", "np.var", "np.std", "np.median", "**",
           "np.square", "@", ".prod", "np.cumprod", "np.sqrt(")
DISCONTINUOUS = ("np.floor", "np.ceil", "np.round", "np.trunc", "//", "%", "np.sign", " < ", " == ", " >= ", " > ",
                 "np.isclose", "astype(np.int64)", "astype(bool)", "arg", "np.asarray(", "np.count_nonzero",
                 "np.logical_not", "~", " & ", " | ", "np.where", "np.isfinite", "np.isnan", "np.clip", "np.maximum",
                 "np.minimum", "np.fmax", ".max", ".min", "np.ptp", "np.sort", "np.median")


@st.composite
def slices(draw, rank):
    """An index of `rank` slices (any step, negative too), ints, None and ..."""
    parts = []
    for _ in range(draw(st.integers(1, max(1, rank)))):
        kind = draw(st.sampled_from(("slice", "slice", "int", "none", "ellipsis")))
        if kind == "slice":
            bound = st.one_of(st.none(), st.integers(-8, 8), st.sampled_from((2**62, -(2**62), 2**63 - 1)))
            step = draw(st.one_of(st.none(), st.integers(-4, 4).filter(bool), st.sampled_from((2**63 - 1, -(2**62)))))
            start, stop = draw(bound), draw(bound)
            parts.append(":".join("" if v is None else str(v) for v in (start, stop, step)))
        elif kind == "int":
            parts.append(str(draw(st.integers(-3, 3))))
        elif kind == "none":
            parts.append("None")
        elif "..." not in parts:
            parts.append("...")
    return ", ".join(parts) if parts else ":"


@st.composite
def programs(draw):
    n_inputs = draw(st.integers(1, 3))
    inputs = []
    for i in range(n_inputs):
        rank = draw(st.integers(0, 3))
        inputs.append({
            "name": "abc"[i],
            "dtype": draw(st.sampled_from(DTYPES)),
            "shape": [draw(st.sampled_from(SIZE_VARS + (1,))) for _ in range(rank)],
            "view": draw(st.sampled_from(("plain", "plain", "strided", "transposed", "reversed"))) if rank else "plain",
        })
    calls = draw(st.lists(st.fixed_dictionaries({v: st.sampled_from(SIZES) for v in SIZE_VARS}), min_size=1, max_size=4))
    program = {"inputs": inputs, "calls": calls, "mode": draw(st.sampled_from(MODES)),
               "tree": draw(st.sampled_from(("flat", "dict", "list"))), "seed": draw(st.integers(0, 2**16)), "body": []}
    env = dict(zip((x["name"] for x in inputs), make_args(program, calls[0])))
    inexact = set()
    for k in range(draw(st.integers(1, 7))):
        for _attempt in range(4):
            line = draw(steps(env))
            uses = set(re.findall(r"\b(v\d+|[abc])\b", line))
            if uses & inexact and any(m in line for m in DISCONTINUOUS):
                continue  # an ulp of difference would flip the result: not a difference worth finding
            value = _try(line, env)
            if value is not None:
                break
        else:
            continue
        name = f"v{k}"
        program["body"].append(f"{name} = {line}")
        env[name] = value
        if uses & inexact or any(m in line for m in INEXACT):
            inexact.add(name)
    # Every value computed is returned: shapejit, like torch.compile and
    # jax.jit, does not run what no output needs, so an error only dead code
    # would raise is not raised (docs/python.md); the fuzzer compares what
    # is computed.
    computed = [n for n in env if n.startswith("v")]
    out = computed + draw(st.lists(st.sampled_from(list(env)), min_size=0 if computed else 1, max_size=2))
    program["returns"] = draw(st.sampled_from(("tuple", "dict", "one"))) if len(out) == 1 else draw(st.sampled_from(("tuple", "dict")))
    program["outputs"] = out
    return program


@st.composite
def steps(draw, env):
    """One line's expression over the values so far."""
    names = list(env)
    pick = lambda: draw(st.sampled_from(names))  # noqa: E731
    kind = draw(st.sampled_from(("unary", "binary", "binary", "scalar", "reduce", "shape", "index", "sized", "branch", "mask")))
    if kind == "unary":
        return draw(st.sampled_from(UNARY)).format(pick())
    if kind == "binary":
        return draw(st.sampled_from(BINARY)).format(pick(), pick())
    if kind == "scalar":
        return draw(st.sampled_from(SCALAR)).format(pick())
    if kind == "reduce":
        x = pick()
        rank = np.ndim(env[x])
        axis = draw(st.one_of(st.none(), st.integers(-rank, rank - 1) if rank else st.none()))
        keep = draw(st.booleans())
        template = draw(st.sampled_from(REDUCE))
        args = [] if axis is None else [f"axis={axis}"]
        if keep and axis is not None and not template.startswith(("np.cumsum", "np.sort", "np.argsort", "{}.arg")):
            args.append("keepdims=True")
        text = ", ".join(args)
        return template.format(x, (", " + text) if template.startswith("np.") and text else text)
    if kind == "shape":
        return draw(st.sampled_from(SHAPE)).format(*([pick()] * 2))
    if kind == "index":
        x = pick()
        choice = draw(st.sampled_from(("slices", "array", "take")))
        if choice == "slices":
            return f"{x}[{draw(slices(np.ndim(env[x])))}]"
        idx = draw(st.lists(st.integers(-4, 4), min_size=0, max_size=4))
        if choice == "take":
            return f"np.take({x}, {idx}, axis=0)"
        return f"{x}[np.array({idx}, dtype=np.int64)]"
    if kind == "sized":
        return draw(st.sampled_from(SIZED)).format(pick())
    if kind == "branch":
        # Both arms the same kind of value: a jitted function keeps one
        # structure of results (docs/python.md).
        x = pick()
        arrays = [n for n in names if isinstance(env[n], np.ndarray)]
        y, z = (draw(st.sampled_from(arrays)), draw(st.sampled_from(arrays))) if arrays else (x, x)
        dim = draw(st.integers(0, 2))
        bound = draw(st.sampled_from((0, 1, 2, 3)))
        return f"({y} if {x}.shape[{dim}] > {bound} else {z}) if {x}.ndim > {dim} else {x}"
    x = pick()
    if DATA_DEPENDENT_STEPS:
        return draw(st.sampled_from((f"{x}[{x} > 0]", f"{x}[np.asarray({x}, bool)]", f"{x}[np.sum({x}, axis=-1) > 0]",
                                     f"np.flatnonzero({x})", f"np.argwhere({x} > 0)", f"np.nonzero({x})[-1]",
                                     f"np.extract({x} < 1, {x})", f"np.compress(np.ravel({x}) > 0, {x})")))
    return f"{x}[{x} > 0]" if draw(st.booleans()) else f"{x}[np.asarray({x}, bool)]"


def _try(line, env):
    """NumPy's value of `line` on `env`, or None where NumPy refuses it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = eval(line, {"np": np}, dict(env))  # noqa: S307 - our own generated source
        except Exception:  # noqa: BLE001 - any refusal: draw another step
            return None
    return value if isinstance(value, (np.ndarray, np.generic)) and np.size(value) <= 4096 else None


def make_args(program, sizes):
    """The call's arguments for `sizes`, in the program's views: values in
    quarters, so that sums of a few are exact in every float type."""
    rng = np.random.default_rng(program["seed"] + sum(sizes.values()) * 7919)
    args = []
    for x in program["inputs"]:
        shape = tuple(sizes[d] if isinstance(d, str) else d for d in x["shape"])
        base_shape = list(shape)
        if x["view"] == "strided":
            base_shape[-1] *= 2
        elif x["view"] == "transposed":
            base_shape.reverse()
        base = rng.integers(-12, 13, size=base_shape)
        if x["dtype"] == "bool":
            base = base > 0
        elif x["dtype"].startswith("float"):
            base = base / 4
        base = base.astype(x["dtype"])
        if x["view"] == "strided":
            base = base[..., ::2]
        elif x["view"] == "transposed":
            base = base.T
        elif x["view"] == "reversed":
            base = base[::-1]
        args.append(base)
    return args


def source(program):
    """The function's source, as a NumPy user would write it."""
    names = [x["name"] for x in program["inputs"]]
    if program["tree"] == "flat":
        head, unpack = f"def f({', '.join(names)}):", []
    elif program["tree"] == "dict":
        head, unpack = "def f(p):", [f"    {n} = p[{n!r}]" for n in names]
    else:
        head, unpack = "def f(p):", [f"    {n} = p[1][{i}]" for i, n in enumerate(names)]
    outs = program["outputs"]
    if program["returns"] == "one":
        ret = outs[0]
    elif program["returns"] == "tuple":
        ret = "(" + ", ".join(outs) + ",)"
    else:
        ret = "{" + ", ".join(f"'r{i}': {o}" for i, o in enumerate(outs)) + "}"
    return "\n".join([head, *unpack, *(f"    {line}" for line in program["body"]), f"    return {ret}", ""])


def _call_args(program, args):
    if program["tree"] == "flat":
        return args
    if program["tree"] == "dict":
        return [{x["name"]: a for x, a in zip(program["inputs"], args)}]
    return [("unused", list(args))]


def _run(fn, program, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*_call_args(program, args)), None
        except Exception as e:  # noqa: BLE001 - the exception is the answer to compare
            return None, e


def _leaves(tree, path="out"):
    if isinstance(tree, dict):
        for k in sorted(tree):
            yield from _leaves(tree[k], f"{path}[{k!r}]")
    elif isinstance(tree, (tuple, list)):
        for i, v in enumerate(tree):
            yield from _leaves(v, f"{path}[{i}]")
    else:
        yield path, tree


def _structure(tree):
    if isinstance(tree, dict):
        return ("dict", tuple((k, _structure(tree[k])) for k in sorted(tree)))
    if isinstance(tree, (tuple, list)):
        return (type(tree).__name__, tuple(_structure(v) for v in tree))
    return "leaf"


def _differs(path, got, want, single):
    # A NumPy scalar where shapejit gives a 0-d array is the same value: a
    # traced value does not know whether NumPy would have made it a scalar
    # (docs/python.md). Any other kind of object is a difference.
    numeric = (np.ndarray, np.generic)
    if not (isinstance(got, numeric) and isinstance(want, numeric)) and type(got) is not type(want):
        return f"{path}: a {type(got).__name__}, NumPy gives a {type(want).__name__}"
    g, w = np.asarray(got), np.asarray(want)
    if g.dtype != w.dtype:
        return f"{path}: dtype {g.dtype}, NumPy gives {w.dtype}"
    if g.shape != w.shape:
        return f"{path}: shape {g.shape}, NumPy gives {w.shape}"
    if w.dtype.kind == "f":
        # A float64 result of float32 steps carries their rounding (shapejit's
        # float32 exp is within an ulp or two of NumPy's, not equal to it).
        tol = 1e-4 if w.dtype == np.float32 or single else 1e-9
        finite = np.abs(w[np.isfinite(w)])
        atol = tol * (1 + (finite.max() if finite.size else 0))
        if not np.allclose(g, w, rtol=tol, atol=atol, equal_nan=True):
            bad = ~np.isclose(g, w, rtol=tol, atol=atol, equal_nan=True)
            return f"{path}: {g[bad][:4]} where NumPy gives {w[bad][:4]}"
    elif not np.array_equal(g, w):
        return f"{path}: {g.ravel()[:6]} where NumPy gives {w.ravel()[:6]}"
    return None


def check(program, jit):
    """The first difference between NumPy and `jit` (shapejit.jit) on every
    call of `program`, as a line that says where; None when they agree."""
    text = source(program)
    single = "float32" in text or any(x["dtype"] == "float32" for x in program["inputs"])
    scope = {"np": np}
    exec(compile(text, "<fuzz program>", "exec"), scope)  # noqa: S102 - our own generated source
    plain = scope["f"]
    config = {"policy": {"mode": program["mode"]}, "log": {"recompiles": False}, "cache": {"disk": {"max_mb": 0}}}
    if ASYNC_COMPILE:
        config["compile"] = {"async": True}
    jitted = jit(plain, config=config)
    for k, sizes in enumerate(program["calls"]):
        want, want_error = _run(plain, program, make_args(program, sizes))
        got, got_error = _run(jitted, program, make_args(program, sizes))
        where = f"call {k} (sizes {sizes})"
        if want_error is not None or got_error is not None:
            if want_error is None:
                return f"{where}: shapejit raised {type(got_error).__name__}: {got_error}; NumPy did not"
            if got_error is None:
                return f"{where}: NumPy raised {type(want_error).__name__}: {want_error}; shapejit did not"
            if not isinstance(got_error, type(want_error)):
                return f"{where}: shapejit raised {type(got_error).__name__}: {got_error}; NumPy {type(want_error).__name__}: {want_error}"
            continue
        if _structure(got) != _structure(want):
            return f"{where}: the result's structure {_structure(got)}, NumPy's {_structure(want)}"
        for (path, g), (_, w) in zip(_leaves(got), _leaves(want)):
            why = _differs(path, g, w, single)
            if why:
                return f"{where}: {why}"
    return None
