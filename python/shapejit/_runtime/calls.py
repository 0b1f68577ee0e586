"""What the extension calls back for each jitted function (its Callbacks):
flatten a call's arguments (arguments.py), trace the function on tracing
values, take its results (their spec: structure, numbers, writes into its
inputs), give them back after a compiled call, run a call as segments
(segments.py) or in NumPy."""
from __future__ import annotations

import itertools

import numpy as np

from .. import _pytree
from .._trace.dtypes import NAMES
from .._trace.promotion import as_strong
from .._trace.sizes import SymBool, SymInt
from .._trace.state import GraphBreak, TraceState, as_tensor, graph_break, source_key
from .._trace.tensor import Scalar, Tensor, Unlifted, is_array
from . import einops, patches
from .arguments import describe_inputs, objects
from .captures import Reach, swapped


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


def _results(st, out):
    """(spec, tensors) of a traced function's results; sizes among them come
    back as ints. The writes into the call's inputs follow the results: for
    each, the block's value and its offsets (sizes), or the whole array."""
    def constant(x):
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
    for input_index, offsets, value in st.writes:
        if offsets is None:
            writes.append((input_index, None))
        else:
            dims = tuple(d for d, o in enumerate(offsets) if o is not None)
            writes.append((input_index, dims))
            leaves.extend(offsets[d] for d in dims)
        leaves.append(value)
    numbers = tuple((i, k) for i, k in enumerate(kinds) if k) + tuple(
        (i, "int") for i, leaf in enumerate(leaves) if isinstance(leaf, SymInt) and (i >= n or not kinds[i])) + tuple(
        (i, ("input", leaf._input)) for i, leaf in enumerate(leaves[:n]) if _is_input(leaf))
    return (tree, tuple(sorted(numbers)), n, tuple(writes)), [_tensor_of(st, leaf) for leaf in leaves]


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


def unflatten(spec, arrays, inputs=None):
    """The results of a compiled call, after the writes it makes into the
    caller's arrays (`inputs`: the call's arrays, captures after its own)."""
    tree, numbers, n, writes = spec
    arrays = list(arrays)
    for i, kind in numbers:
        arrays[i] = inputs[kind[1]] if isinstance(kind, tuple) else _CONVERT[kind](arrays[i])  # ("input", k): the caller's array
    for input_index, _ in writes:  # all or none: NumPy refuses before it writes
        target = inputs[input_index]
        if isinstance(target, np.ndarray) and not target.flags.writeable:
            raise ValueError("assignment destination is read-only")
    at = n
    for input_index, dims in writes:
        target = inputs[input_index]
        if dims is None:
            np.copyto(target, arrays[at], casting="unsafe")
        else:
            index = [slice(None)] * target.ndim
            value = arrays[at + len(dims)]
            for k, d in enumerate(dims):
                index[d] = slice(arrays[at + k], arrays[at + k] + value.shape[d])
            target[tuple(index)] = value
            at += len(dims)
        at += 1
    return _pytree.unflatten(tree, arrays[:n], lambda c: c.value)


# -- the extension's callbacks ----------------------------------------------------

def traced_call(arguments, st, fn, args, kwargs, captures, sources, begin, end):
    """Runs fn on tracing values of st: the call's arrays, then `captures`
    (found at `sources`), are its inputs (`begin(arrays)` first makes a
    tracer for them where st has none); `end((spec, tensors))` takes its
    results while the trace is still current."""
    arrays, key = arguments.flatten(args, kwargs)
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
    targs, tkwargs = arguments.traced(args, kwargs, tensors)
    einops.register()
    st.reach = Reach(fn, objects(key))
    with st, patches.size_functions() as replacements, swapped(st, st.reach, replacements):
        out = fn(*targs, **tkwargs)
        if isinstance(out, Tensor) and not st.writes and not _is_input(out):  # the common case, which the extension returns directly
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
        self.unflatten = unflatten
        self.describe_inputs = describe_inputs
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

    def trace(self, tracer, fn, args, kwargs, captures, sources):
        """Runs fn on tracing values; returns (result spec, captures found,
        whether it writes into its inputs)."""
        st = TraceState(tracer, fn)
        try:
            spec, leaves = traced_call(self.arguments, st, fn, args, kwargs, captures, sources, None, lambda r: r)
            if not st.made_unchanged():
                st.found.clear()  # not inputs to trace again with: NumPy runs the calls
                raise RuntimeError("the function writes into an array it made from untraced values after the trace read it")
        except GraphBreak:
            raise
        except Exception as e:  # noqa: BLE001 - NumPy runs the call, and says what it raises
            if st.found:  # traced again with them as inputs
                return None, st.found, False
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
            return None, st.found, False
        for leaf in leaves:
            tracer.output(leaf._id)
        return spec, [], bool(spec and spec[3])

    def still_raises(self, label):
        """Whether a call that hit the entry cached as `label` still runs in
        NumPy: False when what the function read when its trace raised (its
        globals, its closure) is bound to other objects now, and it traces
        again."""
        snapshot = self._raised[label]
        return snapshot is None or not Reach.changed(snapshot)

    def segmented(self, fn, args, kwargs, captures, sources):
        """The call after a graph break, as compiled segments (segments.py):
        (its results, the arrays it read that were not captures yet); a break
        that a cut cannot take runs it eagerly."""
        def run(st, fn, args, kwargs, begin, end):
            return traced_call(self.arguments, st, fn, args, kwargs, captures, sources, begin, end)
        try:
            spec, arrays, found = self.segments.run(fn, args, kwargs, run)
        except GraphBreak as e:
            self.why = f"a graph break no cut takes: {_first_line(e)}"
            return self.eager(fn, args, kwargs), []
        if spec is None:
            return arrays[0], found
        # The arrays it found as it ran are written as the call's inputs are.
        inputs = list(itertools.chain(self.arguments.flatten(args, kwargs)[0], captures, (a for a, _ in found)))
        if writes_overlap(spec, inputs):
            self.why = "a write into an input that another input shares"
            return self.eager(fn, args, kwargs), found
        return unflatten(spec, arrays, inputs), found


def writes_overlap(spec, inputs):
    """Whether an input the results' spec writes into shares memory with
    another input: NumPy would read the write through the other name (the
    extension's check of a compiled call, Function::writes_overlap)."""
    written = {w[0] for w in spec[3]}
    for i in written:
        target = inputs[i]
        if not isinstance(target, np.ndarray):
            continue
        for j, other in enumerate(inputs):
            if j != i and isinstance(other, np.ndarray) and np.may_share_memory(target, other):
                return True
    return False


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
