"""What a jitted function reads besides its arguments: the arrays it can
reach, and where each is.

A function reaches arrays through the objects its call passes (an instance
whose method is jitted, a params object: `self.layers[3].wq`), the instance
of a jitted bound method, its closure cells, and the globals its code names
(`W`, `params["w"]`, `physics.grid`); and, the same ways, through the Python
functions it calls that it names (a helper in its module, a closure's
function, another jitted function). While the function is traced, each such
array is swapped in its holder (a dict, a list, an instance's or a module's
attributes, a cell) for its tracing value, which becomes an input of the
graph where it is first used (`_trace.tensor.Unlifted`), and is put back after:
the function's NumPy on it is traced, not run on the data at trace time, and
its writes into it (`G[:2] = x`, `H += 1`, `self.cache[:, pos] = k`) are
traced and written back into the caller's array on every call, as NumPy
would write them. An array in a tuple cannot be swapped; it is lifted where
it meets a tracing value. Each input keeps its source, (root, ((is_attr,
key), ...)), from which the extension reads it again on every call.

The names a function's code binds (`global G; G = ...`, `nonlocal n; n +=
1`) are Python state that a compiled call would not change: a trace that
rebinds any of them is a graph break, and the call runs in NumPy.
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import types

import numpy as np

from .._trace.dtypes import NAMES
from .._trace.state import graph_break
from .._trace.tensor import is_array
from .arguments import ARGS, SKIPPED_PACKAGES, library_path


NOT_WALKED = (type, types.ModuleType, types.FunctionType, types.MethodType, types.BuiltinFunctionType)
ROOT_DEPTH = 6     # an instance's arrays: self.layers[3].attention.cache_k
GLOBAL_DEPTH = 6   # a closure's or a global's: params["layers"][3]["attn"]["wq"]
MAX_FUNCTIONS = 32  # the functions a trace looks into for what they name, the jitted one first


def reachable(obj, depth, seen):
    """(steps, holder, key, array) for every array reachable from obj through
    dict entries, list and tuple items and objects' attributes, `depth` steps
    at most; `holder` is what can take another value at `key` (a dict, a
    list, an object's __dict__) or None (a tuple item); `seen` (ids) is
    shared between walks."""
    def walk(obj, steps, holder, key, d):
        if is_array(obj):
            yield steps, holder, key, obj
            return
        if d == 0 or id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, dict):
            items, into = ((False, k, v) for k, v in list(obj.items())), obj
        elif isinstance(obj, list):
            items, into = ((False, i, v) for i, v in enumerate(obj)), obj
        elif isinstance(obj, tuple):
            items, into = ((False, i, v) for i, v in enumerate(obj)), None
        elif hasattr(obj, "__dict__") and not isinstance(obj, NOT_WALKED):
            into = vars(obj)
            items = ((True, k, v) for k, v in list(into.items()))  # params.w, self.wq
        else:
            return
        for attr, k, v in items:
            yield from walk(v, steps + ((attr, k),), into, k, d - 1)

    yield from walk(obj, (), None, None, depth)


def _code_names(code, out, consts=None):
    """The names a code object and the code nested in it (lambdas,
    comprehensions, inner functions) load: globals, attributes, methods;
    and into `consts`, the strings and ints among its constants (the keys
    of `cfg["scale"]`, `sizes[0]`)."""
    out.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _code_names(c, out, consts)
        elif consts is not None and type(c) in (str, int):
            consts.add(c)
    return out


def _package(obj):
    name = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", None) or ""
    return name.split(".")[0]


def skipped(obj, own=None):
    """Code of NumPy's, shapejit's, Python's or an installed library's (its
    module state is its own, never the program's): not looked into, but
    for the program's own package (`own`), installed or not."""
    package = _package(obj)
    if package in SKIPPED_PACKAGES:
        return True
    if package == own:
        return False
    path = getattr(obj, "__file__", None) if isinstance(obj, types.ModuleType) else getattr(getattr(obj, "__code__", None), "co_filename", None)
    return library_path(path)


def _unwrapped(f, roots):
    """The Python function behind a callable: a bound method's (its instance
    goes to `roots`), a partial's (its arguments too), a jitted function's,
    an instance's __call__; or None."""
    for _ in range(8):
        if isinstance(f, types.FunctionType):
            return f
        if isinstance(f, types.MethodType):
            roots.append(f.__self__)
            f = f.__func__
        elif isinstance(f, functools.partial):
            roots.extend(a for a in (*f.args, *f.keywords.values()) if not isinstance(a, (int, float, str, bool, type(None))))
            f = f.func
        elif hasattr(f, "__wrapped__"):
            f = f.__wrapped__
        elif callable(f) and not isinstance(f, type) and isinstance(getattr(type(f), "__call__", None), types.FunctionType):
            roots.append(f)
            f = type(f).__call__
        else:
            return None
    return None


def _types_held(obj, depth, out, budget=None):
    """The types of obj and of the objects it holds (dict, list and tuple
    items, attributes), `depth` steps at most, into `out` (type -> set)."""
    budget = [512] if budget is None else budget
    if depth == 0 or budget[0] <= 0 or is_array(obj) or isinstance(obj, NOT_WALKED):
        return
    budget[0] -= 1
    if isinstance(obj, dict):
        items = list(obj.values())
    elif isinstance(obj, (list, tuple)):
        items = list(obj)
    elif hasattr(obj, "__dict__"):
        if type(obj) in out:
            return
        out[type(obj)] = set()
        items = list(vars(obj).values())
    else:
        return
    for v in items[:64]:
        _types_held(v, depth - 1, out, budget)


def _functions_named(module, names, own):
    """The Python functions of a module of the program's that code names
    (`helpers.positions(x)`); none of a library's."""
    if skipped(module, own):
        return []
    return [v for k in sorted(names) if isinstance(v := getattr(module, k, None), types.FunctionType)]


class Reach:
    """Where one trace of `fn` finds arrays besides its arguments; `roots`
    are the objects its call passes by identity. `places()` walks them;
    `snapshot()`, `changed()` and `restore()` tell whether a trace changed
    the Python state it can reach, and undo it."""

    def __init__(self, fn, roots=(), instances=(), float_places=None, call=None):
        # `instances`: (steps, instance) of those the call's key holds by
        # type (arguments.instances); what is found through one is found on
        # a path from the call's arguments (ARGS), read from each call's.
        # `float_places`: the places whose floats are inputs
        # (Arguments.float_places), `call` the call's (args, kwargs).
        self.roots = [obj for _, obj in instances] + list(roots)
        self.paths = {id(obj): steps for steps, obj in instances}
        self.float_places = float_places or {}
        self.call = call
        self.names = set()    # every name the functions' code loads
        self.consts = set()   # the strings and ints among their constants
        self._cells = []       # their closure cells
        self._named = []       # (globals dict, name) of each global they name
        self.own = None       # the program's package: the jitted function's
        self._find_functions(fn)

    def _find_functions(self, fn):
        seen = set()
        todo = [fn]
        count = 0
        own = None
        classes = {}  # the types of the objects reached -> the names looked up on each
        while todo and count < MAX_FUNCTIONS:
            f = _unwrapped(todo.pop(0), self.roots)
            if f is None or id(f) in seen or (count and skipped(f, own)):
                continue
            own = self.own = own or _package(f)
            seen.add(id(f))
            count += 1
            names = _code_names(f.__code__, set(), self.consts)
            self.names |= names
            for cell in f.__closure__ or ():
                self._cells.append(cell)
                try:
                    value = cell.cell_contents
                except ValueError:
                    continue
                if isinstance(value, types.ModuleType):
                    todo.extend(_functions_named(value, names, own))
                elif callable(value) and not isinstance(value, type):
                    todo.append(value)
            g = f.__globals__
            objects = list(self.roots)
            for name in sorted(names):
                if name.startswith("__") or name not in g:
                    continue
                self._named.append((g, name))
                value = g[name]
                if isinstance(value, types.ModuleType):
                    todo.extend(_functions_named(value, names, own))
                elif callable(value) and not isinstance(value, type):
                    todo.append(value)
                elif hasattr(value, "__dict__") and not isinstance(value, NOT_WALKED):
                    objects.append(value)
            # Methods (and properties) of the objects it reads through, and
            # of the objects they hold (self.block(x), sim.step(),
            # self.layers[0].norm(h), self.scale), that its code names:
            # what they read, it reads.
            for obj in objects:
                _types_held(obj, ROOT_DEPTH, classes)
            for t, checked in classes.items():
                for name in sorted(self.names - checked):
                    member = getattr(t, name, None)
                    if isinstance(member, property):
                        member = member.fget
                    if isinstance(member, types.FunctionType) and not skipped(member, own):
                        todo.append(member)
                checked |= self.names

    def places(self):
        """(source, holder, key, array) for every array reachable: source is
        (root, steps), holder and key where a tracing value can stand in for
        it (holder None: it cannot)."""
        seen = set()
        for obj in self.roots:
            prefix = self.paths.get(id(obj))
            for steps, holder, key, array in reachable(obj, ROOT_DEPTH, seen):
                yield ((obj, steps) if prefix is None else (ARGS, prefix + steps)), holder, key, array
        for cell in self._cells:
            try:
                contents = cell.cell_contents
            except ValueError:
                continue
            for steps, holder, key, array in reachable(contents, GLOBAL_DEPTH, seen):
                yield (cell, ((True, "cell_contents"), *steps)), holder if steps else CellHolder(cell), key, array
        for g, name in self._named:
            value = g.get(name)
            if isinstance(value, types.ModuleType):
                if skipped(value, self.own) or id(value) in seen:
                    continue
                seen.add(id(value))
                attrs = vars(value)
                for k in sorted(self.names):
                    v = attrs.get(k)
                    if v is None or isinstance(v, NOT_WALKED):
                        continue
                    for steps, holder, key, array in reachable(v, GLOBAL_DEPTH - 1, seen):
                        yield (g, ((False, name), (True, k), *steps)), holder if steps else attrs, key if steps else k, array
                continue
            for steps, holder, key, array in reachable(value, GLOBAL_DEPTH, seen):
                yield (g, ((False, name), *steps)), holder if steps else g, key if steps else name, array

    def float_holders(self):
        """(holder, key, value, source) for each float place whose value is
        a float now, where a tracing value can stand in for it."""
        for root, steps in self.float_places.values():
            try:
                obj = self.call if root is ARGS else root
                for attr, k in steps[:-1]:
                    obj = getattr(obj, k) if attr else obj[k]
                attr, k = steps[-1]
                if isinstance(obj, types.CellType):
                    holder, k = CellHolder(obj), None
                elif attr:
                    holder = vars(obj)
                    if k not in holder:
                        continue  # a class's value: not the instance's to stand in for
                else:
                    holder = obj
                value = holder[k]
            except Exception:  # noqa: BLE001 - the place is gone: nothing stands in
                continue
            if type(value) is float and isinstance(holder, (dict, list, CellHolder)):
                yield holder, k, value, (root, steps)

    def functions_held(self, replacements):
        """(holder, key, function) for each place the functions hold one of
        `replacements`' originals under a name of their own: a global (`from
        numpy import arange`), a closure cell, an attribute of an object or
        a module of the program's that the code names (`npx.zeros` of a
        namespace of NumPy's functions)."""
        def held(value):
            try:
                return id(value) in replacements
            except TypeError:
                return False
        for cell in self._cells:
            try:
                if held(cell.cell_contents):
                    yield CellHolder(cell), None, cell.cell_contents
            except ValueError:
                continue
        for g, name in self._named:
            value = g.get(name)
            if held(value):
                yield g, name, value
            elif isinstance(value, types.ModuleType) and skipped(value, self.own):
                continue
            elif not isinstance(value, (type, types.FunctionType, types.MethodType)):
                try:
                    attrs = vars(value)
                except Exception:  # noqa: BLE001 - no __dict__ (or one a __getattr__ refuses): holds none
                    continue
                for k in sorted(self.names):
                    if held(attrs.get(k)):
                        yield attrs, k, attrs[k]

    def bound(self):
        """What the names the code can bind hold now, to compare by identity
        after the trace (rebound)."""
        state = [(g, name, g.get(name, GONE)) for g, name in self._named]
        for cell in self._cells:
            try:
                state.append((cell, None, cell.cell_contents))
            except ValueError:
                state.append((cell, None, GONE))
        return state

    def snapshot(self):
        """What the function can read besides its arguments, by identity: the
        names its code can bind, and what their dicts, lists and objects
        hold (and how many), to GLOBAL_DEPTH, the first SNAPSHOT_ITEMS of
        each. A trace is checked against it (changed), and a cached error
        raised again only while nothing in it changed."""
        out = []
        seen = set()

        def walk(obj, depth):
            if depth == 0 or id(obj) in seen or is_array(obj):
                return
            seen.add(id(obj))
            if isinstance(obj, dict):
                items = obj.items()
            elif isinstance(obj, list):
                items = enumerate(obj)
            elif hasattr(obj, "__dict__") and not isinstance(obj, NOT_WALKED):
                items = vars(obj).items()
            else:
                return
            out.append((obj, len, len(obj) if isinstance(obj, (dict, list)) else len(vars(obj))))
            for k, v in itertools.islice(list(items), SNAPSHOT_ITEMS):
                out.append((obj, k, v))
                walk(v, depth - 1)

        for holder, name, value in self.bound():
            out.append((holder, name, value))
            walk(value, GLOBAL_DEPTH)
        for obj in self.roots:
            walk(obj, GLOBAL_DEPTH)
        return out

    @staticmethod
    def changed(snapshot):
        """The first place of `snapshot` that holds another object now (its
        key), or None."""
        for holder, key, value in snapshot:
            if key is len:
                if _size(holder) != value:
                    return f"the size of a {type(holder).__name__} of {value}"
            elif _now(holder, key) is not value:
                return key if key is not None else "a variable of an enclosing function"
        return None

    @staticmethod
    def restore(snapshot):
        """Puts back what `snapshot` saw: a trace leaves the function's
        Python state as it found it, for NumPy to run the call after it.
        A container the snapshot holds whole loses what the trace added to it."""
        sizes = {id(h): n for h, k, n in snapshot if k is len}
        places = {}  # id(holder) -> (holder, [(key, value)])
        for holder, key, value in snapshot:
            entry = places.setdefault(id(holder), (holder, []))
            if key is not len:
                entry[1].append((key, value))
        for holder, items in places.values():
            whole = sizes.get(id(holder), SNAPSHOT_ITEMS + 1) <= SNAPSHOT_ITEMS
            if isinstance(holder, types.CellType):
                for _, value in items:
                    if _now(holder, None) is value:
                        continue
                    if value is GONE:
                        del holder.cell_contents
                    else:
                        holder.cell_contents = value
            elif isinstance(holder, list):
                holder[:len(items)] = [v for _, v in items]
                del holder[sizes.get(id(holder), len(holder)):]
            else:
                mapping = holder if isinstance(holder, dict) else vars(holder)
                if whole:
                    for k in [k for k in mapping if k not in {key for key, _ in items}]:
                        del mapping[k]  # added by the trace
                for k, v in items:
                    if v is GONE:
                        mapping.pop(k, None)
                    elif mapping.get(k, GONE) is not v:
                        mapping[k] = v


SNAPSHOT_ITEMS = 4096  # the items of one dict, list or object a snapshot holds
def _size(holder):
    return len(holder) if isinstance(holder, (dict, list)) else len(vars(holder))


GONE = object()


def _now(holder, key):
    """What a snapshot's place holds now (GONE where it is gone)."""
    if key is None:
        try:
            return holder.cell_contents
        except ValueError:
            return GONE
    if isinstance(holder, dict):
        return holder.get(key, GONE)
    if isinstance(holder, list):
        return holder[key] if key < len(holder) else GONE
    return vars(holder).get(key, GONE)


class CellHolder:
    """A closure cell as a holder: its one key is its contents."""

    __slots__ = ("cell",)

    def __init__(self, cell):
        self.cell = cell

    def __getitem__(self, key):
        return self.cell.cell_contents

    def __setitem__(self, key, value):
        self.cell.cell_contents = value


def source_key(source):
    """A source as a dict key: its root by identity, its steps by value."""
    return id(source[0]), source[1]


def swappable(array) -> bool:
    """An array a tracing value can stand in for: an ndarray (its subclasses
    too, which break the graph where they are used), of a dtype shapejit has."""
    return isinstance(array, np.ndarray) and array.dtype in NAMES


class _Opaque:
    """What stands in for an array of a dtype shapejit lacks (float16,
    uint8...) while the function is traced: any use of it is a graph break,
    so that NumPy computes with it on every call rather than once, at the
    trace."""

    __slots__ = ("_st", "_dtype")

    def __init__(self, st, dtype):
        self._st, self._dtype = st, dtype

    def _use(self, *args, **kwargs):
        graph_break(self._st, f"the function reads a {self._dtype} array, a dtype shapejit lacks")

    def __getattr__(self, name):
        self._use()


for _name in ("__array__", "__array_ufunc__", "__array_function__", "__getitem__", "__setitem__", "__len__", "__iter__",
              "__bool__", "__int__", "__float__", "__index__", "__neg__", "__pos__", "__abs__", "__invert__", "__contains__",
              *(f"__{p}{op}__" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
                                          "xor", "lshift", "rshift") for p in ("", "r", "i")),
              "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
    setattr(_Opaque, _name, _Opaque._use)
_Opaque.__hash__ = object.__hash__


@contextlib.contextmanager
def swapped(st, reach, replacements=None):
    """While the function is traced on `st`, each array it can reach
    (reach.places()) stands in its holder as its tracing value, and is put
    back after; the sources of all go to st.sources. So does the function
    that traces sizes for each of NumPy's creation functions the code holds
    under a name of its own (`replacements`: patches.size_functions). A trace that rebinds
    one of them, or changes other Python state it can reach (a name its code
    binds, `self.t += 1`, a list it appends to), is a graph break, with that
    state put back as it was, for NumPy to run the call from it; so is one
    that raises after such a change."""
    snapshot = reach.snapshot()
    functions = list(reach.functions_held(replacements or {}))  # before arrays' stand-ins are in their holders
    swaps = []
    try:
        for source, holder, key, array in reach.places():
            st.sources.setdefault(id(array), source)
            if holder is None or not isinstance(array, np.ndarray):
                continue
            t = st.stand_in(array, source) if swappable(array) else _Opaque(st, array.dtype)
            holder[key] = t
            swaps.append((holder, key, array, t))
        for holder, key, original in functions:
            replacement = replacements[id(original)]
            holder[key] = replacement
            swaps.append((holder, key, original, replacement))
        for holder, key, value, source in list(reach.float_holders()):
            # A float read there took more values than the backoff: an
            # input, weak as NumPy treats a Python float (x32 * lr stays
            # float32), read again on every call (Function::refresh).
            t = st.stand_in(np.array(value), source)
            t._weak = True
            st.float_sources.add(source_key(source))
            holder[key] = t
            swaps.append((holder, key, value, t))
    except BaseException:  # a holder that refuses: the program's objects as they were
        _put_back(swaps)
        raise
    rebound = None
    try:
        yield
    except BaseException:  # an error, or a break: the arrays go back first
        _put_back(swaps)
        if Reach.changed(snapshot) is not None:  # NumPy makes those changes before its error
            Reach.restore(snapshot)
            graph_break(st, "the function raises after it changed Python state, which NumPy changes before its error")
        raise
    rebound = _put_back(swaps)
    if rebound is not None:
        Reach.restore(snapshot)
        graph_break(st, f"the function rebinds an array it reads ({rebound!r}), which a compiled call would not rebind")
    what = Reach.changed(snapshot)
    if what is not None:
        Reach.restore(snapshot)
        graph_break(st, f"the function changes {what!r}, Python state that a compiled call would not change")


def _put_back(swaps):
    """Puts each swapped array back in its holder; the key of one the
    function rebound, or None."""
    rebound = None
    for holder, key, array, t in reversed(swaps):
        if holder[key] is not t:
            rebound = key
        holder[key] = array
    return rebound
