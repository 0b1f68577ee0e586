#!/usr/bin/env python3
"""Recompiles of real torch.compile beside `shapejit replay`, on the same shapes.

Each case is one function written twice: as PyTorch code compiled by
torch.compile (Dynamo's own CompileCounter as the backend: it counts the
frames Dynamo compiles and runs them eagerly, as backend "eager" does), and
as the shapejit graph an interpreter would trace from it, with what the code
reads as a number (observations). The shapes go through both; shapejit's side
is a trace replayed with `--exec none` under bench/policies/dynamo.json (and
the default policy for comparison). The cases follow PyTorch's own recompile
tests: automatic dynamic shapes, the 0/1 rule, mark_dynamic, sizes needed as
ints, branches on sizes, the recompile limit, dtype changes.

Not run by CI (torch is large). Needs torch from PyPI and a built
build/shapejit:

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install torch
    /tmp/peers/bin/python bench/peers/torch_recompiles.py [--shapejit build/shapejit] [--json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch
import torch._dynamo
import torch._dynamo.testing

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def inp(name, dtype, shape):
    return {"name": name, "dtype": dtype, "shape": shape}


def graph(inputs, nodes, outputs):
    return {"inputs": inputs, "nodes": nodes, "outputs": outputs}


def f32(*shape):
    return torch.zeros(*shape)


W = torch.zeros(3, 2)


def _range_loop(x):
    for _ in range(x.shape[0]):
        x = x + 1
    return x


def _branch(x):
    if x.shape[0] > 4:
        return x * 2
    return x * 3


# name -> (torch function, [args per call], shapejit graph, observations,
#          site pins for mark_dynamic, what differs, if anything)
CASES = [
    ("x * y (dim 0: 1, 5, 6, 1)", lambda x, y: x * y,
     [(f32(n), f32(n)) for n in (1, 5, 6, 1)],
     graph([inp("x", "f32", ["n"]), inp("y", "f32", ["n"])], [{"op": "mul", "in": ["x", "y"], "out": "z"}], ["z"]), [], None),
    ("x @ W, W a [3, 2] parameter (dim 0: 1, 10, 11, 15, 15)", lambda x: x @ W,
     [(f32(n, 3),) for n in (1, 10, 11, 15, 15)],
     # W is read from the closure: for shapejit a graph input (weights are inputs, not constants)
     graph([inp("x", "f32", ["n", 3]), inp("W", "f32", [3, 2])], [{"op": "matmul", "in": ["x", "W"], "out": "z"}], ["z"]), [], None),
    ("for _ in range(x.shape[0]) (4, 5, 6, 7, 8)", _range_loop,
     [(f32(n, 2),) for n in (4, 5, 6, 7, 8)],
     graph([inp("x", "f32", ["n", 2])], [{"op": "add", "in": ["x", 1], "out": "z"}], ["z"]), [{"input": 0, "dim": 0, "as": "int"}], None),
    ("automatic dynamic: x.sin() (2, 3, 4, 5)", lambda x: x.sin(),
     [(f32(n),) for n in (2, 3, 4, 5)],
     graph([inp("x", "f32", ["n"])], [{"op": "sin", "in": ["x"], "out": "z"}], ["z"]), [], None),
    ("0/1 rule: x + 1 (0, 1, 2, 3)", lambda x: x + 1,
     [(f32(n),) for n in (0, 1, 2, 3)],
     graph([inp("x", "f32", ["n"])], [{"op": "add", "in": ["x", 1], "out": "z"}], ["z"]), [], None),
    ("0/1 rule from a dynamic dim: x + 1 (5, 6, 1, 7)", lambda x: x + 1,
     [(f32(n),) for n in (5, 6, 1, 7)],
     graph([inp("x", "f32", ["n"])], [{"op": "add", "in": ["x", 1], "out": "z"}], ["z"]), [], None),
    ("mark_dynamic(x, 0): x.cos() (2, 3, 4)", lambda x: x.cos(),
     [(f32(n),) for n in (2, 3, 4)],
     graph([inp("x", "f32", ["n"])], [{"op": "cos", "in": ["x"], "out": "z"}], ["z"]), [], [[0, 0]]),
    ("if x.shape[0] > 4 (2, 3, 5, 6, 3)", _branch,
     [(f32(n),) for n in (2, 3, 5, 6, 3)],
     graph([inp("x", "f32", ["n"])], [{"op": "mul", "in": ["x", 2], "out": "z"}], ["z"]),
     [{"input": 0, "dim": 0, "as": "bool", "cmp": "gt", "value": 4}], None),
    ("recompile limit: range(x.shape[0]) (1..12)", _range_loop,
     [(f32(n, 2),) for n in range(1, 13)],
     graph([inp("x", "f32", ["n", 2])], [{"op": "add", "in": ["x", 1], "out": "z"}], ["z"]), [{"input": 0, "dim": 0, "as": "int"}], None),
    ("two dims: x + y ((2,3), (2,4), (3,4), (4,5))", lambda x, y: x + y,
     [(f32(a, b), f32(a, b)) for a, b in ((2, 3), (2, 4), (3, 4), (4, 5))],
     graph([inp("x", "f32", ["a", "b"]), inp("y", "f32", ["a", "b"])], [{"op": "add", "in": ["x", "y"], "out": "z"}], ["z"]), [], None),
    ("reshape(-1) of [n, 4] (2, 3, 5)", lambda x: x.reshape(-1),
     [(f32(n, 4),) for n in (2, 3, 5)],
     graph([inp("x", "f32", ["n", 4])],
           [{"op": "sym_size", "in": ["x"], "out": "s", "attrs": {"dim": 0}}, {"op": "sym_mul", "in": ["s", 4], "out": "m"},
            {"op": "reshape", "in": ["x", "m"], "out": "z"}], ["z"]), [], None),
    ("broadcast: x * y, y of size 1 (x: 3, 4, 5)", lambda x, y: x * y,
     [(f32(n), f32(1)) for n in (3, 4, 5)],
     graph([inp("x", "f32", ["n"]), inp("y", "f32", ["m"])], [{"op": "mul", "in": ["x", "y"], "out": "z"}], ["z"]), [], None),
    ("torch.cat([x, x]) (2, 3, 4)", lambda x: torch.cat([x, x]),
     [(f32(n, 2),) for n in (2, 3, 4)],
     graph([inp("x", "f32", ["n", 2])], [{"op": "concat", "in": ["x", "x"], "out": "z", "attrs": {"dim": 0}}], ["z"]), [], None),
    ("x.new_zeros(x.shape[0] * 2) (2, 3, 4)", lambda x: x.new_zeros(x.shape[0] * 2),
     [(f32(n),) for n in (2, 3, 4)],
     graph([inp("x", "f32", ["n"])],
           [{"op": "sym_size", "in": ["x"], "out": "s", "attrs": {"dim": 0}}, {"op": "sym_mul", "in": ["s", 2], "out": "m"},
            {"op": "full", "in": ["m"], "out": "z", "attrs": {"value": 0.0, "dtype": "f32"}}], ["z"]), [], None),
    ("dtype change: x * 2 (f32 then f64, size 4)", lambda x: x * 2,
     [(torch.zeros(4),), (torch.zeros(4, dtype=torch.float64),)],
     None, [], None),
]


def torch_compiles(fn, calls, mark):
    torch._dynamo.reset()
    cnt = torch._dynamo.testing.CompileCounter()
    compiled = torch.compile(fn, backend=cnt)
    for args in calls:
        if mark:
            for i, d in mark:
                torch._dynamo.mark_dynamic(args[i], d)
        compiled(*args)
    return cnt.frame_count


DTYPES = {torch.float32: "f32", torch.float64: "f64"}


def shapejit_compiles(tool, g, observed, calls, pins, config_path):
    with open(config_path) as f:
        config = json.load(f)
    if pins:
        config.setdefault("policy", {})["sites"] = {"f": {"dynamic": pins}}
    with tempfile.TemporaryDirectory() as tmp:
        cfg = os.path.join(tmp, "config.json")
        with open(cfg, "w") as f:
            json.dump(config, f)
        trace = os.path.join(tmp, "trace.jsonl")
        with open(trace, "w") as f:
            f.write(json.dumps({"format": "shapejit-trace", "version": 1, "note": "torch_recompiles.py"}) + "\n")
            graphs = g if isinstance(g, list) else [g]
            # A dtype change is a new graph in the trace: one graph line per dtype.
            written = set()
            for args in calls:
                # Tensors the function reads from its closure are the graph's trailing inputs.
                args = tuple(args) + tuple(W for _ in range(len(graphs[0]["inputs"]) - len(args)))
                dts = [DTYPES[a.dtype] for a in args]
                key = tuple(dts)
                if key not in written:
                    gg = json.loads(json.dumps(graphs[0]))
                    for spec, dt in zip(gg["inputs"], dts):
                        spec["dtype"] = dt
                    f.write(json.dumps({"kind": "graph", "site": "f", "graph": gg, "observed": observed}) + "\n")
                    written.add(key)
                inputs = [{"dtype": DTYPES[a.dtype], "shape": list(a.shape)} for a in args]
                f.write(json.dumps({"kind": "call", "site": "f", "inputs": inputs}) + "\n")
        run = subprocess.run([tool, "replay", trace, "--config", cfg, "--exec", "none", "--json", "--no-progress"],
                             capture_output=True, text=True)
        if run.returncode != 0:
            raise SystemExit(f"shapejit replay failed on {trace}:\n{run.stderr}")
        out = run.stdout
        result = json.loads(out)
        row = result[0] if isinstance(result, list) else result
        site = row["sites"]["f"] if "sites" in row else row
        return site["compiles"], site.get("graph_breaks", 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapejit", default=os.path.join(ROOT, "build", "shapejit"))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    dynamo = os.path.join(ROOT, "bench", "policies", "dynamo.json")
    default = os.path.join(ROOT, "bench", "policies", "default.json")
    rows = []
    for name, fn, calls, g, observed, pins in CASES:
        if g is None:  # the dtype case: the same graph as x * 2
            g = graph([inp("x", "f32", ["n"])], [{"op": "mul", "in": ["x", 2], "out": "z"}], ["z"])
        t = torch_compiles(fn, calls, pins)
        d, d_breaks = shapejit_compiles(args.shapejit, g, observed, calls, pins, dynamo)
        s, s_breaks = shapejit_compiles(args.shapejit, g, observed, calls, pins, default)
        rows.append({"function": name, "torch": t, "dynamo.json": d, "dynamo.json breaks": d_breaks,
                     "default.json": s, "default.json breaks": s_breaks})
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"torch {torch.__version__}, CompileCounter (frames compiled), default Dynamo config")
    print("| function (sizes) | torch compiles | dynamo.json | default.json |")
    print("| --- | ---: | ---: | ---: |")
    same = 0
    for r in rows:
        mark = "" if r["torch"] == r["dynamo.json"] else " **differs**"
        same += r["torch"] == r["dynamo.json"]

        def cell(k):
            b = r[k + " breaks"]
            return f"{r[k]}" + (f" + {b} graph breaks" if b else "")
        print(f"| {r['function']} | {r['torch']} | {cell('dynamo.json')}{mark} | {cell('default.json')} |")
    print(f"\ndynamo.json matches torch on {same} of {len(rows)} functions")


if __name__ == "__main__":
    sys.exit(main())
