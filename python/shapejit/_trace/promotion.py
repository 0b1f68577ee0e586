"""How NumPy types an operation's result, and how a traced one follows it.

Operands are promoted as NumPy 2 promotes them (NEP 50): a Python number
is weak and takes the array's dtype, a NumPy scalar is strong and promotes
with its own (np.float64(2) * a float32 array is float64), a size meets an
array as a Python int does. And a result is cast to the dtype NumPy's ufunc
or operator gives for operands like these (`conform`), asked of NumPy
itself on one-element stand-ins; where that is a dtype shapejit lacks
(float16 from a bool array), the graph breaks and NumPy runs the call.
"""
from __future__ import annotations

import numpy as np

from .dtypes import INT_RANGE, NAMES, python_int_fits
from .sizes import SymBool, SymInt
from .state import as_tensor, emit, graph_break, state_of, strong
from .tensor import Tensor, is_array


def python_scalar(x):
    """A Python number from a NumPy scalar, or x."""
    if isinstance(x, np.generic):
        return x.item()
    return x


def _weak_size(st, n, other):
    t = as_tensor(st, n)
    if isinstance(other, Tensor) and other._dtype == "i32":
        # NumPy 2 takes a Python int for an int32 array only within int32's
        # range: guarded as predicates on the size.
        if not (bool(n >= INT_RANGE["i32"][0]) and bool(n <= INT_RANGE["i32"][1])):
            raise OverflowError(f"Python integer {int(n)} out of bounds for int32")
    if isinstance(other, Tensor) and other._dtype != "bool":
        return t.astype(other._dtype)
    if isinstance(other, float):
        return t.astype("f64")
    return t


def as_strong(st, x):
    """A NumPy scalar of a dtype shapejit has as the 0-d array it stands for
    (strong); other values as they are. A NumPy scalar of another dtype
    (np.int8, np.float16) is a graph break: NumPy computes in its dtype
    (bool_array & np.int8(1) is int8), which its Python number would not."""
    if isinstance(x, np.generic):
        if x.dtype not in NAMES:
            graph_break(st, f"a NumPy {x.dtype} scalar, a dtype shapejit lacks")
        return strong(st, x)
    return x


def out_of_range_comparison(st, op, a, b):
    """NumPy 2's exact comparison of an integer array with a Python int out
    of its dtype's range (x_int32 == 2**40 is all False, x_int32 < 2**31
    all True): the result, or None where the int is in range or the
    operands are otherwise."""
    if isinstance(a, Tensor) and type(b) is int:
        t, c = a, b
    elif isinstance(b, Tensor) and type(a) is int:
        t, c, op = b, a, {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}.get(op, op)
    else:
        return None
    if t._dtype not in INT_RANGE:
        return None
    lo, hi = INT_RANGE[t._dtype]
    if lo <= c <= hi:
        return None
    above = c > hi  # every element is below c
    value = {"eq": False, "ne": True, "lt": above, "le": above, "gt": not above, "ge": not above}[op]
    return emit(st, "full", list(t.shape), {"value": int(value), "dtype": "bool"})


def promote(st, a, b):
    """The operands of a binary op, cast as NumPy would promote them."""
    a, b = (bool(v) if isinstance(v, SymBool) else v for v in (a, b))  # a comparison of sizes: its truth, a Python bool
    a, b = as_strong(st, a), as_strong(st, b)
    # A size meets a tensor as a Python int would: it takes the tensor's dtype.
    if isinstance(a, SymInt):
        a = _weak_size(st, a, b)
    if isinstance(b, SymInt):
        b = _weak_size(st, b, a)
    if is_array(a):
        a = st.lift(a)
    if is_array(b):
        b = st.lift(b)
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    if ta and tb and a._weak != b._weak:
        # A float argument (a weak 0-d tensor) meets a tensor as the Python float would.
        w, t = (a, b) if a._weak else (b, a)
        if t._dtype in ("f32", "f64"):
            w = w.astype(t._dtype)
        else:
            t = t.astype("f64")
        return (w, t) if a._weak else (t, w)
    if ta and tb:
        if a.dtype != b.dtype:
            target = NAMES[np.result_type(a.dtype, b.dtype)]
            a, b = a.astype(target), b.astype(target)
        return a, b
    t, c = (a, b) if ta else (b, a)
    if not isinstance(c, (bool, int, float)):
        raise TypeError(f"shapejit: cannot combine a tensor with a {type(c).__name__}")
    if isinstance(c, float) and t._dtype in ("i32", "i64", "bool"):
        t = t.astype("f64")
    elif isinstance(c, int) and not isinstance(c, bool):
        python_int_fits(c, t._dtype)
        if t._dtype == "bool":
            t = t.astype("i64")
        elif t._dtype in ("f32", "f64") and not -2**63 <= c < 2**63:
            c = float(c)  # NumPy's conversion of a weak int for a float array
    return (t, c) if ta else (c, t)


def mark_weak(v, *operands):
    """v, weak when its operands are float arguments and Python numbers
    alone (Python's arithmetic on floats gives a float)."""
    if v._dtype == "f64" and all(not isinstance(o, Tensor) or o._weak for o in operands) and \
            any(isinstance(o, Tensor) for o in operands):
        v._weak = True
    return v


def probe(x):
    """A stand-in for x with its dtype and kind (array, weak number), for
    asking NumPy what an operation on x gives; None when there is none."""
    if isinstance(x, Tensor):  # 1-d: NumPy's 0-d arithmetic takes scalar paths of its own
        return 1.0 if x._weak else np.ones(1, x.dtype)
    if isinstance(x, SymInt):
        return 1  # a size meets arrays as a Python int does
    if isinstance(x, SymBool):
        return True  # a comparison of sizes, as the Python bool it is
    if isinstance(x, (bool, int, float, np.generic)):
        return x
    if is_array(x):
        return np.ones(1, x.dtype)
    return None


def numpy_result(ufunc, *operands):
    """The dtype name NumPy's `ufunc` (or operator: bool_array ** 2 is int8,
    np.power of it int64) gives over operands like these (its promotion
    rules, scalars weak or strong, NEP 50), or None where NumPy cannot say
    (it refuses the dtypes: the op then reports it). A dtype shapejit lacks
    (float16 from a bool array, int8 from bool // bool) breaks the graph:
    NumPy runs that call."""
    for o in operands:
        if isinstance(o, np.ndarray) and o.dtype not in NAMES:
            graph_break(state_of(*operands), f"{getattr(ufunc, '__name__', ufunc)} of a {o.dtype} array, a dtype shapejit lacks")
    probes = [probe(o) for o in operands]
    if any(p is None for p in probes):
        return None
    with np.errstate(all="ignore"):
        try:
            out = ufunc(*probes)
        except OverflowError:
            raise  # a Python int out of the array's range: NumPy's error, whatever the shapes
        except Exception:  # noqa: BLE001 - NumPy refuses them: the op says why, in its words
            return None
    dt = np.asarray(out).dtype
    if dt not in NAMES:
        graph_break(state_of(*operands), f"{getattr(ufunc, '__name__', ufunc)} gives {dt} here, a dtype shapejit lacks")
    return NAMES[dt]


def conform(ufunc, operands, compute):
    """compute(), cast to the dtype NumPy's `ufunc` gives over `operands`
    where shapejit's composition of it gives another (logaddexp of a
    float32 and an int array is float32, not float64)."""
    want = numpy_result(ufunc, *operands) if ufunc is not None else None
    out = compute()
    if want is not None and isinstance(out, Tensor) and out._dtype != want:
        weak = out._weak
        out = out.astype(want)
        out._weak = weak and want == "f64"
    return out
