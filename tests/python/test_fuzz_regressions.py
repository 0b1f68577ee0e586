"""Every failure the differential fuzzer (fuzz/fuzz_numpy.py) found, kept:
each program must now agree with NumPy on every call. A case marked "open"
is a difference not fixed yet: it must still fail (a strict xfail), so that
its fix is noticed and the mark removed."""
import json
import pathlib
import sys

import pytest

import shapejit as sj

sys.path.insert(0, str(pathlib.Path(__file__).parent / "fuzz"))
import programs as P  # noqa: E402


def _cases():
    for path in sorted((pathlib.Path(__file__).parent / "fuzz" / "regressions").glob("*.json")):
        case = json.loads(path.read_text())
        marks = [pytest.mark.xfail(strict=True, reason=case["open"])] if "open" in case else []
        yield pytest.param(case, id=path.stem, marks=marks)


@pytest.mark.parametrize("case", list(_cases()))
def test_a_program_the_fuzzer_found_agrees_with_numpy(case):
    why = P.check(case["program"], sj.jit)
    assert why is None, f"{why}\n(found as: {case['why']})\n{P.source(case['program'])}"
