"""Random NumPy programs, for the differential fuzzer (fuzz_numpy.py).

A program is data (a dict that JSON keeps): its inputs, each a dtype, a shape
over the size variables s0, s1, s2 (or 1), and how it is passed (a view that
is not contiguous, a place in a pytree); the source of a function written in
plain NumPy; the policy mode it is jitted under; and the sizes of each call.
The source is built step by step against NumPy itself on the first call's
arrays, so that most programs run (a step NumPy refuses there is drawn
again); later calls change the sizes, and may then fail: NumPy's exception
is then the answer shapejit must give too.

A program may also hold state, arrays that live across its calls where
programs keep them (module globals, a closure's cells, an object's
attributes reached as a global, through `self` of a jitted bound method, or
from an enclosing function), and write into them and into its arguments:
blocks, masks, index arrays, in-place operators, through views and aliases.
Steps may take Python ints from anywhere in the int64 range and past it,
as operands and as an int argument `n` whose value changes from call to
call, and arguments may be ndarray subclasses (masked arrays, matrices).

`check(program)` runs every call through NumPy and through @shapejit.jit and
returns the first difference (value, dtype, shape, pytree, exception type,
or an argument or a state array after the call), or None.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
from hypothesis import strategies as st

from compare import differs, leaves, structure

SIZE_VARS = ("s0", "s1", "s2")
SIZES = (0, 1, 2, 3, 4, 5, 7)
DTYPES = ("float32", "float64", "int32", "int64", "bool")
# Where a program keeps its state (see the module's text).
HOLDERS = ("global", "closure", "attr", "method", "enclosing")
# Python ints at the edges of int32 and int64 and past them.
BIG_INTS = (2**31 - 1, 2**31, -2**31, -2**31 - 1, 2**40, -2**40, 2**53 + 1, 2**62, 2**63 - 1, 2**63, -2**63, -2**63 - 1,
            2**64, 2**70, -2**70)
# Values of a program's int argument `n`: sizes, negatives, and past what a size can be.
INT_ARGS = (0, 1, 2, 3, 5, -1, -4, 2**31, 2**40, 2**61 + 3, 2**62, 2**63 - 1, -2**63, 2**64)
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
         "{}.astype(bool)", "np.clip({}, -1, 2)", "np.nan_to_num({})", "np.nanmedian({})", "np.quantile({}, 0.3)",
         "np.percentile({}, [10, 90])", "np.gradient({}.ravel())", "np.unique({})", "np.fmod({}, 2)", "np.modf({})[0]",
         "np.heaviside({}, 0.5)", "np.sinc({})", "np.trapezoid({})", "np.ediff1d({})", "np.interp({}, [0, 1, 2], [1, 0, 3])",
         "np.nanvar({})", "np.histogram({}, 3, range=(-2, 2))[0]", "np.isin({}, [0, 1])", "np.cov({})", "np.unwrap({})",
         "np.unique({}, return_counts=True)[1]", "np.nanquantile({}, [0.5])")
# Not drawn: a cast of NaN or inf to an integer (NumPy's value is the
# platform's), and np.signbit / np.copysign of a NaN (NumPy leaves a NaN's
# sign to the platform's math library).
BINARY = ("{} + {}", "{} - {}", "{} * {}", "{} / {}", "{} // {}", "{} % {}", "{} ** {}", "np.maximum({}, {})",
          "np.minimum({}, {})", "{} < {}", "{} == {}", "{} >= {}", "{} & {}", "{} | {}", "np.arctan2({}, {})",
          "np.hypot({}, {})", "np.where({} > 0, {}, 0)", "np.logaddexp({}, {})", "np.fmax({}, {})",
          "{} @ {}", "np.concatenate([{}, {}], axis=0)", "np.stack([{}, {}])",
          "np.isclose({}, {})", "np.polyval({}.ravel()[:3], {})", "np.correlate({}.ravel(), {}.ravel())",
          "np.append({}, {})", "np.fmod({}, {})", "np.select([{} > 0], [{}], -1)", "np.heaviside({}, {})")
SCALAR = ("{} + 1.5", "{} * 2", "3 - {}", "{} / 2", "{} // 2", "{} % 3", "{} ** 2", "2 ** {}", "{} > 1",
          "{} * np.float32(0.5)", "np.int32(3) * {}")
REDUCE = ("{}.sum({})", "{}.mean({})", "{}.max({})", "{}.min({})", "{}.prod({})", "{}.any({})", "{}.all({})",
          "np.var({}{})", "np.std({}{})", "{}.argmax({})", "np.cumsum({}{})", "np.sort({}{})", "np.argsort({}{}, kind=\"stable\")",
          "np.count_nonzero({}{})", "np.median({}{})", "np.ptp({}{})", "np.add.reduce({}{})", "np.multiply.reduce({}{}, initial=2)",
          "np.maximum.reduce({}{}, initial=-1)", "np.minimum.reduce({}{}, where=True, initial=3)", "np.logical_or.reduce({}{})",
          "np.add.accumulate({}{})")
SHAPE = ("{}.T", "{}.reshape(-1)", "{}[None]", "{}[..., None]", "np.expand_dims({}, 0)", "np.squeeze({})",
         "np.flip({}, 0)", "np.flip({})", "{}[::-1]", "np.tile({}, 2)", "np.repeat({}, 2, axis=0)", "np.pad({}, 1)",
         "np.tril({})", "np.triu({}, 1)", "np.moveaxis({}, 0, -1)", "np.swapaxes({}, 0, -1)", "{}.copy()",
         "np.ravel({})", "np.cumprod({}, axis=0)", "np.diff({}, axis=0)", "np.roll({}, 1, axis=0)",
         "np.atleast_2d({})", "np.broadcast_to({}, (2,) + {}.shape)")
BIG = ("{0} + {1}", "{0} - {1}", "{0} * {1}", "{0} // {1}", "{0} == {1}", "{0} != {1}", "{0} < {1}", "{0} >= {1}",
       "{1} > {0}", "np.maximum({0}, {1})", "np.where({0} > 0, {0}, {1})", "np.clip({0}, -{1}, {1})",
       "{0}.shape[0] * {1}", "len({0}) * {1} % 7", "np.full({0}.shape, {1})", "{0} & {1}")
# Steps that read data (a branch on it, a number of it, a NumPy function
# with no op): the call runs as compiled segments cut there.
CUT = ("({0} * 2 if {1}.sum() > 0 else {0} - 1)", "{0} + float(np.sum({1}))", "np.partition({0}.ravel(), 0)",
       "({0}.copy() if {1}.any() else {0})", "{0} * int(np.count_nonzero({1}))")
INT_ARG = ("n * n", "{0} + n", "{0} * n", "{0}.shape[0] + n", "{0}.shape[0] * n % 7", "n * 2**61 % 7", "{0}[:n]",
           "{0} == n", "{0} < n", "np.full({0}.shape, n)", "n - {0}.size", "{0}[n % 3:]")
# Writes: into a block, a mask, index arrays, in place, through a view.
WRITES = ("{t}[{key}] = {val}", "{t}[{key}] {op}= {val}", "{t} {op}= {val}", "{t}[{t} > 0] = {val}",
          "{t}[np.array({idx})] = {val}", "{t}.T[{key}] = {val}", "{t}[...] = {val}", "{t}[{key}][...] = {val}")
INPLACE = ("+", "-", "*", "/", "//", "%", "**", "&", "|", "^")
SIZED = ("np.arange({0}.shape[0])", "np.zeros({0}.shape)", "np.ones_like({0}) * {0}.size",
         "{0} * {0}.shape[0]", "{0} / float({0}.shape[-1]) ** 0.5", "np.full({0}.shape, len({0}))",
         "{0} + np.arange({0}.shape[-1])", "np.eye({0}.shape[0])", "{0}.reshape({0}.shape[0], -1)",
         "{0} / np.sqrt({0}.shape[-1])")


# What rounds (its result is within an ulp or two of NumPy's, not equal:
# shapejit's exp and NumPy's are different approximations), and what turns
# an ulp into a different answer; the second is not drawn over the first.
INEXACT = ("np.exp", "np.log", "np.sqrt", "np.tanh", "np.sin", "np.arctan", "np.expm1", "np.log1p", "np.cbrt",
           "np.hypot", "np.logaddexp", "np.reciprocal", " / ", ".mean", "np.var", "np.std", "np.median", "**",
           "np.square", "@", ".prod", "np.cumprod", "np.sqrt(", "np.cov", "np.nanvar", "np.nanquantile", "np.quantile",
           "np.percentile", "np.nanmedian", "np.gradient", "np.interp", "np.unwrap", "np.sinc", "np.trapezoid",
           "np.polyval", "np.correlate", "np.logaddexp", "np.arctan2", "np.hypot")
DISCONTINUOUS = ("np.floor", "np.ceil", "np.round", "np.trunc", "//", "%", "np.sign", " < ", " == ", " >= ", " > ",
                 "np.isclose", "astype(np.int64)", "astype(bool)", "arg", "np.asarray(", "np.count_nonzero",
                 "np.logical_not", "~", " & ", " | ", "np.where", "np.isfinite", "np.isnan", "np.clip", "np.maximum",
                 "np.minimum", "np.fmax", ".max", ".min", "np.ptp", "np.sort", "np.median",
                 "np.sin")  # periodic: an ulp of exp(48) is many periods


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
        views = ("plain", "plain", "strided", "transposed", "reversed", "masked") + (("matrix",) if rank == 2 else ())
        inputs.append({
            "name": "abc"[i],
            "dtype": draw(st.sampled_from(DTYPES)),
            "shape": [draw(st.sampled_from(SIZE_VARS + (1,))) for _ in range(rank)],
            "view": draw(st.sampled_from(views)) if rank else "plain",
        })
    calls = draw(st.lists(st.fixed_dictionaries({v: st.sampled_from(SIZES) for v in SIZE_VARS}), min_size=1, max_size=4))
    program = {"inputs": inputs, "calls": calls, "mode": draw(st.sampled_from(MODES)),
               "tree": draw(st.sampled_from(("flat", "dict", "list"))), "seed": draw(st.integers(0, 2**16)), "body": []}
    # State that lives across the calls, in one of the places programs keep it.
    program["state"] = [{"name": f"g{i}", "dtype": draw(st.sampled_from(DTYPES)),
                         "shape": draw(st.lists(st.sampled_from((0, 1, 2, 3, 5)), min_size=0, max_size=3))}
                        for i in range(draw(st.integers(0, 2)))]
    if draw(st.integers(0, 3)) == 0:  # a Python int the program counts with (a step, an optimizer's t)
        program["state"].append({"name": "g2", "dtype": "pyint", "shape": []})
    program["holder"] = draw(st.sampled_from(HOLDERS))
    if draw(st.booleans()):
        for c in calls:
            c["n"] = draw(st.sampled_from(INT_ARGS))
    env = dict(zip((x["name"] for x in inputs), make_args(program, calls[0])))
    env.update(make_state(program))
    if "n" in calls[0]:
        env["n"] = calls[0]["n"]
    inexact = set()
    k = 0
    for _ in range(draw(st.integers(1, 7))):
        for _attempt in range(4):
            is_write, line = draw(steps(env))
            uses = set(re.findall(r"\b(v\d+|[abc]|g\d)\b", line))
            if uses & inexact and any(m in line for m in DISCONTINUOUS):
                continue  # an ulp of difference would flip the result: not a difference worth finding
            if is_write:
                target = re.match(r"(\w+)", line).group(1)
                if uses - {target} & inexact and np.asarray(env[target]).dtype.kind in "iub" and target != "g2":
                    continue  # an inexact value cast to an integer: an ulp may change it
                if _exec_write(line, env):
                    break
                continue
            value = _try(line, env)
            if value is not None:
                break
        else:
            continue
        if is_write:
            program["body"].append(line)
            if uses & inexact or any(m in line for m in INEXACT) or "/" in line:
                inexact.update(uses)
            continue
        name = f"v{k}"
        k += 1
        program["body"].append(f"{name} = {line}")
        env[name] = value
        if uses & inexact or any(m in line for m in INEXACT):
            inexact.add(name)
    # Every value computed is returned: shapejit, like torch.compile and
    # jax.jit, does not run what no output needs, so an error only dead code
    # would raise is not raised (docs/python.md); the fuzzer compares what
    # is computed.
    computed = [n for n in env if n.startswith("v")]
    arrays = [n for n in env if not n.startswith("g") and n != "n"]
    out = computed + draw(st.lists(st.sampled_from(arrays), min_size=0 if computed else 1, max_size=2))
    program["returns"] = draw(st.sampled_from(("tuple", "dict", "one"))) if len(out) == 1 else draw(st.sampled_from(("tuple", "dict")))
    program["outputs"] = out
    return program


def _powers_a_python_int(line, env):
    """Whether `line` takes a power with a Python int in it (or an array of
    them): with another call's n (2**62), 2 ** n or n ** v is a number no
    memory holds, which Python works out square by square until the machine
    runs out."""
    def unbounded(v):  # a Python int, or an object array of them (NumPy's of 2**70)
        return type(v) is int or (isinstance(v, np.ndarray) and v.dtype == object)
    return "**" in line and any(unbounded(env.get(name)) for name in re.findall(r"[A-Za-z_]\w*", line))


def _stacks_a_matrix(line, env):
    """Whether `line` stacks an np.matrix: NumPy 2.4's np.stack of a matrix
    and an array of another dtype writes past the array it makes (the heap
    of the process that ran it is corrupt, and a later free aborts)."""
    return "np.stack(" in line and any(isinstance(env.get(name), np.matrix) for name in re.findall(r"[A-Za-z_]\w*", line))


def _adds_an_axis_to_a_matrix(line, env):
    """Whether `line` indexes an np.matrix with None: the view is a matrix
    of rank 3, whose product (m * 2 is np.dot, in an expression or in a
    write's `*=`) writes past NumPy 2.4's buffers (a segfault, or a heap a
    later free finds corrupt), with shapejit not imported."""
    return any(isinstance(v, np.matrix) and re.search(rf"\b{re.escape(name)}\[[^\]]*None", line) for name, v in env.items())


def _reads_uninitialized(line, env):
    """Whether `line` takes np.gradient of a masked array: NumPy's result
    (np.empty_like of the masked array, filled where it is not masked)
    holds whatever that memory held, which changes from run to run."""
    return "np.gradient(" in line and any(isinstance(env.get(name), np.ma.MaskedArray) for name in re.findall(r"[A-Za-z_]\w*", line))


def _numpy_cannot(line, env):
    """Whether NumPy cannot run `line` on `env` and stay well: a power that
    no memory holds, a stack that corrupts NumPy's heap, or a matrix made
    of rank 3."""
    return (_powers_a_python_int(line, env) or _stacks_a_matrix(line, env) or _adds_an_axis_to_a_matrix(line, env) or
            _reads_uninitialized(line, env))


def _exec_write(line, env):
    """Runs a statement (a write) on `env` as NumPy does; False, with env as
    it was, where NumPy refuses it on these values."""
    if _numpy_cannot(line, env):
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            trial = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in env.items()}
            exec(line, {"np": np}, trial)  # noqa: S102 - our own generated source
        except Exception:  # noqa: BLE001 - any refusal: draw another step
            return False
        try:
            exec(line, {"np": np}, env)  # noqa: S102 - the same, on the values themselves (views and aliases as they are)
        except Exception:  # noqa: BLE001 - refused there only (a read-only view): not drawn
            return False
    return True


@st.composite
def steps(draw, env):
    """One line over the values so far: (False, an expression) or (True, a
    write)."""
    arrays = [n for n, v in env.items() if isinstance(v, np.ndarray)]
    kinds = ("unary", "binary", "binary", "scalar", "reduce", "shape", "index", "sized", "branch", "mask", "write", "write",
             "alias", "big", "cut") + (("n", "n") if "n" in env else ()) + (("count",) if "g2" in env else ())
    kind = draw(st.sampled_from(kinds))
    if kind == "write" and arrays:
        return True, draw(writes(env, arrays))
    if kind == "count":
        return True, draw(st.sampled_from(("g2 += 1", "g2 = g2 * 3 % 7 + 1", "g2 -= 2")))
    return False, draw(expressions(env, kind))


@st.composite
def writes(draw, env, arrays):
    """A write into an array the program has: an argument, its state, a
    value, a view or an alias of one."""
    t = draw(st.sampled_from(arrays))
    names = [n for n in env if n != "n"]
    val = draw(st.one_of(st.sampled_from(("1", "2.5", "-3", "True", "0.25")), st.sampled_from(names),
                         st.sampled_from(names).map(lambda n: f"{n} * 2"), st.sampled_from(BIG_INTS).map(str)))
    template = draw(st.sampled_from(WRITES))
    return template.format(t=t, key=draw(slices(max(1, np.ndim(env[t])))), val=val, op=draw(st.sampled_from(INPLACE)),
                           idx=draw(st.lists(st.integers(-3, 3), min_size=0, max_size=3)))


@st.composite
def expressions(draw, env, kind):
    """One line's expression over the values so far."""
    names = [n for n in env if n != "n"]
    pick = lambda: draw(st.sampled_from(names))  # noqa: E731
    if kind == "alias":
        return pick()  # the same array under a new name: writes through it are writes into it
    if kind == "big":
        return draw(st.sampled_from(BIG)).format(pick(), draw(st.sampled_from(BIG_INTS)))
    if kind == "cut":
        return draw(st.sampled_from(CUT)).format(pick(), pick())
    if kind == "n":
        return draw(st.sampled_from(INT_ARG)).format(pick())
    if kind == "write":
        kind = "index"
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
        choice = draw(st.sampled_from(("slices", "array", "take", "pair")))
        if choice == "slices":
            return f"{x}[{draw(slices(np.ndim(env[x])))}]"
        idx = draw(st.lists(st.integers(-4, 4), min_size=0, max_size=4))
        if choice == "take":
            return f"np.take({x}, {idx}, axis=0)"
        if choice == "pair":  # index arrays broadcast together, with integers and slices between
            other = draw(st.lists(st.integers(-4, 4), min_size=len(idx), max_size=len(idx)) | st.integers(-4, 4).map(str))
            other = other if isinstance(other, str) else f"np.array({other}, dtype=np.int64)"
            between = draw(st.sampled_from(("", ":, ", "..., ")))
            first = f"np.array({idx}, dtype=np.int64)"
            return f"{x}[{first}, {between}{other}]" if draw(st.booleans()) else f"{x}[{other}, {between}{first}]"
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
    if _numpy_cannot(line, env):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = eval(line, {"np": np}, dict(env))  # noqa: S307 - our own generated source
        except Exception:  # noqa: BLE001 - any refusal: draw another step
            return None
    if type(value) in (int, bool):
        return value  # sizes and Python's integers, of any magnitude
    if isinstance(value, np.matrix) and value.ndim != 2:
        # A matrix of another rank (m[..., None]): NumPy 2.4's product of
        # one writes past its buffers (a segfault, or a heap a later free
        # finds corrupt), with shapejit not imported.
        return None
    return value if isinstance(value, (np.ndarray, np.generic)) and np.size(value) <= 4096 else None


def make_args(program, sizes):
    """The call's arguments for `sizes`, in the program's views: values in
    quarters, so that sums of a few are exact in every float type."""
    rng = np.random.default_rng(program["seed"] + sum(sizes[v] for v in SIZE_VARS) * 7919)
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
        elif x["view"] == "masked":
            base = np.ma.masked_array(base, mask=rng.integers(0, 2, size=base.shape).astype(bool))
        elif x["view"] == "matrix":
            base = np.asmatrix(base)
        args.append(base)
    return args


def make_state(program):
    """The program's state arrays as they are before its first call."""
    rng = np.random.default_rng(program["seed"] + 17)
    out = {}
    for g in program.get("state", ()):
        if g["dtype"] == "pyint":
            out[g["name"]] = 0
            continue
        base = rng.integers(-12, 13, size=g["shape"])
        out[g["name"]] = (base > 0 if g["dtype"] == "bool" else base / 4 if g["dtype"].startswith("float") else base).astype(g["dtype"])
    return out


def source(program):
    """The program's source, as a NumPy user would write it: the function
    `f`, where it keeps its state (HOLDERS), and `state()`, which gives the
    state arrays as they are bound now."""
    names = [x["name"] for x in program["inputs"]] + (["n"] if "n" in program["calls"][0] else [])
    state = [g["name"] for g in program.get("state", ())]
    holder = program.get("holder", "global")
    if program["tree"] == "flat":
        params, unpack = ", ".join(names), []
    elif program["tree"] == "dict":
        params, unpack = "p", [f"{n} = p[{n!r}]" for n in names]
    else:
        params, unpack = "p", [f"{n} = p[1][{i}]" for i, n in enumerate(names)]
    outs = program["outputs"]
    if program["returns"] == "one":
        ret = outs[0]
    elif program["returns"] == "tuple":
        ret = "(" + ", ".join(outs) + ",)"
    else:
        ret = "{" + ", ".join(f"'r{i}': {o}" for i, o in enumerate(outs)) + "}"
    # How the body names a state array: itself (with a global or nonlocal
    # declaration, so that `g0 += x` keeps it), or an object's attribute.
    prefix = {"attr": "s.", "enclosing": "s.", "method": "self."}.get(holder, "")
    body = [re.sub(r"\bg(\d)\b", prefix + r"g\1", line) for line in program["body"]]
    declare = [f"{'global' if holder == 'global' else 'nonlocal'} {', '.join(state)}"] if state and holder in ("global", "closure") else []
    lines = [*declare, *unpack, *body, f"return {ret}"]
    listing = ", ".join(f"{g!r}: {prefix}{g}" for g in state)
    if holder == "method":
        return "\n".join(["class M:", f"    def __init__(self{''.join(', ' + g for g in state)}):",
                          *([f"        self.{g} = {g}" for g in state] or ["        pass"]),
                          f"    def f(self, {params}):", *(f"        {x}" for x in lines),
                          "    def state(self):", f"        return {{{listing}}}", ""])
    if holder in ("closure", "enclosing"):
        inner = ["    class S:", "        pass", "    s = S()", *(f"    s.{g} = {g}" for g in state)] if holder == "enclosing" else []
        return "\n".join([f"def make({', '.join(state)}):", *inner, f"    def f({params}):", *(f"        {x}" for x in lines),
                          "    def state():", f"        return {{{listing}}}", "    return f, state", ""])
    head = ["class S:", "    pass", "s = S()"] if holder == "attr" else []
    return "\n".join([*head, f"def f({params}):", *(f"    {x}" for x in lines), "def state():", f"    return {{{listing}}}", ""])


def world(program):
    """One run's program: (f, state): the function and what gives its state
    arrays, made afresh, where the program keeps them."""
    scope = {"np": np}
    exec(compile(source(program), "<fuzz program>", "exec"), scope)  # noqa: S102 - our own generated source
    state = make_state(program)
    holder = program.get("holder", "global")
    if holder == "method":
        m = scope["M"](**state)
        return m.f, m.state
    if holder in ("closure", "enclosing"):
        return scope["make"](**state)
    if holder == "attr":
        for k, v in state.items():
            setattr(scope["s"], k, v)
    else:
        scope.update(state)
    return scope["f"], scope["state"]


def _call_args(program, args, sizes):
    args = list(args) + ([sizes["n"]] if "n" in sizes else [])
    names = [x["name"] for x in program["inputs"]] + (["n"] if "n" in sizes else [])
    if program["tree"] == "flat":
        return args
    if program["tree"] == "dict":
        return [dict(zip(names, args))]
    return [("unused", args)]


def _run(fn, program, args, sizes):
    """(result, exception, whether NumPy cast a NaN or an infinity to an
    integer on the way: a value the platform chooses, not NumPy; whether a
    reduction of NumPy's overflowed: which of its results are infinite or
    NaN is then its order's, inf * 0 being NaN where 0 * inf came first)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            out = fn(*_call_args(program, args, sizes)), None
        except Exception as e:  # noqa: BLE001 - the exception is the answer to compare
            out = None, e
    messages = [str(w.message) for w in seen]
    return (*out, any("invalid value encountered in cast" in m for m in messages),
            any("overflow encountered in reduce" in m or "overflow encountered in accumulate" in m for m in messages))


# Functions whose float result depends on the order of its sums (NumPy's
# pairwise one against a kernel's).
_SUMMING = re.compile(r"\b(sum|nansum|mean|nanmean|var|nanvar|std|nanstd|average|prod|nanprod|cumsum|nancumsum|cumprod|"
                      r"nancumprod|dot|vdot|inner|matmul|einsum|tensordot|trace|correlate|convolve|cov|corrcoef|norm|"
                      r"accumulate|reduce|polyval|trapezoid|gradient|interp)\b|@")
_INEXACT_LITERAL = re.compile(r"(?<![\w.])-?(\d{8,})(?![\w.])")


def order_sensitive(program):
    """Whether a sum of the program reads values past a float's exact
    integers: a body line with a literal of 2**24 or more (BIG_INTS), and a
    summing line that depends on it. Such a sum's float result is its
    order's (2**53 + 7 rounds one way or the other in float64, and a
    variance of such values cancels all that is left), so its values are
    no answer to compare; its dtype and shape still are."""
    tainted = set()
    for line in program["body"]:
        target, _, expr = line.rpartition(" = ")
        name = re.match(r"\s*(\w*)", target).group(1)  # what the line binds or writes into (`a[:2] = ...`: a)
        big = any(int(m) >= 2**24 for m in _INEXACT_LITERAL.findall(expr))
        if big or any(re.search(rf"\b{re.escape(t)}\b", expr) for t in tainted):
            if _SUMMING.search(expr):
                return True
            if name:
                tainted.add(name)
    return False


def check(program, jit):
    """The first difference between NumPy and `jit` (shapejit.jit) on every
    call of `program`, as a line that says where; None when they agree:
    results, exceptions, and the arguments and state arrays after each call."""
    text = source(program)
    single = "float32" in text or any(x["dtype"] == "float32" for x in program["inputs"] + program.get("state", []))
    loose = order_sensitive(program)
    plain, plain_state = world(program)
    mine, mine_state = world(program)
    config = {"policy": {"mode": program["mode"]}, "log": {"recompiles": False}, "cache": {"disk": {"max_mb": 0}}}
    if ASYNC_COMPILE:
        config["compile"] = {"async": True}
    jitted = jit(mine, config=config)
    for k, sizes in enumerate(program["calls"]):
        want_args, got_args = make_args(program, sizes), make_args(program, sizes)
        want, want_error, platforms, overflowed = _run(plain, program, want_args, sizes)
        got, got_error, _, _ = _run(jitted, program, got_args, sizes)
        where = f"call {k} (sizes {sizes})"
        if platforms and (want_error is None) == (got_error is None):
            return None  # a NaN cast to an int (`g[g > 0] = a // a` at a = 0): no answer to compare, now or after
        if want_error is not None or got_error is not None:
            if want_error is None:
                return f"{where}: shapejit raised {type(got_error).__name__}: {got_error}; NumPy did not"
            if got_error is None:
                return f"{where}: NumPy raised {type(want_error).__name__}: {want_error}; shapejit did not"
            if not isinstance(got_error, type(want_error)):
                return f"{where}: shapejit raised {type(got_error).__name__}: {got_error}; NumPy {type(want_error).__name__}: {want_error}"
            if "negative integer powers" in str(want_error):
                return None  # `a **= -8` raises with its buffer's bytes, uninitialized, written into a: nothing to compare after
        else:
            if structure(got) != structure(want):
                return f"{where}: the result's structure {structure(got)}, NumPy's {structure(want)}"
            for (path, g), (_, w) in zip(leaves(got), leaves(want)):
                why = differs(path, g, w, single, overflowed, loose)
                if why:
                    return f"{where}: {why}"
        # What the call wrote: its arguments, and the state it keeps.
        for x, g, w in zip(program["inputs"], got_args, want_args):
            why = differs(f"argument {x['name']} after the call", g, w, single, overflowed, loose)
            if why:
                return f"{where}: {why}"
        got_state, want_state = mine_state(), plain_state()
        for name in want_state:
            why = differs(f"state {name} after the call", got_state[name], want_state[name], single, overflowed, loose)
            if why:
                return f"{where}: {why}"
    return None
