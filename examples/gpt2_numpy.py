"""GPT-2 in plain NumPy, run by shapejit unchanged.

Written as NumPy users write a GPT-2: functions over a nested dict of
weights, attention split into heads with `np.split` and put together with
`np.hstack`, a causal mask from `np.tri`, layer norm with `np.var`,
positions taken with `wpe[range(len(ids))]`, and a greedy generation loop
whose ids grow by one token a call. shapejit is brought in by jitting the
forward function, nothing else:

    fast_forward = shapejit.jit(forward)

The sequence length stays a symbol (the mask and the positions made from
it are traced, not frozen), so the generation compiles once for the prompt
and once for the longer lengths, whatever their count. `main()` generates
with NumPy and with shapejit and compares the ids.

    python examples/gpt2_numpy.py --tokens 24
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

import shapejit


def gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x, p, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = np.var(x, axis=-1, keepdims=True)
    return p["g"] * (x - mu) / np.sqrt(var + eps) + p["b"]


def dense(x, p):
    return x @ p["w"] + p["b"]


def self_attention(x, p, n_head):
    n = x.shape[0]
    q, k, v = np.split(dense(x, p["qkv"]), 3, axis=-1)
    mask = (1 - np.tri(n, dtype=x.dtype)) * -1e10  # -1e10 above the diagonal
    heads = []
    for qh, kh, vh in zip(np.split(q, n_head, axis=-1), np.split(k, n_head, axis=-1), np.split(v, n_head, axis=-1)):
        scores = qh @ kh.T / np.sqrt(qh.shape[-1]) + mask
        heads.append(softmax(scores) @ vh)
    return dense(np.hstack(heads), p["proj"])


def block(x, p, n_head):
    x = x + self_attention(layer_norm(x, p["ln_1"]), p["attn"], n_head)
    return x + dense(gelu(dense(layer_norm(x, p["ln_2"]), p["fc"])), p["out"])


def forward(ids, params, n_head):
    """Logits of the last position, for a 1-d array of token ids."""
    x = params["wte"][ids] + params["wpe"][range(len(ids))]
    for p in params["blocks"]:
        x = block(x, p, n_head)
    x = layer_norm(x, params["ln_f"])
    return x[-1] @ params["wte"].T


def generate(ids, params, n_head, n_tokens, forward=forward):
    """Greedy decoding: the ids with n_tokens more, one forward pass each."""
    ids = np.asarray(ids)
    for _ in range(n_tokens):
        logits = forward(ids, params, n_head)
        ids = np.append(ids, np.argmax(logits))
    return ids


def random_params(n_vocab, n_ctx, n_embd, n_layer, seed=0):
    """Weights of GPT-2's shapes, drawn at random (GPT-2's init scale)."""
    rng = np.random.default_rng(seed)

    def normal(*shape):
        return (0.02 * rng.standard_normal(shape)).astype(np.float32)

    def norm():
        return {"g": np.ones(n_embd, np.float32), "b": np.zeros(n_embd, np.float32)}

    def lin(i, o):
        return {"w": normal(i, o), "b": np.zeros(o, np.float32)}

    blocks = [{"ln_1": norm(), "attn": {"qkv": lin(n_embd, 3 * n_embd), "proj": lin(n_embd, n_embd)},
               "ln_2": norm(), "fc": lin(n_embd, 4 * n_embd), "out": lin(4 * n_embd, n_embd)} for _ in range(n_layer)]
    return {"wte": normal(n_vocab, n_embd), "wpe": normal(n_ctx, n_embd), "blocks": blocks, "ln_f": norm()}


def timed_generation(prompt, params, n_head, n_tokens, fwd):
    """(ids, seconds per token)."""
    times = []

    def timed(ids, params, n_head):
        t = time.perf_counter()
        logits = fwd(ids, params, n_head)
        times.append(time.perf_counter() - t)
        return logits

    return generate(prompt, params, n_head, n_tokens, timed), times


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--ctx", type=int, default=1024)
    ap.add_argument("--embd", type=int, default=768)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--prompt", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=24)
    a = ap.parse_args(argv)
    params = random_params(a.vocab, a.ctx, a.embd, a.layers)
    prompt = np.random.default_rng(1).integers(0, a.vocab, a.prompt)

    fast_forward = shapejit.jit(forward)
    numpy_ids, numpy_times = timed_generation(prompt, params, a.heads, a.tokens, forward)
    jit_ids, jit_times = timed_generation(prompt, params, a.heads, a.tokens, fast_forward)
    stats = fast_forward.stats()

    warm = [t for i, t in enumerate(jit_times) if i >= 2]  # after the two compiles
    numpy_warm = numpy_times[2:]
    print(f"ids identical to NumPy's: {bool(np.array_equal(jit_ids, numpy_ids))} ({a.tokens} tokens)")
    print(f"compiles {stats['compiles']}, graph breaks {stats['graph_breaks']}, calls {stats['calls']}")
    print(f"whole generation: numpy {sum(numpy_times):.3f} s, shapejit {sum(jit_times):.3f} s (compiles included)")
    if warm:
        print(f"per token after warm-up (median): numpy {np.median(numpy_warm) * 1e3:.2f} ms, "
              f"shapejit {np.median(warm) * 1e3:.2f} ms")
    return jit_ids, numpy_ids, stats


if __name__ == "__main__":
    main()
