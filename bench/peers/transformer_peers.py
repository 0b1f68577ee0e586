#!/usr/bin/env python3
"""CPU kernels beside XLA, Inductor and ONNX Runtime on transformer shapes.

The same two models through shapejit, jax.jit, torch.compile, torch eager and
ONNX Runtime, on the same weights and inputs:

  decoder  the block of bench/workloads/decoder.py (examples/decoder_serving.py:
           rms_norm, fused qkv, a key/value cache, causal attention, silu MLP;
           D=64, 4 heads): decode steps over caches of 128, 1024 and 4096
           positions, prefills of 64, 256, 1024 and 4096 new positions;
  encoder  the MiniLM-size encoder of examples/encoder.py (6 layers, hidden
           384, 12 heads, gelu MLP, padding mask, mean pooling): one
           sentence of 8, 16, 24, 32 and 48 tokens, batch 1, 8, 32 by
           sequence 64, 128, 256, and batches of 8 and 32 short ones.

The weights are frozen by default, as each framework is deployed: ONNX
Runtime on an export with the weights as initializers (all graph
optimizations), torch.compile with Inductor's freezing, jax.jit with the
weights closed over, shapejit with `shapejit.freeze`; `--weights inputs`
passes them on every call instead.

Each thread count runs in its own process pinned with taskset to that many
cores (0..T-1), every framework told to use T threads and not to spin its
threads when idle (OpenMP passive, ONNX Runtime without spinning). Calls are
timed in interleaved rounds (per round, each framework in turn: one untimed
call, so that the previous framework's threads have wound down, then
--calls timed ones) after warm-up calls that compile; each peer's output is
checked against shapejit's.
Prints per shape the minimum and median per call and shapejit's ratio to the
fastest peer. Not run by CI; the peers come from PyPI:

    pip install torch jax onnxruntime onnx numpy
    PYTHONPATH=build/python python bench/peers/transformer_peers.py [--threads 1,2] [--rounds 7]
        [--only decoder|encoder] [--shapes 1x8,1x16] [--weights frozen|inputs] [--json out.json]
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

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

DECODER_SHAPES = [("decode", 1, 128), ("decode", 1, 1024), ("decode", 1, 4096),
                  ("prefill", 64, 0), ("prefill", 256, 0), ("prefill", 1024, 0), ("prefill", 4096, 0)]
# One sentence at a time at chat lengths (the shape embedding services see
# most), then batches.
ENCODER_SHAPES = [(1, t) for t in (8, 16, 24, 32, 48)] + [(b, t) for b in (1, 8, 32) for t in (64, 128, 256)] + [(8, 16), (32, 16)]
FRAMEWORKS = ["shapejit", "jax.jit", "torch.compile", "torch eager", "onnxruntime"]


# -- the models in each framework -------------------------------------------------

def torch_decoder_block(x, kc, vc, norm1, w_qkv, w_o, norm2, w_up, w_down):
    """examples/decoder_serving.py's block in torch, on the inputs' device (the
    GPU peers' script, bench/peers/gpu_transformer_peers.py, runs it too)."""
    import torch
    b, t, d = x.shape
    heads, head_dim, p = kc.shape[1], kc.shape[3], kc.shape[2]

    def rms(v, g):
        return v * torch.rsqrt((v * v).mean(-1, keepdim=True) + 1e-6) * g
    qkv = rms(x, norm1) @ w_qkv
    q, kn, vn = (qkv[:, :, i * d:(i + 1) * d].reshape(b, t, heads, head_dim).transpose(1, 2) for i in range(3))
    k, v = torch.cat([kc, kn], 2), torch.cat([vc, vn], 2)
    s = q @ k.transpose(-1, -2) * head_dim ** -0.5
    if t != 1:
        visible = torch.arange(p + t, device=x.device)[None, :] <= torch.arange(p, p + t, device=x.device)[:, None]
        s = torch.where(visible, s, torch.tensor(-1e30, device=x.device))
    a = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(b, t, d)
    h = x + a @ w_o
    return h + torch.nn.functional.silu(rms(h, norm2) @ w_up) @ w_down, k, v


def decoder_models():
    import numpy as np
    import decoder_serving as S
    import shapejit as sj
    D, H, HD = S.D, S.HEADS, S.HEAD_DIM
    w = S.weights()["layers"][0]
    names = ["norm1", "w_qkv", "w_o", "norm2", "w_up", "w_down"]
    weights = [w[n] for n in names]

    torch_block = torch_decoder_block

    def jax_block(x, kc, vc, norm1, w_qkv, w_o, norm2, w_up, w_down):
        import jax
        import jax.numpy as jnp
        b, t, _ = x.shape
        p = kc.shape[2]

        def rms(v, g):
            return v * jax.lax.rsqrt((v * v).mean(-1, keepdims=True) + 1e-6) * g
        qkv = rms(x, norm1) @ w_qkv
        q, kn, vn = (qkv[:, :, i * D:(i + 1) * D].reshape(b, t, H, HD).swapaxes(1, 2) for i in range(3))
        k, v = jnp.concatenate([kc, kn], 2), jnp.concatenate([vc, vn], 2)
        s = q @ k.swapaxes(-1, -2) * HD ** -0.5
        if t != 1:
            visible = jnp.arange(p + t)[None, :] <= jnp.arange(p, p + t)[:, None]
            s = jnp.where(visible, s, -1e30)
        a = (jax.nn.softmax(s, -1) @ v).swapaxes(1, 2).reshape(b, t, D)
        h = x + a @ w_o
        return h + jax.nn.silu(rms(h, norm2) @ w_up) @ w_down, k, v

    def inputs(shape):
        kind, t, p = shape
        rng = np.random.default_rng(t * 7919 + p)
        x = rng.standard_normal((1, t, D)).astype(np.float32)
        kc = rng.standard_normal((1, H, p, HD)).astype(np.float32)
        vc = rng.standard_normal((1, H, p, HD)).astype(np.float32)
        return [x, kc, vc] + weights

    return {"shapejit": sj.jit(S.block), "torch": torch_block, "jax": jax_block, "inputs": inputs, "weights": weights,
            "freeze": lambda: sj.freeze(weights),
            "onnx_axes": {"x": {1: "t"}, "kc": {2: "p"}, "vc": {2: "p"}}, "onnx_names": ["x", "kc", "vc"] + names}


def encoder_models():
    import numpy as np
    import encoder as E
    import shapejit as sj
    p = E.random_params()
    flat_names, flat = [], []

    def add(name, a):
        flat_names.append(name)
        flat.append(np.ascontiguousarray(a))
    add("word", p["word"]); add("pos", p["pos"]); add("type", p["type"]); add("ln_w", p["ln"]["w"]); add("ln_b", p["ln"]["b"])
    keys = ["wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo", "ln1_w", "ln1_b", "w1", "b1", "w2", "b2", "ln2_w", "ln2_b"]
    for i, L in enumerate(p["layers"]):
        for k in keys:
            part, _, wb = k.partition("_")
            add(f"l{i}_{k}", L[part][wb] if wb else L[k])

    def unflatten(ws):
        it = iter(ws)
        q = {"word": next(it), "pos": next(it), "type": next(it), "ln": {"w": next(it), "b": next(it)}, "layers": []}
        for _ in p["layers"]:
            L = {}
            for k in keys:
                part, _, wb = k.partition("_")
                if wb:
                    L.setdefault(part, {})[wb] = next(it)
                else:
                    L[k] = next(it)
            q["layers"].append(L)
        return q

    def shapejit_fn(config=None):
        model = E.encoder(p)  # weights read from the closure: inputs of the graph, not constants
        jitted = sj.jit(model, config=config)
        return lambda ids, mask, *ws: jitted(ids, mask)

    def torch_encoder(ids, mask, *ws):
        import torch
        import torch.nn.functional as F
        q = unflatten(ws)
        b, t = ids.shape
        heads, hidden = E.HEADS, q["word"].shape[1]
        d = hidden // heads
        h = q["word"][ids] + q["pos"][:t] + q["type"][0]
        h = F.layer_norm(h, (hidden,), q["ln"]["w"], q["ln"]["b"], 1e-12)
        bias = (mask.to(torch.float32) - 1.0)[:, None, None, :] * 1e9
        for L in q["layers"]:
            def split(x):
                return x.reshape(b, t, heads, d).transpose(1, 2)
            qq, kk, vv = split(h @ L["wq"] + L["bq"]), split(h @ L["wk"] + L["bk"]), split(h @ L["wv"] + L["bv"])
            a = (torch.softmax(qq @ kk.transpose(-1, -2) * (1.0 / d ** 0.5) + bias, -1) @ vv).transpose(1, 2).reshape(b, t, hidden)
            h = F.layer_norm(h + a @ L["wo"] + L["bo"], (hidden,), L["ln1"]["w"], L["ln1"]["b"], 1e-12)
            f = F.gelu(h @ L["w1"] + L["b1"]) @ L["w2"] + L["b2"]
            h = F.layer_norm(h + f, (hidden,), L["ln2"]["w"], L["ln2"]["b"], 1e-12)
        m = mask.to(torch.float32)[:, :, None]
        pooled = (h * m).sum(1) / (m.sum(1)).clamp_min(1e-9)
        return pooled / (pooled * pooled).sum(-1, keepdim=True).sqrt().clamp_min(1e-12)

    def jax_encoder(ids, mask, *ws):
        import jax
        import jax.numpy as jnp
        q = unflatten(ws)
        b, t = ids.shape
        heads, hidden = E.HEADS, q["word"].shape[1]
        d = hidden // heads

        def ln(x, g, c, eps=1e-12):
            mu = x.mean(-1, keepdims=True)
            var = ((x - mu) ** 2).mean(-1, keepdims=True)
            return (x - mu) * jax.lax.rsqrt(var + eps) * g + c
        h = q["word"][ids] + q["pos"][:t] + q["type"][0]
        h = ln(h, q["ln"]["w"], q["ln"]["b"])
        bias = (mask.astype(jnp.float32) - 1.0)[:, None, None, :] * 1e9
        for L in q["layers"]:
            def split(x):
                return x.reshape(b, t, heads, d).swapaxes(1, 2)
            qq, kk, vv = split(h @ L["wq"] + L["bq"]), split(h @ L["wk"] + L["bk"]), split(h @ L["wv"] + L["bv"])
            a = (jax.nn.softmax(qq @ kk.swapaxes(-1, -2) * (1.0 / d ** 0.5) + bias, -1) @ vv).swapaxes(1, 2).reshape(b, t, hidden)
            h = ln(h + a @ L["wo"] + L["bo"], L["ln1"]["w"], L["ln1"]["b"])
            f = jax.nn.gelu(h @ L["w1"] + L["b1"], approximate=False) @ L["w2"] + L["b2"]
            h = ln(h + f, L["ln2"]["w"], L["ln2"]["b"])
        m = mask.astype(jnp.float32)[:, :, None]
        pooled = (h * m).sum(1) / jnp.maximum(m.sum(1), 1e-9)
        return pooled / jnp.maximum(jnp.sqrt((pooled * pooled).sum(-1, keepdims=True)), 1e-12)

    def inputs(shape):
        b, t = shape
        rng = np.random.default_rng(b * 1000 + t)
        ids = rng.integers(1000, E.VOCAB, (b, t)).astype(np.int64)
        mask = np.ones((b, t), np.int64)
        for i in range(b):  # padded rows: lengths from t/2 to t
            mask[i, int(rng.integers(t // 2 + 1, t + 1)):] = 0
        return [ids, mask] + flat

    return {"shapejit": shapejit_fn(), "cold": lambda: shapejit_fn({"cache": {"disk": {"max_mb": 0}}}), "torch": torch_encoder, "jax": jax_encoder, "inputs": inputs, "weights": flat,
            "freeze": lambda: sj.freeze(p),
            "onnx_axes": {"ids": {0: "b", 1: "t"}, "mask": {0: "b", 1: "t"}}, "onnx_names": ["ids", "mask"] + flat_names}


# -- one process: one thread count ------------------------------------------------

def runners(models, threads, workdir, frozen):
    """framework -> fn(list of numpy arrays: the data, then the weights) -> first
    output as numpy. With `frozen`, each framework gets the weights once, as its
    own constants, and a call passes the data alone: shapejit freezes them
    (shapejit.freeze: packed once for its GEMM), torch.compile takes them as a
    module's buffers with Inductor's freezing on, ONNX Runtime as initializers
    (prepacked), jax.jit closes over them (constants of the HLO)."""
    import numpy as np
    n = len(models["onnx_names"]) - len(models["weights"])  # data inputs, before the weights
    data = (lambda a: a[:n]) if frozen else (lambda a: a)
    out = {"shapejit": lambda a: np.asarray(first(models["shapejit"](*a)))}
    try:
        import torch
        torch.set_num_threads(threads)
        if torch.get_num_interop_threads() != 1:
            torch.set_num_interop_threads(1)  # once per process: torch refuses a second call

        class Bound(torch.nn.Module):
            """The model over its weights as buffers; forward takes the data."""

            def __init__(self):
                super().__init__()
                for i, w in enumerate(models["weights"]):
                    self.register_buffer(f"w{i}", torch.from_numpy(np.array(w)))

            def forward(self, *xs):
                return models["torch"](*xs, *(getattr(self, f"w{i}") for i in range(len(models["weights"]))))
        fn = Bound().eval() if frozen else models["torch"]
        if frozen:
            import torch._inductor.config
            torch._inductor.config.freezing = True

        def torch_call(f):
            def call(a):
                with torch.inference_mode():
                    return first(f(*[torch.from_numpy(x) for x in data(a)])).numpy()
            return call
        out["torch eager"] = torch_call(fn)
        out["torch.compile"] = torch_call(torch.compile(fn))
        try:
            out["onnxruntime"] = onnx_runner(models, threads, workdir, fn, n if frozen else None)
        except Exception as e:  # noqa: BLE001 - a peer that cannot run is reported, not fatal
            print(f"# onnxruntime: not run ({type(e).__name__}: {e})", file=sys.stderr)
    except ImportError:
        print("# torch not installed: torch eager, torch.compile and onnxruntime not run", file=sys.stderr)
    try:
        import jax
        jax.config.update("jax_platforms", "cpu")
        if frozen:
            ws = [jax.numpy.asarray(w) for w in models["weights"]]
            jitted = jax.jit(lambda *xs: models["jax"](*xs, *ws))  # closed over: constants
        else:
            jitted = jax.jit(models["jax"])  # a compile per shape: the block's branch on t == 1 reads a static shape
        out["jax.jit"] = lambda a: np.asarray(first(jitted(*data(a))))
    except ImportError:
        print("# jax not installed: jax.jit not run", file=sys.stderr)
    if frozen:
        models["freeze"]()  # after the peers copied the weights: frozen arrays are read-only
    return out


def onnx_runner(models, threads, workdir, fn, n_data):
    """With n_data, the model's weights are fn's buffers (initializers) and a
    call feeds the first n_data inputs; else every input is fed."""
    import numpy as np
    import onnxruntime as ort
    import torch
    path = os.path.join(workdir, "model.onnx")
    names = models["onnx_names"] if n_data is None else models["onnx_names"][:n_data]
    # The decoder's prefill and decode differ in a Python branch: one export each.
    sessions = {}

    def session(a):
        key = a[0].shape[1] == 1 if "x" in names else True
        if key not in sessions:
            p = path + f".{int(key)}"

            class Model(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.inner = fn if isinstance(fn, torch.nn.Module) else None

                def forward(self, *xs):
                    return (self.inner if self.inner is not None else fn)(*xs)
            with torch.inference_mode():
                torch.onnx.export(Model(), tuple(torch.from_numpy(x) for x in a[:len(names)]), p, input_names=names,
                                  dynamic_axes=models["onnx_axes"], dynamo=False)
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = 1
            so.add_session_config_entry("session.intra_op.allow_spinning", "0")  # no spinning into the next framework's time
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            sessions[key] = ort.InferenceSession(p, so, providers=["CPUExecutionProvider"])
        return sessions[key]
    return lambda a: np.asarray(session(a).run(None, dict(zip(names, a)))[0])


def first(r):
    return r[0] if isinstance(r, (tuple, list)) else r


def stream(args, threads, workdir):
    """The encoder over a stream of single sentences (lengths log-normal
    around 16 tokens, 5 to 74), weights frozen; per framework one pass on a
    cold start (shapejit: a new jit with no disk tier, so it compiles; ONNX
    Runtime: its export and session; torch.compile and jax.jit: their
    compiles), the first call reported apart. The C API's embedding loop
    (build/embed_stream_bench) runs the same lengths."""
    import numpy as np
    models = encoder_models()
    run = {k: f for k, f in runners(models, threads, workdir, True).items() if k in args.frameworks.split(",")}
    cold = models["cold"]()
    run["shapejit"] = lambda a: np.asarray(first(cold(*a)))
    rng = np.random.default_rng(args.seed)
    lens = np.clip(np.rint(rng.lognormal(np.log(16), 0.55, args.stream)), 5, 74).astype(np.int64)
    calls = [[rng.integers(0, 30522, (1, t)).astype(np.int64), np.ones((1, t), np.int64)] + models["weights"] for t in lens]
    rows = []
    for name, fn in run.items():
        t0 = time.perf_counter()
        fn(calls[0])
        first_s = time.perf_counter() - t0
        for a in calls[1:]:
            fn(a)
        rows.append({"stream": len(lens), "framework": name, "threads": threads, "total_s": time.perf_counter() - t0, "first_s": first_s})
    lengths = os.path.join(workdir, "lengths.txt")
    np.savetxt(lengths, lens, fmt="%d")
    tool = ROOT / "build" / "embed_stream_bench"
    if tool.exists() and threads == 1:
        r = subprocess.run([str(tool), "--lengths", lengths, "--rounds", "1", "--way", "handle-frozen"], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            if line.startswith("handle, frozen"):
                total, first_ms = float(line.split()[2]), float(line.split()[4])
                rows.append({"stream": len(lens), "framework": "shapejit (C API)", "threads": threads, "total_s": total,
                             "first_s": first_ms / 1e3})
    for row in rows:
        row["lengths"] = f"{lens.min()} to {lens.max()}, median {int(np.median(lens))}"
        print(json.dumps(row), flush=True)


def child(args):
    import numpy as np
    threads = args.child
    results = []
    with tempfile.TemporaryDirectory() as workdir:
        if args.stream:
            return stream(args, threads, workdir)
        for model_name in (["decoder", "encoder"] if args.only is None else [args.only]):
            models = (decoder_models if model_name == "decoder" else encoder_models)()
            shapes = DECODER_SHAPES if model_name == "decoder" else ENCODER_SHAPES
            if args.shapes:
                keep = set(args.shapes.split(","))
                shapes = [s for s in shapes if ("x".join(map(str, s)) if model_name == "encoder" else ":".join(map(str, s))) in keep]
            run = {k: f for k, f in runners(models, threads, workdir, args.weights == "frozen").items()
                   if k in args.frameworks.split(",") or k == "shapejit"}
            for shape in shapes:
                a = models["inputs"](shape)
                want = run["shapejit"](a)
                ok = {}
                for name, fn in run.items():
                    try:
                        for _ in range(args.warmup):
                            got = fn(a)
                    except Exception as e:  # noqa: BLE001 - a peer that fails a shape is reported, not fatal
                        print(f"# {model_name} {shape}: {name} failed ({type(e).__name__}: {str(e)[:200]})", file=sys.stderr)
                        continue
                    ok[name] = fn
                    if name != "shapejit" and not np.allclose(got, want, rtol=2e-3, atol=2e-3):
                        print(f"# {model_name} {shape}: {name} differs from shapejit by {np.abs(got - want).max():.3g}", file=sys.stderr)
                times = {k: [] for k in ok}
                for _ in range(args.rounds):
                    for name, fn in ok.items():
                        fn(a)  # untimed: lets the previous framework's threads wind down
                        for _ in range(args.calls):
                            t0 = time.perf_counter()
                            fn(a)
                            times[name].append((time.perf_counter() - t0) * 1e6)
                row = {"model": model_name, "shape": list(shape), "threads": threads, "weights": args.weights,
                       "us": {k: {"min": min(v), "median": statistics.median(v)} for k, v in times.items()}}
                print(json.dumps(row), flush=True)
                results.append(row)
    return results


# -- the parent: one child per thread count, then the tables -----------------------

def label(row):
    s = row["shape"]
    if row["model"] == "decoder":
        return f"{s[0]} (t={s[1]}, cache={s[2]})"
    return f"{s[0]} x {s[1]}"


def table(rows):
    lines = []
    for threads in sorted({r["threads"] for r in rows}):
        for model in ("decoder", "encoder"):
            sel = [r for r in rows if r["threads"] == threads and r["model"] == model]
            if not sel:
                continue
            names = [f for f in FRAMEWORKS if f in sel[0]["us"]]
            weights = sel[0].get("weights", "inputs")
            lines.append(f"\n{model}, {threads} thread{'s' if threads > 1 else ''}, weights {weights}: us per call, min / median; "
                         "ratio = shapejit / fastest peer (min, median)")
            lines.append("| shape | " + " | ".join(names) + " | ratio |")
            lines.append("| --- | " + " | ".join("---:" for _ in names) + " | ---: |")
            for r in sel:
                us = r["us"]
                peers = [n for n in names if n != "shapejit" and n in us]
                best_min = min(us[n]["min"] for n in peers) if peers else float("nan")
                best_med = min(us[n]["median"] for n in peers) if peers else float("nan")
                cells = [f"{us[n]['min']:.0f} / {us[n]['median']:.0f}" if n in us else "-" for n in names]
                ratio = f"{us['shapejit']['min'] / best_min:.2f} / {us['shapejit']['median'] / best_med:.2f}"
                lines.append(f"| {label(r)} | " + " | ".join(cells) + f" | {ratio} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1,2", help="thread counts, each in its own pinned process")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--calls", type=int, default=3, help="timed calls per framework per round")
    ap.add_argument("--only", choices=["decoder", "encoder"])
    ap.add_argument("--frameworks", default=",".join(FRAMEWORKS), help="a subset of " + ", ".join(FRAMEWORKS))
    ap.add_argument("--stream", type=int, help="instead of the table: the encoder over this many single sentences")
    ap.add_argument("--seed", type=int, default=1, help="the stream's lengths and ids")
    ap.add_argument("--shapes", help="only these shapes, e.g. 1x8,1x16 (encoder: batch x tokens; decoder: kind:t:p)")
    ap.add_argument("--weights", choices=["inputs", "frozen"], default="frozen",
                    help="inputs: weights passed on every call, as the graphs' inputs; frozen: each framework's constants "
                         "(shapejit.freeze, Inductor's freezing, ONNX initializers, jax closures)")
    ap.add_argument("--json", help="write every row here too")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    rows = []
    for threads in [int(t) for t in args.threads.split(",")]:
        cores = sorted(os.sched_getaffinity(0))[:threads]
        if len(cores) < threads:
            sys.exit(f"{threads} threads asked for, {len(cores)} cores available")
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS=str(threads),
                   OMP_WAIT_POLICY="PASSIVE", GOMP_SPINCOUNT="0",
                   XLA_FLAGS=f"--xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'}")
        cmd = ["taskset", "-c", ",".join(map(str, cores)), sys.executable, __file__, "--child", str(threads),
               "--rounds", str(args.rounds), "--warmup", str(args.warmup), "--calls", str(args.calls), "--frameworks", args.frameworks,
               "--weights", args.weights] + (["--only", args.only] if args.only else []) + (["--shapes", args.shapes] if args.shapes else []) + (["--stream", str(args.stream), "--seed", str(args.seed)] if args.stream else [])
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
        for line in proc.stdout.splitlines():
            if line.startswith("{"):
                rows.append(json.loads(line))
        if proc.returncode:
            print(f"# the {threads}-thread run exited with {proc.returncode}", file=sys.stderr)
    if args.stream:
        for r in rows:
            print(f"{r['threads']} thread(s), {r['stream']} sentences ({r['lengths']}): {r['framework']:18s} total {r['total_s']:.2f} s,"
                  f" first call {r['first_s'] * 1e3:.0f} ms")
    else:
        print(table(rows))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
