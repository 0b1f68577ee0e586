"""What the extension calls back for each jitted function (its Callbacks):
flatten a call's arguments (arguments.py), trace the function on tracing
values, take its results, build them after a compiled call, run a call as
segments (segments.py) or in NumPy.

What crosses to the extension is typed: a trace gives a `Traced` (the
results' `ResultSpec`, or the arrays it found that are not inputs yet), a
segmented run a `SegmentedRun`. The extension makes every write into the
call's inputs (python/src/results.cpp), from a compiled call and from a
segmented run alike; Python builds only results that hold numbers or the
call's own arrays (`results`)."""
from __future__ import annotations

import itertools
import time

import numpy as np

from .. import _pytree
from .._trace.dtypes import NAMES
from .._trace.promotion import as_strong
from .._trace.sizes import SymBool, SymInt
from .._trace.state import GraphBreak, TraceState, as_tensor, graph_break, source_key
from .._trace.tensor import Scalar, Tensor, Unlifted, is_array
from . import einops, patches
from .arguments import ARGS, INSTANCE_TYPES, describe_inputs, instances, objects
from .captures import Reach, swapped
from .watches import watched


# -- results ---------------------------------------------------------------------

_NUMBERS = {bool: ("leaf", "bool"), int: ("leaf", "int"), float: ("leaf", "float")}
_SCALAR = ("leaf", "scalar")  # NumPy's scalar of the 0-d result's dtype (x.sum(), np.float32(2))
_CONVERT = {"bool": bool, "int": int, "float": float, "scalar": lambda a: a[()]}


def _result_leaf(x):
    """An array or a size of the results, or a number: a kernel's output,
    so that a number the trace computed from sizes (1 / n, an int read off a
    shape) is each entry's own; a number's spec says its type, which the
    call gives back (an int past int64 stays a constant)."""
    if type(x) is Scalar:
        return _SCALAR
    if isinstance(x, (Tensor, SymInt)) or is_array(x):
        return True
    if isinstance(x, SymBool):  # a comparison of sizes: its truth, guarded
        return _NUMBERS[bool]
    spec = _NUMBERS.get(type(x))
    if spec is not None:
        return spec if type(x) is not int or -2**63 <= x < 2**63 else False
    return _SCALAR if isinstance(x, np.generic) and x.dtype in NAMES else False


class _Constant:
    """A result that is neither an array nor a size (a number, a string,
    None), kept in the results' spec and returned as it is: equal to another
    when its value is, a NaN to a NaN of its type too (a trace that returns
    np.float32('nan') again keeps its structure)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        if not isinstance(other, _Constant) or type(self.value) is not type(other.value):
            return False
        a, b = self.value, other.value
        try:
            return bool(a == b) or bool(a != a and b != b)
        except Exception:  # noqa: BLE001 - a value that cannot say: not equal
            return a is b

    def __hash__(self):
        return hash(type(self.value))

    def __repr__(self):
        return repr(self.value)


# What a result can be besides arrays, sizes and containers of them: values
# that hold no tracing value and that the call gives back as they are.
_CONSTANTS = (bool, int, float, complex, str, bytes, type(None), type(Ellipsis), np.generic, np.dtype, type, slice, range)


class ResultSpec:
    """What a traced function's results are besides their arrays, read by
    the extension (python/src/results.h) when the function is first traced:
    `tree`, their structure (a _pytree spec, constants in it); `numbers`,
    (index, kind) of each result that is not an array: a number ("int",
    "float", "bool", "scalar": NumPy's scalar of the 0-d array) or the call's
    own array ("input", k), which NumPy gives back as itself; `count`, how
    many results there are; `writes`, (input, dims) for each write into the
    call's inputs, in order: its value follows the results, after the
    block's start in each of `dims` (None: the whole input)."""

    __slots__ = ("tree", "numbers", "count", "writes")

    def __init__(self, tree, numbers, count, writes):
        self.tree, self.numbers, self.count, self.writes = tree, numbers, count, writes

    def _key(self):
        return self.tree, self.numbers, self.count, self.writes

    def __eq__(self, other):
        return isinstance(other, ResultSpec) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"ResultSpec(tree={self.tree!r}, numbers={self.numbers!r}, count={self.count}, writes={self.writes!r})"


class Traced:
    """What a trace gives the extension: the results' spec (None: one array
    and no writes) and the places it may have read values from that its
    entries hold as constants (`watches`: watches.watched), or the
    arrays it met that are not inputs yet (`found`, (array, source) each),
    with which the call is traced again."""

    __slots__ = ("spec", "found", "watches")

    def __init__(self, spec=None, found=(), watches=()):
        self.spec, self.found, self.watches = spec, list(found), list(watches)


class SegmentedRun:
    """A call run as segments (or in NumPy): `value`, its result where NumPy
    gave it or the result is one array; else `spec` and `arrays` (the
    results, then the writes' starts and values, as a trace's outputs are)
    over `inputs` (the call's arrays, its captures, then `found`, the
    arrays it read that were not captures yet)."""

    __slots__ = ("value", "spec", "arrays", "inputs", "found")

    def __init__(self, value=None, spec=None, arrays=(), inputs=(), found=()):
        self.value, self.spec, self.arrays, self.inputs, self.found = value, spec, list(arrays), list(inputs), list(found)


def _coalesced(st):
    """(input, offsets, value) of each write into an input the call makes,
    in order, but that an input written more than once, by blocks that add
    up to at least its size at this call (or once whole), takes its final
    value whole, once, in its last write's place: a solver that writes a
    grid's interior and its edges ten times copies the grid once, not each
    block. Inputs a call writes never overlap others (writes_overlap runs
    such a call as NumPy), so each input's writes stand apart."""
    by_input = {}
    for w in st.writes:
        by_input.setdefault(w[0], []).append(w)
    last = {}
    for i, ws in by_input.items():
        if len(ws) < 2:
            continue
        whole = st.tr.elements_hint(ws[-1][3]._id)
        blocks = [None if off is None else st.tr.elements_hint(v._id) for _, off, v, _ in ws]
        if any(b is None for b in blocks) or (whole is not None and None not in blocks and sum(blocks) >= whole):
            last[i] = ws[-1]
    return [(w[0], None, w[3]) if w is last.get(w[0]) else w[:3] for w in st.writes if w[0] not in last or w is last[w[0]]]


def _results(st, out):
    """(spec, tensors) of a traced function's results; sizes among them come
    back as ints. The writes into the call's inputs follow the results: for
    each, the block's value and its offsets (sizes), or the whole array."""
    if st.results_per_call:
        # A segmented run's results are this call's own: an array of a dtype
        # shapejit lacks (what NumPy computed after a cut: a uint8 image) is
        # given back as it is.
        out = _pytree.map_leaves(_Constant, out, lambda x: isinstance(x, np.ndarray) and x.dtype not in NAMES)

    def constant(x):
        if isinstance(x, _Constant):
            return x
        if not isinstance(x, _CONSTANTS):
            # A generator, a closure, an object holding tracing values: what
            # the function made has to be made by running it.
            graph_break(st, f"the function returns a {type(x).__name__}, which a compiled call cannot give back")
        return _Constant(x)
    leaves, tree = _pytree.flatten(out, _result_leaf, constant)
    kinds = [k for k in _leaf_kinds(tree)]
    for leaf in leaves:
        if isinstance(leaf, np.ndarray) and leaf.dtype not in NAMES:
            graph_break(st, f"the function returns a {leaf.dtype} array, a dtype shapejit lacks")
    n = len(leaves)
    writes = []
    for input_index, offsets, value in _coalesced(st):
        if offsets is None:
            writes.append((input_index, None))
        else:
            dims = tuple(d for d, o in enumerate(offsets) if o is not None)
            writes.append((input_index, dims))
            leaves.extend(offsets[d] for d in dims)
        leaves.append(value)
    numbers = tuple((i, k) for i, k in enumerate(kinds) if k) + tuple(
        (i, "int") for i, leaf in enumerate(leaves[:n]) if isinstance(leaf, SymInt) and not kinds[i]) + tuple(
        (i, ("input", leaf._input)) for i, leaf in enumerate(leaves[:n]) if _is_input(leaf))
    return ResultSpec(tree, tuple(sorted(numbers)), n, tuple(writes)), [_tensor_of(st, leaf) for leaf in leaves]


def _is_input(leaf):
    """Whether a result is one of the call's arrays (written or not), which
    NumPy gives back as the object itself: `return x` after `x += 1`."""
    return type(leaf) in (Tensor, Unlifted) and leaf._input is not None


def _leaf_kinds(tree):
    """Per leaf of a results' spec, in order: the number type it gives back
    ("int", "float", "bool"), or None for an array (a size is found apart)."""
    kind = tree[0]
    if kind == "leaf":
        yield tree[1] if len(tree) > 1 else None
    elif kind in ("tuple", "list"):
        for e in tree[1]:
            yield from _leaf_kinds(e)
    elif kind == "dict":
        for _, e in tree[1]:
            yield from _leaf_kinds(e)
    elif kind == "namedtuple":
        for e in tree[2]:
            yield from _leaf_kinds(e)


def _tensor_of(st, leaf):
    if isinstance(leaf, SymBool):
        return as_tensor(st, bool(leaf))
    if isinstance(leaf, np.generic):
        return as_strong(st, leaf)  # a 0-d tensor of its own dtype
    return as_tensor(st, leaf)


def results(spec, arrays, inputs):
    """The results of a call whose spec holds numbers or the call's own
    arrays, from their arrays (`inputs`: the call's arrays, captures after
    its own); the extension has made the writes."""
    arrays = list(arrays[:spec.count])
    for i, kind in spec.numbers:
        arrays[i] = inputs[kind[1]] if isinstance(kind, tuple) else _CONVERT[kind](arrays[i])  # ("input", k): the caller's array
    return _pytree.unflatten(spec.tree, arrays, lambda c: c.value)


# -- the extension's callbacks ----------------------------------------------------

def traced_call(arguments, st, fn, args, kwargs, arrays, key, captures, sources, begin, end):
    """Runs fn on tracing values of st: the call's arrays (flattened by the
    extension, under the site's key), then `captures` (found at `sources`),
    are its inputs (`begin(arrays)` first makes a tracer for them where st
    has none); `end((spec, tensors))` takes its results while the trace is
    still current."""
    inputs = list(itertools.chain(arrays, captures))
    if begin:
        begin(inputs)
    tensors = [Tensor(st, i) for i in range(len(inputs))]
    for i, t in enumerate(tensors):
        t._input = i
    st.num_inputs = len(inputs)
    st.captures = list(captures)
    for a, t in zip(inputs, tensors):
        st.by_id.setdefault(id(a), t)
        st.keep.append(a)
    for source, t in zip(sources, tensors[len(arrays):]):
        if source is not None and len(source) == 2:
            st.by_source[source_key(source)] = t
            if source_key(source) in arguments.float_places:
                t._weak = True  # a float read there: weak, as NumPy treats a Python float
    targs, tkwargs = arguments.traced(args, kwargs, tensors)
    einops.register()
    st.reach = Reach(fn, objects(key), instances(key, (args, kwargs)), arguments.float_places, (args, kwargs))
    with st, patches.size_functions() as replacements, swapped(st, st.reach, replacements):
        out = fn(*targs, **tkwargs)
        # The common case, which the extension returns directly: one array
        # (a Scalar is NumPy's scalar, which _results makes).
        if isinstance(out, Tensor) and type(out) is not Scalar and not st.writes and not _is_input(out):
            return end((None, [as_tensor(st, out)]))
        return end(_results(st, out))


class NotCompiled(RuntimeError):
    """shapejit.jit(..., strict=True): a call that shapejit could not
    compile, which NumPy ran (its answer is not returned: the point of
    strict is to know)."""


class Callbacks:
    """What the extension calls for one jitted function."""

    def __init__(self, arguments, segments, strict=False):
        self.arguments = arguments
        self.segments = segments
        self.results = results
        self.describe_inputs = describe_inputs
        self.args_root = ARGS  # the root of a path from the call's arguments
        self.instance_types = INSTANCE_TYPES
        self.strict = strict
        self.why = None  # the last reason shapejit let NumPy run a call
        self._raised = {}  # label -> (an error the site caches, what the function read when it raised it)

    def eager(self, fn, args, kwargs):
        """The call run by NumPy (its errors are the function's own); under
        strict, a call NumPy ran to completion raises NotCompiled."""
        out = eager(fn, args, kwargs)
        if self.strict:
            raise NotCompiled(f"{self.segments.name}: shapejit did not compile this call; NumPy ran it "
                              f"({self.why or 'a kernel could not finish it, or its inputs overlap a write'}); see explain()")
        return out

    @property
    def dynamic_floats(self):
        return self.arguments.dynamic_floats

    def flatten(self, args, kwargs):
        return self.arguments.flatten(args, kwargs)

    def trace(self, tracer, fn, args, kwargs, arrays, key, captures, sources):
        """The miss callback: runs fn on tracing values of `tracer` (the
        call's `arrays`, flattened under the site's `key`, then its
        captures), and gives the Traced: the results' spec, their values
        the tracer's outputs, or the arrays it found to trace again with."""
        st = TraceState(tracer, fn)
        try:
            spec, leaves = traced_call(self.arguments, st, fn, args, kwargs, arrays, key, captures, sources, None, lambda r: r)
            if not st.made_unchanged():
                st.found.clear()  # not inputs to trace again with: NumPy runs the calls
                raise RuntimeError("the function writes into an array it made from untraced values after the trace read it")
        except GraphBreak:
            raise
        except Exception as e:  # noqa: BLE001 - NumPy runs the call, and says what it raises
            if st.found:  # traced again with them as inputs
                return Traced(found=st.found_inputs())
            # Whatever raised (NumPy's error on these shapes, the function's
            # own, a tracing value that NumPy's code or the program's did not
            # take), NumPy runs the call: it raises its own error, with its
            # writes before it, or gives the answer shapejit could not. So do
            # the calls this trace's decisions take, without a trace, until
            # what the function reads is bound to other objects.
            label = f"{type(e).__name__}: {_first_line(e)} (#{len(self._raised)})"
            self.why = f"its trace raised {label}"
            self._raised[label] = st.reach.snapshot() if st.reach is not None else None
            tracer.raise_error(label)
            raise
        if st.found:
            return Traced(found=st.found_inputs())
        for leaf in leaves:
            tracer.output(leaf._id)
        for vid in tracer.dead(st.checked):  # NumPy raises there, used or not (state.CHECKING)
            tracer.output(vid)
        return Traced(spec, watches=watched(st.reach))

    def float_changed(self, root, steps):
        self.arguments.float_changed(root, steps)

    def still_raises(self, label):
        """Whether a call that hit the entry cached as `label` still runs in
        NumPy: False when what the function read when its trace raised (its
        globals, its closure) is bound to other objects now, and it traces
        again."""
        snapshot = self._raised[label]
        return snapshot is None or not Reach.changed(snapshot)

    def segmented(self, fn, args, kwargs, arrays, key, captures, sources):
        """The call after a graph break, as compiled segments (segments.py),
        over the call's `arrays` (flattened under `key`) and its captures: a
        SegmentedRun, whose writes the extension makes; a break that a cut
        cannot take runs it in NumPy."""
        def run(st, fn, args, kwargs, begin, end):
            return traced_call(self.arguments, st, fn, args, kwargs, arrays, key, captures, sources, begin, end)
        if self.segments.times_numpy():
            t0 = time.perf_counter()
            out = self.eager(fn, args, kwargs)
            self.segments.timed_numpy((time.perf_counter() - t0) * 1e3)
            return SegmentedRun(out)
        try:
            spec, values, found = self.segments.run(fn, args, kwargs, run)
        except GraphBreak as e:
            self.why = f"a graph break no cut takes: {_first_line(e)}"
            return SegmentedRun(self.eager(fn, args, kwargs))
        if spec is None:
            return SegmentedRun(values[0], found=found)
        # The arrays it found as it ran are written as the call's inputs are.
        return SegmentedRun(spec=spec, arrays=values, inputs=itertools.chain(arrays, captures, (f[0] for f in found)), found=found)


def _to_numpy(x):
    if isinstance(x, np.ndarray) or not is_array(x):
        return x
    return np.from_dlpack(x)


def eager(fn, args, kwargs):
    """The call after a graph break: fn on NumPy arrays."""
    args, kwargs = _pytree.map_leaves(_to_numpy, (args, kwargs), is_array)
    return fn(*args, **kwargs)


def _first_line(e, limit=160):
    text = str(e).split("\n", 1)[0]
    return text if len(text) <= limit else text[:limit] + "..."
