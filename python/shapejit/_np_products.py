"""NumPy's products on tracing values: outer, inner, tensordot, einsum (as
batched matmuls), take_along_axis, linalg.norm."""
from __future__ import annotations

import math

import numpy as np

from . import _tracing as T
from ._np_base import _FLOAT, _axis, _count, _emit, _float, _full_like, _no, _smax, _smin, _st, _t, _zero


def outer(a, b, out=None):
    st = _st(a, b)
    _no(st, "np.outer", out=out)
    a, b = _t(st, a).reshape(-1), _t(st, b).reshape(-1)
    return T.expand_dims(a, 1) * T.expand_dims(b, 0)


def inner(a, b):
    st = _st(a, b)
    a, b = _t(st, a), _t(st, b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return tensordot(a, b, axes=([-1], [-1]))


def vdot(a, b):
    st = _st(a, b)
    a, b = _t(st, a).reshape(-1), _t(st, b).reshape(-1)
    return (a * b).sum()


def vecdot(x1, x2, /, *, axis=-1):
    st = _st(x1, x2)
    a, b = T.promote(st, _t(st, x1), _t(st, x2))
    return (a * b).sum(axis=axis)


def tensordot(a, b, axes=2):
    st = _st(a, b)
    a, b = _t(st, a), _t(st, b)
    if isinstance(axes, (int, np.integer, T.SymInt)):
        n = int(axes)
        ax_a, ax_b = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, (int, np.integer, T.SymInt)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, np.integer, T.SymInt)) else list(ax_b)
    ax_a = [_axis(x, a.ndim) for x in ax_a]
    ax_b = [_axis(x, b.ndim) for x in ax_b]
    free_a = [d for d in range(a.ndim) if d not in ax_a]
    free_b = [d for d in range(b.ndim) if d not in ax_b]
    k = _count(a, ax_a)
    am = a.transpose(free_a + ax_a).reshape(_count(a, free_a), k)
    bm = b.transpose(ax_b + free_b).reshape(k, _count(b, free_b))
    out = T.matmul(am, bm)
    return out.reshape(*[a.shape[d] for d in free_a], *[b.shape[d] for d in free_b])


def einsum(subscripts, *operands, out=None, optimize=False, **kwargs):
    """Einstein sums: each operand transposed to one order of all the
    indices (a diagonal, an index repeated in one operand, is a graph
    break), two operands contracted as a batched matmul, more by pairs."""
    st = _st(*operands)
    _no(st, "np.einsum", out=out, **kwargs)
    if not isinstance(subscripts, str):
        T._break(st, "np.einsum in its sublist form")
    spec = subscripts.replace(" ", "")
    if "." in spec:
        T._break(st, "np.einsum with an ellipsis")
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
    ts = [_t(st, o) for o in operands]
    for term, t in zip(terms, ts):
        if len(set(term)) != len(term):
            T._break(st, "np.einsum with an index repeated within one operand (a diagonal)")
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
    a, b = T.promote(st, a, b)
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
    if am._dtype in _FLOAT:
        out = T.matmul(am, bm)
    else:  # integer einsum: a broadcast product and a sum (matmul is float only)
        out = (T.expand_dims(am, -1) * T.expand_dims(bm, -3)).sum(axis=-2)
    out = out.reshape(*[size[c] for c in batch + own_a + own_b])
    return out, "".join(batch + own_a + own_b)


def take_along_axis(x, indices, axis):
    st = _st(x, indices)
    x, idx = _t(st, x), _t(st, indices)
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis = _axis(axis, x.ndim)
    if idx.ndim != x.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    idx = idx.astype("i64")
    n = x.shape[axis]
    idx = T.where(idx < 0, idx + n, idx)  # NumPy's negative indices
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
        coord = _emit(st, "arange", [0, T._shape_operand(idx.shape[d]), 1], {"dtype": "i64"})
        coord = coord.reshape(*[idx.shape[d] if e == d else 1 for e in range(x.ndim)])
        flat = flat + coord * strides[d]
    out = _emit(st, "index_select", [x.reshape(-1), flat.reshape(-1)], {"dim": 0})
    return out.reshape(*flat.shape)


def norm(x, ord=None, axis=None, keepdims=False):
    st = _st(x)
    x = _float(_t(st, x))
    if axis is None and ord is None:
        return T.unary("sqrt", (x * x).sum(keepdims=keepdims) if not keepdims else (x * x).sum(axis=list(range(x.ndim)), keepdims=True))
    if axis is None:
        if x.ndim == 1:
            axis = 0
        else:
            T._break(st, f"np.linalg.norm of a matrix with ord={ord!r}")
    if isinstance(axis, (tuple, list)):
        if ord in (None, "fro"):
            return T.unary("sqrt", (x * x).sum(axis=list(axis), keepdims=keepdims))
        T._break(st, f"np.linalg.norm of a matrix with ord={ord!r}")
    a = abs(x)
    if ord is None or ord == 2:
        return T.unary("sqrt", (x * x).sum(axis=axis, keepdims=keepdims))
    if ord == 1:
        return a.sum(axis=axis, keepdims=keepdims)
    if ord == math.inf:
        return a.max(axis, keepdims)
    if ord == -math.inf:
        return a.min(axis, keepdims)
    if ord == 0:
        return (x != 0.0).astype(x._dtype).sum(axis=axis, keepdims=keepdims)
    if isinstance(ord, (int, float)):
        return T.binary("pow", T.binary("pow", a, float(ord)).sum(axis=axis, keepdims=keepdims), 1.0 / ord)
    T._break(st, f"np.linalg.norm with ord={ord!r}")


_CONVOLVE_MODES = {"full": "full", "same": "same", "valid": "valid", 2: "full", 1: "same", 0: "valid"}


def convolve(a, v, mode="full"):
    """NumPy's convolve of two 1-D arrays: the full convolution is a gather
    of a's zero-padded values at i - j (a row per output, a column per tap)
    times v, a matrix-vector product; 'same' and 'valid' cut it, centred on
    the longer operand, as NumPy does (which swaps them when v is longer)."""
    st = _st(a, v)
    a, v = T.promote(st, _t(st, a), _t(st, v))
    if a.ndim > 1 or v.ndim > 1:
        raise ValueError("object too deep for desired array")
    a, v = a.reshape(-1), v.reshape(-1)
    try:
        mode = _CONVOLVE_MODES[mode]
    except (KeyError, TypeError):
        T._break(st, f"np.convolve with mode={mode!r}")  # NumPy says what it takes
    n, m = a.shape[0], v.shape[0]
    if n == 0:
        raise ValueError("a cannot be empty")
    if m == 0:
        raise ValueError("v cannot be empty")
    zeros = _full_like(v[:m - 1], _zero(a), a._dtype)
    padded = T.concatenate([zeros, a, zeros])
    rows = T.expand_dims(_emit(st, "arange", [0, n + m - 1, 1], {"dtype": "i64"}), 1)
    taps = T.expand_dims(_emit(st, "arange", [0, m, 1], {"dtype": "i64"}), 0)
    full = T.matmul(padded[rows - taps + (m - 1)], v)
    if mode == "full":
        return full
    short, long = _smin(n, m), _smax(n, m)
    if mode == "same":
        start = (short - 1) // 2
        return full[start:start + long]
    return full[short - 1:long]
