#!/usr/bin/env python3
"""The MiniLM-size encoder of examples/encoder.py beside the same model
written the way a port from a PyTorch module writes it, both jitted, both
against NumPy running the PyTorch spelling.

The PyTorch spelling: linear weights held [out, in] and applied as
`x @ W.T + b`; the attention scale divided after the `q @ k^T` product; the
additive mask `(1 - mask) * finfo(float32).min` reshaped to [b, 1, 1, t];
softmax written out (exp of the max-subtracted scores over their sum);
layer norm written out (mean, variance, sqrt); GELU by its tanh formula
(NumPy has no erf); mean pooling over the mask, L2 normalization. The
example's spelling uses shapejit's softmax, layer_norm and gelu and weights
held [in, out]. Weights random and frozen in both. One sentence of 16 and
48 tokens and a batch of 8 x 64, interleaved rounds; prints the minimum and
median ms per call and the PyTorch spelling over the example's. Not run by
CI:

    PYTHONPATH=build/python OPENBLAS_NUM_THREADS=1 taskset -c 1 python bench/python/encoder_spellings.py [--rounds 5] [--calls 5]
"""
import argparse
import math
import pathlib
import statistics
import sys
import time

import numpy as np

import shapejit as sj

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))
import encoder as example  # noqa: E402


def torch_params(p):
    """The example's weights as a PyTorch module holds them: linear ones [out, in]."""
    out = {k: v for k, v in p.items() if k != "layers"}
    out["layers"] = [{k: (np.ascontiguousarray(v.T) if k.startswith("w") else v) for k, v in L.items()} for L in p["layers"]]
    return out


def torch_spelled(p, heads=example.HEADS, eps=1e-12):
    def layer_norm(x, q):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * q["w"] + q["b"]

    def linear(x, w, b):
        return x @ w.T + b

    def gelu(x):
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))

    def encode(ids, mask):
        b, t = ids.shape
        h = layer_norm(p["word"][ids] + p["pos"][np.arange(t)] + p["type"][ids * 0], p["ln"])
        hidden = h.shape[-1]
        hd = hidden // heads
        extended = (1.0 - mask[:, None, None, :].astype(np.float32)) * np.finfo(np.float32).min

        def split(x):
            return x.reshape(b, t, heads, hd).transpose(0, 2, 1, 3)

        for L in p["layers"]:
            q, k, v = (split(linear(h, L["w" + n], L["b" + n])) for n in "qkv")
            s = (q @ k.transpose(0, 1, 3, 2)) / math.sqrt(hd) + extended
            e = np.exp(s - s.max(-1, keepdims=True))
            a = ((e / e.sum(-1, keepdims=True)) @ v).transpose(0, 2, 1, 3).reshape(b, t, hidden)
            h = layer_norm(h + linear(a, L["wo"], L["bo"]), L["ln1"])
            h = layer_norm(h + linear(gelu(linear(h, L["w1"], L["b1"])), L["w2"], L["b2"]), L["ln2"])
        m = mask.astype(np.float32)[:, :, None]
        pooled = (h * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        return pooled / np.maximum(np.sqrt((pooled * pooled).sum(-1, keepdims=True)), 1e-12)

    return encode


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=5)
    a = ap.parse_args()
    p = example.random_params()
    tp = torch_params(p)
    sj.freeze([p, tp])
    ways = {"example": sj.jit(example.encoder(p)), "pytorch spelling": sj.jit(torch_spelled(tp)), "numpy": torch_spelled(tp)}
    print(f"{'shape':>8} " + " ".join(f"{w + ' ms':>20}" for w in ways) + "   pytorch spelling / example (min, median)")
    for b, n in [(1, 16), (1, 48), (8, 64)]:
        ids, mask = example.tokenize(example.sentences(b, seed=n, lo=n - 2, hi=n - 1))
        want = ways["numpy"](ids, mask)
        for w, f in ways.items():
            np.testing.assert_allclose(f(ids, mask), want, atol=2e-3 if w == "example" else 1e-5)  # the example's GELU is erf's
        times = {w: [] for w in ways}
        for _ in range(a.rounds):
            for w, f in ways.items():
                f(ids, mask)
                t = time.perf_counter()
                for _ in range(a.calls):
                    f(ids, mask)
                times[w].append((time.perf_counter() - t) / a.calls * 1e3)
        cells = " ".join(f"{min(v):9.2f} / {statistics.median(v):7.2f}" for v in times.values())
        ratio = (min(times["pytorch spelling"]) / min(times["example"]), statistics.median(times["pytorch spelling"]) / statistics.median(times["example"]))
        print(f"{b:>3} x {ids.shape[1]:<3} {cells}   {ratio[0]:.2f}, {ratio[1]:.2f}")


if __name__ == "__main__":
    main()
