"""A small RWKV-style recurrent language model, stepping one int token at a
time with its state updated in place."""
import numpy as np


def layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def init(vocab=64, d=32, layers=2, seed=0):
    rng = np.random.default_rng(seed)
    p = {"emb": rng.standard_normal((vocab, d)).astype(np.float32) * 0.1,
         "head": rng.standard_normal((d, vocab)).astype(np.float32) * 0.1,
         "ln_out": (np.ones(d, np.float32), np.zeros(d, np.float32)), "blocks": []}
    for _ in range(layers):
        p["blocks"].append({
            "ln1": (np.ones(d, np.float32), np.zeros(d, np.float32)),
            "ln2": (np.ones(d, np.float32), np.zeros(d, np.float32)),
            "decay": -np.exp(rng.standard_normal(d).astype(np.float32)),
            "bonus": rng.standard_normal(d).astype(np.float32),
            "mix_k": rng.random(d).astype(np.float32), "mix_v": rng.random(d).astype(np.float32),
            "mix_r": rng.random(d).astype(np.float32),
            "Wk": rng.standard_normal((d, d)).astype(np.float32) * 0.1,
            "Wv": rng.standard_normal((d, d)).astype(np.float32) * 0.1,
            "Wr": rng.standard_normal((d, d)).astype(np.float32) * 0.1,
            "Wo": rng.standard_normal((d, d)).astype(np.float32) * 0.1,
            "Wff": rng.standard_normal((4 * d, d)).astype(np.float32) * 0.1,
            "Wff2": rng.standard_normal((d, 4 * d)).astype(np.float32) * 0.1,
        })
    return p


def init_state(p):
    d = p["emb"].shape[1]
    return np.zeros((len(p["blocks"]), 5, d), np.float32)


def model(p, token, state):
    x = p["emb"][token]
    for i, b in enumerate(p["blocks"]):
        h = layer_norm(x, *b["ln1"])
        last = state[i, 0]
        k = (h * b["mix_k"] + last * (1 - b["mix_k"])) @ b["Wk"].mT
        v = (h * b["mix_v"] + last * (1 - b["mix_v"])) @ b["Wv"].mT
        r = sigmoid((h * b["mix_r"] + last * (1 - b["mix_r"])) @ b["Wr"].mT)
        state[i, 0] = h
        num, den, big = state[i, 1], state[i, 2], state[i, 3]
        ww = b["bonus"] + k
        q = np.maximum(big, ww)
        e1, e2 = np.exp(big - q), np.exp(ww - q)
        wkv = (e1 * num + e2 * v) / (e1 * den + e2)
        ww = big + b["decay"]
        q = np.maximum(ww, k)
        e1, e2 = np.exp(ww - q), np.exp(k - q)
        state[i, 1] = e1 * num + e2 * v
        state[i, 2] = e1 * den + e2
        state[i, 3] = q
        x = x + (r * wkv) @ b["Wo"].mT
        h = layer_norm(x, *b["ln2"])
        state[i, 4] = h
        x = x + b["Wff2"] @ np.square(np.maximum(b["Wff"] @ h, 0))
    x = layer_norm(x, *p["ln_out"])
    return x @ p["head"]


def generate(p, prompt, n):
    state = init_state(p)
    out = list(prompt)
    for t in prompt[:-1]:
        model(p, t, state)
    tok = prompt[-1]
    for _ in range(n):
        logits = model(p, tok, state)
        tok = int(np.argmax(logits))
        out.append(tok)
    return out
