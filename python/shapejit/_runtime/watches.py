"""The values a jitted function reads besides its arguments and its
arrays, which its compiled entries hold as constants: a global float, a
closure's int, `cfg["scale"]`, `self.temperature`, a function bound to a
global. After a trace, `watched` lists each place it could have read one
from, as a path from its root, as a capture's source is; the extension
compares every place before each call (python/src/watches.cpp), and a call
that finds one changed is served by the entries traced with its values (a
variant of the site), or traced again. A float that keeps changing at one
place is made an input instead (captures.Reach.float_holders).
"""
from __future__ import annotations

import itertools
import types

import numpy as np

from .._trace.tensor import is_array
from .arguments import ARGS
from .captures import GLOBAL_DEPTH, GONE, NOT_WALKED, ROOT_DEPTH, skipped

MAX_WATCHES = 1024    # the places a site compares before a call (watched)
WHOLE_ITEMS = 64      # a dict or list this small is watched whole


def _class_value(cls, name) -> bool:
    """Whether an instance's attribute `name` is its class's plain value (a
    class attribute that is no method, property or other descriptor, whose
    read gives the same object every time)."""
    for klass in cls.__mro__:
        if name in vars(klass):
            v = vars(klass)[name]
            return not (hasattr(type(v), "__get__") or isinstance(v, type)) and klass is not object
    return False


def _scalar(value) -> bool:
    """A value compared by equality: Python's and NumPy's scalars, and
    tuples of them."""
    if type(value) in (int, float, bool, str, bytes, complex) or value is None or isinstance(value, np.generic):
        return True
    return type(value) is tuple and all(_scalar(v) for v in value)


def watched(reach):
    """(root, steps, value, is_size) for each place the function of
    `reach` (a captures.Reach) may read a value from that a compiled call
    would not read again: the scalars, functions and other objects bound
    in its closure cells and the globals its code names, and, through them
    and the objects its call passes, the attributes its code names
    (`self.temperature`, `config.EPS`), the items of the dicts, lists
    and tuples it reaches (all of a small one, else those its constants
    name: `cfg["scale"]`), and the sizes of the dicts and lists (is_size:
    value is the size). A place is a path, as a capture's source is:
    `root`, then steps (is_attr, key). A trace takes the values as they
    are; the extension walks each path before every call and compares
    what it finds (identity, or equality for Python's and NumPy's
    scalars and tuples of them), and a call that finds one changed is
    served by the entries traced with its values, or traced again
    (Watches::first_changed). Arrays are not among them: they are
    inputs, read again on every call; nor are the dicts, lists and
    objects a path passes through, so a layer rebound to one of the
    same kind (`m.layers[0] = Layer(7)`) changes nothing but its arrays."""
    out = []
    seen = set()

    def walk(root, steps, value, depth, own=True):
        if len(out) >= MAX_WATCHES or is_array(value):
            return
        if own and type(value) is float and (id(root), steps) in reach.float_places:
            return  # an input (float_holders), read again on every call
        container = isinstance(value, (dict, list, tuple)) or (
            hasattr(value, "__dict__") and not isinstance(value, NOT_WALKED) and not _scalar(value))
        if not container or depth == 0 or (isinstance(value, types.ModuleType) and skipped(value, reach.own)):
            out.append((root, steps, value, False))
            return
        if id(value) in seen:
            return
        seen.add(id(value))
        if isinstance(value, (dict, list)):
            out.append((root, steps, len(value), True))
        if isinstance(value, (dict, list, tuple)):
            small = len(value) <= WHOLE_ITEMS
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for k, v in list(itertools.islice(items, WHOLE_ITEMS if small else None)):
                if small or (type(k) in (str, int) and k in reach.consts):
                    walk(root, steps + ((False, k),), v, depth - 1)
        else:
            attrs = vars(value)
            cls = type(value)
            for k in sorted(reach.names):
                if k in attrs:
                    walk(root, steps + ((True, k),), attrs[k], depth - 1)
                elif not isinstance(value, types.ModuleType) and _class_value(cls, k):
                    walk(root, steps + ((True, k),), getattr(cls, k), depth - 1, own=False)  # Model.scale, as self.scale

    # The call's own objects first: what is reached through them is
    # watched on their paths, which an instance keyed by type needs.
    for obj in reach.roots:
        prefix = reach.paths.get(id(obj))
        if prefix is None:
            walk(obj, (), obj, ROOT_DEPTH)
        else:
            walk(ARGS, prefix, obj, ROOT_DEPTH)
    for holder, name, value in reach.bound():
        if value is GONE:
            continue
        if name is None:  # a cell
            walk(holder, ((True, "cell_contents"),), value, GLOBAL_DEPTH)
        else:
            walk(holder, ((False, name),), value, GLOBAL_DEPTH)
    return out
