"""Tracing values: what a jitted function computes with while it is traced.

A ``Tensor`` is a value of the graph being recorded; its operators, methods
and the NumPy protocols (``__array_ufunc__``, ``__array_function__``) add
nodes through the C++ tracer. ``x.shape[i]`` is a ``SymInt`` (``_sizes``): arithmetic on it
is traced (``sym_add``...), and only an observation specializes it:
``int(n)``, ``range(n)`` and indexing read the value (``guard_int``); a
comparison returns a ``SymBool`` whose truth (``if n > 512:``) guards the
predicate alone (``guard_bool``). What cannot be traced (a branch on tensor
data, ``t.item()``, ``t.tolist()``, a NumPy call with no op) is a graph
break, which the trace state (``_state``) takes.

Dtypes follow NumPy's promotion (``_promotion``): two tensors of different
dtypes meet at ``np.result_type``; a Python int keeps a tensor's dtype (a
bool tensor becomes int64), a Python float keeps a float tensor's (an
integer tensor becomes float64), a NumPy scalar promotes with its own, as
NumPy 2 does; and every operator and ufunc gives the dtype NumPy's gives.
"""
from __future__ import annotations

import operator

import numpy as np

from . import _shapejit
from ._state import current
from ._sizes import SymBool, SymInt, SymRange  # noqa: F401 (SymBool, SymRange: the package imports the value types from here)
# The functions of tensors; the package calls them through this module.
from ._promotion import _INT_RANGE, _scalar, _strong, _weak, conform, numpy_result, out_of_range_comparison, promote, python_int_fits  # noqa: E402,F401 (the package's names for them)
from ._tensor_fns import concatenate, expand_dims, matmul, maximum, minimum, stack, unary, where  # noqa: F401

GraphBreak = _shapejit.GraphBreak

_DTYPES = {"f32": np.dtype(np.float32), "f64": np.dtype(np.float64), "i32": np.dtype(np.int32),
           "i64": np.dtype(np.int64), "bool": np.dtype(np.bool_)}
_NAMES = {v: k for k, v in _DTYPES.items()}
_END = 2**62  # a slice bound past any dim ("to the end"; bounds clamp)


def dtype_name(dtype) -> str:
    """Our name (f32...) for anything np.dtype takes, or one of our names."""
    if isinstance(dtype, str) and dtype in _DTYPES:
        return dtype
    d = np.dtype(dtype)
    if d not in _NAMES:
        raise TypeError(f"dtype {d} is not one shapejit takes (float32, float64, int32, int64, bool)")
    return _NAMES[d]


def is_array(x) -> bool:
    """An array argument: NumPy, or anything with ``__dlpack__``; NumPy scalars are values."""
    if isinstance(x, np.ndarray):
        return True
    return hasattr(x, "__dlpack__") and not isinstance(x, (np.generic, Tensor))


def _state_of(*values):
    for v in values:
        if isinstance(v, (Tensor, SymInt)):
            return v._st
    st = current()
    if st is None:
        raise RuntimeError("shapejit: no trace is being recorded")
    return st


def _value(st, tr_id):
    """A Tensor or a SymInt for a value id."""
    is_tensor, dtype, rank = st.tr.info(tr_id)
    return Tensor(st, tr_id, dtype, rank) if is_tensor else SymInt(st, tr_id)


# The ops whose result NumPy gives as a view of their first operand, when
# that operand is a tensor: the result is a _View of it, which a write into
# either keeps in step with the other (_indexing.assign). A reshape may be a
# copy in NumPy (its layout decides), and an expand is read-only or a copy:
# a write into either, or a read of one after its operand changed, is a
# graph break.
_VIEW_OPS = frozenset(("slice", "reshape", "permute", "transpose", "squeeze", "unsqueeze", "expand"))


def emit(st, op, operands, attrs=None):
    """Adds one node; returns its value."""
    for o in operands:  # before the node: lifting may cut the graph (_segments), a view be made again
        kind = type(o)
        if kind is _Unlifted:
            o._lift()
        elif kind is _View:
            o._id  # noqa: B018 - read for its effect
    v = _value(st, st.tr.op(op, operands, attrs))  # values by their `_id`, numbers as literals
    if op in _VIEW_OPS and isinstance(operands[0], Tensor) and type(operands[0]) is not _Scalar:  # a scalar's is a copy
        rest = operands[1:]
        derive = None if op == "reshape" else lambda p: _value(st, st.tr.op(op, [p, *rest], attrs))
        return _View.of(v, operands[0], op, derive, (rest, attrs))
    return v


def as_tensor(st, x, like=None, index=False) -> "Tensor":
    """x as a tensor: tensors as they are, arrays lifted, SymInts and numbers as
    0-d tensors; lists of numbers only as indices (x[[0, 2]])."""
    if isinstance(x, Tensor):
        if type(x) is _Unlifted:
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
    if like is None and isinstance(x, np.generic) and x.dtype in _NAMES:
        return _strong(st, x)  # NumPy's scalar keeps its dtype (np.stack([np.float32(1), ...]))
    if isinstance(x, (bool, np.bool_)):
        return emit(st, "full", [], {"value": int(x), "dtype": "bool"})
    if isinstance(x, (int, np.integer)):
        if like in ("f32", "f64"):
            return emit(st, "full", [], {"value": float(x), "dtype": like})
        if like is None and not -2**63 <= int(x) < 2**63:
            _break(st, f"the Python int {int(x)} as an array (NumPy makes an object array of it)")
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
        return concatenate([p.reshape(1, *p.shape) for p in parts], axis=0)
    raise TypeError(f"shapejit: a {type(x).__name__} is not an array or a number")


# NumPy's arithmetic on two bool arrays: logical where it stays bool, an
# error where NumPy refuses it; the rest gives int8, which shapejit lacks.
_BOOL_BINARY = {"add": "or", "mul": "and", "maximum": "or", "minimum": "and"}
_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")


def binary(op, a, b):
    st = _state_of(a, b)
    if op in _COMPARISONS:
        exact = out_of_range_comparison(st, op, a, b)
        if exact is not None:
            return exact
        # A size against an int32 array: compared exactly, in int64 (NumPy 2's
        # comparison with a Python int out of the array's range).
        if isinstance(a, SymInt) and isinstance(b, Tensor) and b._dtype == "i32":
            b = b.astype("i64")
        elif isinstance(b, SymInt) and isinstance(a, Tensor) and a._dtype == "i32":
            a = a.astype("i64")
    a, b = promote(st, a, b)
    if op not in _COMPARISONS and all(isinstance(v, bool) or (isinstance(v, Tensor) and v._dtype == "bool") for v in (a, b)):
        if op in _BOOL_BINARY:
            return emit(st, _BOOL_BINARY[op], [as_tensor(st, a), as_tensor(st, b)])
        if op == "sub":
            raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, the `^` operator, "
                            "or the logical_xor function instead.")
        _break(st, f"np.{op} of two bool arrays (NumPy gives int8)")
    return _weak(emit(st, op, [a, b]), a, b)


_LOGICAL = {"and": "and", "or": "or", "xor": "ne"}


def bitwise(op, a, b):
    """NumPy's &, |, ^, <<, >>: logical on bools, bitwise on integers."""
    st = _state_of(a, b)
    a, b = promote(st, a, b)
    dt = a._dtype if isinstance(a, Tensor) else b._dtype
    if dt == "bool" and op in _LOGICAL:
        return emit(st, _LOGICAL[op], [as_tensor(st, a), as_tensor(st, b)])
    if dt not in ("i32", "i64"):
        raise TypeError(f"ufunc '{op}' not supported for the input types ({_DTYPES[dt]})")
    return emit(st, op if op in ("left_shift", "right_shift") else "bitwise_" + op, [a, b])


def _as_float(st, v):
    """An operand of a float function: a Python int or bool (or a comparison
    of sizes) as the weak float NumPy makes of it, a size as a weak float
    tensor; others as they are."""
    if isinstance(v, SymBool):
        v = bool(v)
    if type(v) in (int, bool):
        return float(v)
    if isinstance(v, SymInt):
        t = as_tensor(st, v).astype("f64")
        t._weak = True  # as the Python number it stands for
        return t
    return v


def _float(x):
    st = _state_of(x)
    x = as_tensor(st, x)
    return x if x._dtype in ("f32", "f64") else x.astype("f64")


def true_divide(a, b):
    st = _state_of(a, b)
    # NumPy divides in float64 where an operand is integral: a Python int or
    # a size meets the array as that float, whatever its magnitude.
    a, b = (_as_float(st, v) for v in (a, b))
    a, b = promote(st, a, b)
    if any(isinstance(v, Tensor) and v._dtype not in ("f32", "f64") for v in (a, b)):
        a = a.astype("f64") if isinstance(a, Tensor) else float(a)
        b = b.astype("f64") if isinstance(b, Tensor) else float(b)
    return _weak(emit(st, "div", [a, b]), a, b)


def floor(x):
    """Float floor from the op set: truncate through int64, step down where that rounded up."""
    st = _state_of(x)
    if x._dtype not in ("f32", "f64"):
        return x
    t = x.astype("i64").astype(x._dtype)
    stepped = emit(st, "where", [emit(st, "gt", [t, x]), emit(st, "sub", [t, 1]), t])
    # Past 2^52 a float is integral already (and may be past int64); NaN
    # fails the comparison too, and stays NaN.
    small = emit(st, "lt", [emit(st, "abs", [x]), float(2**52)])
    return emit(st, "where", [small, stepped, x])


def floor_divide(a, b):
    st = _state_of(a, b)
    a, b = promote(st, a, b)
    dt = a._dtype if isinstance(a, Tensor) else b._dtype
    if dt in ("f32", "f64"):
        return _float_divmod(st, a, b, dt)[0]
    return emit(st, "div", [a, b])  # integer div is floor division


def remainder(a, b):
    st = _state_of(a, b)
    a, b = promote(st, a, b)
    dt = a._dtype if isinstance(a, Tensor) else b._dtype
    if dt in ("f32", "f64"):
        return _float_divmod(st, a, b, dt)[1]
    q = floor_divide(a, b)
    r = emit(st, "sub", [a, emit(st, "mul", [q, b])])
    if isinstance(b, Tensor) or b == 0:
        r = emit(st, "where", [emit(st, "eq", [as_tensor(st, b, r._dtype), 0]), 0, r])  # NumPy: x % 0 is 0 for integers
    return r


def _negative(st, x):
    """Where x is below zero or is -0.0 (1 / x is -inf): its sign bit, but for NaN's."""
    return emit(st, "or", [emit(st, "lt", [x, 0.0]), emit(st, "lt", [emit(st, "div", [1.0, x]), 0.0])])


def _float_divmod(st, a, b, dt):
    """NumPy's floor division and remainder of floats (npy_divmod): the
    remainder from C's fmod, exact however large the quotient, moved to the
    divisor's sign; the quotient from what is left, rounded to the integer
    it is; signed zeros and infinities as NumPy gives them."""
    a, b = (as_tensor(st, v, dt) for v in (a, b))
    a, b = (v if v._dtype == dt else v.astype(dt) for v in (a, b))  # a bool scalar's tensor is bool
    mod = emit(st, "fmod", [a, b])
    div = emit(st, "div", [emit(st, "sub", [a, mod]), b])
    signs_differ = emit(st, "ne", [emit(st, "lt", [b, 0.0]), emit(st, "lt", [mod, 0.0])])
    adjust = emit(st, "and", [emit(st, "ne", [mod, 0.0]), signs_differ])
    mod = emit(st, "where", [adjust, emit(st, "add", [mod, b]), mod])
    div = emit(st, "where", [adjust, emit(st, "sub", [div, 1.0]), div])
    signed_zero = lambda x: emit(st, "where", [_negative(st, x), -0.0, 0.0]).astype(dt)  # noqa: E731 - copysign(0, x)
    mod = emit(st, "where", [emit(st, "eq", [mod, 0.0]), signed_zero(b), mod])
    whole = emit(st, "floor", [div])
    whole = emit(st, "where", [emit(st, "gt", [emit(st, "sub", [div, whole]), 0.5]), emit(st, "add", [whole, 1.0]), whole])
    quotient = emit(st, "div", [a, b])
    q = emit(st, "where", [emit(st, "eq", [div, 0.0]), signed_zero(quotient), whole])
    q = emit(st, "where", [emit(st, "eq", [b, 0.0]), quotient, q])  # x // 0: inf or nan, as a / b is
    return q, mod


def _axes(axis, rank):
    if axis is None:
        return list(range(rank))
    if isinstance(axis, (list, tuple)):
        return [operator.index(a) for a in axis]
    return [operator.index(axis)]


def _in_range(axis, rank, what=""):
    """`axis` of an array of rank `rank`, in [0, rank): NumPy's AxisError when out of it."""
    a = operator.index(axis)
    if not -rank <= a < rank:
        raise np.exceptions.AxisError(f"{what}axis {a} is out of bounds for array of dimension {rank}")
    return a % rank


def _break(st, why):
    st.declare_break(why)
    raise GraphBreak(why)


# NumPy ufuncs and functions a Tensor answers to (filled by _ops with
# shapejit's functions of the same names); anything else breaks the graph.
_UFUNCS = {}
_FUNCTIONS = {}



def _operators(op, fn):
    """A Tensor's operator and its reflected form: shapejit's `fn`, giving
    the dtype NumPy's operator gives (conform)."""
    def forward(self, o):
        return as_scalar(conform(op, (self, o), lambda: fn(self, o)))

    def reflected(self, o):
        return as_scalar(conform(op, (o, self), lambda: fn(o, self)))
    return forward, reflected

def _inplace(op, ufunc, fn):
    """A Tensor's in-place operator (x += o): NumPy's ufunc(x, o, out=x),
    written into x (and into the array x views, if it is a view) as
    x[...] = x op o is, after NumPy's checks (_indexing.inplace)."""
    def f(self, o):
        from ._indexing import inplace
        return inplace(self, ufunc, o, lambda: conform(op, (self, o), lambda: fn(self, o)))
    return f


class Tensor:
    """A tensor of the graph being traced."""

    # A tensor is a value of the graph (`_id`); a write into it (x[k] = v,
    # x += v) moves it to the updated value and counts in `_writes`, which
    # the views of it compare (_View). `_input`: the input it is, whose
    # writes go back to the caller's array; `_weak`: a float argument, or
    # Python's arithmetic on one, which promotes as a Python float does
    # (_arguments.py).
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
        return _DTYPES[self._dtype]

    @property
    def shape(self):
        if self._shape is None:
            self._shape = tuple(emit(self._st, "sym_size", [self], {"dim": d}) for d in range(self.ndim))
        return self._shape

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n = d * n
        return n

    @property
    def T(self):
        return self.transpose()

    @property
    def mT(self):  # noqa: N802 - NumPy's name
        if self.ndim < 2:
            raise ValueError("matrix transpose with ndim < 2 is undefined")
        return self.swapaxes(-1, -2)

    @property
    def real(self):
        return self  # every dtype shapejit has is real

    @property
    def imag(self):
        return _np_fns().imag(self)

    def conj(self):
        return self

    conjugate = conj

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    def fill(self, value):
        self[...] = value

    def nonzero(self):
        from ._ops import nonzero
        return nonzero(self)

    def searchsorted(self, v, side="left", sorter=None):
        return _np_fns().searchsorted(self, v, side, sorter)

    def __getattr__(self, name):
        # An ndarray attribute the tensor lacks: its memory (strides, flags,
        # base), a view as another dtype... is the concrete array's, read as
        # data is (a cut between segments); a method that writes in place
        # would write a copy, so the call is NumPy's.
        if name.startswith("_") or not hasattr(np.ndarray, name):
            raise AttributeError(f"'numpy.ndarray' object has no attribute '{name}'")
        if name in _NDARRAY_WRITES:
            _break(self._st, f"the function calls ndarray.{name}, which writes in place and which shapejit does not trace")
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

    # -- operators ------------------------------------------------------------
    __add__, __radd__ = _operators(operator.add, lambda a, b: binary("add", a, b))
    __sub__, __rsub__ = _operators(operator.sub, lambda a, b: binary("sub", a, b))
    __mul__, __rmul__ = _operators(operator.mul, lambda a, b: binary("mul", a, b))
    __truediv__, __rtruediv__ = _operators(operator.truediv, true_divide)
    __floordiv__, __rfloordiv__ = _operators(operator.floordiv, floor_divide)
    __mod__, __rmod__ = _operators(operator.mod, remainder)
    __pow__, __rpow__ = _operators(operator.pow, lambda a, b: binary("pow", a, b))
    __matmul__, __rmatmul__ = _operators(operator.matmul, matmul)
    __eq__, _ = _operators(operator.eq, lambda a, b: binary("eq", a, b))
    __ne__, _ = _operators(operator.ne, lambda a, b: binary("ne", a, b))
    __lt__, _ = _operators(operator.lt, lambda a, b: binary("lt", a, b))
    __le__, _ = _operators(operator.le, lambda a, b: binary("le", a, b))
    __gt__, _ = _operators(operator.gt, lambda a, b: binary("gt", a, b))
    __ge__, _ = _operators(operator.ge, lambda a, b: binary("ge", a, b))
    __iadd__ = _inplace(operator.add, np.add, lambda a, b: binary("add", a, b))
    __isub__ = _inplace(operator.sub, np.subtract, lambda a, b: binary("sub", a, b))
    __imul__ = _inplace(operator.mul, np.multiply, lambda a, b: binary("mul", a, b))
    __itruediv__ = _inplace(operator.truediv, np.true_divide, true_divide)
    __ifloordiv__ = _inplace(operator.floordiv, np.floor_divide, floor_divide)
    __imod__ = _inplace(operator.mod, np.remainder, remainder)
    __ipow__ = _inplace(operator.pow, np.power, lambda a, b: binary("pow", a, b))
    __imatmul__ = _inplace(operator.matmul, np.matmul, matmul)
    __iand__ = _inplace(None, np.bitwise_and, lambda a, b: bitwise("and", a, b))
    __ior__ = _inplace(None, np.bitwise_or, lambda a, b: bitwise("or", a, b))
    __ixor__ = _inplace(None, np.bitwise_xor, lambda a, b: bitwise("xor", a, b))
    __ilshift__ = _inplace(None, np.left_shift, lambda a, b: bitwise("left_shift", a, b))
    __irshift__ = _inplace(None, np.right_shift, lambda a, b: bitwise("right_shift", a, b))

    def __neg__(self): return _weak(emit(self._st, "neg", [self]), self)
    def __pos__(self): return self._fresh()
    def __abs__(self): return emit(self._st, "abs", [self])

    def __invert__(self):
        if self._dtype == "bool":
            return emit(self._st, "not", [self])
        if self._dtype not in ("i32", "i64"):
            raise TypeError(f"ufunc 'invert' not supported for the input types ({self.dtype})")
        return emit(self._st, "invert", [self])

    def __and__(self, o): return bitwise("and", self, o)
    def __rand__(self, o): return bitwise("and", o, self)
    def __or__(self, o): return bitwise("or", self, o)
    def __ror__(self, o): return bitwise("or", o, self)
    def __xor__(self, o): return bitwise("xor", self, o)
    def __rxor__(self, o): return bitwise("xor", o, self)
    def __lshift__(self, o): return bitwise("left_shift", self, o)
    def __rlshift__(self, o): return bitwise("left_shift", o, self)
    def __rshift__(self, o): return bitwise("right_shift", self, o)
    def __rrshift__(self, o): return bitwise("right_shift", o, self)

    def __setitem__(self, key, value):
        from ._indexing import setitem
        setitem(self, key, value)

    # -- methods --------------------------------------------------------------
    def astype(self, dtype, copy=True):
        name = dtype_name(dtype)
        if name == self._dtype:
            return self._fresh() if copy else self
        return emit(self._st, "cast", [self], {"dtype": name})

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return emit(self._st, "reshape", [self, *[_shape_operand(s) for s in shape]])

    def flatten(self, order="C"):
        return self.reshape(-1)._fresh()  # always a copy in NumPy

    def ravel(self, order="C"):
        return self.reshape(-1)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        perm = [operator.index(p) for p in axes] if axes else list(range(self.ndim))[::-1]
        if len(perm) != self.ndim:
            raise ValueError("axes don't match array")
        perm = [_in_range(p, self.ndim) for p in perm]
        if len(set(perm)) != len(perm):
            raise ValueError("repeated axis in transpose")
        return emit(self._st, "permute", [self], {"perm": perm})

    def swapaxes(self, a, b):
        dim0, dim1 = _in_range(a, self.ndim, "axis1: "), _in_range(b, self.ndim, "axis2: ")
        return emit(self._st, "transpose", [self], {"dim0": dim0, "dim1": dim1})

    def squeeze(self, axis=None):
        if axis is None:
            dims = [d for d in range(self.ndim) if self.shape[d] == 1]
        else:
            dims = _axes(axis, self.ndim)
        if not dims:
            return self
        return emit(self._st, "squeeze", [self], {"dims": dims})

    def _reduce(self, op, axis, keepdims, dtype=None):
        x = self
        if op == "mean" and x._dtype not in ("f32", "f64"):
            x = x.astype("f64")
        if op in ("sum", "prod") and x._dtype in ("bool", "i32"):
            x = x.astype("i64")  # NumPy sums and multiplies small integers as its int64
        if dtype is not None:
            x = x.astype(dtype)
        if self.ndim == 0 and axis in (0, -1, (0,), (-1,)) and op != "mean":
            axis = None  # NumPy's ufunc reductions take "axis 0" of a 0-d array (its mean does not)
        axes = _axes(axis, self.ndim)
        for a in axes:
            if not -self.ndim <= a < self.ndim:
                raise np.exceptions.AxisError(f"axis {a} is out of bounds for array of dimension {self.ndim}")
        return as_scalar(emit(self._st, op, [x], {"axes": axes, "keepdim": bool(keepdims)}))

    def sum(self, axis=None, dtype=None, keepdims=False):
        return self._reduce("sum", axis, keepdims, dtype)

    def mean(self, axis=None, dtype=None, keepdims=False):
        return self._reduce("mean", axis, keepdims, dtype)

    def prod(self, axis=None, dtype=None, keepdims=False):
        return self._reduce("prod", axis, keepdims, dtype)

    def _nonempty(self, axis, message):
        """NumPy's error for a reduction with no identity over an empty axis,
        raised where NumPy raises it, before what follows (each size read
        as a predicate: an entry guards that it is not 0)."""
        for a in (_axes(axis, self.ndim) if self.ndim else []):
            if self.shape[_in_range(a, self.ndim)] == 0:
                raise ValueError(message)

    def max(self, axis=None, keepdims=False):
        self._nonempty(axis, "zero-size array to reduction operation maximum which has no identity")
        return self._reduce("max", axis, keepdims)

    def min(self, axis=None, keepdims=False):
        self._nonempty(axis, "zero-size array to reduction operation minimum which has no identity")
        return self._reduce("min", axis, keepdims)

    def argmax(self, axis=None, keepdims=False, *, _name="argmax"):
        x = self
        if axis is None:
            x, axis = self.reshape(-1), 0
        x._nonempty(axis, f"attempt to get {_name} of an empty sequence")
        return as_scalar(emit(self._st, "argmax", [x], {"dim": _in_range(axis, x.ndim), "keepdim": bool(keepdims)}))

    def argmin(self, axis=None, keepdims=False):
        x = self if self._dtype != "bool" else self.astype("i64")
        if axis is not None:
            _in_range(axis, self.ndim)
        return (-x).argmax(axis, keepdims, _name="argmin")

    def clip(self, a_min=None, a_max=None):
        x = self
        # A Python int bound past the dtype's range on its own side clips nothing (NumPy 2).
        lo, hi = _INT_RANGE.get(self._dtype, (None, None))
        if type(a_min) is int and lo is not None and a_min < lo:
            a_min = None
        if type(a_max) is int and hi is not None and a_max > hi:
            a_max = None
        if a_min is not None:
            x = maximum(x, a_min)
        if a_max is not None:
            x = minimum(x, a_max)
        return x

    def copy(self, order="K"):
        return self._fresh()

    # NumPy's methods that are its functions (_numpy has them).
    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
        return _np_fns().var(self, axis, dtype, out, ddof, keepdims, **kw)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
        return _np_fns().std(self, axis, dtype, out, ddof, keepdims, **kw)

    def any(self, axis=None, out=None, keepdims=False, **kw):
        return _np_fns().any(self, axis, out, keepdims, **kw)

    def all(self, axis=None, out=None, keepdims=False, **kw):
        return _np_fns().all(self, axis, out, keepdims, **kw)

    def round(self, decimals=0, out=None):
        return _np_fns().around(self, decimals, out)

    def repeat(self, repeats, axis=None):
        return _np_fns().repeat(self, repeats, axis)

    def take(self, indices, axis=None):
        from . import _ops
        return _ops.take(self, indices, axis)

    def dot(self, other):
        from . import _ops
        return _ops.dot(self, other)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return _np_fns().diagonal(self, offset, axis1, axis2)

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        return _np_fns().trace(self, offset, axis1, axis2, dtype, out)

    def ptp(self, axis=None, out=None, keepdims=False):
        return _np_fns().ptp(self, axis, out, keepdims)

    def sort(self, axis=-1, kind=None, order=None, *, stable=None):
        self[...] = _np_fns().sort(self, axis, kind, order)  # in place: a write, into an input too

    def argsort(self, axis=-1, kind=None, order=None, *, stable=None):
        return _np_fns().argsort(self, axis, kind, order)

    def cumsum(self, axis=None, dtype=None, out=None):
        return _np_fns().cumsum(self, axis, dtype, out)

    def cumprod(self, axis=None, dtype=None, out=None):
        return _np_fns().cumprod(self, axis, dtype, out)

    def __getitem__(self, key):
        from ._indexing import getitem
        return getitem(self, key)

    # -- NumPy protocols ------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if kwargs.get("out") is not None:
            return self._into_out(ufunc, method, inputs, kwargs)
        if method == "__call__" and ufunc in _UFUNCS and not kwargs:
            return as_scalar(_new_array(conform(ufunc, inputs, lambda: _UFUNCS[ufunc](*inputs)), inputs))
        if method == "reduce" and ufunc in (np.add, np.maximum, np.minimum):
            x = inputs[0]
            op = {np.add: x.sum, np.maximum: x.max, np.minimum: x.min}[ufunc]
            return op(axis=kwargs.get("axis", 0), keepdims=kwargs.get("keepdims", False))
        if method == "outer" and ufunc in _UFUNCS and not kwargs and len(inputs) == 2:
            # ufunc(a[..., None, ...], b): a's dims, then b's.
            # Arrays, as NumPy's outer makes them: 2 is int64, np.float32(2) float32.
            a, b = (_strong(self._st, x) if isinstance(x, np.generic) else as_tensor(self._st, x) for x in inputs)
            return ufunc(a.reshape(*a.shape, *([1] * b.ndim)), b)
        what = ufunc if method == "__call__" else getattr(ufunc, method)
        return self._st.call_numpy(what, inputs, kwargs, f"np.{ufunc.__name__}{'' if method == '__call__' else '.' + method} has no shapejit op")

    def _into_out(self, ufunc, method, inputs, kwargs):
        """ufunc(..., out=o[, where=m]): o[...] = where(m, ufunc(...), o),
        written into o as NumPy writes it, and o given back; what else
        NumPy's out= does (casting= other than same_kind, several outputs,
        an out that is not traced) breaks the graph."""
        out, mask = kwargs.pop("out"), kwargs.pop("where", True)
        out = out[0] if isinstance(out, tuple) and len(out) == 1 else out
        if method != "__call__" or ufunc not in _UFUNCS or kwargs or not isinstance(out, Tensor) or ufunc.nout != 1:
            _break(self._st, f"np.{ufunc.__name__} with out=")
        value = ufunc(*inputs)
        if not isinstance(value, Tensor):
            value = as_tensor(self._st, value)
        if not np.can_cast(value.dtype, out.dtype, "same_kind"):
            _break(self._st, f"np.{ufunc.__name__} with out= of a dtype its result does not cast to")  # NumPy's UFuncTypeError
        if mask is not True:
            value = where(mask, value, out)
        out[...] = value
        return out

    def __array_function__(self, func, types, args, kwargs):
        impl = _FUNCTIONS.get(func)
        if impl is None:
            return self._st.call_numpy(func, args, kwargs, f"np.{func.__name__} has no shapejit op")
        out = impl(*args, **kwargs)
        if func not in _GIVES_SCALARS:
            as_array(out)
        return out if func in _MAY_RETURN_ITS_ARGUMENT else _new_array(out, args)


def _new_array(out, inputs):
    """`out`, a new array where an implementation gave back one of its
    inputs as it is (np.floor of an int array, np.nan_to_num of one), which
    NumPy's function copies: a write into the result must not reach the input."""
    if isinstance(out, Tensor) and any(out is x for x in inputs):
        return out._fresh()
    if isinstance(out, (tuple, list)) and any(isinstance(o, Tensor) and any(o is x for x in inputs) for o in out):
        return type(out)(o._fresh() if isinstance(o, Tensor) and any(o is x for x in inputs) else o for o in out)
    return out


# NumPy's functions that give back their argument itself, or a view of it,
# where an implementation may give back the tensor as it is.
_MAY_RETURN_ITS_ARGUMENT = {np.asarray, np.asanyarray, np.ascontiguousarray, np.real, np.atleast_1d, np.atleast_2d,
                            np.atleast_3d, np.squeeze, np.transpose, np.reshape, np.ravel, np.moveaxis, np.rollaxis,
                            np.swapaxes, np.expand_dims, np.broadcast_to, np.broadcast_arrays, np.flip, np.fliplr,
                            np.flipud, np.diagonal, np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit, np.diff}
_MAY_RETURN_ITS_ARGUMENT |= {getattr(np, n) for n in ("unstack", "matrix_transpose", "permute_dims") if hasattr(np, n)}
# NumPy's functions whose 0-d results are scalars (reductions, products of
# vectors); the others give arrays, even where shapejit computes them with
# operators, whose 0-d results are scalars.
_GIVES_SCALARS = {np.sum, np.prod, np.mean, np.std, np.var, np.min, np.max, np.amin, np.amax, np.ptp, np.median,
                  np.average, np.any, np.all, np.count_nonzero, np.argmax, np.argmin, np.dot, np.vdot, np.inner, np.trace,
                  np.linalg.norm, np.nansum, np.nanmean, np.nanmax, np.nanmin, np.round, np.around, np.clip,
                  np.searchsorted, np.isclose}


_ID = Tensor._id  # the slot itself: a view and an unlifted array keep their value's id there


class _View(Tensor):
    """A tensor NumPy gives as a view of another, its `_parent` (x[1:3],
    x.T, x[None], x.reshape(...), np.flip(x)): made from the parent's value
    by `_derive`. When the array at the root of its chain of parents
    (`_root`) has been written since (its `_writes` moved past `_seen`),
    reading the view makes it again from the parent's value, as NumPy's view
    sees the write; a write into the view goes back into its parent
    (_indexing.assign) by `_how` (the op's other operands and attributes).
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
        v._parent, v._root = parent, parent._root if isinstance(parent, _View) else parent
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
            _break(self._st, f"a {self._op} of an array read after a write into that array (NumPy may have made it a copy)")
        fresh = self._derive(self._parent)
        _ID.__set__(self, fresh._id)
        self._seen = self._root._writes

    def _fresh(self):
        return Tensor(self._st, self._id, self._dtype, self.ndim)


class _Scalar(Tensor):
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
    setattr(_Scalar, _name, _rebinds)


def as_scalar(v):
    """v, a 0-d result NumPy gives as a scalar, as one (_Scalar)."""
    if type(v) is Tensor and v.ndim == 0:
        v.__class__ = _Scalar
    return v


def as_array(v):
    """v, or the arrays in a tuple or list of them, an array where it is a
    scalar: what a NumPy function that gives arrays gives, computed with
    operators (np.full of a 0-d shape is an array, not a scalar)."""
    if type(v) is _Scalar:
        v.__class__ = Tensor
    elif isinstance(v, (tuple, list)):
        for e in v:
            as_array(e)
    return v


class _Unlifted(Tensor):
    """An array the function can reach (a global, a closure's, an object's
    attribute), swapped in for that array while the function is traced
    (_captures.py), which becomes an input of the graph where it is first
    used: its class becomes Tensor's. An array the function can reach and
    does not use is no input."""

    __slots__ = ()

    @classmethod
    def of(cls, st, array):
        u = cls.__new__(cls)
        u._st, u._dtype, u.ndim, u._shape = st, _NAMES[np.dtype(array.dtype)], array.ndim, None
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


# The methods that read tensor data: a graph break, whatever the arguments.
BREAKING_METHODS = {"item", "tolist", "__array__", "__bool__", "__float__", "__int__", "__index__"}


_NDARRAY_WRITES = frozenset(("partition", "put", "resize", "setfield", "setflags", "byteswap", "itemset"))


def _np_fns():
    from . import _numpy
    return _numpy


def _shape_operand(s):
    if isinstance(s, SymInt):
        return s
    return operator.index(s)
