#!/usr/bin/env python3
"""The MiniLM-sized encoder of examples/encoder.py: what a new shape costs
(trace and compile), and the per-batch latency of shapejit beside NumPy eager
(the same function, called without shapejit.jit) and PyTorch eager (the same
model written in torch, on the same weights) when torch is installed.

Batches of 16 sentences, the i-th batch of 3 to 8 + 5i words (sequence lengths 9 to about 70).
Latencies are interleaved rounds (shapejit, NumPy, torch on the same batch,
then the next batch), reported as min and median per batch; every framework
runs on the cores this process may use (taskset), torch with as many threads.

Not run by CI:

    PYTHONPATH=build/python python bench/peers/python_encoder.py [--batches 12] [--rounds 3]
"""
import argparse
import os
import pathlib
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))
import encoder as E  # noqa: E402

import shapejit as sj  # noqa: E402


def torch_model(p, heads=E.HEADS, eps=1e-12):
    import torch
    import torch.nn.functional as F
    T = lambda a: torch.from_numpy(np.ascontiguousarray(a))  # noqa: E731
    word, pos, typ = T(p["word"]), T(p["pos"]), T(p["type"])
    layers = [{k: ({"w": T(v["w"]), "b": T(v["b"])} if isinstance(v, dict) else T(v)) for k, v in L.items()} for L in p["layers"]]
    ln0 = {"w": T(p["ln"]["w"]), "b": T(p["ln"]["b"])}

    @torch.inference_mode()
    def encode(ids, mask):
        ids, mask = torch.from_numpy(ids), torch.from_numpy(mask)
        b, t = ids.shape
        h = word[ids] + pos[:t] + typ[0]
        hidden = h.shape[-1]
        h = F.layer_norm(h, (hidden,), ln0["w"], ln0["b"], eps)
        d = hidden // heads
        bias = (mask.float() - 1.0)[:, None, None, :] * 1e9
        for L in layers:
            q = (h @ L["wq"] + L["bq"]).view(b, t, heads, d).transpose(1, 2)
            k = (h @ L["wk"] + L["bk"]).view(b, t, heads, d).transpose(1, 2)
            v = (h @ L["wv"] + L["bv"]).view(b, t, heads, d).transpose(1, 2)
            a = (torch.softmax(q @ k.transpose(-1, -2) / d ** 0.5 + bias, -1) @ v).transpose(1, 2).reshape(b, t, hidden)
            h = F.layer_norm(h + a @ L["wo"] + L["bo"], (hidden,), L["ln1"]["w"], L["ln1"]["b"], eps)
            f = F.gelu(h @ L["w1"] + L["b1"]) @ L["w2"] + L["b2"]
            h = F.layer_norm(h + f, (hidden,), L["ln2"]["w"], L["ln2"]["b"], eps)
        m = mask.float()[:, :, None]
        pooled = (h * m).sum(1) / m.sum(1).clamp_min(1e-9)
        return F.normalize(pooled, dim=-1).numpy()

    return encode


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=12)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    cores = len(os.sched_getaffinity(0))
    p = E.random_params()
    model = E.encoder(p)
    runners = {"shapejit": sj.jit(model), "NumPy eager": model}
    try:
        import torch
        torch.set_num_threads(cores)
        runners["PyTorch eager"] = torch_model(p)
    except ImportError:
        pass
    batches = [E.tokenize(E.sentences(args.batch_size, seed=i, hi=8 + 5 * i)) for i in range(args.batches)]

    # What each new shape costs: the first call of each (b, t) not seen before.
    enc = runners["shapejit"]
    print(f"{cores} cores; batches of {args.batch_size}, lengths {sorted({ids.shape[1] for ids, _ in batches})}")
    print("new shapes (shapejit): first call, of which trace and compile")
    seen = set()
    for ids, mask in batches:
        if ids.shape in seen:
            continue
        seen.add(ids.shape)
        s0 = enc.stats()
        t0 = time.perf_counter()
        enc(ids, mask)
        ms = (time.perf_counter() - t0) * 1e3
        s1 = enc.stats()
        print(f"  {str(ids.shape):10} {ms:9.1f} ms   trace {s1['trace_ms'] - s0['trace_ms']:7.1f} ms, "
              f"compile {s1['compile_ms'] - s0['compile_ms']:8.1f} ms, compiles {s1['compiles'] - s0['compiles']}")

    times = {k: [] for k in runners}
    for _ in range(args.rounds):
        for ids, mask in batches:
            for name, run in runners.items():
                t0 = time.perf_counter()
                out = run(ids, mask)
                times[name].append((time.perf_counter() - t0) * 1e3)
                if name != "shapejit":
                    assert np.abs(out - enc(ids, mask)).max() < 1e-4, name
    print(f"per batch, ms (min / median over {args.rounds} rounds of {args.batches} batches)")
    base = statistics.median(times["shapejit"])
    for name, v in times.items():
        med = statistics.median(v)
        print(f"  {name:14} {min(v):8.2f} / {med:8.2f}   ({med / base:.2f}x shapejit's median)")
    s = enc.stats()
    print(f"shapejit: {s['compiles']} compiles, {s['traces']} traces for {s['calls']} calls")


if __name__ == "__main__":
    main()
