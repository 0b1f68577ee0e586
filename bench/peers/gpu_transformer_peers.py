#!/usr/bin/env python3
"""The CUDA backend beside PyTorch's CUDA eager and torch.compile, on a GPU.

The two models of bench/peers/transformer_peers.py, at the sizes of its CPU
benchmark: the decoder block of examples/decoder_serving.py (rms_norm, fused
qkv, a key/value cache, causal attention in a prefill, silu MLP; D=64,
4 heads) as decode steps over caches of 128 and 1024 positions and prefills
of 256 and 1024; the MiniLM-size encoder of examples/encoder.py (6 layers,
hidden 384, 12 heads) at batch x sequence 8x128 and 32x256.

shapejit runs the traced graphs (bench/traces/gpu_*.jsonl, recorded by
bench/python/record_gpu_models.py) in bench/cuda_models_bench.cpp, the C++
API's call path on device memory; PyTorch runs the same model written in
torch, eager and under torch.compile (default mode, weights frozen into the
module as its deployment does), on inputs made by the same formula
(cuda_models_bench.cpp), and its output is checked against shapejit's.
Per call: `--calls` calls per round, synchronized at the round's end, the
minimum and median over `--rounds` rounds after warm-up calls (the first
call, which compiles, is reported apart).

    python3 bench/peers/gpu_transformer_peers.py --shapejit .gpu/bundle/bin/cuda_models_bench [--json out.json]
    # without a GPU, to check the harness: shapejit on the CPU against the
    # examples run as NumPy
    python3 bench/peers/gpu_transformer_peers.py --shapejit build/cuda_models_bench --cpu
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "peers"))
from transformer_peers import torch_decoder_block as torch_decoder  # noqa: E402  (the same model as the CPU peers')
D, HEADS, HEAD_DIM, FFN = 64, 4, 16, 256  # examples/decoder_serving.py
LAYERS, HIDDEN, ENC_HEADS, ENC_FFN, VOCAB, MAX_POS = 6, 384, 12, 1536, 30522, 512  # examples/encoder.py

DECODER_CASES = [("decode, cache 128", 1, 128), ("decode, cache 1024", 1, 1024),
                 ("prefill 256", 256, 0), ("prefill 1024", 1024, 0)]
ENCODER_CASES = [(8, 128), (32, 256)]


# -- inputs: cuda_models_bench.cpp's formula ---------------------------------------

def fill(i, shape, how, dtype):
    n = int(np.prod(shape, dtype=np.int64))
    j = np.arange(n, dtype=np.uint64)
    if "value" in how:
        return np.full(shape, how["value"], dtype=dtype)
    if "mod" in how:
        return ((j * np.uint64(7919) + np.uint64(i)) % np.uint64(how["mod"])).astype(np.int64).reshape(shape)
    h = (j * np.uint64(2654435761) + np.uint64((i + 1) * 40503)) % np.uint64(1 << 32)
    u = h.astype(np.float64) / 4294967296.0
    return (how.get("offset", 0.0) + how.get("scale", 1.0) * (2 * u - 1)).astype(np.float32).reshape(shape)


def norm_w():
    return {"offset": 1.0, "scale": 0.1}


def decoder_spec():
    fills = [{"scale": 1.0}, {"scale": 1.0}, {"scale": 1.0}, norm_w(), {"scale": 0.1}, {"scale": 0.1}, norm_w(),
             {"scale": 0.1}, {"scale": 0.1}]
    weights = [[D], [D, 3 * D], [D, D], [D], [D, FFN], [FFN, D]]
    cases = []
    for label, t, p in DECODER_CASES:
        shapes = [[1, t, D], [1, HEADS, p, HEAD_DIM], [1, HEADS, p, HEAD_DIM]] + weights
        cases.append({"label": label, "shapes": shapes, "graph": 0 if t == 1 else 1})
    return fills, cases


def encoder_spec():
    def ln():
        return [([HIDDEN], norm_w()), ([HIDDEN], {"scale": 0.1})]

    def lin(a, b):
        return [([a, b], {"scale": 0.05}), ([b], {"scale": 0.05})]
    weights = [([VOCAB, HIDDEN], {"scale": 0.05}), ([MAX_POS, HIDDEN], {"scale": 0.05}), ([2, HIDDEN], {"scale": 0.05})] + ln()
    for _ in range(LAYERS):
        weights += lin(HIDDEN, HIDDEN) * 4 + ln() + lin(HIDDEN, ENC_FFN) + lin(ENC_FFN, HIDDEN) + ln()
    fills = [{"mod": VOCAB}, {"value": 1}] + [f for _, f in weights]
    cases = [{"label": f"batch {b} x {t}", "shapes": [[b, t], [b, t]] + [s for s, _ in weights], "graph": 0}
             for b, t in ENCODER_CASES]
    return fills, cases


def inputs_of(fills, case, dtypes):
    return [fill(i, s, f, dt) for i, (s, f, dt) in enumerate(zip(case["shapes"], fills, dtypes))]


# -- the models in torch (and in NumPy, through the examples, for --cpu) ----------

def torch_encoder(ids, mask, *ws):
    import torch
    import torch.nn.functional as F
    word, pos, typ, lnw, lnb = ws[:5]
    b, t = ids.shape
    d = HIDDEN // ENC_HEADS
    h = word[ids] + pos[:t] + typ[0]
    h = F.layer_norm(h, (HIDDEN,), lnw, lnb, 1e-12)
    bias = (mask.to(torch.float32) - 1.0)[:, None, None, :] * 1e9
    for i in range(LAYERS):
        wq, bq, wk, bk, wv, bv, wo, bo, l1w, l1b, w1, b1, w2, b2, l2w, l2b = ws[5 + 16 * i:5 + 16 * (i + 1)]

        def split(x):
            return x.reshape(b, t, ENC_HEADS, d).transpose(1, 2)
        q, k, v = split(h @ wq + bq), split(h @ wk + bk), split(h @ wv + bv)
        a = (torch.softmax(q @ k.transpose(-1, -2) * (1.0 / d ** 0.5) + bias, -1) @ v).transpose(1, 2).reshape(b, t, HIDDEN)
        h = F.layer_norm(h + a @ wo + bo, (HIDDEN,), l1w, l1b, 1e-12)
        f = F.gelu(h @ w1 + b1) @ w2 + b2
        h = F.layer_norm(h + f, (HIDDEN,), l2w, l2b, 1e-12)
    m = mask.to(torch.float32)[:, :, None]
    pooled = (h * m).sum(1) / m.sum(1).clamp_min(1e-9)
    return pooled / (pooled * pooled).sum(-1, keepdim=True).sqrt().clamp_min(1e-12)


def numpy_models():
    sys.path.insert(0, str(ROOT / "examples"))
    sys.path.insert(0, str(ROOT / "build" / "python"))
    import decoder_serving as S
    import encoder as E

    def enc(ids, mask, *ws):
        word, pos, typ, lnw, lnb = ws[:5]
        layers = []
        for i in range(LAYERS):
            k = ["wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo", "ln1w", "ln1b", "w1", "b1", "w2", "b2", "ln2w", "ln2b"]
            L = dict(zip(k, ws[5 + 16 * i:5 + 16 * (i + 1)]))
            L["ln1"], L["ln2"] = {"w": L["ln1w"], "b": L["ln1b"]}, {"w": L["ln2w"], "b": L["ln2b"]}
            layers.append(L)
        return E.encoder({"word": word, "pos": pos, "type": typ, "ln": {"w": lnw, "b": lnb}, "layers": layers})(ids, mask)
    return {"decoder": S.block, "encoder": enc}


# -- timing ----------------------------------------------------------------------

def run_shapejit(binary, trace, fills, cases, args, cpu):
    """One process per model; its output per case, dumped to a temporary file."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        by_graph = {}
        for c in cases:
            by_graph.setdefault(c["graph"], []).append(c)
        for graph, group in by_graph.items():
            spec = {"trace": str(ROOT / "bench" / "traces" / trace), "graph": graph, "inputs": fills,
                    "cases": [{"label": c["label"], "shapes": c["shapes"], "calls": args.calls, "rounds": args.rounds,
                               "dump": os.path.join(tmp, f"{i}.bin")} for i, c in enumerate(group)]}
            if cpu:
                spec["config"] = {"compile": {"backend": "llvm"}}
            r = subprocess.run([binary], input=json.dumps(spec), capture_output=True, text=True, timeout=args.timeout)
            if r.returncode != 0:
                raise RuntimeError(f"cuda_models_bench failed: {r.stderr.strip()}")
            for i, line in enumerate(r.stdout.splitlines()):
                res = json.loads(line)
                res["output"] = np.fromfile(os.path.join(tmp, f"{i}.bin"), dtype=np.float32)
                out[res["label"]] = res
    return out


def time_calls(fn, sync, args):
    t0 = time.perf_counter()
    fn()
    sync()
    first = (time.perf_counter() - t0) * 1e3
    for _ in range(args.calls):
        fn()
    sync()
    per_call = []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        for _ in range(args.calls):
            fn()
        sync()
        per_call.append((time.perf_counter() - t0) * 1e3 / args.calls)
    return {"first_call_ms": first, "min_ms": min(per_call), "median_ms": statistics.median(per_call)}


def torch_peers(model, fn, graph_inputs, n_data, args):
    """torch eager and torch.compile: the weights frozen into a module."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 products, as cuBLAS runs shapejit's
    dev = torch.device("cuda")
    data = [torch.from_numpy(x).to(dev) for x in graph_inputs[:n_data]]

    class Frozen(torch.nn.Module):
        def __init__(self, weights):
            super().__init__()
            for i, w in enumerate(weights):
                self.register_buffer(f"w{i}", torch.from_numpy(w).to(dev))
            self.n = len(weights)

        def forward(self, *xs):
            out = fn(*xs, *(getattr(self, f"w{i}") for i in range(self.n)))
            return out[0] if isinstance(out, tuple) else out
    return Frozen(graph_inputs[n_data:]).eval(), data


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapejit", required=True, help="the cuda_models_bench binary")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--timeout", type=int, default=240)
    ap.add_argument("--only", choices=["decoder", "encoder"])
    ap.add_argument("--cpu", action="store_true", help="shapejit on the CPU against NumPy (checks the harness)")
    ap.add_argument("--json")
    args = ap.parse_args()
    models = {"decoder": (decoder_spec, "gpu_decoder.jsonl", torch_decoder, 3, ["f32"] * 9),
              "encoder": (encoder_spec, "gpu_encoder.jsonl", torch_encoder, 2, ["i64", "i64"] + ["f32"] * 101)}
    results = []
    if not args.cpu:
        import torch
        print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
        import torch._inductor.config
        torch._inductor.config.freezing = True
    for name in ["decoder", "encoder"]:
        if args.only and args.only != name:
            continue
        spec, trace, torch_fn, n_data, dtypes = models[name]
        fills, cases = spec()
        try:
            sj = run_shapejit(args.shapejit, trace, fills, cases, args, args.cpu)
        except Exception:
            traceback.print_exc()
            sj = {}
        if args.cpu:
            np_fn = numpy_models()[name]
        else:
            import torch
            compiled = None
        for c in cases:
            ins = inputs_of(fills, c, [np.int64 if d == "i64" else np.float32 for d in dtypes])
            row = {"model": name, "case": c["label"], "shapejit": {k: v for k, v in sj.get(c["label"], {}).items() if k != "output"}}
            got = sj.get(c["label"], {}).get("output")
            peers = {}
            try:
                if args.cpu:
                    out = np_fn(*ins)
                    want = np.asarray(out[0] if isinstance(out, tuple) else out)
                    peers["numpy"] = time_calls(lambda: np_fn(*ins), lambda: None, args)
                else:
                    module, data = torch_peers(name, torch_fn, ins, n_data, args)
                    if compiled is None:
                        compiled = torch.compile(module)
                    sync = torch.cuda.synchronize
                    with torch.inference_mode():
                        want = module(*data).float().cpu().numpy()
                        peers["torch eager"] = time_calls(lambda: module(*data), sync, args)
                        peers["torch.compile"] = time_calls(lambda: compiled(*data), sync, args)
                        check = compiled(*data).float().cpu().numpy()
                    peers["torch.compile"]["max_abs_diff_to_eager"] = float(np.max(np.abs(check - want))) if want.size else 0.0
            except Exception:
                traceback.print_exc()
            row["peers"] = peers
            if got is not None and "want" in locals():
                row["max_abs_diff"] = float(np.max(np.abs(got - want.reshape(-1)))) if want.size else 0.0
                row["agrees"] = bool(np.allclose(got, want.reshape(-1), rtol=1e-3, atol=1e-4))
            results.append(row)
            line = f"{name:8s} {c['label']:20s} shapejit {row['shapejit'].get('median_ms', float('nan')):8.4f} ms (min {row['shapejit'].get('min_ms', float('nan')):.4f}, first {row['shapejit'].get('first_call_ms', float('nan')):.0f})"
            for k, v in peers.items():
                line += f" | {k} {v['median_ms']:8.4f} ms (min {v['min_ms']:.4f}, first {v['first_call_ms']:.0f}), ratio {row['shapejit'].get('median_ms', float('nan')) / v['median_ms']:.2f}"
            line += f" | agrees {row.get('agrees')} (max diff {row.get('max_abs_diff', float('nan')):.2e})"
            print(line, flush=True)
            if "want" in locals():
                del want
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
