"""A jitted function's arguments: which are arrays (the inputs) and what
makes the key that picks a site.

Arrays are inputs. A Python `int` is a size: the call passes it as the
second dim of an empty array, so it is a symbol of the site like any
array's dim, under the same policy (symbolic until the function reads the
number, then guarded; backed off after repeated recompiles); the key holds
only its sign. A Python `float` is a value of the key until the function's
calls have passed `backoff_after` + 1 different floats where the rest of the
key is the same (a temperature, a step size that changes); from then on
every float argument of the function is an input, a 0-d float64 array that
the trace treats as NumPy treats a Python float (weak: `x32 / t` stays
float32), and a branch on it reads it at a cut (segments.py). bools,
strings, None and NumPy's scalars (whose dtypes NumPy promotion keeps) are
values of the key; an instance of the program's own classes is keyed by
its type (InstanceOf: every instance is served by one site, what the
function reads through it read from the call's instance), any other object
by identity; arrays hanging off either are captured, and the other values
read through them watched (captures.py).
"""
from __future__ import annotations

import functools
import logging
import sys
import sysconfig
import types

import numpy as np

from .. import _pytree
from .._trace.sizes import SymInt
from .._trace.tensor import Tensor, is_array

log = logging.getLogger("shapejit")

_INT = ("leaf", "int")
_NEG_INT = ("leaf", "-int")
FLOAT = ("leaf", "float")
_INT_LIMIT = 2**62


class Untraced(Exception):
    """A call that is not traced: it passed tracing values (an outer trace
    calls this function, which it traces through), or an array whose NumPy
    semantics are its own (a masked array, a matrix, any ndarray subclass
    but a memory map), which NumPy runs."""


class Ident:
    """A key part for an object guarded by identity (it is kept alive by the key)."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return isinstance(other, Ident) and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)

    def __repr__(self):
        return f"<{type(self.obj).__name__} at {id(self.obj):#x}>"


class InstanceOf:
    """A key part for an instance of the program's own classes: its type.
    Every instance of a class is served by the same site, its arrays read
    from the instance the call passes (the site's captures are paths from
    the call's arguments, ARGS) and the other values the function reads
    through it watched (watches.py): a method jitted on its
    class (`Model.__call__ = shapejit.jit(Model.__call__)`) compiles once
    for every model of one structure."""

    __slots__ = ("type",)

    def __init__(self, t):
        self.type = t

    def __eq__(self, other):
        return isinstance(other, InstanceOf) and other.type is self.type

    def __hash__(self):
        return hash(self.type)

    def __repr__(self):
        return f"<a {self.type.__name__}>"


# The root of a path that begins at the call's arguments: (args, kwargs),
# read again from each call by the extension.
ARGS = type("CallArguments", (), {"__repr__": lambda self: "<the call's arguments>"})()

# The types keyed by InstanceOf: the extension's walk of a call's arguments
# (pytree.cpp) keys their instances by type too.
INSTANCE_TYPES = set()

_NOT_INSTANCES = (type, types.ModuleType, types.FunctionType, types.MethodType, types.BuiltinFunctionType, functools.partial)


def _instance(x) -> bool:
    """An instance of a class of the program's own, with attributes a trace
    reads through paths: not a function, a class or a module, nor an object
    of NumPy's, shapejit's, Python's or an installed library's (whose
    attributes their own code reads, which no watch sees), nor one whose
    class makes attributes as they are read (__getattr__)."""
    if isinstance(x, _NOT_INSTANCES) or not hasattr(x, "__dict__") or isinstance(x, Tensor):
        return False
    t = type(x)
    if t in INSTANCE_TYPES:
        return True
    module = sys.modules.get(t.__module__)
    if module is None or t.__module__.split(".")[0] in SKIPPED_PACKAGES or library_path(getattr(module, "__file__", None)):
        return False
    if t.__getattribute__ is not object.__getattribute__ or hasattr(t, "__getattr__"):
        return False  # attributes made as they are read: no path holds them
    INSTANCE_TYPES.add(t)
    return True


# The packages whose code and state are never the program's.
SKIPPED_PACKAGES = ("numpy", "shapejit", "builtins")
_STDLIB = sysconfig.get_paths()["stdlib"]


def library_path(path) -> bool:
    """Whether a source file is an installed library's or Python's own."""
    return bool(path) and (any(part in path for part in ("site-packages", "dist-packages")) or path.startswith(_STDLIB))


def _key(x):
    """A value that is not an array: Python's scalars by value, an instance
    of the program's classes by its type, anything else by identity."""
    t = type(x)
    if t in (int, float, bool, str, bytes, complex) or x is None:
        return (t.__name__, x)
    if isinstance(x, np.generic):
        return (t.__name__, x.item())
    if _instance(x):
        return InstanceOf(t)
    return Ident(x)


def _leaf_array(x):
    """The array a leaf that is not an array is passed as."""
    if type(x) is float:
        return np.array(x, np.float64)
    return np.empty((0, x if x >= 0 else -x), np.bool_)


def objects(spec, out=None):
    """The objects a call's key holds by identity (arrays may hang off them)."""
    out = [] if out is None else out
    if isinstance(spec, Ident):
        out.append(spec.obj)
    elif isinstance(spec, tuple):
        for e in spec:
            objects(e, out)
    return out


def instances(spec, value, steps=(), out=None):
    """(steps, instance) for each instance a call passes that its key holds
    by type, `steps` the path to it from (args, kwargs) (`value`, the
    call's), as a capture's steps are."""
    out = [] if out is None else out
    if spec is None:
        return out
    kind = spec[0]
    if kind == "other" and isinstance(spec[1], InstanceOf):
        out.append((steps, value))
    elif kind in ("tuple", "list", "namedtuple"):
        for i, e in enumerate(spec[-1]):
            instances(e, value[i], steps + ((False, i),), out)
    elif kind == "dict":
        for k, e in spec[1]:
            instances(e, value[k], steps + ((False, k),), out)
    return out


class Arguments:
    """One jitted function's arguments (see the module's text); `name` for
    the log line, `backoff_after` the policy's."""

    def __init__(self, name, backoff_after=2):
        self.name = name
        self.backoff_after = max(1, int(backoff_after))
        self.dynamic_floats = False  # read by the extension's own walk of a call
        self._floats_seen = {}       # the key with its floats blanked -> the float tuples met
        # The places besides the arguments (a global, `self.lr`) whose float
        # changed past the backoff: inputs, as float arguments become
        # (captures.swapped): (id(root), steps) -> (root, steps).
        self.float_places = {}
        self._float_changes = {}

    def leaf(self, x):
        """Falsy for a value of the key, True for an array, or the spec of a
        leaf passed as an array (an int, a float once floats are inputs)."""
        t = type(x)
        if t is int:
            if 0 <= x < _INT_LIMIT:
                return _INT
            if -_INT_LIMIT < x < 0:
                return _NEG_INT
            return False
        if t is float:
            return FLOAT if self.dynamic_floats else False
        if isinstance(x, (Tensor, SymInt)) or (isinstance(x, np.ndarray) and type(x) not in (np.ndarray, np.memmap)):
            raise Untraced
        return is_array(x)

    def flatten(self, args, kwargs):
        """(arrays in order, the key of everything else), or None for a call
        that is not traced (Untraced)."""
        floats = []

        def key(x):
            if type(x) is float:
                floats.append(x)
            return _key(x)
        try:
            arrays, spec = _pytree.flatten((args, kwargs), self.leaf, key, _leaf_array)
        except Untraced:
            return None
        if floats and self._floats_changed(args, kwargs, floats):
            return self.flatten(args, kwargs)
        return arrays, spec

    def float_changed(self, root, steps):
        """A float the function reads at (root, steps) took a value no
        variant of its site was traced with: past backoff_after such
        changes, the place is an input from the next trace on."""
        key = (id(root), steps)
        n = self._float_changes[key] = self._float_changes.get(key, 0) + 1
        if n >= self.backoff_after and key not in self.float_places:
            self.float_places[key] = (root, steps)
            log.info(f"shapejit: {self.name}: the float it reads at {_describe_place(root, steps)} took {n + 1} values: "
                     "from now on it is an input")

    def _floats_changed(self, args, kwargs, floats):
        """Counts the call's floats; true when they back off (from now on, inputs)."""
        blanked = _pytree.flatten((args, kwargs), self.leaf, lambda x: ("float",) if type(x) is float else _key(x))[1]
        seen = self._floats_seen.setdefault(blanked, set())
        seen.add(tuple(floats))
        if len(seen) <= self.backoff_after:
            return False
        self.dynamic_floats = True
        self._floats_seen.clear()
        log.info(f"shapejit: {self.name}: its float arguments took {len(seen)} values: from now on they are inputs")
        return True

    def traced(self, args, kwargs, tensors):
        """args and kwargs with each leaf its tracing value: an array its
        tensor, an int the SymInt of its empty array, a float its weak 0-d tensor."""
        it = iter(tensors)

        def value(leaf):
            t = next(it)
            if type(leaf) is int:
                n = t.shape[1]
                return n if leaf >= 0 else -n
            if type(leaf) is float:
                t._weak = True
            return t

        return _pytree.map_leaves(value, (args, kwargs), self.leaf)


def _describe_place(root, steps):
    if root is ARGS:
        return ("args" if steps[0][1] == 0 else "kwargs") + _path(steps[1:])
    if isinstance(root, dict):
        return str(steps[0][1]) + _path(steps[1:])
    if type(root).__name__ == "cell":
        return "(closure)" + _path(steps[1:])
    return f"<{type(root).__name__}>" + _path(steps)


def _path(steps):
    return "".join(f".{k}" if attr else f"[{k!r}]" for attr, k in steps)


def describe_inputs(spec, arity, captures, limit=16):
    """The inputs of a site, by where the call passes them: `args[1]`,
    `kwargs['t'] (float)`, `args[0].cache_k` for a capture through an
    argument, `W` for a global; `spec` is the site's key (None: `arity`
    arrays), `captures` the (array, source) of its captures."""
    names = []

    def walk(s, where):
        kind = s[0]
        if kind == "leaf":
            names.append(where + {"int": " (int)", "-int": " (int < 0)", "float": " (float)"}.get(s[1] if len(s) > 1 else "", ""))
        elif kind in ("tuple", "list"):
            for i, e in enumerate(s[1]):
                walk(e, f"{where}[{i}]")
        elif kind == "namedtuple":
            for name, e in zip(s[1]._fields, s[2]):
                walk(e, f"{where}.{name}")
        elif kind == "dict":
            for k, e in s[1]:
                walk(e, f"{where}[{k!r}]")

    if spec is None:
        names += [f"args[{i}]" for i in range(arity)]
    else:
        args_spec, kwargs_spec = spec[1]
        for i, e in enumerate(args_spec[1]):
            walk(e, f"args[{i}]")
        for k, e in kwargs_spec[1]:
            walk(e, f"kwargs[{k!r}]")
    roots = {}
    if spec is not None:
        args_spec = spec[1][0]
        for i, e in enumerate(args_spec[1]):
            if e[0] == "other" and isinstance(e[1], Ident):
                roots[id(e[1].obj)] = f"args[{i}]"
    for _, source in captures:
        if source is not None and source[0] is ARGS:  # through an instance the call passes
            steps = source[1]
            names.append(("args" if steps[0][1] == 0 else "kwargs") + _path(steps[1:]) + (" (a view of it)" if len(source) == 3 else ""))
            continue
        if source is None:
            names.append("(an array made in the body)")
            continue
        root, steps = source[:2]
        view = " (a view of it)" if len(source) == 3 else ""
        if isinstance(root, dict):  # a module's globals: the first step is the name
            names.append(str(steps[0][1]) + _path(steps[1:]) + view)
        elif type(root).__name__ == "cell":
            names.append("(closure)" + _path(steps[1:]) + view)
        else:
            names.append(roots.get(id(root), f"<{type(root).__name__}>") + _path(steps) + view)
    shown = [f"{i} {n}" for i, n in enumerate(names[:limit])]
    more = f", ... ({len(names)} in all)" if len(names) > limit else ""
    return "  inputs: " + ", ".join(shown) + more + "\n"
