"""The differential fuzzer of the Python front end: random NumPy programs
(programs.py), each run by NumPy and by @shapejit.jit under a policy mode,
with arguments that change shape from call to call. Any difference in value,
dtype, shape, structure or exception type is a failure: Hypothesis shrinks
it to a small program, which is written to regressions/ (a JSON file that
tests/python/test_fuzz_regressions.py runs from then on) and printed.

    python tests/python/fuzz/fuzz_numpy.py --seconds 60 [--seed N] [--programs N] [--no-save] [--data-dependent] [--async]
                                           [--rounds-per-process N]

Exit status 1 when a failure was found. The counts (programs, calls,
failures) are printed at the end.

Each run of --rounds-per-process Hypothesis rounds is a child process of
its own (forked before any program is jitted), so that an hour's run holds
only one child's memory, and a crash (a signal, an abort) is a failure that
names the seeds of the rounds it ran, not the end of the run.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import resource
import signal
import sys
import tempfile
import time

os.environ.setdefault("XDG_CACHE_HOME", tempfile.mkdtemp(prefix="shapejit-fuzz-"))

import numpy as np  # noqa: E402
from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import programs as P  # noqa: E402
import shapejit  # noqa: E402

REGRESSIONS = pathlib.Path(os.environ.get("SHAPEJIT_FUZZ_REGRESSIONS", pathlib.Path(__file__).parent / "regressions"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--batch", type=int, default=25, help="programs per Hypothesis run")
    ap.add_argument("--programs", type=int, default=None, help="stop after this many programs (a reproducible smoke, with --seed)")
    ap.add_argument("--no-save", action="store_true", help="do not write failures to regressions/")
    ap.add_argument("--data-dependent", action="store_true",
                    help="masks draw nonzero, argwhere, flatnonzero, extract, compress and row masks too")
    ap.add_argument("--async", dest="async_", action="store_true",
                    help="compile.async: calls run on stand-ins (the reference, a wait, the trace's dynamic kernel) while kernels compile")
    ap.add_argument("--rounds-per-process", type=int, default=40,
                    help="Hypothesis rounds each child process runs (0: all in this process)")
    ap.add_argument("--memory-gb", type=float, default=8,
                    help="each child's address space (0: unbounded): a program whose NumPy needs more meets MemoryError, both ways")
    a = ap.parse_args()
    P.DATA_DEPENDENT_STEPS = a.data_dependent
    P.ASYNC_COMPILE = a.async_
    start_seed = a.seed if a.seed is not None else int.from_bytes(os.urandom(4), "little")
    print(f"fuzz_numpy: seed {start_seed}", flush=True)  # before any program: a crash can be run again
    counts = {"programs": 0, "calls": 0}
    failures = []
    deadline = time.monotonic() + a.seconds
    per_process = a.rounds_per_process
    first = 0
    while time.monotonic() < deadline and (a.programs is None or counts["programs"] < a.programs):
        last = first + per_process if per_process > 0 else None
        if per_process > 0:
            child = _in_child(lambda: _rounds(a, start_seed, first, last, deadline, counts["programs"]),
                              f"rounds of seeds {start_seed + first} to {start_seed + last - 1}", a.memory_gb)
        else:
            child = _rounds(a, start_seed, first, last, deadline, counts["programs"])
        counts["programs"] += child["programs"]
        counts["calls"] += child["calls"]
        failures += child["failures"]
        if per_process <= 0:
            break
        first = last
    print(f"fuzz_numpy: seed {start_seed}, {a.seconds:.0f} s: {counts['programs']} programs, {counts['calls']} calls, "
          f"{len(failures)} failures (NumPy {np.__version__})")
    return 1 if failures else 0


def _rounds(a, start_seed, first, last, deadline, programs_before):
    """Runs Hypothesis rounds first, first + 1, ... (to `last`, or the
    deadline, or --programs): {"programs", "calls", "failures"}."""
    counts = {"programs": 0, "calls": 0, "failures": []}

    def one(program):
        counts["programs"] += 1
        counts["calls"] += len(program["calls"])
        why = P.check(program, shapejit.jit)
        assert why is None, why

    round_ = first
    while (last is None or round_ < last) and time.monotonic() < deadline and (
            a.programs is None or programs_before + counts["programs"] < a.programs):
        found = {}

        @seed(start_seed + round_)
        @settings(max_examples=a.batch, deadline=None, database=None, print_blob=False,
                  suppress_health_check=list(HealthCheck), phases=[Phase.generate, Phase.shrink])
        @given(P.programs())
        def run(program):
            try:
                one(program)
            except AssertionError as e:
                found["program"], found["why"] = program, str(e)
                raise

        try:
            run()
        except AssertionError:
            program, why = found["program"], found["why"]
            counts["failures"].append(why)
            text = json.dumps(program, sort_keys=True)
            name = hashlib.sha256(text.encode()).hexdigest()[:12]
            print(f"FAILURE ({name}): {why}\n{P.source(program)}\n{json.dumps(program)}\n", flush=True)
            if not a.no_save:
                REGRESSIONS.mkdir(exist_ok=True)
                (REGRESSIONS / f"{name}.json").write_text(json.dumps({"why": why, "program": program}, indent=1, sort_keys=True) + "\n")
        round_ += 1
    return counts


def _in_child(work, what, memory_gb=0):
    """work() run in a forked child; its counts come back through a pipe. A
    child that dies before it answers is a failure that says how, naming
    `what` it ran. Its address space is bounded (`memory_gb`, but under a
    sanitizer, whose shadow memory is address space): a program whose
    NumPy needs more (a power of an object array of Python ints, another
    call's n = 2**64) meets NumPy's MemoryError, not the machine's OOM killer."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        sanitized = "asan" in os.environ.get("LD_PRELOAD", "") or "ASAN_OPTIONS" in os.environ
        if memory_gb > 0 and not sanitized:
            limit = int(memory_gb * (1 << 30))
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        status = 0
        try:
            out = json.dumps(work()).encode()
            with os.fdopen(w, "wb") as f:
                f.write(out)
        except BaseException:  # noqa: BLE001 - the parent reports it
            import traceback
            traceback.print_exc()
            status = 70
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if data:
        return json.loads(data)
    how = (f"signal {signal.Signals(os.WTERMSIG(status)).name}" if os.WIFSIGNALED(status)
           else f"exit status {os.WEXITSTATUS(status)}")
    why = f"CRASH: the child running the {what} ended with {how}"
    print(f"FAILURE: {why}", flush=True)
    return {"programs": 0, "calls": 0, "failures": [why]}


if __name__ == "__main__":
    sys.exit(main())
