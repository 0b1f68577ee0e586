"""How the differential fuzzer compares shapejit's answer with NumPy's: a
result tree leaf by leaf, each leaf's type, dtype, shape and values, within
the tolerances an inexact step allows (programs.check)."""
from __future__ import annotations

import numpy as np


def leaves(tree, path="out"):
    if isinstance(tree, dict):
        for k in sorted(tree):
            yield from leaves(tree[k], f"{path}[{k!r}]")
    elif isinstance(tree, (tuple, list)):
        for i, v in enumerate(tree):
            yield from leaves(v, f"{path}[{i}]")
    else:
        yield path, tree


def structure(tree):
    if isinstance(tree, dict):
        return ("dict", tuple((k, structure(tree[k])) for k in sorted(tree)))
    if isinstance(tree, (tuple, list)):
        return (type(tree).__name__, tuple(structure(v) for v in tree))
    return "leaf"


def differs(path, got, want, single, overflowed=False, order_sensitive=False):
    # A NumPy scalar where shapejit gives a 0-d array is the same value: a
    # traced value does not know whether NumPy would have made it a scalar
    # (docs/python.md). Any other kind of object is a difference.
    numeric = (np.ndarray, np.generic)
    if not (isinstance(got, numeric) and isinstance(want, numeric)) and type(got) is not type(want):
        return f"{path}: a {type(got).__name__}, NumPy gives a {type(want).__name__}"
    special = (np.ma.MaskedArray, np.matrix)  # subclasses whose type is part of the answer
    if (isinstance(got, special) or isinstance(want, special)) and type(got) is not type(want):
        return f"{path}: a {type(got).__name__}, NumPy gives a {type(want).__name__}"
    if isinstance(want, np.ma.MaskedArray):
        if not np.array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(want)):
            return f"{path}: mask {np.ma.getmaskarray(got).ravel()[:6]}, NumPy's {np.ma.getmaskarray(want).ravel()[:6]}"
        got, want = np.ma.getdata(got), np.ma.getdata(want)
        got, want = np.where(np.ma.getmaskarray(want), 0, got), np.where(np.ma.getmaskarray(want), 0, want)
    g, w = np.asarray(got), np.asarray(want)
    if g.dtype != w.dtype:
        return f"{path}: dtype {g.dtype}, NumPy gives {w.dtype}"
    if g.shape != w.shape:
        return f"{path}: shape {g.shape}, NumPy gives {w.shape}"
    if w.dtype.kind == "f" and order_sensitive:
        # A sum of values past the float's exact integers: its finite values
        # are its order's (programs.order_sensitive); which are NaN or
        # infinite still NumPy's, unless a reduction overflowed (see below).
        if not overflowed and not np.array_equal(np.isnan(g), np.isnan(w)) or not np.array_equal(np.isinf(g), np.isinf(w)):
            return f"{path}: {g.ravel()[:6]} where NumPy gives {w.ravel()[:6]}"
        return None
    if w.dtype.kind == "f":
        # A float64 result of float32 steps carries their rounding (shapejit's
        # float32 exp is within an ulp or two of NumPy's, not equal to it).
        tol = 1e-4 if w.dtype == np.float32 or single else 1e-9
        # Within a few ulps of the dtype's largest: whether a sum overflows
        # to inf is its order's (NumPy's pairwise one against another).
        edge = np.finfo(w.dtype).max / 1024
        g, w = g.copy(), w.copy()
        near = (np.isinf(g) & (np.abs(w) > edge)) | (np.isinf(w) & (np.abs(g) > edge))
        if overflowed:
            near |= ~np.isfinite(g) | ~np.isfinite(w)
        g[near], w[near] = 0, 0
        finite = np.abs(w[np.isfinite(w)])
        atol = tol * (1 + (finite.max() if finite.size else 0))
        if not np.allclose(g, w, rtol=tol, atol=atol, equal_nan=True):
            bad = ~np.isclose(g, w, rtol=tol, atol=atol, equal_nan=True)
            return f"{path}: {g[bad][:4]} where NumPy gives {w[bad][:4]}"
    elif w.dtype == object:
        # Python numbers (np.matrix times an int past int64 is an object
        # matrix): equal, or both NaN, as a float array's compare takes them.
        def same(a, b):
            if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):  # an element that is an array (v0[0] = a)
                return differs(path, a, b, single, overflowed, order_sensitive) is None
            return a == b or (a != a and b != b)
        if not all(same(a, b) for a, b in zip(g.ravel(), w.ravel())):
            return f"{path}: {g.ravel()[:6]} where NumPy gives {w.ravel()[:6]}"
    elif not np.array_equal(g, w):
        return f"{path}: {g.ravel()[:6]} where NumPy gives {w.ravel()[:6]}"
    return None
