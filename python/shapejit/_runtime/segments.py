"""Graph breaks that compile the pieces: a call run as segments.

A call whose trace meets what cannot be traced (a branch on tensor data,
`.item()`, a NumPy function with no op) is not run in NumPy whole. It runs
the function once more on tracing values, and at each such point cuts: the
ops traced since the last cut are one graph (a segment), compiled and run
on the arrays at hand; its values still alive in Python come back as arrays;
the point itself runs in NumPy on them (the branch reads its bool, np.sort
sorts); and tracing goes on in a new segment whose inputs are those arrays.
Each segment is a graph of its own, run on a site named by its hash, so it
is compiled once and then dispatched by its guards like any entry; a graph
that Python builds alike on every call (the same ops between the same
breaks) is the same site every call. The lazy-tensor design (torch_xla):
the function's Python runs on every call, tracing and hashing included,
and the time in kernels is the rest.

What a cut cannot take (a write through a view, a function that rebinds an
attribute it reads) still breaks the whole call, which then runs eagerly.
"""
from __future__ import annotations

import os
import sys
import time
import weakref

import numpy as np

from .. import _pytree, _shapejit
from .._trace.dtypes import NAMES
from .._trace.sizes import SymInt
from .._trace.state import GraphBreak, TraceState, as_tensor, emit
from .._trace.tensor import Tensor

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # shapejit/, above this floor
_NUMPY = os.path.dirname(os.path.abspath(np.__file__))
MAX_GRAPHS = 64  # segment graphs a function may compile; past it, its breaks run eagerly
# Calls that meet new segment graphs after the first few: a function whose
# Python builds other graphs every call (a size read as a number into its
# ops, after the policy backed that size off) would compile every call.
SETTLED_AFTER, MAX_UNSETTLED = 4, 3
GIVE_UP_AFTER = 3  # segmented runs that all ended in NumPy's before a function's breaks run eagerly
# A segmented run traces the function again each call: where that costs
# more than NumPy's whole call saves (small arrays, a break early in a long
# function), the function's breaks run eagerly. After the calls that
# compile (SETTLED_AFTER) and TIMED more, TIMED calls run in NumPy, timed;
# NumPy's wins when its fastest is under EAGER_WINS of the segmented runs'
# median.
TIMED, EAGER_WINS = 3, 0.8


def _where():
    """file:line of the user's code that is running (the frame below shapejit's and NumPy's)."""
    f = sys._getframe(2)
    while f is not None:
        path = os.path.abspath(f.f_code.co_filename)
        if not path.startswith((_PACKAGE, _NUMPY)) and "<__array_function__" not in path:
            return f"{os.path.basename(path)}:{f.f_lineno}"
        f = f.f_back
    return "?"


class _Live:
    """The tracing values alive, by identity (a WeakSet would compare and
    hash them, and a SymInt's hash reads its number)."""

    def __init__(self):
        self._refs = {}

    def add(self, v):
        k = id(v)
        self._refs[k] = weakref.ref(v, lambda _, k=k: self._refs.pop(k, None))

    def discard(self, v):
        self._refs.pop(id(v), None)

    def __iter__(self):
        return iter([v for v in (r() for r in list(self._refs.values())) if v is not None])


class Segments:
    """A jitted function's segmented runs: the segment graphs it met, its
    breaks by place and reason, and the time spent outside kernels."""

    def __init__(self, jit, name):
        self.jit = jit
        self.name = name
        self.graphs = set()
        self.unsettled = 0   # calls past SETTLED_AFTER that met a new graph
        self.breaks = {}  # (where, why) -> count
        self.reruns = {}  # why -> count: calls NumPy ran whole after a break no cut takes
        self.calls = 0
        self.segments = 0
        self.kernel_ms = 0.0
        self.numpy_ms = 0.0
        self.total_ms = 0.0
        self.settled_ms = []  # the settled segmented runs' times, until NumPy's whole call is timed
        self.numpy_calls_ms = []  # NumPy's whole calls, timed (TIMED of them)
        self.eager_ms = None  # the fastest of them
        self.slower = None    # why the breaks run eagerly, when the segmented runs were slower than NumPy

    def stats(self):
        return {"segmented_calls": self.calls, "segments": self.segments, "segment_graphs": len(self.graphs),
                "outside_ms": max(0.0, self.total_ms - self.kernel_ms), "segment_kernel_ms": self.kernel_ms,
                "break_numpy_ms": self.numpy_ms, "numpy_reruns": sum(self.reruns.values())}

    def explain(self):
        lines = []
        if self.breaks:
            lines.append(f"graph breaks, each a cut between compiled segments ({len(self.graphs)} segment graphs):")
            for (where, why), n in sorted(self.breaks.items(), key=lambda kv: -kv[1]):
                lines.append(f"  {where}: {why} ({n} times)")
        if self.reruns:
            lines.append("calls NumPy ran whole, after a break no cut takes:")
            for why, n in sorted(self.reruns.items(), key=lambda kv: -kv[1]):
                lines.append(f"  {why} ({n} times)")
        return "\n".join(lines) + "\n" if lines else ""

    def rerun(self, why):
        self.reruns[why] = self.reruns.get(why, 0) + 1

    def run(self, fn, args, kwargs, traced_call):
        """fn(*args, **kwargs) as segments: (its results' spec, their arrays,
        the arrays it read that were not captures yet). `traced_call` runs
        fn on tracing values as a whole trace does (calls.traced_call)."""
        if len(self.graphs) >= MAX_GRAPHS or self.unsettled > MAX_UNSETTLED:
            why = f"{self.name} keeps meeting new segment graphs; its breaks run eagerly"
            self.rerun(why)
            raise GraphBreak(why)
        if self.slower:
            self.rerun(self.slower)
            raise GraphBreak(self.slower)
        if self.calls == 0 and sum(self.reruns.values()) >= GIVE_UP_AFTER:
            # Every segmented run so far ended in NumPy's: its segments are
            # only cost (a call that meets out= after two cuts paid for both).
            why = f"{self.name}'s segmented runs all ended in NumPy's; its breaks run eagerly"
            self.rerun(why)
            raise GraphBreak(why)
        t0 = time.perf_counter()
        st = SegmentState(self, fn)
        graphs = len(self.graphs)
        try:
            spec, arrays = traced_call(st, fn, args, kwargs, st.begin, st.finish)
        except GraphBreak as e:
            self.rerun(str(e).split("\n", 1)[0])
            raise
        except Exception as e:  # noqa: BLE001 - NumPy runs the call (as a whole trace's error)
            why = f"the function raises {type(e).__name__} when run as segments; NumPy runs the call"
            self.rerun(why)
            raise GraphBreak(why) from None
        finally:
            st.close()
            self.total_ms += (time.perf_counter() - t0) * 1e3  # the segments a re-run threw away too
        self.calls += 1
        if self.calls > SETTLED_AFTER and len(self.graphs) > graphs:
            self.unsettled += 1
        elif self.calls > SETTLED_AFTER and self.eager_ms is None:
            self.settled_ms.append((time.perf_counter() - t0) * 1e3)
        return spec, arrays, st.found_inputs()

    def times_numpy(self):
        """Whether this call is one that NumPy runs whole, timed (timed_numpy)."""
        return self.eager_ms is None and len(self.settled_ms) >= TIMED

    def timed_numpy(self, ms):
        """NumPy's whole call took `ms`: after TIMED of them, the breaks run
        eagerly from now on where NumPy's fastest is well under the
        segmented runs' median."""
        self.numpy_calls_ms.append(ms)
        if len(self.numpy_calls_ms) < TIMED:
            return
        self.eager_ms = min(self.numpy_calls_ms)
        segmented = sorted(self.settled_ms)[len(self.settled_ms) // 2]
        if self.eager_ms < EAGER_WINS * segmented:
            self.slower = (f"{self.name}'s segmented runs took {segmented:.3g} ms, NumPy's whole call {self.eager_ms:.3g}: "
                           "its breaks run eagerly")


class SegmentState(TraceState):
    """The trace state of a segmented run: its tracer is the current
    segment's, `arrays` the arrays of that segment's inputs (values alive
    across a cut are carried as inputs: a tensor over its array, a size over
    an empty array whose second dim it is)."""

    def __init__(self, segments, fn):
        super().__init__(None, fn)
        self.results_per_call = True
        self.segments = segments
        self.live = _Live()
        self.arrays = []
        self._callers = set()  # ids of the arrays that are the caller's (its own, its captures, those found)

    def begin(self, arrays):
        """The first segment, over the call's arrays and captures."""
        self.arrays = list(arrays)
        self._callers = {id(a) for a in self.arrays}
        self.tr = _shapejit.Tracer(self.arrays, self.segments.jit.specialize_zero_one)
        self.checked = []

    def close(self):
        self.live = None
        self.tr = None

    def declare_break(self, why):
        pass  # the call runs eagerly (_jit.segmented); nothing is cached

    def _is_input(self, v):
        return isinstance(v, Tensor) and v._id < len(self.arrays)

    # -- the cut ------------------------------------------------------------------------
    def _run_segment(self, needed, last=False):
        """Ends the current segment: runs it, its outputs every live value
        computed in it (the `last` one's: `needed` alone); returns {id of a
        live value or a needed one: its array or int}."""
        if not self.made_unchanged():
            # NumPy wrote into an array the function made from untraced
            # values after the trace read it: the segment would read the
            # write. NumPy runs the call (nothing is written yet).
            raise GraphBreak("the function writes into an array it made from untraced values after the trace read it")
        values = [] if last else [v for v in list(self.live) if not self._is_input(v)]
        values += [v for v in needed if not self._is_input(v) and all(v is not w for w in values)]
        concrete = {}
        for v in list(self.live) + list(needed):
            if self._is_input(v):
                a = self.arrays[v._id]
                if last and v._input is None and id(a) in self._callers:
                    # A result that is NumPy's copy of a caller's array (x.copy(), a
                    # 0-d flip) over the array itself: not the array the call writes.
                    a = a.copy()
                concrete[id(v)] = a
        for v in values:
            self.tr.output((v if isinstance(v, Tensor) else as_tensor(self, v))._id)
        dead = self.tr.dead(self.checked)  # computed for their checks, as a whole trace's (state.CHECKING)
        if not values and not dead:
            return concrete  # nothing computed since the last cut is needed
        for vid in dead:
            self.tr.output(vid)
        held = self.tr.finish()
        seg = self.segments
        if held.hash not in seg.graphs and len(seg.graphs) >= MAX_GRAPHS:
            # The bound holds within a call too (a loop of breaks): the call is NumPy's, whole.
            raise GraphBreak(f"{seg.name} met {MAX_GRAPHS} segment graphs; its breaks run eagerly")
        seg.graphs.add(held.hash)
        t0 = time.perf_counter()
        try:
            outs = seg.jit.call_graph(f"{seg.name}/segment:{held.hash}", held, [self.arrays[i] for i in held.inputs])
        except (OverflowError, MemoryError) as e:  # a size past int64, a tensor too large: NumPy's to run
            raise GraphBreak(str(e)) from None
        seg.kernel_ms += (time.perf_counter() - t0) * 1e3
        seg.segments += 1
        for v, a in zip(values, outs):
            concrete[id(v)] = int(a) if isinstance(v, SymInt) else a
        return concrete

    def _next_segment(self, concrete, new_arrays):
        """Starts the next segment over the live values and `new_arrays`;
        returns the tensors of the new arrays."""
        carried = [v for v in list(self.live) if id(v) in concrete]
        arrays = [np.empty((0, abs(concrete[id(v)])), np.bool_) if isinstance(v, SymInt) else concrete[id(v)] for v in carried]
        for v in list(self.live):  # made after the segment ran (not live at the cut): gone with it
            if id(v) not in concrete:
                self.live.discard(v)
        self.arrays = arrays + list(new_arrays)
        self.tr = _shapejit.Tracer(self.arrays, self.segments.jit.specialize_zero_one)
        self.checked = []  # value ids are the new tracer's
        for i, v in enumerate(carried):
            if isinstance(v, Tensor):
                v._id, v._shape = i, None
        for i, v in enumerate(carried):
            if isinstance(v, SymInt):
                n = emit(self, "sym_size", [Tensor(self, i)], {"dim": 1})
                v._id = n._id if concrete[id(v)] >= 0 else emit(self, "sym_sub", [0, n])._id
        return [Tensor(self, len(arrays) + k) for k in range(len(new_arrays))]

    def cut(self, why, needed=(), then=None, raw=False):
        """Runs the segment so far and starts the next; the arrays of
        `needed` go to `then`, whose arrays become inputs of the next
        segment. Returns what `then` returned, its arrays as tensors (with
        `raw`, as they are: NumPy asked for an array). A break (`why`) is
        counted where the user's code made it."""
        if why:
            key = (_where(), why)
            self.segments.breaks[key] = self.segments.breaks.get(key, 0) + 1
        concrete = self._run_segment(needed)
        made = then([concrete[id(v)] for v in needed]) if then else None
        if raw:
            self._next_segment(concrete, [])
            return made
        # An array of a dtype shapejit lacks (NumPy's float16 of a bool
        # array) stays NumPy's: what uses it alone runs in NumPy.
        is_array = lambda x: isinstance(x, np.ndarray) and x.dtype in NAMES  # noqa: E731
        new_arrays, _ = _pytree.flatten(made, is_array, lambda x: None)
        tensors = iter(self._next_segment(concrete, new_arrays))
        return _pytree.map_leaves(lambda a: next(tensors), made, is_array)

    # -- what needs the data ---------------------------------------------------------
    def read(self, tensor, convert, why, raw=False):
        return self.cut(why, [tensor], lambda arrays: convert(arrays[0]), raw=raw)

    def call_numpy(self, func, args, kwargs, why):
        tracing = lambda x: isinstance(x, (Tensor, SymInt))  # noqa: E731
        leaves, _ = _pytree.flatten((args, kwargs), tracing, lambda x: None)

        def run(arrays):
            it = iter(arrays)
            a, k = _pytree.map_leaves(lambda v: next(it), (args, kwargs), tracing)
            t0 = time.perf_counter()
            out = func(*a, **k)
            self.segments.numpy_ms += (time.perf_counter() - t0) * 1e3
            return out
        return self.cut(why, leaves, run)

    def _found_input(self, a, into):
        """An array found as the call ran: an input of the next segment from
        here on (and, through `found`, a capture of the function's next
        calls), whose writes go to it after the call's own arrays and its
        captures'."""
        self._callers.add(id(a))
        (t,) = self.cut(None, then=lambda _: [a])
        if into is not None:
            self.live.discard(t)
            into.become(t._id)
            t = into
        t._input = self.num_inputs + len(self.found) - 1
        return t

    def finish(self, results):
        """The last segment, whose outputs are the function's results (and
        its writes): (spec, arrays)."""
        spec, leaves = results
        concrete = self._run_segment(leaves, last=True)
        return spec, [concrete[id(t)] for t in leaves]
