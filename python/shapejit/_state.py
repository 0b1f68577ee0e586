"""The trace state: what one trace records besides its graph.

A ``TraceState`` holds the C++ tracer a trace adds nodes to, the arrays that
are its inputs (the call's, then the arrays it captures), and what the
function met on the way: arrays it reads that are not inputs yet (found by
where they hang: a closure cell, a global, an attribute of an object the
call passes), its writes into inputs, and, for a segmented run, the values
alive. What needs data (``read``, ``call_numpy``) is a graph break here; a
segmented run (``_segments``) cuts instead. ``current()`` is the state this
thread is tracing with.
"""
from __future__ import annotations

import threading
import types

import numpy as np

from . import _tracing as T

_local = threading.local()


def current():
    """The trace this thread is recording, or None."""
    return getattr(_local, "state", None)


class TraceState:
    """One trace: the C++ tracer, the arrays that are inputs, the captures found."""

    def __init__(self, tracer, fn):
        self.tr = tracer
        self.fn = fn
        self.by_id = {}      # id(array) -> Tensor, for arrays that are inputs
        self.keep = []       # those arrays, so their ids stay theirs
        self.found = []      # (array, source) for arrays met that are not inputs
        self.captures = []   # the arrays that are inputs after the call's own
        self.writes = []     # (input, index or None for all of it, value): writes into inputs, in order
        self.roots = ()      # the objects the call passes (keyed by identity)
        self.live = None     # a segmented run's: the tracing values made (a WeakSet)
        self._sources = None

    def __enter__(self):
        self._prev = current()
        _local.state = self
        return self

    def __exit__(self, *exc):
        _local.state = self._prev

    def lift(self, array) -> "Tensor":
        """The tensor for an array the function reads (a weight in its closure or globals)."""
        t = self.by_id.get(id(array))
        if t is not None:
            return t
        a = array if isinstance(array, np.ndarray) else np.from_dlpack(array)
        source = self.source_of(array)
        if source is None or len(source) == 3:
            # Made by the function (np.array([2, 0]), or W.T of a global W): a
            # new object on every trace, matched by value (a view: as the
            # same view of the same memory).
            for c in self.captures:
                if same_value(c, a) if source is None else same_view(c, a):
                    t = self.by_id[id(c)]
                    self.by_id[id(array)] = t
                    self.keep.append(array)
                    return t
        # Not an input yet: note it, and stand in a tensor of its dtype and
        # shape so the trace goes on and finds the others in one pass; the
        # call is made again with all of them as inputs.
        self.found.append((array, source))
        t = T.Tensor(self, self.tr.op("full", [int(d) for d in a.shape], {"value": 0, "dtype": T.dtype_name(a.dtype)}))
        self.by_id[id(array)] = t
        self.keep.append(array)
        return t

    def declare_break(self, why):
        """The trace cannot go on: the site caches the break."""
        self.tr.break_graph(why)

    # What needs data: while a call is traced whole, a graph break (the call
    # runs eagerly); a segmented run (_segments.py) cuts the graph instead.
    def read(self, tensor, convert, why):
        T._break(self, why)

    def call_numpy(self, func, args, kwargs, why):
        T._break(self, why)

    def source_of(self, array):
        """Where the function reaches `array`: (root, ((is_attr, key), ...));
        for a view NumPy made of such an array while the function ran (`W.T`,
        `W[0]`), (root, steps, that array), so that rebinding it retraces;
        None for an array the function made."""
        if self._sources is None:
            self._sources = _index_sources(self.fn, self.roots)
        source = self._sources.get(id(array))
        base = getattr(array, "base", None)
        while source is None and base is not None:
            found = self._sources.get(id(base))
            if found is not None:
                return (*found, base)
            base = getattr(base, "base", None)
        return source


def same_view(a, b) -> bool:
    """Two NumPy views of the same memory, alike."""
    return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and
            a.strides == b.strides and a.__array_interface__["data"][0] == b.__array_interface__["data"][0])


def same_value(a, b) -> bool:
    a = a if isinstance(a, np.ndarray) else np.from_dlpack(a)
    # Bit for bit: a NaN is the NaN it was, and -0.0 is not 0.0 (1 / x tells them apart).
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


_NOT_WALKED = (type, types.ModuleType, types.FunctionType, types.MethodType, types.BuiltinFunctionType)
ROOT_DEPTH = 6     # an instance's arrays: self.layers[3].attention.cache_k
GLOBAL_DEPTH = 3   # a closure's or a global's: params["w"], P.blocks[0]


def reachable(obj, depth, seen):
    """(steps, holder, is_attr, key, array) for every array reachable from
    obj through dict entries, list and tuple items and objects' attributes,
    `depth` steps at most; `seen` (ids) is shared between walks."""
    def walk(obj, steps, holder, is_attr, key, d):
        if T.is_array(obj):
            yield steps, holder, is_attr, key, obj
            return
        if d == 0 or id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, dict):
            items = ((False, k, v) for k, v in list(obj.items()))
        elif isinstance(obj, (list, tuple)):
            items = ((False, i, v) for i, v in enumerate(obj))
        elif hasattr(obj, "__dict__") and not isinstance(obj, _NOT_WALKED):
            items = ((True, k, v) for k, v in list(vars(obj).items()))  # params.w, self.wq
        else:
            return
        for attr, k, v in items:
            yield from walk(v, steps + ((attr, k),), obj, attr, k, d - 1)

    yield from walk(obj, (), None, False, None, depth)


def _index_sources(fn, roots=()):
    """id -> source for every array reachable from the objects the call
    passes (`roots`: an instance whose method is jitted, a params object),
    then fn's closure and globals."""
    fn = getattr(fn, "__func__", fn)
    out = {}
    seen = set()

    def add(root, prefix, obj, depth):
        for steps, _, _, _, array in reachable(obj, depth, seen):
            out.setdefault(id(array), (root, prefix + steps))

    for obj in roots:
        add(obj, (), obj, ROOT_DEPTH)
    code = getattr(fn, "__code__", None)
    if code is not None and getattr(fn, "__closure__", None):
        for name, cell in zip(code.co_freevars, fn.__closure__):
            try:
                contents = cell.cell_contents
            except ValueError:
                continue
            add(cell, ((True, "cell_contents"),), contents, GLOBAL_DEPTH)
    g = getattr(fn, "__globals__", None)
    if g is not None:
        for name, v in list(g.items()):
            if not name.startswith("__"):
                add(g, ((False, name),), v, GLOBAL_DEPTH)
    return out
