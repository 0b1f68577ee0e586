#!/usr/bin/env python3
"""NumPy models as their authors wrote them: shapejit beside NumPy,
torch.compile and jax.jit, generating tokens.

  gpt2   examples/gpt2_numpy.py at GPT-2-small shapes (12 layers, 768 wide,
         12 heads, vocab 50257, random weights): 24 tokens from a prompt of 8,
         the ids growing by one a call;
  llama  examples/llama_numpy.py (a class with a key/value cache written in
         place and an int position; its default shapes): 40 tokens from 8.

Each model runs as written, through
  shapejit       its forward (gpt2) or __call__ (llama) jitted, a cold kernel cache;
  shapejit.frozen  (llama) the same, its weights first declared unchanging
                 with one added line, shapejit.freeze(weights), as a deployment
                 that does not change them would: products then read them
                 packed once, kept across calls;
  numpy          itself;
  torch.compile  (gpt2) its forward compiled as it is, Dynamo tracing the NumPy
                 calls through torch._numpy, with the one line it refuses
                 (`wpe[range(len(ids))]`) written `wpe[np.arange(len(ids))]`;
  jax.jit        (gpt2) a jax.numpy port: the example's own functions with `np`
                 bound to jax.numpy, that one line written with jnp.arange, the
                 weights closed over, n_head static (a compile per length).
                 It computes in float32: jax does not promote where NumPy 2 does
                 (`/ np.sqrt(n)` is a float64 scalar to NumPy, so from the first
                 attention on NumPy, and shapejit with it, compute in float64);
  jax.jit.f64    (gpt2) the same port in NumPy's precision: jax_enable_x64 and
                 the weights closed over as float64 (the one product NumPy does
                 in float32, the first layer's q, k, v, is float64 here too).
                 Timed at the last length only: each compile keeps its own 1 GB
                 copy of the closed-over weights, and a generation's 24 compiles
                 ran out of this machine's 24 GB.
Every run is a fresh process pinned with taskset to --threads cores, every
framework told to use that many threads; runs are interleaved in rounds
(each round runs each framework once, in turn). Reported per framework:
whether its ids equal NumPy's, its compiles, the whole generation (compiles
included: the first call's and every recompile's), the time a token after
warm-up (the median over the steps after the first --warm; per run, then
the minimum and median over rounds), and (gpt2) the time of one more call
at the last length, which every framework has compiled (the best of 3). Not run by CI; the peers come
from PyPI:

    pip install torch jax numpy
    PYTHONPATH=build/python python bench/peers/numpy_models.py [--model gpt2|llama]
        [--rounds 2] [--threads 1] [--json out.json]
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

FRAMEWORKS = {"gpt2": ["shapejit", "numpy", "torch.compile", "jax.jit", "jax.jit.f64"], "llama": ["shapejit", "shapejit.frozen", "numpy"]}


# -- one run, in its own process ----------------------------------------------------

def ported_forward(np_module):
    """gpt2_numpy.forward for a peer: the example's functions with `np` bound
    to np_module, and the positions taken with np_module.arange."""
    import types
    import gpt2_numpy as G
    scope = dict(vars(G), np=np_module)
    for name in ("gelu", "softmax", "layer_norm", "dense", "self_attention", "block"):
        f = getattr(G, name)
        scope[name] = types.FunctionType(f.__code__, scope, name, f.__defaults__)
    block, layer_norm = scope["block"], scope["layer_norm"]

    def forward(ids, params, n_head):
        x = params["wte"][ids] + params["wpe"][np_module.arange(len(ids))]
        for p in params["blocks"]:
            x = block(x, p, n_head)
        x = layer_norm(x, params["ln_f"])
        return x[-1] @ params["wte"].T
    return forward


def gpt2_forward(framework, params, n_head):
    """(forward(ids, params, n_head), its compile count) in a framework."""
    import numpy as np
    import gpt2_numpy as G
    if framework == "numpy":
        return G.forward, lambda: 0
    if framework == "shapejit":
        import shapejit
        f = shapejit.jit(G.forward)
        return f, lambda: f.stats()["compiles"]
    if framework == "torch.compile":
        import torch
        import torch._dynamo
        from torch._inductor.compile_fx import compile_fx
        compiles = []

        def inductor(gm, example_inputs):  # Inductor, counted
            compiles.append(len(gm.graph.nodes))
            return compile_fx(gm, example_inputs)
        return torch.compile(ported_forward(np), backend=inductor), lambda: len(compiles)
    if framework in ("jax.jit", "jax.jit.f64"):
        import jax
        if framework == "jax.jit.f64":
            jax.config.update("jax_enable_x64", True)
            params = jax.tree_util.tree_map(lambda w: w.astype(np.float64), params)
        import jax.numpy as jnp
        forward = ported_forward(jnp)
        weights = jax.tree_util.tree_map(jnp.asarray, params)
        compiled = jax.jit(lambda ids: forward(ids, weights, n_head))  # weights closed over
        lengths = set()

        def call(ids, params, n_head):
            lengths.add(len(ids))  # jax.jit compiles once a length
            return np.asarray(compiled(jnp.asarray(ids)))
        return call, lambda: len(lengths)
    raise ValueError(framework)


def run_gpt2(framework, tokens, prompt_len):
    import numpy as np
    import gpt2_numpy as G
    params = G.random_params(50257, 1024, 768, 12)
    prompt = np.random.default_rng(1).integers(0, 50257, prompt_len)
    fwd, compiles = gpt2_forward(framework, params, 12)
    if framework == "jax.jit.f64":  # no generation: ids of the last call's length, compiled once
        ids, times = np.random.default_rng(2).integers(0, 50257, prompt_len + tokens), None
        fwd(ids[:-1], params, 12)
    else:
        ids, times = G.timed_generation(prompt, params, 12, tokens, fwd)
    n = compiles()
    seen = []  # the last call's ids again: a length every framework has compiled
    for _ in range(3):
        t = time.perf_counter()
        fwd(ids[:-1], params, 12)
        seen.append(time.perf_counter() - t)
    return {"ids": None if times is None else [int(i) for i in ids], "times": times, "compiles": n, "seen_length_s": min(seen)}


def run_llama(framework, tokens, prompt_len):
    import numpy as np
    import llama_numpy as L
    args = L.ModelArgs()
    weights = L.random_weights(args)
    prompt = np.random.default_rng(1).integers(0, args.vocab_size, (1, prompt_len))
    if framework == "shapejit.frozen":
        import shapejit
        shapejit.freeze(weights)
    jitted = framework.startswith("shapejit")
    model = (L.JitLlama if jitted else L.Llama)(weights, args)
    ids, times = L.generate_timed(model, prompt, tokens)
    compiles = L.JitLlama.__call__.stats()["compiles"] if jitted else 0
    return {"ids": ids, "times": times, "compiles": compiles}


def child(a):
    if a.framework == "torch.compile":
        import torch
        torch.set_num_threads(a.threads)
    run = run_gpt2 if a.model == "gpt2" else run_llama
    print("RESULT " + json.dumps(run(a.framework, a.tokens, a.prompt)))


# -- the rounds -------------------------------------------------------------------

def spawn(a, framework):
    env = dict(os.environ)
    t = str(a.threads)
    env.update(OMP_NUM_THREADS=t, OPENBLAS_NUM_THREADS=t, MKL_NUM_THREADS=t, OMP_WAIT_POLICY="PASSIVE",
               XLA_FLAGS=f"--xla_cpu_multi_thread_eigen={'true' if a.threads > 1 else 'false'} "
                         f"intra_op_parallelism_threads={t}",
               XDG_CACHE_HOME=tempfile.mkdtemp(prefix="sj-peers-"),  # a cold kernel cache
               TORCHINDUCTOR_CACHE_DIR=tempfile.mkdtemp(prefix="inductor-peers-"))
    cmd = ["taskset", "-c", f"0-{a.threads - 1}", sys.executable, __file__, "--child", "--model", a.model,
           "--framework", framework, "--tokens", str(a.tokens), "--prompt", str(a.prompt), "--threads", t]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            r = json.loads(line[len("RESULT "):])
            r["process_s"] = wall
            return r
    return {"error": (out.stderr or out.stdout)[-2000:]}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=["gpt2", "llama"], default="gpt2")
    p.add_argument("--frameworks", default=None, help="comma-separated subset")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--tokens", type=int, default=None)
    p.add_argument("--prompt", type=int, default=8)
    p.add_argument("--warm", type=int, default=3, help="steps left out of the per-token time")
    p.add_argument("--json", default=None)
    p.add_argument("--child", action="store_true")
    p.add_argument("--framework", default=None)
    a = p.parse_args(argv)
    if a.tokens is None:
        a.tokens = 24 if a.model == "gpt2" else 40
    if a.child:
        return child(a)
    frameworks = a.frameworks.split(",") if a.frameworks else FRAMEWORKS[a.model]
    runs = {f: [] for f in frameworks}
    for r in range(a.rounds):
        order = frameworks if r % 2 == 0 else frameworks[::-1]
        for f in order:
            res = spawn(a, f)
            runs[f].append(res)
            if "error" in res:
                said = "failed: " + (res["error"].strip().splitlines() or ["no output"])[-1]
            elif res["times"] is None:
                said = f"{res['seen_length_s'] * 1e3:.1f} ms at the last length, {res['compiles']} compiles"
            else:
                said = f"{sum(res['times']):.2f} s, {res['compiles']} compiles"
            print(f"round {r} {f}: {said}", flush=True)
    reference = next((x["ids"] for x in runs.get("numpy", []) if "ids" in x), None)
    print(f"\n{a.model}: {a.tokens} tokens from {a.prompt}, {a.threads} thread(s), {a.rounds} rounds")
    print(f"{'framework':<15}{'ids = numpy':>12}{'compiles':>10}{'whole gen s (min/med)':>24}{'per token ms (min/med)':>25}"
          f"{'seen length ms':>16}")
    table = {}
    for f, rs in runs.items():
        ok = [x for x in rs if "times" in x]
        if not ok:
            print(f"{f:<15} failed")
            continue
        seen = [x["seen_length_s"] * 1e3 for x in ok if "seen_length_s" in x]
        if ok[0]["times"] is None:  # timed at the last length only
            table[f] = {"ids_equal_numpy": None, "compiles": ok[0]["compiles"], "seen_length_ms": seen}
            print(f"{f:<15}{'-':>12}{ok[0]['compiles']:>10}{'-':>24}{'-':>25}{min(seen):>16.2f}")
            continue
        whole = [sum(x["times"]) for x in ok]
        per = [statistics.median(x["times"][a.warm:]) * 1e3 for x in ok]
        same = all(x["ids"] == reference for x in ok) if reference else None
        table[f] = {"ids_equal_numpy": same, "compiles": ok[0]["compiles"], "whole_s": whole, "per_token_ms": per,
                    "seen_length_ms": seen}
        print(f"{f:<15}{str(same):>12}{ok[0]['compiles']:>10}{min(whole):>12.2f} /{statistics.median(whole):>8.2f}"
              f"{min(per):>14.2f} /{statistics.median(per):>8.2f}" + (f"{min(seen):>16.2f}" if seen else ""))
    if "numpy" in table:
        base_w, base_t = statistics.median(table["numpy"]["whole_s"]), statistics.median(table["numpy"]["per_token_ms"])
        for f, t in table.items():
            if "whole_s" not in t:
                continue
            print(f"  {f}: whole {statistics.median(t['whole_s']) / base_w:.3f}x numpy, "
                  f"per token {statistics.median(t['per_token_ms']) / base_t:.3f}x numpy")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps({"model": a.model, "threads": a.threads, "tokens": a.tokens,
                                                    "runs": runs, "table": table}, indent=1))


if __name__ == "__main__":
    main()
