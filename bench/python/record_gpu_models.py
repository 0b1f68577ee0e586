"""Records the graphs that bench/cuda_models_bench.cpp runs on the GPU (for
bench/peers/gpu_transformer_peers.py): the decoder block of
examples/decoder_serving.py as a decode step (graph 0) and as a prefill
(graph 1), into bench/traces/gpu_decoder.jsonl; the MiniLM-size encoder of
examples/encoder.py, into bench/traces/gpu_encoder.jsonl. A trace keeps the
graphs and the shapes, not the data (the weights are random here).

    PYTHONPATH=build/python build/venv/bin/python bench/python/record_gpu_models.py
"""
import os
import sys

import numpy as np

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(root, "examples"))

import shapejit  # noqa: E402
import decoder_serving as S  # noqa: E402
import encoder as E  # noqa: E402


def recorder(fn, name):
    path = os.path.join(root, "bench", "traces", name)
    if os.path.exists(path):
        os.remove(path)
    config = {"compile": {"backend": "reference"}, "log": {"record": path}, "cache": {"disk": {"max_mb": 0}}}
    print(path)
    return shapejit.jit(fn, config=config)


def main():
    w = S.weights()["layers"][0]
    weights = [w[n] for n in ("norm1", "w_qkv", "w_o", "norm2", "w_up", "w_down")]
    block = recorder(S.block, "gpu_decoder.jsonl")
    for t, p in ((1, 8), (8, 0)):  # a decode step, then a prefill
        x = np.zeros((1, t, S.D), np.float32)
        cache = np.zeros((1, S.HEADS, p, S.HEAD_DIM), np.float32)
        block(x, cache, cache, *weights)
    encode = recorder(E.encoder(E.random_params()), "gpu_encoder.jsonl")
    encode(np.full((2, 8), 7, np.int64), np.ones((2, 8), np.int64))


if __name__ == "__main__":
    main()
