"""NumPy's operators and arithmetic ufuncs on tracing values: + - * / // %
**, comparisons, the bitwise and logical operators, where, matmul, and the
unary functions the op set has; each with the dtype NumPy 2 gives (NEP 50's
weak Python numbers and strong NumPy scalars) and NumPy's answers at the
edges (a float's floor division and remainder, an integer's division by
zero, an integer product that wraps)."""
from __future__ import annotations

import numpy as np

from .._trace.dtypes import DTYPES, FLOAT, INT_RANGE, NAMES, dtype_name
from .._trace.promotion import mark_weak, out_of_range_comparison, promote
from .._trace.sizes import SymBool, SymInt
from .._trace.state import as_tensor, emit, graph_break, state_of
from .._trace.tensor import Tensor
from .registry import implements, numpy_has

# NumPy's arithmetic on two bool arrays: logical where it stays bool, an
# error where NumPy refuses it; the rest gives int8, which shapejit lacks.
_BOOL_BINARY = {"add": "or", "mul": "and", "maximum": "or", "minimum": "and"}
_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")


def binary(op, a, b):
    st = state_of(a, b)
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
        graph_break(st, f"np.{op} of two bool arrays (NumPy gives int8)")
    return mark_weak(emit(st, op, [a, b]), a, b)


_LOGICAL = {"and": "and", "or": "or", "xor": "ne"}


def bitwise(op, a, b):
    """NumPy's &, |, ^, <<, >>: logical on bools, bitwise on integers."""
    st = state_of(a, b)
    a, b = promote(st, a, b)
    dt = a._dtype if isinstance(a, Tensor) else b._dtype
    if dt == "bool" and op in _LOGICAL:
        return emit(st, _LOGICAL[op], [as_tensor(st, a), as_tensor(st, b)])
    if dt not in ("i32", "i64"):
        raise TypeError(f"ufunc '{op}' not supported for the input types ({DTYPES[dt]})")
    return emit(st, op if op in ("left_shift", "right_shift") else "bitwise_" + op, [a, b])


def as_float(st, v):
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


def true_divide(a, b):
    st = state_of(a, b)
    # NumPy divides in float64 where an operand is integral: a Python int or
    # a size meets the array as that float, whatever its magnitude.
    a, b = (as_float(st, v) for v in (a, b))
    a, b = promote(st, a, b)
    if any(isinstance(v, Tensor) and v._dtype not in FLOAT for v in (a, b)):
        a = a.astype("f64") if isinstance(a, Tensor) else float(a)
        b = b.astype("f64") if isinstance(b, Tensor) else float(b)
    return mark_weak(emit(st, "div", [a, b]), a, b)


def floor_divide(a, b):
    st = state_of(a, b)
    a, b = promote(st, a, b)
    dt = a._dtype if isinstance(a, Tensor) else b._dtype
    if dt in FLOAT:
        return _float_divmod(st, a, b, dt)[0]
    return emit(st, "div", [a, b])  # integer div is floor division


def remainder(a, b):
    st = state_of(a, b)
    a, b = promote(st, a, b)
    dt = a._dtype if isinstance(a, Tensor) else b._dtype
    if dt in FLOAT:
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



def matmul(a, b):
    st = state_of(a, b)
    a, b = promote(st, as_tensor(st, a), as_tensor(st, b))
    for i, t in enumerate((a, b)):
        if t.ndim == 0:
            raise ValueError(f"matmul: Input operand {i} does not have enough dimensions (has 0, gufunc core with signature "
                             "(n?,k),(k,m?)->(n?,m?) requires 1)")
    if a._dtype not in FLOAT:
        return _exact_matmul(a, b)
    return emit(st, "matmul", [a, b])


def _exact_matmul(a, b):
    """An integer or bool product as NumPy computes it, in its own dtype
    (wrapping as it does; bool: any of the ands), from products and a sum:
    the matmul op is float only, and floats would round past 2^53."""
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    left, right = a.ndim == 1, b.ndim == 1
    if left:
        a = a[None, :]
    if right:
        b = b[:, None]
    if a.shape[-1] != b.shape[-2]:  # read as a predicate, as NumPy checks it
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                         f"(n?,k),(k,m?)->(n?,m?) (size {int(b.shape[-2])} is different from {int(a.shape[-1])})")
    if a._dtype == "bool":
        out = (a[..., :, :, None] & b[..., None, :, :]).any(axis=-2)
    else:
        out = (a[..., :, :, None] * b[..., None, :, :]).sum(axis=-2).astype(a._dtype)
    if left and right:
        return out.reshape(())
    return out[..., 0, :] if left else out[..., 0] if right else out


def where(c, a, b):
    st = state_of(c, a, b)
    c = as_tensor(st, c)
    if c._dtype != "bool":
        c = emit(st, "ne", [c, 0])
    numbers = (bool, int, float, np.generic)
    if isinstance(a, numbers) and isinstance(b, numbers):
        # Two numbers take the dtype NumPy gives them together.
        dt = np.result_type(a, b)
        a, b = as_tensor(st, np.asarray(a, dt)), as_tensor(st, np.asarray(b, dt))
    a, b = _wrapped_int(a, b), _wrapped_int(b, a)
    for v, other in ((a, b), (b, a)):
        if type(v) is int and not -2**63 <= v < 2**63 and not (isinstance(other, Tensor) and other._dtype in FLOAT):
            graph_break(st, f"np.where of {v} and a {getattr(other, 'dtype', type(other).__name__)} (NumPy gives an unsigned or object array)")
    a, b = promote(st, a, b)
    return emit(st, "where", [c, a, b])


def _wrapped_int(v, other):
    """NumPy's where casts a Python int to the other operand's integer dtype
    unsafely: it wraps, however far out of range."""
    if type(v) is int and isinstance(other, Tensor) and other._dtype in ("i32", "i64"):
        bits = 32 if other._dtype == "i32" else 64
        v &= (1 << bits) - 1
        return v - (1 << bits) if v >> (bits - 1) else v
    return v


def maximum(a, b):
    return binary("maximum", a, b)


def minimum(a, b):
    return binary("minimum", a, b)


def unary(op, x):
    st = state_of(x)
    x = as_tensor(st, x)
    if op == "abs" and x._dtype == "bool":
        return x  # NumPy's abs of a bool array is itself
    if op not in ("neg", "abs", "relu") and x._dtype not in FLOAT:
        if x._dtype == "bool":
            graph_break(st, f"np.{op} of a bool array (NumPy gives float16)")
        x = x.astype("f64")  # NumPy's exp of an int array is float64
    return emit(st, op, [x])


def clip(x, a_min=None, a_max=None):
    """np.clip: a Python int bound past the dtype's range on its own side clips nothing (NumPy 2)."""
    x = as_tensor(state_of(x), x)
    lo, hi = INT_RANGE.get(x._dtype, (None, None))
    if type(a_min) is int and lo is not None and a_min < lo:
        a_min = None
    if type(a_max) is int and hi is not None and a_max > hi:
        a_max = None
    if a_min is not None:
        x = maximum(x, a_min)
    if a_max is not None:
        x = minimum(x, a_max)
    return x


def astype(x, dtype, copy=True):
    """x cast to `dtype` (NumPy's copy where it is x's own, unless copy=False)."""
    st = state_of(x)
    x = as_tensor(st, x)
    if not (isinstance(dtype, str) and dtype in DTYPES) and np.dtype(dtype) not in NAMES:
        # uint8 and the other dtypes shapejit lacks: NumPy's cast, at a cut
        # of a segmented run (the values before it compiled), a break else.
        return st.call_numpy(np.ndarray.astype, (x, dtype), {"copy": copy}, f"a cast to {np.dtype(dtype)}, a dtype shapejit lacks")
    name = dtype_name(dtype)
    if name == x._dtype:
        return x._fresh() if copy else x
    return emit(x._st, "cast", [x], {"dtype": name})


def _logical(op):
    def f(a, b):
        st = state_of(a, b)
        return emit(st, op, [as_tensor(st, a).astype(bool), as_tensor(st, b).astype(bool)])
    f.__name__ = "logical_" + op
    return f


def logical_not(x):
    st = state_of(x)
    return emit(st, "not", [as_tensor(st, x).astype(bool)])


def invert(x):
    """~x: NumPy's logical not of a bool array, its bitwise not of an integer one."""
    st = state_of(x)
    x = as_tensor(st, x)
    if x._dtype == "bool":
        return emit(st, "not", [x])
    if x._dtype not in ("i32", "i64"):
        raise TypeError(f"ufunc 'invert' not supported for the input types ({x.dtype})")
    return emit(st, "invert", [x])


def _binary(op):
    def f(a, b):
        return binary(op, a, b)
    f.__name__ = op
    return f


def _bitwise(op):
    def f(a, b):
        return bitwise(op, a, b)
    f.__name__ = "bitwise_" + op
    return f


def _unary(op):
    def f(x):
        return unary(op, x)
    f.__name__ = op
    return f


# -- the table's entries --------------------------------------------------------
for _ufunc, _op in ((np.add, "add"), (np.subtract, "sub"), (np.multiply, "mul"), (np.power, "pow"), (np.maximum, "maximum"),
                    (np.minimum, "minimum"), (np.equal, "eq"), (np.not_equal, "ne"), (np.less, "lt"), (np.less_equal, "le"),
                    (np.greater, "gt"), (np.greater_equal, "ge")):
    implements(_ufunc)(_binary(_op))
for _ufunc, _op in ((np.bitwise_and, "and"), (np.bitwise_or, "or"), (np.bitwise_xor, "xor"), (np.left_shift, "left_shift"),
                    (np.right_shift, "right_shift")):
    implements(_ufunc)(_bitwise(_op))
for _ufunc, _op in ((np.negative, "neg"), (np.absolute, "abs"), (np.exp, "exp"), (np.log, "log"), (np.sqrt, "sqrt"),
                    (np.tanh, "tanh"), (np.sin, "sin"), (np.cos, "cos")):
    implements(_ufunc)(_unary(_op))
implements(np.true_divide)(true_divide)
implements(np.floor_divide)(floor_divide)
implements(np.remainder)(remainder)
implements(np.matmul)(matmul)
implements(np.positive)(lambda x: x)
implements(np.square)(lambda x: binary("mul", x, x))
implements(np.logical_and)(_logical("and"))
implements(np.logical_or)(_logical("or"))
implements(np.logical_xor)(_logical("ne"))
implements(np.logical_not)(logical_not)
implements(np.invert)(invert)
implements(np.where)(where)
implements(np.clip)(clip)
implements(numpy_has("astype"))(astype)
