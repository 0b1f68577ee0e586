"""The jit decorator and what the extension calls back for each jitted
function (its Callbacks): flatten a call's arguments (_arguments.py), trace
the function, rebuild its results, run it as segments or eagerly."""
from __future__ import annotations

import atexit
import functools
import itertools
import json
import logging
import os
import threading

import numpy as np

from . import _numpy, _pytree, _segments, _shapejit
from . import _tracing as T
from ._arguments import Arguments, describe_inputs, objects
from ._captures import Reach, source_key, swapped
from ._state import TraceState
from ._tracing import SymInt, Tensor

log = logging.getLogger("shapejit")


# -- results ---------------------------------------------------------------------

def _result_leaf(x):
    return isinstance(x, (Tensor, SymInt)) or T.is_array(x)


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


def _results(st, out):
    """(spec, tensors) of a traced function's results; sizes among them come
    back as ints. The writes into the call's inputs follow the results: for
    each, the block's value and its offsets (sizes), or the whole array."""
    leaves, tree = _pytree.flatten(out, _result_leaf, _Constant)
    for leaf in leaves:
        if isinstance(leaf, np.ndarray) and leaf.dtype not in T._NAMES:
            T._break(st, f"the function returns a {leaf.dtype} array, a dtype shapejit lacks")
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
    ints = tuple(i for i, leaf in enumerate(leaves) if isinstance(leaf, SymInt))
    return (tree, ints, n, tuple(writes)), [T.as_tensor(st, leaf) for leaf in leaves]


def unflatten(spec, arrays, inputs=None):
    """The results of a compiled call, after the writes it makes into the
    caller's arrays (`inputs`: the call's arrays, captures after its own)."""
    tree, ints, n, writes = spec
    arrays = list(arrays)
    for i in ints:
        arrays[i] = int(arrays[i])
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
    st.captures = list(captures)
    for a, t in zip(inputs, tensors):
        st.by_id.setdefault(id(a), t)
        st.keep.append(a)
    for source, t in zip(sources, tensors[len(arrays):]):
        if source is not None and len(source) == 2:
            st.by_source[source_key(source)] = t
    targs, tkwargs = arguments.traced(args, kwargs, tensors)
    with st, _numpy.size_functions(), swapped(st, Reach(fn, objects(key))):
        out = fn(*targs, **tkwargs)
        if isinstance(out, Tensor) and not st.writes:  # the common case, which the extension returns directly
            return end((None, [out]))
        return end(_results(st, out))


class Callbacks:
    """What the extension calls for one jitted function."""

    def __init__(self, arguments, segments):
        self.arguments = arguments
        self.segments = segments
        self.unflatten = unflatten
        self.eager = eager
        self.describe_inputs = describe_inputs

    @property
    def dynamic_floats(self):
        return self.arguments.dynamic_floats

    def flatten(self, args, kwargs):
        return self.arguments.flatten(args, kwargs)

    def trace(self, tracer, fn, args, kwargs, captures, sources):
        """Runs fn on tracing values; returns (result spec, captures found,
        whether it writes into its inputs)."""
        st = TraceState(tracer, fn)
        spec, leaves = traced_call(self.arguments, st, fn, args, kwargs, captures, sources, None, lambda r: r)
        if st.found:
            return None, st.found, False
        for leaf in leaves:
            tracer.output(leaf._id)
        return spec, [], bool(spec and spec[3])

    def segmented(self, fn, args, kwargs, captures, sources):
        """The call after a graph break, as compiled segments (_segments.py):
        (its results, the arrays it read that were not captures yet); a break
        that a cut cannot take runs it eagerly."""
        def run(st, fn, args, kwargs, begin, end):
            return traced_call(self.arguments, st, fn, args, kwargs, captures, sources, begin, end)
        try:
            spec, arrays, found = self.segments.run(fn, args, kwargs, run)
        except T.GraphBreak:
            return eager(fn, args, kwargs), []
        if spec is None:
            return arrays[0], found
        inputs = list(itertools.chain(self.arguments.flatten(args, kwargs)[0], captures))
        if writes_overlap(spec, inputs):
            return eager(fn, args, kwargs), found
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
    if isinstance(x, np.ndarray) or not T.is_array(x):
        return x
    return np.from_dlpack(x)


def eager(fn, args, kwargs):
    """The call after a graph break: fn on NumPy arrays."""
    args, kwargs = _pytree.map_leaves(_to_numpy, (args, kwargs), T.is_array)
    return fn(*args, **kwargs)


# -- Jits, one per config -----------------------------------------------------------

_jits = {}
_jits_lock = threading.Lock()
_counter = itertools.count()
_recorder = None


@atexit.register
def _stop_compiles():
    """The Jits live until the process ends; their background compiles
    (compile.async) must not run on into its teardown, where LLVM's static
    state goes: those not begun are dropped, the running ones finish."""
    with _jits_lock:
        jits = list(_jits.values())
    for j in jits:
        j.stop_compiles()


def _log_line(line: str):
    if "warning" in line:
        log.warning(line)
    else:
        log.info(line)


def _canonical_config(config) -> str:
    if config is None:
        return "{}"
    if isinstance(config, dict):
        return json.dumps(config, sort_keys=True)
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise OSError(f"shapejit: config {path}: {e.strerror}") from None
        try:
            return json.dumps(json.loads(text), sort_keys=True)
        except json.JSONDecodeError as e:
            raise ValueError(f"shapejit: config {path}: line {e.lineno} column {e.colno}: {e.msg}") from None
    raise TypeError(f"shapejit: config is a dict or a path to a JSON file, not {type(config).__name__}")


def get_jit(config=None):
    """The Jit for a config (a dict, a path, or None for the defaults); one per config."""
    key = _canonical_config(config)
    with _jits_lock:
        j = _jits.get(key)
        if j is None:
            j = _shapejit.Jit(key)
            j.set_log(_log_line)
            if _recorder is not None:
                j.record(_recorder)
            _jits[key] = j
        return j


def jit(fn=None, *, config=None):
    """Makes fn shapejit's to run: traced on its first call of each new guard
    pattern, compiled, and dispatched by guards after that.

        @shapejit.jit
        def f(x, w): return shapejit.gelu(x @ w)

        @shapejit.jit(config={"policy": {"mode": "start_static"}})
        def g(x): ...
    """
    if fn is None:
        return functools.partial(jit, config=config)
    if not callable(fn):
        raise TypeError(f"shapejit.jit: {fn!r} is not callable")
    j = get_jit(config)
    name = f"{getattr(fn, '__module__', None) or '?'}.{getattr(fn, '__qualname__', type(fn).__name__)}#{next(_counter)}"
    segments = _segments.Segments(j, name)
    f = _shapejit._make_function(j, fn, name, Callbacks(Arguments(name, j.backoff_after), segments), segments)
    functools.update_wrapper(f, fn)
    return f


class record:
    """Records every jitted call from now on (or inside a `with` block) as a
    trace that `shapejit replay` reads."""

    def __init__(self, path):
        global _recorder
        self._rec = _shapejit.Recorder(os.fspath(path))
        with _jits_lock:
            _recorder = self._rec
            for j in _jits.values():
                j.record(self._rec)

    def stop(self):
        global _recorder
        with _jits_lock:
            if _recorder is self._rec:
                _recorder = None
                for j in _jits.values():
                    j.record(None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
