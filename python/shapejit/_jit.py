"""The jit decorator, the Jits (one per config) and the recorder: the API
floor over the runtime boundary (_runtime), which holds what the extension
calls back for each jitted function."""
from __future__ import annotations

import atexit
import functools
import inspect
import itertools
import json
import logging
import os
import threading

from . import _shapejit
from ._runtime.arguments import Arguments
from ._runtime.calls import Callbacks
from ._runtime.segments import Segments

log = logging.getLogger("shapejit")


# -- Jits, one per config -----------------------------------------------------------

_jits = {}
_jits_lock = threading.Lock()
_counter = itertools.count()
_recorder = None


@atexit.register
def _stop_compiles():
    """The Jits live until the process ends; their background compiles
    (compile.async) must not run on into its teardown, where LLVM's static
    state goes: those not begun are dropped, the running ones finish."""
    with _jits_lock:
        jits = list(_jits.values())
    for j in jits:
        j.stop_compiles()


def _log_line(line: str):
    if "warning" in line:
        log.warning(line)
    else:
        log.info(line)


def _canonical_config(config) -> str:
    if config is None:
        return "{}"
    if isinstance(config, dict):
        return json.dumps(config, sort_keys=True)
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise OSError(f"shapejit: config {path}: {e.strerror}") from None
        try:
            return json.dumps(json.loads(text), sort_keys=True)
        except json.JSONDecodeError as e:
            raise ValueError(f"shapejit: config {path}: line {e.lineno} column {e.colno}: {e.msg}") from None
    raise TypeError(f"shapejit: config is a dict or a path to a JSON file, not {type(config).__name__}")


def get_jit(config=None):
    """The Jit for a config (a dict, a path, or None for the defaults); one per config."""
    key = _canonical_config(config)
    with _jits_lock:
        j = _jits.get(key)
        if j is None:
            j = _shapejit.Jit(key)
            j.set_log(_log_line)
            if _recorder is not None:
                j.record(_recorder)
            _jits[key] = j
        return j


def jit(fn=None, *, config=None, strict=False):
    """Makes fn shapejit's to run: traced on its first call of each new guard
    pattern, compiled, and dispatched by guards after that.

        @shapejit.jit
        def f(x, w): return shapejit.gelu(x @ w)

        @shapejit.jit(config={"policy": {"mode": "start_static"}})
        def g(x): ...

    A call shapejit cannot compile is NumPy's to run (docs/python.md, the
    guarantee); with strict=True it raises NotCompiled instead, once NumPy
    ran it to completion (an error of NumPy's is the function's own).
    """
    if fn is None:
        return functools.partial(jit, config=config, strict=strict)
    if not callable(fn):
        raise TypeError(f"shapejit.jit: {fn!r} is not callable")
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is not None and code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        return Uncompiled(fn, "a generator or a coroutine runs as Python runs it (its body is not one call)")
    j = get_jit(config)
    name = f"{getattr(fn, '__module__', None) or '?'}.{getattr(fn, '__qualname__', type(fn).__name__)}#{next(_counter)}"
    segments = Segments(j, name)
    f = _shapejit._make_function(j, fn, name, Callbacks(Arguments(name, j.backoff_after), segments, strict), segments)
    functools.update_wrapper(f, fn)
    return f


class Uncompiled:
    """What jit gives for a function it does not compile (a generator, a
    coroutine): the function, run as it is, with `stats()` and `explain()`
    saying why."""

    def __init__(self, fn, why):
        self.__wrapped__, self.why, self.calls = fn, why, 0
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.__wrapped__(*args, **kwargs)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def stats(self):
        return {"calls": self.calls, "eager_calls": self.calls, "compiles": 0}

    def explain(self):
        return f"{getattr(self.__wrapped__, '__qualname__', self.__wrapped__)}: not compiled: {self.why}\n"


class record:
    """Records every jitted call from now on (or inside a `with` block) as a
    trace that `shapejit replay` reads."""

    def __init__(self, path):
        global _recorder
        self._rec = _shapejit.Recorder(os.fspath(path))
        with _jits_lock:
            _recorder = self._rec
            for j in _jits.values():
                j.record(self._rec)

    def stop(self):
        global _recorder
        with _jits_lock:
            if _recorder is self._rec:
                _recorder = None
                for j in _jits.values():
                    j.record(None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
