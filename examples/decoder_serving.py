#!/usr/bin/env python3
"""The decoder serving loop of bench/workloads/decoder.py, as Python code.

Three jitted functions per forward pass, as the trace generator's sites:
embed (token ids -> hidden states), block (one transformer layer with its
key/value cache, called once per layer: the same function and weights' shapes,
so every layer hits the first one's entry), head (the next token, greedy).
The loop replays requests of the Azure LLM inference trace: a prefill over
each request's context tokens, then one decode step per generated token, the
cache one position longer each step. The batch, the new positions and the
cache length are symbolic; the block branches on `t == 1` (a decode step),
which guards that predicate only.

    python examples/decoder_serving.py [--requests 20] [--max-decode 16] [--check]
"""
from __future__ import annotations

import argparse
import csv
import pathlib
import time

import numpy as np

import shapejit as sj

D, HEADS, HEAD_DIM, FFN, VOCAB, LAYERS = 64, 4, 16, 256, 512, 2
ROOT = pathlib.Path(__file__).resolve().parent.parent
TRACE = ROOT / "bench/workloads/azure-llm-2023/AzureLLMInferenceTrace_conv.csv"


def weights(seed=0):
    rng = np.random.default_rng(seed)

    def w(*shape, scale=0.08):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    return {"table": w(VOCAB, D, scale=1.0), "norm": 1 + w(D), "vocab": w(D, VOCAB),
            "layers": [{"norm1": 1 + w(D), "w_qkv": w(D, 3 * D), "w_o": w(D, D), "norm2": 1 + w(D),
                        "w_up": w(D, FFN), "w_down": w(FFN, D)} for _ in range(LAYERS)]}


def embed(ids, table):
    return sj.embedding(table, ids)


def block(x, k_cache, v_cache, norm1, w_qkv, w_o, norm2, w_up, w_down):
    b, t, _ = x.shape
    p = k_cache.shape[2]
    decode = t == 1  # the serving loop's own branch: a decode step (guards the predicate)
    qkv = sj.rms_norm(x, norm1) @ w_qkv

    def heads(lo):
        return qkv[:, :, lo:lo + D].reshape(b, t, HEADS, HEAD_DIM).swapaxes(1, 2)

    q = heads(0)
    k = sj.concatenate([k_cache, heads(D)], axis=2)
    v = sj.concatenate([v_cache, heads(2 * D)], axis=2)
    scores = q @ k.swapaxes(-1, -2) * HEAD_DIM ** -0.5
    if not decode:  # a decode step sees the whole cache; a prefill masks the future
        visible = sj.arange(p + t)[None, :] <= sj.arange(p, p + t)[:, None]
        scores = sj.where(visible, scores, -1e30)
    attn = (sj.softmax(scores, axis=-1) @ v).swapaxes(1, 2).reshape(b, t, D)
    h = x + attn @ w_o
    return h + sj.silu(sj.rms_norm(h, norm2) @ w_up) @ w_down, k, v


def head(x, norm, w_vocab):
    return (sj.rms_norm(x[:, -1:], norm) @ w_vocab).argmax(axis=-1)


class Server:
    """One request at a time: prefill, then decode steps with a growing cache."""

    def __init__(self, jit=True, config=None):
        wrap = (lambda f: sj.jit(f, config=config)) if jit else (lambda f: f)
        self.embed, self.block, self.head = wrap(embed), wrap(block), wrap(head)
        self.w = weights()

    def generate(self, prompt, steps):
        w = self.w
        caches = [(np.zeros((1, HEADS, 0, HEAD_DIM), np.float32),) * 2 for _ in range(LAYERS)]
        ids, out = prompt[None, :], []
        for _ in range(steps):
            x = self.embed(ids, w["table"])
            for i, L in enumerate(w["layers"]):
                x, k, v = self.block(x, *caches[i], L["norm1"], L["w_qkv"], L["w_o"], L["norm2"], L["w_up"], L["w_down"])
                caches[i] = (k, v)
            token = np.asarray(self.head(x, w["norm"], w["vocab"])).reshape(1, 1)
            out.append(int(token[0, 0]))
            ids = token.astype(np.int64)
        return out


def requests(path, n):
    with open(path, newline="") as f:
        rows = csv.DictReader(f)
        return [(int(r["ContextTokens"]), int(r["GeneratedTokens"])) for r, _ in zip(rows, range(n))]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", default=str(TRACE))
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--max-decode", type=int, default=16, help="at most K decode steps per request")
    ap.add_argument("--max-context", type=int, default=None, help="cut prompts to N tokens (small runs)")
    ap.add_argument("--check", action="store_true", help="generate the same tokens with NumPy and compare")
    args = ap.parse_args(argv)

    server = Server()
    reference = Server(jit=False) if args.check else None
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    tokens = mismatches = 0
    for context, generated in requests(args.csv, args.requests):
        if args.max_context:
            context = min(context, args.max_context)
        prompt = rng.integers(0, VOCAB, context).astype(np.int64)
        steps = min(generated, args.max_decode + 1)
        out = server.generate(prompt, steps)
        tokens += len(out)
        if reference is not None:
            mismatches += out != reference.generate(prompt, steps)
    elapsed = time.perf_counter() - t0
    print(f"{args.requests} requests, {tokens} tokens in {elapsed:.2f} s" + (f" ({mismatches} differ from NumPy)" if reference else ""))
    for name in ("embed", "block", "head"):
        s = getattr(server, name).stats()
        print(f"  {name:5}: {s['calls']:6} calls, {s['compiles']} compiles, {s['traces']} traces, {s['hits']} hits, "
              f"recompiles {s['recompile_reasons'] or 0}")
    return server, mismatches


if __name__ == "__main__":
    main()
