"""NumPy's products on tracing values: outer, inner, tensordot, einsum (as
batched matmuls), take_along_axis, linalg.norm."""
from __future__ import annotations

import math
import operator

import numpy as np

from .._trace.dtypes import FLOAT
from .._trace.promotion import promote
from .._trace.sizes import SymInt, shape_operand
from .._trace.state import emit, graph_break, state_of
from .arithmetic import binary, matmul, unary, where
from .base import checked_axis, count, full_of, sym_max, sym_min, tensor_of, to_float, unsupported, zero_of
from .registry import implements, numpy_has
from .shapes import broadcast_to, concatenate, expand_dims


def outer(a, b, out=None):
    st = state_of(a, b)
    unsupported(st, "np.outer", out=out)
    a, b = tensor_of(st, a).reshape(-1), tensor_of(st, b).reshape(-1)
    return expand_dims(a, 1) * expand_dims(b, 0)


def inner(a, b):
    st = state_of(a, b)
    a, b = tensor_of(st, a), tensor_of(st, b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return tensordot(a, b, axes=([-1], [-1]))


def vdot(a, b):
    st = state_of(a, b)
    a, b = tensor_of(st, a).reshape(-1), tensor_of(st, b).reshape(-1)
    return (a * b).sum()


def vecdot(x1, x2, /, *, axis=-1):
    st = state_of(x1, x2)
    a, b = promote(st, tensor_of(st, x1), tensor_of(st, x2))
    return (a * b).sum(axis=axis)


def tensordot(a, b, axes=2):
    st = state_of(a, b)
    a, b = tensor_of(st, a), tensor_of(st, b)
    if isinstance(axes, (int, np.integer, SymInt)):
        n = int(axes)
        ax_a, ax_b = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, (int, np.integer, SymInt)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, np.integer, SymInt)) else list(ax_b)
    ax_a = [checked_axis(x, a.ndim) for x in ax_a]
    ax_b = [checked_axis(x, b.ndim) for x in ax_b]
    free_a = [d for d in range(a.ndim) if d not in ax_a]
    free_b = [d for d in range(b.ndim) if d not in ax_b]
    k = count(a, ax_a)
    am = a.transpose(free_a + ax_a).reshape(count(a, free_a), k)
    bm = b.transpose(ax_b + free_b).reshape(k, count(b, free_b))
    out = matmul(am, bm)
    return out.reshape(*[a.shape[d] for d in free_a], *[b.shape[d] for d in free_b])


def einsum(subscripts, *operands, out=None, optimize=False, **kwargs):
    """Einstein sums: each operand transposed to one order of all the
    indices (a diagonal, an index repeated in one operand, is a graph
    break), two operands contracted as a batched matmul, more by pairs."""
    st = state_of(*operands)
    unsupported(st, "np.einsum", out=out, **kwargs)
    if not isinstance(subscripts, str):
        graph_break(st, "np.einsum in its sublist form")
    spec = subscripts.replace(" ", "")
    if "." in spec:
        graph_break(st, "np.einsum with an ellipsis")
    if "->" in spec:
        lhs, rhs = spec.split("->")
    else:
        lhs = spec
        counts = {}
        for c in lhs.replace(",", ""):
            counts[c] = counts.get(c, 0) + 1
        rhs = "".join(sorted(c for c, n in counts.items() if n == 1))
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError("einsum: more operands than subscripts" if len(operands) > len(terms) else "einsum: fewer operands than subscripts")
    ts = [tensor_of(st, o) for o in operands]
    for term, t in zip(terms, ts):
        if len(set(term)) != len(term):
            graph_break(st, "np.einsum with an index repeated within one operand (a diagonal)")
        if len(term) != t.ndim:
            raise ValueError(f"einsum: operand has {t.ndim} dims, subscripts '{term}' give {len(term)}")
    cur, cur_idx = ts[0], terms[0]
    for t, idx in zip(ts[1:], terms[1:]):
        rest = set(rhs)
        for other in terms[terms.index(idx) + 1:]:
            rest |= set(other)
        cur, cur_idx = _contract(st, cur, cur_idx, t, idx, rest)
    # Sum what the result does not keep, then order as asked.
    drop = [i for i, c in enumerate(cur_idx) if c not in rhs]
    if drop:
        cur = cur.sum(axis=drop)
        cur_idx = "".join(c for c in cur_idx if c in rhs)
    if cur_idx != rhs:
        cur = cur.transpose([cur_idx.index(c) for c in rhs])
    return cur


def _contract(st, a, ia, b, ib, keep):
    """a (indices ia) times b (ib), summing the shared indices not in `keep`,
    as one batched matmul: batch (shared, kept), a's own, contracted, b's own."""
    shared = [c for c in ia if c in ib]
    batch = [c for c in shared if c in keep]
    summed = [c for c in shared if c not in keep]
    own_a = [c for c in ia if c not in ib]
    own_b = [c for c in ib if c not in ia]
    # Indices of one operand only that nothing later needs are summed first.
    a_drop = [i for i, c in enumerate(ia) if c in own_a and c not in keep]
    if a_drop:
        a = a.sum(axis=a_drop)
        ia = "".join(c for c in ia if c not in own_a or c in keep)
        own_a = [c for c in own_a if c in keep]
    b_drop = [i for i, c in enumerate(ib) if c in own_b and c not in keep]
    if b_drop:
        b = b.sum(axis=b_drop)
        ib = "".join(c for c in ib if c not in own_b or c in keep)
        own_b = [c for c in own_b if c in keep]
    a, b = promote(st, a, b)
    size = {}
    for c, s in zip(ia, a.shape):
        size[c] = s
    for c, s in zip(ib, b.shape):
        size.setdefault(c, s)

    def prod(cs):
        n = 1
        for c in cs:
            n = size[c] * n
        return n

    am = a.transpose([ia.index(c) for c in batch + own_a + summed]).reshape(*[size[c] for c in batch], prod(own_a), prod(summed))
    bm = b.transpose([ib.index(c) for c in batch + summed + own_b]).reshape(*[size[c] for c in batch], prod(summed), prod(own_b))
    if am._dtype in FLOAT:
        out = matmul(am, bm)
    else:  # integer einsum: a broadcast product and a sum (matmul is float only)
        out = (expand_dims(am, -1) * expand_dims(bm, -3)).sum(axis=-2)
    out = out.reshape(*[size[c] for c in batch + own_a + own_b])
    return out, "".join(batch + own_a + own_b)


def take_along_axis(x, indices, axis):
    st = state_of(x, indices)
    x, idx = tensor_of(st, x), tensor_of(st, indices)
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis = checked_axis(axis, x.ndim)
    if idx.ndim != x.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    idx = idx.astype("i64")
    n = x.shape[axis]
    idx = where(idx < 0, idx + n, idx)  # NumPy's negative indices
    # Every element's flat index into x: the index along `axis`, the
    # element's own coordinate along the others (broadcast as NumPy does).
    shape = list(x.shape)
    strides = [1] * x.ndim
    for d in range(x.ndim - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    flat = idx * strides[axis]
    for d in range(x.ndim):
        if d == axis:
            continue
        coord = emit(st, "arange", [0, shape_operand(idx.shape[d]), 1], {"dtype": "i64"})
        coord = coord.reshape(*[idx.shape[d] if e == d else 1 for e in range(x.ndim)])
        flat = flat + coord * strides[d]
    out = emit(st, "index_select", [x.reshape(-1), flat.reshape(-1)], {"dim": 0})
    return out.reshape(*flat.shape)


def norm(x, ord=None, axis=None, keepdims=False):
    st = state_of(x)
    x = to_float(tensor_of(st, x))
    if axis is None and ord is None:
        return unary("sqrt", (x * x).sum(keepdims=keepdims) if not keepdims else (x * x).sum(axis=list(range(x.ndim)), keepdims=True))
    if axis is None:
        if x.ndim == 1:
            axis = 0
        else:
            graph_break(st, f"np.linalg.norm of a matrix with ord={ord!r}")
    if isinstance(axis, (tuple, list)):
        if ord in (None, "fro"):
            return unary("sqrt", (x * x).sum(axis=list(axis), keepdims=keepdims))
        graph_break(st, f"np.linalg.norm of a matrix with ord={ord!r}")
    a = abs(x)
    if ord is None or ord == 2:
        return unary("sqrt", (x * x).sum(axis=axis, keepdims=keepdims))
    if ord == 1:
        return a.sum(axis=axis, keepdims=keepdims)
    if ord == math.inf:
        return a.max(axis, keepdims)
    if ord == -math.inf:
        return a.min(axis, keepdims)
    if ord == 0:
        return (x != 0.0).astype(x._dtype).sum(axis=axis, keepdims=keepdims)
    if isinstance(ord, (int, float)):
        return binary("pow", binary("pow", a, float(ord)).sum(axis=axis, keepdims=keepdims), 1.0 / ord)
    graph_break(st, f"np.linalg.norm with ord={ord!r}")


_CONVOLVE_MODES = {"full": "full", "same": "same", "valid": "valid", 2: "full", 1: "same", 0: "valid"}


def convolve(a, v, mode="full"):
    """NumPy's convolve of two 1-D arrays: the full convolution is a gather
    of a's zero-padded values at i - j (a row per output, a column per tap)
    times v: a matrix-vector product of integers, and of floats the sum of
    the products whose tap meets a; 'same' and 'valid' cut it, centred on
    the longer operand, as NumPy does (which swaps them when v is longer)."""
    st = state_of(a, v)
    a, v = promote(st, tensor_of(st, a), tensor_of(st, v))
    if a.ndim > 1 or v.ndim > 1:
        raise ValueError("object too deep for desired array")
    a, v = a.reshape(-1), v.reshape(-1)
    try:
        mode = _CONVOLVE_MODES[mode]
    except (KeyError, TypeError):
        graph_break(st, f"np.convolve with mode={mode!r}")  # NumPy says what it takes
    n, m = a.shape[0], v.shape[0]
    if n == 0:
        raise ValueError("a cannot be empty")
    if m == 0:
        raise ValueError("v cannot be empty")
    zeros = full_of(v[:m - 1], zero_of(a), a._dtype)
    padded = concatenate([zeros, a, zeros])
    rows = expand_dims(emit(st, "arange", [0, n + m - 1, 1], {"dtype": "i64"}), 1)
    taps = expand_dims(emit(st, "arange", [0, m, 1], {"dtype": "i64"}), 0)
    window = padded[rows - taps + (m - 1)]
    if a._dtype in FLOAT:
        # Only the taps that meet a: a padding zero times a NaN or an
        # infinity of v is no product NumPy takes.
        inside = (rows - taps >= 0) & (rows - taps < n)
        full = emit(st, "sum", [where(inside, window * v, zero_of(a))], {"axes": [1]})
    else:
        full = matmul(window, v)
    if mode == "full":
        return full
    short, long = sym_min(n, m), sym_max(n, m)
    if mode == "same":
        start = (short - 1) // 2
        return full[start:start + long]
    return full[short - 1:long]


def dot(a, b):
    st = state_of(a, b)
    if tensor_of(st, a).ndim > 2 or tensor_of(st, b).ndim > 2:
        graph_break(st, "np.dot of arrays above rank 2 has no op (use matmul)")
    return matmul(a, b)


# -- the table's entries --------------------------------------------------------
implements(np.outer)(outer)
implements(np.inner)(inner)
implements(np.vdot)(vdot)
implements(numpy_has("vecdot"))(vecdot)
implements(np.tensordot)(tensordot)
implements(np.einsum)(einsum)
implements(np.convolve)(convolve)
implements(np.take_along_axis)(take_along_axis)
implements(np.linalg.norm)(norm)
implements(np.dot)(dot)


# NumPy 2's np.linalg functions of the array API standard: over the last axes.
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    st = state_of(x)
    x = tensor_of(st, x)
    if axis is None:
        flat = x.reshape(-1)
        out = norm(flat, ord, 0, False)
        return out.reshape(*([1] * x.ndim)) if keepdims else out
    if isinstance(axis, (tuple, list)):
        graph_break(st, "np.linalg.vector_norm over several axes")
    return norm(x, ord, axis, keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return norm(x, ord, (-2, -1), keepdims)


_linalg = np.linalg
implements(getattr(_linalg, "matmul", None))(matmul)
implements(getattr(_linalg, "outer", None))(outer)
implements(getattr(_linalg, "tensordot", None))(tensordot)
implements(getattr(_linalg, "vecdot", None))(vecdot)
implements(getattr(_linalg, "vector_norm", None))(vector_norm)
implements(getattr(_linalg, "matrix_norm", None))(matrix_norm)


def matvec(x1, x2):
    """The matrix-vector product of the last dims, batches broadcast (NumPy 2.2's gufunc)."""
    return matmul(x1, expand_dims(tensor_of(state_of(x1, x2), x2), -1))[..., 0]


def vecmat(x1, x2):
    """The vector-matrix product (the vector conjugated: a real's is itself)."""
    return matmul(expand_dims(tensor_of(state_of(x1, x2), x1), -2), x2)[..., 0, :]


implements(numpy_has("matvec"))(matvec)
implements(numpy_has("vecmat"))(vecmat)


@implements(np.linalg.matrix_power)
def matrix_power(a, n):
    """a's n-th power by NumPy's own order of products (squares, and the
    result times the squares its bits name); a negative power needs inv."""
    st = state_of(a)
    a = tensor_of(st, a)
    if a.ndim < 2:
        raise np.linalg.LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")
    if a.shape[-1] != a.shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    try:
        n = operator.index(n)
    except TypeError as e:
        raise TypeError("exponent must be an integer") from e
    if n < 0:
        graph_break(st, "np.linalg.matrix_power to a negative power (an inverse)")
    if n == 0:
        eye = (emit(st, "arange", [0, a.shape[-1], 1], {"dtype": "i64"})[:, None] ==
               emit(st, "arange", [0, a.shape[-1], 1], {"dtype": "i64"})[None, :]).astype(a._dtype)
        return broadcast_to(eye, a.shape)._fresh()
    if n == 1:
        return a  # NumPy gives back a itself
    if n == 2:
        return matmul(a, a)
    if n == 3:
        return matmul(matmul(a, a), a)
    z = result = None
    while n > 0:
        z = a if z is None else matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else matmul(result, z)
    return result
