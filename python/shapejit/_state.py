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

import numpy as np

from . import _captures
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
        self.made = []       # (array, its value when lifted) for arrays the function made outside the trace
        self.captures = []   # the arrays that are inputs after the call's own
        self.writes = []     # (input, block offsets or None for all of it, value): writes into inputs, in order
        self.sources = {}    # id(array) -> where the function reaches it (_captures.swapped)
        self.live = None     # a segmented run's: the tracing values made (a WeakSet)
        self.reach = None    # where the function finds arrays besides its arguments (_captures.Reach)
        self.num_inputs = 0  # the call's arrays and its captures
        self.by_source = {}  # _captures.source_key -> the tensor of the capture found there
        self._unlifted = {}  # id(array) -> the _Unlifted standing in for it, not used yet
        self._pending = {}   # id(that _Unlifted) -> (the array, its source)

    def __enter__(self):
        self._prev = current()
        _local.state = self
        return self

    def __exit__(self, *exc):
        _local.state = self._prev

    def stand_in(self, array, source) -> "Tensor":
        """The tracing value that stands in for an array the function can
        reach at `source` (_captures.swapped): the input captured there, or
        an _Unlifted that becomes one where it is first used. Each place is
        an input of its own, even where it holds an array that another
        place or an argument holds too: each is read again from its place
        on every call, and a write into one is seen through the other by
        NumPy alone (writes_overlap)."""
        key = _captures.source_key(source)
        t = self.by_source.get(key)
        if t is not None:
            return t
        u = self._unlifted.get(key)
        if u is None:
            u = self._unlifted[key] = T._Unlifted.of(self, array)
            self._pending[id(u)] = (array, source, key)
            self.keep.append(array)
        return u

    def lift_unlifted(self, u):
        """An _Unlifted, used: the tensor of its array (lift), in place."""
        array, source, key = self._pending.pop(id(u))
        del self._unlifted[key]
        self.lift(array, into=u, source=source)
        self.by_source[key] = u

    def lift(self, array, into=None, source=None) -> "Tensor":
        """The tensor for an array the function reads (a weight in its closure
        or globals); `into`: the _Unlifted standing in for it at `source`,
        which becomes that tensor."""
        if into is None:
            t = self.by_id.get(id(array))
            if t is not None:
                return t
        a = self._checked(array)
        if into is None:
            source = self.source_of(array)
            if source is None or len(source) == 3:
                # Made by the function (np.array([2, 0]), or a view of a
                # captured array NumPy made from it): a new object on every
                # trace, matched by value (a view: as the same view of the
                # same memory).
                if source is None:
                    self.made.append((array, a.copy()))
                for c in self.captures:
                    # A made array is one made on the first trace, never an
                    # array of the program's that holds the same values now.
                    if source is None and self.source_of(c) is not None:
                        continue
                    if same_value(c, a) if source is None else same_view(c, a):
                        t = self.by_id[id(c)]
                        self.by_id[id(array)] = t
                        self.keep.append(array)
                        return t
        self.found.append((array, source))
        t = self._found_input(a, into)
        self.by_id.setdefault(id(array), t)
        self.keep.append(array)
        return t

    def made_unchanged(self) -> bool:
        """Whether the arrays the function made outside the trace (from
        NumPy scalars, from Python values) hold what they held when the trace
        read them: a write into one after that is NumPy's own, which the
        graph, reading its value as it was, would not see."""
        return all(same_value(array, value) for array, value in self.made)

    def _found_input(self, a, into):
        """The tensor of an array found as the trace ran (`into`, an
        _Unlifted, becomes it): here a stand-in of its dtype and shape, so
        the trace goes on and finds the others in one pass; the call is made
        again with all of them as inputs."""
        vid = self.tr.op("full", [int(d) for d in a.shape], {"value": 0, "dtype": T.dtype_name(a.dtype)})
        if into is None:
            return T.Tensor(self, vid)
        into.become(vid)
        return into

    def _checked(self, array):
        """The array as NumPy's own, or a graph break where NumPy's methods
        would not be its (a masked array, a matrix, any subclass of ndarray
        that is not a memory map)."""
        if isinstance(array, np.ndarray):
            if type(array) not in (np.ndarray, np.memmap):
                T._break(self, f"the function reads a {type(array).__name__}, whose NumPy semantics are its own")
            if array.dtype not in T._NAMES:  # made by NumPy in the body (np.round of a bool is float16)
                T._break(self, f"the function computes with a {array.dtype} array, a dtype shapejit lacks")
            return array
        return np.from_dlpack(array)

    def declare_break(self, why):
        """The trace cannot go on: the site caches the break."""
        self.tr.break_graph(why)

    # What needs data: while a call is traced whole, a graph break (the call
    # runs eagerly); a segmented run (_segments.py) cuts the graph instead.
    def read(self, tensor, convert, why, raw=False):
        T._break(self, why)

    def call_numpy(self, func, args, kwargs, why):
        T._break(self, why)

    def source_of(self, array):
        """Where the function reaches `array`: (root, ((is_attr, key), ...));
        for a view NumPy made of such an array while the function ran,
        (root, steps, that array), so that rebinding it retraces; None for an
        array the function made."""
        source = self.sources.get(id(array))
        base = getattr(array, "base", None)
        while source is None and base is not None:
            found = self.sources.get(id(base))
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


