"""The differential fuzzer of the Python front end: random NumPy programs
(programs.py), each run by NumPy and by @shapejit.jit under a policy mode,
with arguments that change shape from call to call. Any difference in value,
dtype, shape, structure or exception type is a failure: Hypothesis shrinks
it to a small program, which is written to regressions/ (a JSON file that
tests/python/test_fuzz_regressions.py runs from then on) and printed.

    python tests/python/fuzz/fuzz_numpy.py --seconds 60 [--seed N] [--programs N] [--no-save] [--data-dependent] [--async]

Exit status 1 when a failure was found. The counts (programs, calls,
failures) are printed at the end.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
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
    a = ap.parse_args()
    P.DATA_DEPENDENT_STEPS = a.data_dependent
    P.ASYNC_COMPILE = a.async_
    start_seed = a.seed if a.seed is not None else int.from_bytes(os.urandom(4), "little")
    print(f"fuzz_numpy: seed {start_seed}", flush=True)  # before any program: a crash can be run again
    counts = {"programs": 0, "calls": 0}
    failures = []
    deadline = time.monotonic() + a.seconds

    def one(program):
        counts["programs"] += 1
        counts["calls"] += len(program["calls"])
        why = P.check(program, shapejit.jit)
        assert why is None, why

    round_ = 0
    while time.monotonic() < deadline and (a.programs is None or counts["programs"] < a.programs):
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
            failures.append(why)
            text = json.dumps(program, sort_keys=True)
            name = hashlib.sha256(text.encode()).hexdigest()[:12]
            print(f"FAILURE ({name}): {why}\n{P.source(program)}\n{json.dumps(program)}\n", flush=True)
            if not a.no_save:
                REGRESSIONS.mkdir(exist_ok=True)
                (REGRESSIONS / f"{name}.json").write_text(json.dumps({"why": why, "program": program}, indent=1, sort_keys=True) + "\n")
        round_ += 1
    print(f"fuzz_numpy: seed {start_seed}, {a.seconds:.0f} s: {counts['programs']} programs, {counts['calls']} calls, "
          f"{len(failures)} failures (NumPy {np.__version__})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
