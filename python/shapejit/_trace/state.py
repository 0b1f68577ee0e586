"""The trace state, and how a node is added to its graph.

A ``TraceState`` holds the C++ tracer a trace adds nodes to, the arrays that
are its inputs (the call's, then the arrays it captures), and what the
function met on the way: arrays it reads that are not inputs yet (found by
where they hang: a closure cell, a global, an attribute of an object the
call passes), its writes into inputs, and, for a segmented run, the values
alive. What needs data (``read``, ``call_numpy``) is a graph break here; a
segmented run (``_runtime.segments``) cuts instead. ``current()`` is the
state this thread is tracing with.

``emit`` adds one node and gives its value (a Tensor, a SymInt, or a View
of its first operand for the ops NumPy gives as views); ``as_tensor`` makes
a tensor of anything a NumPy function takes as an array.
"""
from __future__ import annotations

import threading

import numpy as np

from .. import _shapejit
from .dtypes import DTYPES, NAMES, dtype_name, python_int_fits
from .sizes import SymBool, SymInt, SymRange
from .tensor import Scalar, Tensor, Unlifted, View, is_array

GraphBreak = _shapejit.GraphBreak
# The stages fault injection makes fail (core/support/faults.h), read once.
_FAULTS = frozenset(_shapejit.faults())


def fault(stage):
    """Whether `stage` ("trace", "numpy") fails at this chance (SHAPEJIT_FAULTS; never, unset)."""
    return stage in _FAULTS and _shapejit.fault(stage)

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
        self.checked = []    # the values of ops that can raise on the data (CHECKING), by id
        self.float_sources = set()  # the source_keys of floats that stand in as inputs (captures.swapped)
        self.made = []       # (array, its value when lifted) for arrays the function made outside the trace
        self.captures = []   # the arrays that are inputs after the call's own
        self.writes = []     # (input, block offsets or None for all of it, value, the input's tensor): writes into inputs, in order
        self.sources = {}    # id(array) -> where the function reaches it (_runtime.captures.swapped)
        self.live = None     # a segmented run's: the tracing values made (a WeakSet)
        self.reach = None    # where the function finds arrays besides its arguments (_runtime.captures.Reach)
        self.num_inputs = 0  # the call's arrays and its captures
        self.by_source = {}  # source_key -> the tensor of the capture found there
        self._unlifted = {}  # id(array) -> the Unlifted standing in for it, not used yet
        self._pending = {}   # id(that Unlifted) -> (the array, its source)
        self.results_per_call = False  # a segmented run's: its results are this call's own, not an entry's

    def __enter__(self):
        self._prev = current()
        _local.state = self
        return self

    def __exit__(self, *exc):
        _local.state = self._prev

    def stand_in(self, array, source) -> "Tensor":
        """The tracing value that stands in for an array the function can
        reach at `source` (_runtime.captures.swapped): the input captured there, or
        an Unlifted that becomes one where it is first used. Each place is
        an input of its own, even where it holds an array that another
        place or an argument holds too: each is read again from its place
        on every call, and a write into one is seen through the other by
        NumPy alone (writes_overlap)."""
        key = source_key(source)
        t = self.by_source.get(key)
        if t is not None:
            return t
        u = self._unlifted.get(key)
        if u is None:
            u = self._unlifted[key] = Unlifted.of(self, array)
            self._pending[id(u)] = (array, source, key)
            self.keep.append(array)
        return u

    def lift_unlifted(self, u):
        """An Unlifted, used: the tensor of its array (lift), in place."""
        array, source, key = self._pending.pop(id(u))
        del self._unlifted[key]
        self.lift(array, into=u, source=source)
        self.by_source[key] = u

    def lift(self, array, into=None, source=None) -> "Tensor":
        """The tensor for an array the function reads (a weight in its closure
        or globals); `into`: the Unlifted standing in for it at `source`,
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

    def found_inputs(self):
        """The arrays the trace met that are not inputs yet, as the
        extension takes them: (array, source), or (array, source, "float")
        for a float that stands in as an input (its place holds a float,
        read as a 0-d float64 array on every call)."""
        return [(a, s, "float") if s is not None and len(s) == 2 and source_key(s) in self.float_sources else (a, s)
                for a, s in self.found]

    def made_unchanged(self) -> bool:
        """Whether the arrays the function made outside the trace (from
        NumPy scalars, from Python values) hold what they held when the trace
        read them: a write into one after that is NumPy's own, which the
        graph, reading its value as it was, would not see."""
        return all(same_value(array, value) for array, value in self.made)

    def _found_input(self, a, into):
        """The tensor of an array found as the trace ran (`into`, an
        Unlifted, becomes it): here a stand-in of its dtype and shape, so
        the trace goes on and finds the others in one pass; the call is made
        again with all of them as inputs."""
        vid = self.tr.op("full", [int(d) for d in a.shape], {"value": 0, "dtype": dtype_name(a.dtype)})
        if into is None:
            return Tensor(self, vid)
        into.become(vid)
        return into

    def _checked(self, array):
        """The array as NumPy's own, or a graph break where NumPy's methods
        would not be its (a masked array, a matrix, any subclass of ndarray
        that is not a memory map)."""
        if isinstance(array, np.ndarray):
            if type(array) not in (np.ndarray, np.memmap):
                self.graph_break(f"the function reads a {type(array).__name__}, whose NumPy semantics are its own")
            if array.dtype not in NAMES:  # made by NumPy in the body (np.round of a bool is float16)
                self.graph_break(f"the function computes with a {array.dtype} array, a dtype shapejit lacks")
            return array
        return np.from_dlpack(array)

    def declare_break(self, why):
        """The trace cannot go on: the site caches the break."""
        self.tr.break_graph(why)

    def graph_break(self, why):
        """Declares the break and raises GraphBreak: the trace stops here."""
        self.declare_break(why)
        raise GraphBreak(why)

    def emit(self, op, operands, attrs=None):
        return emit(self, op, operands, attrs)

    # What needs data: while a call is traced whole, a graph break (the call
    # runs eagerly); a segmented run (_runtime.segments) cuts the graph instead.
    def read(self, tensor, convert, why, raw=False):
        self.graph_break(why)

    def call_numpy(self, func, args, kwargs, why):
        self.graph_break(why)

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


def source_key(source):
    """A source as a dict key: its root by identity, its steps by value."""
    return id(source[0]), source[1]


def state_of(*values):
    """The trace the values belong to (the first tracing value's), else this thread's."""
    for v in values:
        if isinstance(v, (Tensor, SymInt)):
            return v._st
    st = current()
    if st is None:
        raise RuntimeError("shapejit: no trace is being recorded")
    return st


def graph_break(st, why):
    """The trace cannot go on (a break the site caches): raises GraphBreak."""
    st.graph_break(why)


def _value(st, tr_id):
    """A Tensor or a SymInt for a value id."""
    is_tensor, dtype, rank = st.tr.info(tr_id)
    return Tensor(st, tr_id, dtype, rank) if is_tensor else SymInt(st, tr_id)


# The ops whose result NumPy gives as a view of their first operand, when
# that operand is a tensor: the result is a View of it, which a write into
# either keeps in step with the other (_writes.assign). A reshape may be a
# copy in NumPy (its layout decides), and an expand is read-only or a copy:
# a write into either, or a read of one after its operand changed, is a
# graph break.
_VIEW_OPS = frozenset(("slice", "reshape", "permute", "transpose", "squeeze", "unsqueeze", "expand"))


# The ops whose kernels can stop on the data (an integer to a negative
# power, the max of nothing, an index out of range), as NumPy raises there.
# NumPy raises whether or not the program uses the result; a trace that no
# output is computed from (`v = 2 ** a; v[...] = 1`) would drop the op and
# its check, so a value of one that no output reads is an output of its
# own (calls.Callbacks.trace), computed and discarded.
CHECKING = frozenset({"pow", "max", "min", "argmax", "argmin", "index_select", "embedding", "index_put", "index_add", "index_mul", "index_max", "index_min"})


def emit(st, op, operands, attrs=None):
    """Adds one node; returns its value."""
    if _FAULTS and fault("trace"):
        raise RuntimeError(f"shapejit: the trace could not add a {op} node (fault injected)")
    for o in operands:  # before the node: lifting may cut the graph (_segments), a view be made again
        kind = type(o)
        if kind is Unlifted:
            o._lift()
        elif kind is View:
            o._id  # noqa: B018 - read for its effect
    v = _value(st, st.tr.op(op, operands, attrs))  # values by their `_id`, numbers as literals
    if op in CHECKING and (op != "pow" or v._dtype in ("i32", "i64")):
        st.checked.append(v._id)
    if op in _VIEW_OPS and isinstance(operands[0], Tensor) and type(operands[0]) is not Scalar:  # a scalar's is a copy
        rest = operands[1:]
        derive = None if op == "reshape" else lambda p: _value(st, st.tr.op(op, [p, *rest], attrs))
        return View.of(v, operands[0], op, derive, (rest, attrs))
    return v


def as_tensor(st, x, like=None, index=False) -> "Tensor":
    """x as a tensor: tensors as they are, arrays lifted, SymInts and numbers as
    0-d tensors; lists of numbers only as indices (x[[0, 2]])."""
    if isinstance(x, Tensor):
        if type(x) is Unlifted:
            x._lift()
        return x
    if is_array(x):
        return st.lift(x)
    if isinstance(x, SymBool):  # a comparison of sizes: its truth
        x = bool(x)
    if isinstance(x, SymRange):
        return emit(st, "arange", [x.start, x.stop, x.step], {"dtype": "i64"})
    if isinstance(x, SymInt):  # [n] from arange(n, n + 1), reshaped to 0-d
        return emit(st, "reshape", [emit(st, "arange", [x, emit(st, "sym_add", [x, 1]), 1])])
    if like is None and isinstance(x, np.generic):
        if x.dtype not in NAMES:  # np.int8(3), np.float16(1): NumPy computes in their dtype
            st.graph_break(f"a NumPy {x.dtype} scalar, a dtype shapejit lacks")
        return strong(st, x)  # NumPy's scalar keeps its dtype (np.stack([np.float32(1), ...]))
    if isinstance(x, (bool, np.bool_)):
        return emit(st, "full", [], {"value": int(x), "dtype": "bool"})
    if isinstance(x, (int, np.integer)):
        if like in ("f32", "f64"):
            return emit(st, "full", [], {"value": float(x), "dtype": like})
        if like is None and not -2**63 <= int(x) < 2**63:
            st.graph_break(f"the Python int {int(x)} as an array (NumPy makes an object array of it)")
        python_int_fits(int(x), like or "i64")
        return emit(st, "full", [], {"value": int(x), "dtype": like or "i64"})
    if isinstance(x, (float, np.floating)):
        return emit(st, "full", [], {"value": float(x), "dtype": like if like in ("f32", "f64") else "f64"})
    if isinstance(x, (list, tuple)):
        if not index:
            raise TypeError(f"shapejit: a {type(x).__name__} is not an array; pass np.asarray(...) to compute with it")
        parts = [as_tensor(st, e, like) for e in x]
        if not parts:
            return emit(st, "full", [0], {"value": 0, "dtype": like or "f64"})
        common = NAMES[np.result_type(*(DTYPES[p._dtype] for p in parts))]
        parts = [p if p._dtype == common else emit(st, "cast", [p], {"dtype": common}) for p in parts]
        rows = [emit(st, "reshape", [p, 1, *p.shape]) for p in parts]
        return rows[0] if len(rows) == 1 else emit(st, "concat", rows, {"dim": 0})
    raise TypeError(f"shapejit: a {type(x).__name__} is not an array or a number")


def strong(st, x):
    """A NumPy scalar of a dtype shapejit has as the 0-d array it stands for:
    NumPy 2 promotes with its dtype (np.float64(2) * a float32 array is
    float64), where a Python number takes the array's."""
    value = x.item()
    return emit(st, "full", [], {"value": int(value) if isinstance(value, bool) else value, "dtype": NAMES[x.dtype]})
