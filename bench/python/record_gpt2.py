"""Records the graph of examples/gpt2_numpy.py traced whole, for compile_bench.

GPT-2-small's shapes (768 wide, 12 heads, vocab 50257, context 1024) at the
given layer counts, a prompt of 8 tokens; the weights are random (a trace
keeps shapes, not data). Writes bench/traces/gpt2_numpy_<n>layers.jsonl.

    PYTHONPATH=build/python build/venv/bin/python bench/python/record_gpt2.py 1 2 4 12
"""
import os
import sys

import numpy as np

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(root, "examples"))

import shapejit  # noqa: E402
import gpt2_numpy  # noqa: E402


def record(layers):
    path = os.path.join(root, "bench", "traces", f"gpt2_numpy_{layers}layers.jsonl")
    if os.path.exists(path):
        os.remove(path)
    params = gpt2_numpy.random_params(50257, 1024, 768, layers)
    config = {"compile": {"backend": "reference"}, "log": {"record": path}, "cache": {"disk": {"max_mb": 0}}}
    shapejit.jit(gpt2_numpy.forward, config=config)(np.arange(8), params, 12)
    print(path)


if __name__ == "__main__":
    for n in sys.argv[1:] or ["1", "2", "4", "12"]:
        record(int(n))
