"""SHAPEJIT_PERF_MAP names generated code for perf (docs/llvm-codegen.md)."""
import os
import pathlib
import re
import subprocess
import sys

SCRIPT = """
import os, numpy as np, shapejit as sj
f = sj.jit(lambda x: np.exp(x) * 2 + x)
f(np.ones((3, 5), np.float32))
print(os.getpid())
"""


def run(tmp_path, **env):
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True,
                         env={**os.environ, "XDG_CACHE_HOME": str(tmp_path), **env}).stdout
    return pathlib.Path(f"/tmp/perf-{out.split()[-1]}.map")


def test_each_linked_step_is_named_in_the_perf_map(tmp_path):
    for cold in (True, False):  # compiled, then loaded from the disk tier
        path = run(tmp_path, SHAPEJIT_PERF_MAP="1")
        try:
            lines = path.read_text().splitlines()
        finally:
            path.unlink(missing_ok=True)
        assert lines, "cold" if cold else "from the disk tier"
        for line in lines:
            start, size, name = line.split(" ", 2)
            assert int(start, 16) > 0 and int(size, 16) > 0, line
            assert re.fullmatch(r"shapejit node \d+ \(\w+ -> '\w+'\)", name), line


def test_no_map_without_the_variable(tmp_path):
    path = run(tmp_path)
    assert not path.exists()
    path = run(tmp_path, SHAPEJIT_PERF_MAP="0")
    assert not path.exists()
