"""Sizes while a trace is recorded: a ``SymInt`` (``x.shape[i]``, an int
argument) whose arithmetic is traced (``sym_add``...) and whose reading as a
number is an observation (``guard_int``); a ``SymBool``, a comparison whose
truth guards the predicate alone (``guard_bool``); and a ``SymRange``, what
``range()`` of sizes is (an ``arange`` where it indexes, read where Python
iterates it)."""
from __future__ import annotations

import math
import operator

import numpy as np

from .tensor import Tensor


class SymBool:
    """A comparison of sizes; its truth guards the predicate, not the sizes."""

    __slots__ = ("_st", "_cmp", "_a", "_b")

    def __init__(self, st, cmp, a, b):
        self._st, self._cmp, self._a, self._b = st, cmp, a, b

    def __bool__(self):
        return self._st.tr.guard_bool(self._cmp, self._a, self._b)

    def __int__(self):
        return int(bool(self))

    __index__ = __int__

    def __array__(self, dtype=None, copy=None):
        return np.asarray(bool(self), dtype=dtype)  # NumPy's functions of it: its truth, guarded

    # Arithmetic as Python's bool has it (True + 1 is 2), on its truth.
    def __add__(self, o): return bool(self) + o
    def __radd__(self, o): return o + bool(self)
    def __sub__(self, o): return bool(self) - o
    def __rsub__(self, o): return o - bool(self)
    def __mul__(self, o): return bool(self) * o
    def __rmul__(self, o): return o * bool(self)
    def __truediv__(self, o): return bool(self) / o
    def __rtruediv__(self, o): return o / bool(self)
    def __neg__(self): return -bool(self)
    def __invert__(self): return ~bool(self)
    def __eq__(self, o): return bool(self) == o
    def __ne__(self, o): return bool(self) != o
    def __hash__(self): return hash(bool(self))

    def __float__(self):
        return float(bool(self))

    # Bitwise, as Python's bool (True & 2 is 0) and NumPy's (True & array is an array).
    def __and__(self, o): return bool(self) & o
    def __rand__(self, o): return o & bool(self)
    def __or__(self, o): return bool(self) | o
    def __ror__(self, o): return o | bool(self)
    def __xor__(self, o): return bool(self) ^ o
    def __rxor__(self, o): return o ^ bool(self)

    def __repr__(self):
        return f"SymBool({self._a!r} {self._cmp} {self._b!r})"


_I64_MIN, _I64_MAX = -2**63, 2**63 - 1
_PY_OPS = {"sym_add": operator.add, "sym_sub": operator.sub, "sym_mul": operator.mul,
           "sym_floordiv": operator.floordiv, "sym_mod": operator.mod}


def _sym_operand(x):
    if isinstance(x, SymInt):
        return x
    if isinstance(x, (bool, np.bool_)):
        return int(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    return None


class SymInt:
    """A size of the traced call: arithmetic is traced, reading it as a number guards it."""

    __slots__ = ("_st", "_id", "__weakref__")

    def __init__(self, st, vid):
        self._st, self._id = st, vid
        if st.live is not None:
            st.live.add(self)

    def _sym(self, op, other, reverse=False):
        if isinstance(other, np.generic):
            # A NumPy scalar (n * np.int32(2), n + flag): NumPy's arithmetic,
            # whose result is a NumPy scalar of its promotion, on the number.
            a, b = (other, int(self)) if reverse else (int(self), other)
            return _PY_OPS[op](a, b)
        o = _sym_operand(other)
        if isinstance(o, int) and not _I64_MIN <= o <= _I64_MAX:
            # A constant past int64 (n * 2**70): Python's arithmetic, on the number.
            a, b = (o, int(self)) if reverse else (int(self), o)
            return _PY_OPS[op](a, b)
        if o is None:
            if isinstance(other, float):  # a float result needs the number
                a, b = (other, int(self)) if reverse else (int(self), other)
                return _PY_OPS[op](a, b)
            return NotImplemented
        a, b = (o, self) if reverse else (self, o)
        return self._st.emit(op, [a, b])

    def __add__(self, o): return self._sym("sym_add", o)
    def __radd__(self, o): return self._sym("sym_add", o, True)
    def __sub__(self, o): return self._sym("sym_sub", o)
    def __rsub__(self, o): return self._sym("sym_sub", o, True)
    def __mul__(self, o): return self._sym("sym_mul", o)
    def __rmul__(self, o): return self._sym("sym_mul", o, True)
    def __floordiv__(self, o): return self._sym("sym_floordiv", o)
    def __rfloordiv__(self, o): return self._sym("sym_floordiv", o, True)
    def __mod__(self, o): return self._sym("sym_mod", o)
    def __rmod__(self, o): return self._sym("sym_mod", o, True)
    def __neg__(self): return self._st.emit("sym_sub", [0, self])
    def __pos__(self): return self

    # Needs the number: a float result, powers.
    def __truediv__(self, o): return int(self) / _scalar_of(o)
    def __rtruediv__(self, o): return _scalar_of(o) / int(self)
    def __pow__(self, o): return int(self) ** _scalar_of(o)
    def __rpow__(self, o): return _scalar_of(o) ** int(self)

    def _cmp(self, cmp, o):
        if isinstance(o, np.generic):  # NumPy's scalar comparison gives its bool
            return np.bool_(bool(self._cmp(cmp, o.item())))
        if isinstance(o, float):
            return self._cmp_float(cmp, o)
        o = _sym_operand(o)
        if o is None:
            return NotImplemented
        if isinstance(o, int) and not _I64_MIN <= o <= _I64_MAX:
            # Every size fits in int64 (a call past it runs in NumPy): decided.
            above = o > _I64_MAX
            return {"eq": False, "ne": True, "lt": above, "le": above, "gt": not above, "ge": not above}[cmp]
        return SymBool(self._st, cmp, self, o)

    def _cmp_float(self, cmp, f):
        """A size against a float, as the int it is: n < 2.5 is n < 3, a
        predicate on the size, not its value."""
        if math.isnan(f):
            return cmp == "ne"
        if math.isinf(f):
            return {"eq": False, "ne": True, "lt": f > 0, "le": f > 0, "gt": f < 0, "ge": f < 0}[cmp]
        if cmp in ("eq", "ne"):
            if f != math.floor(f):
                return cmp == "ne"
            return self._cmp(cmp, int(f))
        bound = math.ceil(f) if cmp in ("lt", "ge") else math.floor(f)
        return self._cmp(cmp, bound)

    def __eq__(self, o): return self._cmp("eq", o)
    def __ne__(self, o): return self._cmp("ne", o)
    def __lt__(self, o): return self._cmp("lt", o)
    def __le__(self, o): return self._cmp("le", o)
    def __gt__(self, o): return self._cmp("gt", o)
    def __ge__(self, o): return self._cmp("ge", o)

    # What sizes are not traced for: Python's int on the number (an observation).
    def __and__(self, o): return int(self) & _scalar_of(o)
    def __rand__(self, o): return _scalar_of(o) & int(self)
    def __or__(self, o): return int(self) | _scalar_of(o)
    def __ror__(self, o): return _scalar_of(o) | int(self)
    def __xor__(self, o): return int(self) ^ _scalar_of(o)
    def __rxor__(self, o): return _scalar_of(o) ^ int(self)
    def __lshift__(self, o): return int(self) << _scalar_of(o)
    def __rlshift__(self, o): return _scalar_of(o) << int(self)
    def __rshift__(self, o): return int(self) >> _scalar_of(o)
    def __rrshift__(self, o): return _scalar_of(o) >> int(self)
    def __invert__(self): return ~int(self)
    def __abs__(self): return abs(int(self))
    def __divmod__(self, o): return divmod(int(self), _scalar_of(o))
    def __rdivmod__(self, o): return divmod(_scalar_of(o), int(self))
    def __round__(self, ndigits=None): return round(int(self), ndigits) if ndigits is not None else int(self)
    def __trunc__(self): return int(self)
    def __floor__(self): return int(self)
    def __ceil__(self): return int(self)
    def bit_length(self): return int(self).bit_length()

    def __int__(self): return self._st.tr.guard_int(self._id)
    __index__ = __int__
    def __float__(self): return float(int(self))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # A tensor among the inputs takes the call itself, the size traced.
        # A NumPy array among them (one the function made: np.arange(3) * n)
        # becomes the trace's, and the call is traced as a tensor's is. NumPy's
        # math on sizes and numbers alone (np.sqrt(n), np.float32(n)) needs
        # the number: each size is read, an observation like int(n).
        if any(isinstance(x, Tensor) for x in inputs):
            return NotImplemented
        if any(isinstance(x, np.ndarray) for x in inputs) and not kwargs and method == "__call__":
            lifted = tuple(self._st.lift(x) if isinstance(x, np.ndarray) else x for x in inputs)
            return getattr(ufunc, method)(*lifted)
        inputs = tuple(int(x) if isinstance(x, SymInt) else x for x in inputs)
        return getattr(ufunc, method)(*inputs, **kwargs)
    def __bool__(self): return bool(self != 0)

    def __array__(self, dtype=None, copy=None):
        # NumPy's own functions of a size that no tracing function takes
        # (np.round(n)) see its number, an observation like int(n).
        return np.asarray(int(self), dtype=dtype)
    def __hash__(self): return hash(int(self))
    def __repr__(self): return f"SymInt(v{self._id})"


def _scalar_of(o):
    return int(o) if isinstance(o, SymInt) else o


def shape_operand(s):
    """A size as an op's operand: a SymInt as it is, anything else as the int it is."""
    if isinstance(s, SymInt):
        return s
    return operator.index(s)


_range = range


class SymRange:
    """What `range(n)` is while a trace is recorded and n is a SymInt (see
    _runtime.patches): as an index (`wpe[range(len(ids))]`) or an array
    (`np.asarray(range(n))`) it is a traced arange; what Python needs as
    numbers (iterating it, `in`, an item) reads its bounds, each an
    observation like int(n)."""

    __slots__ = ("start", "stop", "step")

    def __init__(self, *args):
        if not 1 <= len(args) <= 3:
            raise TypeError(f"range expected at most 3 arguments, got {len(args)}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
        self.start, self.stop, self.step = (shape_operand(a) for a in (start, stop, step))
        if isinstance(self.step, int) and self.step == 0:
            raise ValueError("range() arg 3 must not be zero")

    def _numbers(self):
        return _range(int(self.start), int(self.stop), int(self.step))

    def size(self):
        """Its length, traced where its step is 1."""
        if isinstance(self.step, int) and self.step == 1:
            n = self.stop - self.start
            return n._st.emit("sym_max", [n, 0]) if isinstance(n, SymInt) else max(n, 0)
        return len(self._numbers())

    def __iter__(self): return iter(self._numbers())
    def __reversed__(self): return reversed(self._numbers())
    def __len__(self): return len(self._numbers())
    def __getitem__(self, i): return self._numbers()[i]
    def __contains__(self, v): return v in self._numbers()
    def __repr__(self): return f"range({self.start!r}, {self.stop!r}, {self.step!r})"
