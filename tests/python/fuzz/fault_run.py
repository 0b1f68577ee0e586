"""The fault-injection run: each stage of a call made to fail in turn
(SHAPEJIT_FAULTS, core/support/faults.h), and every program still gives
NumPy's answer. Per stage, in a process of its own (the stages are read
once): the realistic programs (test_programs.py, what they compiled not
checked), every program the differential fuzzer ever found
(test_fuzz_regressions.py), and a run of fresh fuzzer programs from a seed.
Prints a line per stage; exit status 1 when any differs or fails.

    python tests/python/fuzz/fault_run.py [--programs 300] [--seed 11] [--stages trace,numpy,...]

A stage at rate 1 fails at every chance; the mixed runs, at half of them,
leave calls partly compiled (a segment here, a kernel there), which are the
paths between the stages.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
STAGES = ("trace", "numpy", "symbolic", "lower", "compile", "compile,fallback", "load", "run",
          "trace:0.005,numpy:0.2,symbolic:0.05,compile:0.5,run:0.2", "lower:0.5,fallback:0.5,load:0.5,run:0.5")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=300, help="fresh fuzzer programs per stage")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--stages", default=None, help="';'-separated SHAPEJIT_FAULTS values (default: each stage, then two mixes)")
    a = ap.parse_args()
    stages = a.stages.split(";") if a.stages else STAGES
    failed = []
    for stage in stages:
        env = dict(os.environ, SHAPEJIT_FAULTS=stage, SHAPEJIT_FAULT_SEED=str(a.seed),
                   XDG_CACHE_HOME=tempfile.mkdtemp(prefix="shapejit-faults-"))
        t0 = time.monotonic()
        tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_programs.py",
                                "test_fuzz_regressions.py"], cwd=HERE.parent, env=env, capture_output=True, text=True)
        fuzz = subprocess.run([sys.executable, str(HERE / "fuzz_numpy.py"), "--seconds", "600", "--programs", str(a.programs),
                               "--seed", str(a.seed), "--no-save"], cwd=HERE.parent, env=env, capture_output=True, text=True)
        summary = (tests.stdout.strip().splitlines() or ["(no output)"])[-1]
        counts = (fuzz.stdout.strip().splitlines() or ["(no output)"])[-1]
        ok = tests.returncode == 0 and fuzz.returncode == 0
        print(f"{'ok  ' if ok else 'FAIL'} SHAPEJIT_FAULTS={stage}: tests: {summary}; fuzzer: {counts} "
              f"({time.monotonic() - t0:.0f} s)", flush=True)
        if not ok:
            failed.append(stage)
            print(tests.stdout[-4000:], tests.stderr[-2000:], fuzz.stdout[-4000:], fuzz.stderr[-2000:], sep="\n", flush=True)
    print(f"fault_run: {len(stages) - len(failed)} of {len(stages)} fault settings gave NumPy's answers everywhere")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
