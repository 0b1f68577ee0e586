"""Frozen arrays: weights the caller promises not to change until it thaws
them, so that kernels may keep what they derive from them across calls (the
CPU backend keeps each weight packed for its matrix product instead of
packing it on every call). The arrays stay graph inputs: freezing changes
no graph, guard or cache key, and new weights still need no recompile.

    params = load_weights()
    sj.freeze(params)        # an array, or lists, tuples and dicts of them
    ...                      # calls read params; writing to them raises
    sj.thaw(params)          # writable again; what was derived is dropped

NumPy arrays are made read-only while frozen (back to writable when thawed,
if they were). Other arrays (`__dlpack__`) cannot be: writing to one while
it is frozen is the caller's error, and calls may go on reading the old
values.
"""
from __future__ import annotations

import contextlib
import re
import threading

import numpy as np

from . import _shapejit
from ._trace.tensor import is_array

_lock = threading.Lock()
# id(array) -> [array, times frozen, whether freezing made it read-only];
# the reference keeps the array's memory alive while it is frozen.
_held = {}


def _leaves(tree, path="", out=None):
    """(path, array) for each array in tree, in order."""
    out = [] if out is None else out
    if is_array(tree):
        out.append((path, tree))
    elif isinstance(tree, dict):
        for k, v in tree.items():
            _leaves(v, f"{path}[{k!r}]", out)
    elif isinstance(tree, (list, tuple)):
        for i, v in enumerate(tree):
            _leaves(v, f"{path}[{i}]", out)
    elif tree is not None and not isinstance(tree, (int, float, bool, str, bytes)):
        raise TypeError(f"{path or 'the argument'}: a {type(tree).__name__}, not an array or a list, tuple or dict of them")
    return out


def _nonempty(tree):
    """(paths, arrays) of tree's arrays that have elements."""
    leaves = [(path or "the array", a) for path, a in _leaves(tree) if all(d != 0 for d in a.shape)]
    return [p for p, _ in leaves], [a for _, a in leaves]


def _call(fn, what, paths, arrays):
    try:
        fn(arrays, paths)
    except (TypeError, ValueError) as e:  # ArgList's messages name "argument i"
        message = re.sub(r"^argument (\d+)", lambda m: paths[int(m.group(1))], str(e))
        raise type(e)(f"shapejit.{message if message.startswith(what) else what + ': ' + message}") from None


def freeze(tree):
    """Declares the arrays of `tree` frozen until thaw(tree), and returns
    `tree`. Freezing an array again counts: it stays frozen until thawed as
    many times. Arrays with no elements are left alone. All or none: on an
    error (an array that overlaps a frozen one without being it, a reversed
    view) nothing of `tree` is frozen."""
    paths, arrays = _nonempty(tree)
    with _lock:
        _call(_shapejit._freeze, "freeze", paths, arrays)
        for a in arrays:
            entry = _held.setdefault(id(a), [a, 0, False])
            entry[1] += 1
            if isinstance(a, np.ndarray) and a.flags.writeable:
                a.flags.writeable = False
                entry[2] = True
    return tree


def thaw(tree):
    """Undoes one freeze(tree), and returns `tree`. All or none: a
    ValueError names an array that is not frozen, and nothing is thawed."""
    paths, arrays = _nonempty(tree)
    with _lock:
        _call(_shapejit._thaw, "thaw", paths, arrays)
        for a in arrays:
            entry = _held.get(id(a))
            if entry is None:  # frozen through another array over the same memory
                continue
            entry[1] -= 1
            if entry[1] == 0:
                del _held[id(a)]
                if entry[2]:
                    a.flags.writeable = True
    return tree


@contextlib.contextmanager
def frozen(tree):
    """freeze(tree) for the length of a `with` block."""
    freeze(tree)
    try:
        yield tree
    finally:
        thaw(tree)


def frozen_stats():
    """Frozen memory in the process: ranges, frozen_bytes, derived (copies
    kept, such as packed weights), derived_bytes, made (copies made in all)."""
    return _shapejit._frozen_stats()
