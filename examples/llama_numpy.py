"""A LLaMA-style model in plain NumPy, run by shapejit unchanged.

The model is written the way NumPy users write one: classes whose
`__call__` reads weights from attributes, rotary embeddings from cos and
sin tables, grouped-query attention with `np.repeat`, a key/value cache per
layer written in place (`self.cache_k[:B, start_pos:start_pos + L] = xk`),
and a position `start_pos` passed as a Python int that grows every step.
shapejit is brought in the way a newcomer would, by jitting the model's
`__call__`; nothing in the model is written for it:

    class JitLlama(Llama):
        __call__ = shapejit.jit(Llama.__call__)

The cache writes are traced as updates and written back when a call
returns, and `start_pos` is a size of the site, so the whole generation
compiles twice (the prompt, then every later step) and every step runs as
one compiled call. `main()` generates with both and compares the ids.

    python examples/llama_numpy.py --tokens 40 [--pytorch-layout]

With --pytorch-layout the matrices are held as a PyTorch checkpoint holds
them, [out, in], and the model takes their transposes at load time
(`w.T`, views), as NumPy ports of PyTorch models do.
"""
from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass

import numpy as np

import shapejit


@dataclass
class ModelArgs:
    dim: int = 288
    n_layers: int = 6
    n_heads: int = 6
    n_kv_heads: int = 2
    vocab_size: int = 4096
    hidden_dim: int = 768
    max_seq_len: int = 256
    max_batch_size: int = 1
    norm_eps: float = 1e-5


def softmax(x):
    exp_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return exp_x / np.sum(exp_x, axis=-1, keepdims=True)


def silu(x):
    return x * (1 / (1 + np.exp(-x)))


def compute_cos_sin_cache(head_dim, max_seq_len, base=10000):
    inv_freq = 1.0 / (base ** (np.arange(0, head_dim, 2)[: (head_dim // 2)] / head_dim))
    t = np.arange(max_seq_len)
    freqs = np.outer(t, inv_freq)
    return np.cos(freqs).astype(np.float32), np.sin(freqs).astype(np.float32)


def apply_rotary_emb(xq, xk, freqs_cos, freqs_sin):
    # [B, L, H, D] -> pairs of (real, imaginary) in the last dim
    xqri = xq.reshape(xq.shape[:-1] + (-1, 2))
    xkri = xk.reshape(xk.shape[:-1] + (-1, 2))
    xq_r, xq_i = np.split(xqri, 2, axis=-1)
    xq_r, xq_i = xq_r.squeeze(-1), xq_i.squeeze(-1)
    xk_r, xk_i = np.split(xkri, 2, axis=-1)
    xk_r, xk_i = xk_r.squeeze(-1), xk_i.squeeze(-1)

    freqs_cos = np.expand_dims(freqs_cos, axis=(0, 2))
    freqs_sin = np.expand_dims(freqs_sin, axis=(0, 2))

    xq_out_r = xq_r * freqs_cos - xq_i * freqs_sin
    xq_out_i = xq_r * freqs_sin + xq_i * freqs_cos
    xk_out_r = xk_r * freqs_cos - xk_i * freqs_sin
    xk_out_i = xk_r * freqs_sin + xk_i * freqs_cos

    xq_out = np.stack([xq_out_r, xq_out_i], axis=-1)
    xk_out = np.stack([xk_out_r, xk_out_i], axis=-1)
    return xq_out.reshape(xq_out.shape[:-2] + (-1,)), xk_out.reshape(xk_out.shape[:-2] + (-1,))


def repeat_kv(x, n_rep):
    if n_rep == 1:
        return x
    return np.repeat(x, n_rep, axis=2)


class FeedForward:
    def __init__(self, up_weight, gate_weight, down_weight):
        self.up_weight = up_weight
        self.gate_weight = gate_weight
        self.down_weight = down_weight

    def __call__(self, x):
        swish = silu(x @ self.gate_weight)
        x_V = x @ self.up_weight
        return (swish * x_V) @ self.down_weight


class RMSNorm:
    def __init__(self, weight, eps):
        self.weight = weight
        self.eps = eps

    def __call__(self, x):
        z = (x ** 2).mean(-1, keepdims=True) + self.eps
        return x / np.sqrt(z) * self.weight


class Attention:
    def __init__(self, q_weight, k_weight, v_weight, o_weight, args: ModelArgs):
        self.n_kv_heads = args.n_kv_heads
        self.n_local_heads = args.n_heads
        self.n_rep = args.n_heads // args.n_kv_heads
        self.head_dim = args.dim // args.n_heads
        self.q_weight, self.k_weight, self.v_weight, self.o_weight = q_weight, k_weight, v_weight, o_weight
        shape = (args.max_batch_size, args.max_seq_len, self.n_kv_heads, self.head_dim)
        self.cache_k = np.zeros(shape, np.float32)
        self.cache_v = np.zeros(shape, np.float32)

    def __call__(self, x, start_pos, mask, freqs_cos, freqs_sin):
        B, L, _ = x.shape
        xq = (x @ self.q_weight).reshape(B, L, self.n_local_heads, self.head_dim)
        xk = (x @ self.k_weight).reshape(B, L, self.n_kv_heads, self.head_dim)
        xv = (x @ self.v_weight).reshape(B, L, self.n_kv_heads, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cos, freqs_sin)

        self.cache_k[:B, start_pos:start_pos + L] = xk
        self.cache_v[:B, start_pos:start_pos + L] = xv
        ks = self.cache_k[:B, :start_pos + L]
        vs = self.cache_v[:B, :start_pos + L]

        xk = repeat_kv(ks, self.n_rep).transpose(0, 2, 1, 3)
        xv = repeat_kv(vs, self.n_rep).transpose(0, 2, 1, 3)
        xq = xq.transpose(0, 2, 1, 3)

        attention = xq @ xk.transpose(0, 1, 3, 2) / math.sqrt(self.head_dim)
        if mask is not None:
            attention = attention + mask[None, None, :, :]
        attention = softmax(attention)
        output = (attention @ xv).transpose(0, 2, 1, 3).reshape(B, L, -1)
        return output @ self.o_weight


class TransformerBlock:
    def __init__(self, weights: dict, layer_id: int, args: ModelArgs):
        def w(name):
            return weights[f"layers.{layer_id}.{name}"]
        self.attention = Attention(w("attention.wq"), w("attention.wk"), w("attention.wv"), w("attention.wo"), args)
        self.feed_forward = FeedForward(w("feed_forward.w3"), w("feed_forward.w1"), w("feed_forward.w2"))
        self.input_layernorm = RMSNorm(w("attention_norm"), eps=args.norm_eps)
        self.post_attention_layernorm = RMSNorm(w("ffn_norm"), eps=args.norm_eps)

    def __call__(self, x, start_pos, mask, freqs_cos, freqs_sin):
        h = x + self.attention(self.input_layernorm(x), start_pos, mask, freqs_cos, freqs_sin)
        return h + self.feed_forward(self.post_attention_layernorm(h))


class Llama:
    def __init__(self, weights: dict, args: ModelArgs):
        self.args = args
        self.tok_embedding = weights["tok_embeddings"]
        self.freqs_cos, self.freqs_sin = compute_cos_sin_cache(args.dim // args.n_heads, args.max_seq_len)
        self.layers = [TransformerBlock(weights, i, args) for i in range(args.n_layers)]
        self.norm = RMSNorm(weights["norm"], eps=args.norm_eps)
        self.lm_head_weight = weights["output"]

    def __call__(self, input_ids, start_pos):
        _, L = input_ids.shape
        h = self.tok_embedding[input_ids]
        freqs_cos = self.freqs_cos[start_pos:start_pos + L]
        freqs_sin = self.freqs_sin[start_pos:start_pos + L]

        mask = None
        if L > 1:
            mask = np.full((L, L), float("-inf"))
            mask = np.triu(mask, k=1)
            mask = np.concatenate([np.zeros((L, start_pos)), mask], axis=1)

        for layer in self.layers:
            h = layer(h, start_pos, mask, freqs_cos, freqs_sin)
        h = self.norm(h)
        return h[:, [-1], :] @ self.lm_head_weight

    def generate(self, input_ids, max_new_tokens):
        _, L = input_ids.shape
        next_id = None
        for i, curr_pos in enumerate(range(L, L + max_new_tokens)):
            if i == 0:
                inputs, pos = input_ids, 0
            else:
                inputs, pos = next_id, curr_pos - 1
            logits = self(inputs, pos)
            next_id = logits[:, -1, :].argmax(-1, keepdims=True)
            yield next_id


class JitLlama(Llama):
    __call__ = shapejit.jit(Llama.__call__)


def random_weights(args: ModelArgs, seed=0):
    """Weights of the shapes a checkpoint has, drawn at random (scaled so
    activations stay in range)."""
    rng = np.random.default_rng(seed)
    head_dim = args.dim // args.n_heads

    def normal(*shape):
        return (rng.standard_normal(shape) / math.sqrt(shape[0])).astype(np.float32)

    w = {"tok_embeddings": normal(args.vocab_size, args.dim), "norm": np.ones(args.dim, np.float32),
         "output": normal(args.dim, args.vocab_size)}
    for i in range(args.n_layers):
        p = f"layers.{i}."
        w[p + "attention.wq"] = normal(args.dim, args.n_heads * head_dim)
        w[p + "attention.wk"] = normal(args.dim, args.n_kv_heads * head_dim)
        w[p + "attention.wv"] = normal(args.dim, args.n_kv_heads * head_dim)
        w[p + "attention.wo"] = normal(args.n_heads * head_dim, args.dim)
        w[p + "feed_forward.w1"] = normal(args.dim, args.hidden_dim)
        w[p + "feed_forward.w3"] = normal(args.dim, args.hidden_dim)
        w[p + "feed_forward.w2"] = normal(args.hidden_dim, args.dim)
        w[p + "attention_norm"] = np.ones(args.dim, np.float32)
        w[p + "ffn_norm"] = np.ones(args.dim, np.float32)
    return w


def generate_timed(model, prompt, tokens):
    """(ids, seconds for each step)."""
    ids, times = [], []
    t = time.perf_counter()
    for next_id in model.generate(prompt, tokens):
        now = time.perf_counter()
        ids.append(int(next_id[0, 0]))
        times.append(now - t)
        t = now
    return ids, times


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dim", type=int, default=288)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--heads", type=int, default=6)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--vocab", type=int, default=4096)
    p.add_argument("--max-seq", type=int, default=256)
    p.add_argument("--prompt", type=int, default=8, help="prompt length")
    p.add_argument("--tokens", type=int, default=40, help="tokens to generate")
    p.add_argument("--pytorch-layout", action="store_true", help="matrices held [out, in], multiplied by their .T views")
    a = p.parse_args(argv)
    args = ModelArgs(dim=a.dim, n_layers=a.layers, n_heads=a.heads, n_kv_heads=a.kv_heads, vocab_size=a.vocab,
                     hidden_dim=a.hidden, max_seq_len=a.max_seq)
    weights = random_weights(args)
    if a.pytorch_layout:
        weights = {k: (np.ascontiguousarray(w.T).T if w.ndim == 2 and k != "tok_embeddings" else w) for k, w in weights.items()}
    prompt = np.random.default_rng(1).integers(0, args.vocab_size, (1, a.prompt))

    numpy_ids, numpy_times = generate_timed(Llama(weights, args), prompt, a.tokens)
    jit_ids, jit_times = generate_timed(JitLlama(weights, args), prompt, a.tokens)
    stats = JitLlama.__call__.stats()

    warm = slice(min(len(jit_times), 5), None)  # after the compiles
    per_token = {"numpy": float(np.median(numpy_times[warm])) if numpy_times[warm] else float("nan"),
                 "shapejit": float(np.median(jit_times[warm])) if jit_times[warm] else float("nan")}
    print(f"ids identical to NumPy's: {jit_ids == numpy_ids} ({len(jit_ids)} tokens)")
    print(f"compiles {stats['compiles']}, graph breaks {stats['graph_breaks']}, calls {stats['calls']}")
    print(f"whole generation: numpy {sum(numpy_times):.3f} s, shapejit {sum(jit_times):.3f} s (compiles included)")
    print(f"per token after warm-up (median): numpy {per_token['numpy'] * 1e3:.2f} ms, "
          f"shapejit {per_token['shapejit'] * 1e3:.2f} ms, ratio {per_token['shapejit'] / per_token['numpy']:.2f}")
    return jit_ids, numpy_ids, stats, per_token


if __name__ == "__main__":
    main()
