"""Every failure the differential fuzzer (fuzz/fuzz_numpy.py) found, kept:
each program must now agree with NumPy on every call."""
import json
import pathlib
import sys

import pytest

import shapejit as sj

sys.path.insert(0, str(pathlib.Path(__file__).parent / "fuzz"))
import programs as P  # noqa: E402

CASES = sorted((pathlib.Path(__file__).parent / "fuzz" / "regressions").glob("*.json"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_a_program_the_fuzzer_found_agrees_with_numpy(path):
    case = json.loads(path.read_text())
    why = P.check(case["program"], sj.jit)
    assert why is None, f"{why}\n(found as: {case['why']})\n{P.source(case['program'])}"
