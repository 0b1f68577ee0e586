"""Tensor: a value of the graph being traced, standing for an array.

A tensor is a value of the graph (``_id``) of the trace ``_st``; a write
into it (``x[k] = v``, ``x += v``) moves it to the updated value and counts
in ``_writes``, which the views of it compare (``View``). ``_input``: the
input it is, whose writes go back to the caller's array; ``_weak``: a float
argument, or Python's arithmetic on one, which promotes as a Python float
does. Its attributes are underscored to stay out of the ndarray namespace
the user's code sees; they are the package's.

This module gives a tensor what it is (dtype, shape, the kinds NumPy tells
apart: a view, a scalar, an array the function reaches and has not read)
and what needs its data (``bool(t)``, ``t.item()``): a graph break, which
the trace state takes. Its operators, ndarray methods and NumPy protocols
are NumPy's functions, attached above the NumPy table (``_methods``).
"""
from __future__ import annotations

import operator

import numpy as np

from .dtypes import DTYPES, NAMES

# The methods that read tensor data: a graph break, whatever the arguments.
BREAKING_METHODS = frozenset(("item", "tolist", "__array__", "__bool__", "__float__", "__int__", "__index__"))
# ndarray's methods that write in place and that a tensor does not trace.
NDARRAY_WRITES = frozenset(("partition", "resize", "setfield", "setflags", "byteswap", "itemset"))


class Tensor:
    """A tensor of the graph being traced."""

    __slots__ = ("_st", "_id", "_dtype", "ndim", "_shape", "_input", "_weak", "_writes", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, st, vid, dtype=None, rank=None):
        if dtype is None:
            _, dtype, rank = st.tr.info(vid)
        self._st, self._id, self._dtype, self.ndim, self._shape = st, vid, dtype, rank, None
        self._input, self._weak, self._writes = None, False, 0
        if st.live is not None:
            st.live.add(self)

    def _fresh(self):
        """A new array of the same value (NumPy's copy): writes into it are its own."""
        return Tensor(self._st, self._id, self._dtype, self.ndim)

    # -- what it is ---------------------------------------------------------
    @property
    def dtype(self):
        return DTYPES[self._dtype]

    @property
    def shape(self):
        if self._shape is None:
            self._shape = tuple(self._st.emit("sym_size", [self], {"dim": d}) for d in range(self.ndim))
        return self._shape

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n = d * n
        return n

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def real(self):
        return self  # every dtype shapejit has is real

    def __getattr__(self, name):
        # An ndarray attribute the tensor lacks: its memory (strides, flags,
        # base), a view as another dtype... is the concrete array's, read as
        # data is (a cut between segments); a method that writes in place
        # would write a copy, so the call is NumPy's.
        if name.startswith("_") or not hasattr(np.ndarray, name):
            raise AttributeError(f"'numpy.ndarray' object has no attribute '{name}'")
        if name in NDARRAY_WRITES:
            self._st.graph_break(f"the function calls ndarray.{name}, which writes in place and which shapejit does not trace")
        return self._st.read(self, lambda a: getattr(a, name), f"the function reads ndarray.{name}, which shapejit does not trace")

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return int(self.shape[0])

    def __repr__(self):
        return f"shapejit.Tensor(v{self._id}, dtype={self.dtype}, ndim={self.ndim})"

    # -- what needs the data: graph breaks (a cut between segments, or the
    # whole call run eagerly: TraceState.read) ------------------------------
    def __bool__(self):
        return self._st.read(self, bool, "the function branches on tensor data (bool of a tensor)")

    def item(self, *index):
        return self._st.read(self, lambda a: a.item(*index), "the function reads a tensor element (.item())")

    def tolist(self):
        return self._st.read(self, lambda a: a.tolist(), "the function reads tensor data (.tolist())")

    def __float__(self):
        return self._st.read(self, float, "the function reads a tensor as a float")

    def __int__(self):
        return self._st.read(self, int, "the function reads a tensor as an int")

    def __index__(self):
        return self._st.read(self, operator.index, "the function reads a tensor as an int")

    def __array__(self, dtype=None, copy=None):
        return self._st.read(self, lambda a: a if dtype is None else a.astype(dtype),
                             "the function converts a tensor to a NumPy array", raw=True)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    __hash__ = object.__hash__


def is_array(x) -> bool:
    """An array argument: NumPy, or anything with ``__dlpack__``; NumPy scalars are values."""
    if isinstance(x, np.ndarray):
        return True
    return hasattr(x, "__dlpack__") and not isinstance(x, (np.generic, Tensor))


_ID = Tensor._id  # the slot itself: a view and an unlifted array keep their value's id there


class View(Tensor):
    """A tensor NumPy gives as a view of another, its `_parent` (x[1:3],
    x.T, x[None], x.reshape(...), np.flip(x)): made from the parent's value
    by `_derive`. When the array at the root of its chain of parents
    (`_root`) has been written since (its `_writes` moved past `_seen`),
    reading the view makes it again from the parent's value, as NumPy's view
    sees the write; a write into the view goes back into its parent
    (_writes.assign) by `_how` (the op's other operands and attributes).
    `_derive` None: NumPy may have copied (a reshape), so a read after a
    write is a graph break."""

    __slots__ = ("_parent", "_root", "_seen", "_op", "_derive", "_how")

    @classmethod
    def of(cls, value, parent, op, derive, how=None):
        """`value`, the result of `op` on `parent`, as a view of it."""
        v = cls.__new__(cls)
        st = value._st
        v._st, v._dtype, v.ndim, v._shape = st, value._dtype, value.ndim, None
        _ID.__set__(v, _ID.__get__(value))
        v._input, v._weak, v._writes = None, False, 0
        v._parent, v._root = parent, parent._root if isinstance(parent, View) else parent
        v._seen, v._op, v._derive, v._how = v._root._writes, op, derive, how
        if st.live is not None:
            st.live.discard(value)
            st.live.add(v)
        return v

    @property
    def _id(self):
        if self._seen != self._root._writes:
            self._refresh()
        return _ID.__get__(self)

    @_id.setter
    def _id(self, vid):
        _ID.__set__(self, vid)

    def _refresh(self):
        if self._derive is None:
            self._st.graph_break(f"a {self._op} of an array read after a write into that array (NumPy may have made it a copy)")
        fresh = self._derive(self._parent)
        _ID.__set__(self, fresh._id)
        self._seen = self._root._writes

    def _fresh(self):
        return Tensor(self._st, self._id, self._dtype, self.ndim)


class Scalar(Tensor):
    """A 0-d value NumPy gives as a scalar, not an array (x[i, j], x.sum(),
    np.exp of a 0-d array, a 0-d operator result): immutable, so an in-place
    operator rebinds its name (s += 1 is s = s + 1, in the dtype NumPy's
    scalar arithmetic gives) and a write into it is NumPy's TypeError.
    np.array(s) is an array of it again (_fresh)."""

    __slots__ = ()

    def __setitem__(self, key, value):
        raise TypeError(f"'numpy.{self.dtype}' object does not support item assignment")


def _rebinds(self, other):
    return NotImplemented


for _name in ("__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__", "__imatmul__",
              "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__"):
    setattr(Scalar, _name, _rebinds)


def as_scalar(v):
    """v, a 0-d result NumPy gives as a scalar, as one (Scalar)."""
    if type(v) is Tensor and v.ndim == 0:
        v.__class__ = Scalar
    return v


def as_array(v):
    """v, or the arrays in a tuple or list of them, an array where it is a
    scalar: what a NumPy function that gives arrays gives, computed with
    operators (np.full of a 0-d shape is an array, not a scalar)."""
    if type(v) is Scalar:
        v.__class__ = Tensor
    elif isinstance(v, (tuple, list)):
        for e in v:
            as_array(e)
    return v


class Unlifted(Tensor):
    """An array the function can reach (a global, a closure's, an object's
    attribute), swapped in for that array while the function is traced
    (_runtime.captures), which becomes an input of the graph where it is
    first used: its class becomes Tensor's. An array the function can reach
    and does not use is no input."""

    __slots__ = ()

    @classmethod
    def of(cls, st, array):
        u = cls.__new__(cls)
        u._st, u._dtype, u.ndim, u._shape = st, NAMES[np.dtype(array.dtype)], array.ndim, None
        u._input, u._weak, u._writes = None, False, 0
        return u

    @property
    def _id(self):
        self._lift()
        return _ID.__get__(self)

    @_id.setter
    def _id(self, vid):
        self._lift()  # a write into it, before it was read: the input it is takes the write
        _ID.__set__(self, vid)

    def _lift(self):
        self._st.lift_unlifted(self)

    def become(self, vid):
        """Now the tensor of value `vid`: a plain Tensor."""
        self.__class__ = Tensor
        _ID.__set__(self, vid)
        if self._st.live is not None:
            self._st.live.add(self)
