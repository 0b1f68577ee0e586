#!/usr/bin/env python3
"""A decoder-only transformer served request by request, as a trace.

The interpreter (a serving loop) calls three sites per forward pass:

  embed   token ids [b, t] -> hidden states [b, t, D]             (embedding gather)
  block   one transformer layer, called once per layer (the same graph, so
          layers after the first hit the first one's entry):
          rms_norm -> q, k, v projections -> the new keys and values appended
          to the key/value cache (concat) -> causal attention (scores, mask
          built from arange over the cache length, softmax, matmul) -> output
          projection and residual -> rms_norm -> silu feed-forward ->
          residual. Outputs: the hidden states and the grown cache.
  head    final rms_norm of the last position, the vocabulary projection and
          greedy argmax (the next token)

Dims that vary in a real server are symbolic in the graphs: the batch `b`,
the new positions `t` and the cache length `p`; sizes derived from them (the
mask, the reshapes) are traced with sym_size/sym_add, never frozen. Model
widths are constants (D=64, 4 heads of 16, feed-forward 256, vocabulary 512,
2 layers): small enough that a replay of the first 500 requests of the Azure
conversation trace runs in minutes on 2 cores, while every shape dynamic is
the real one.

Requests come from the Azure LLM inference trace 2023 (../shared/data, copied
to bench/workloads/azure-llm-2023/; CC BY 4.0, Patel et al., "Splitwise",
ISCA 2024): one prefill call per request over its ContextTokens positions
(cache length 0), then one decode call per generated token after the first,
each with one new position and a cache one longer than the step before.

Usage: decoder.py --csv FILE [--requests N] [--max-decode K] --out TRACE.jsonl
"""
import argparse
import csv
import json
import sys

D, HEADS, HEAD_DIM, FFN, VOCAB, LAYERS = 64, 4, 16, 256, 512, 2
assert HEADS * HEAD_DIM == D


def tensor(name, dtype, shape):
    return {"name": name, "dtype": dtype, "shape": shape}


def node(op, ins, out, **attrs):
    n = {"op": op, "in": ins, "out": out}
    if attrs:
        n["attrs"] = attrs
    return n


def embed_graph():
    return {"inputs": [tensor("ids", "i64", ["b", "t"]), tensor("table", "f32", [VOCAB, D])],
            "nodes": [node("embedding", ["table", "ids"], "h")],
            "outputs": ["h"]}


def heads(src, lo, name):
    """Columns [lo, lo + D) of the fused projection as [b, heads, t, head_dim]."""
    return [node("slice", [src, lo, lo + D, 1], name + "_flat", dim=-1),
            node("reshape", [name + "_flat", "b", "t", HEADS, HEAD_DIM], name + "_split"),
            node("transpose", [name + "_split"], name, dim0=1, dim1=2)]


def block_graph():
    nodes = [
        node("sym_size", ["x"], "b", dim=0),
        node("sym_size", ["x"], "t", dim=1),
        node("sym_size", ["k_cache"], "p", dim=2),
        node("rms_norm", ["x", "norm1"], "n1"),
        node("matmul", ["n1", "w_qkv"], "qkv"),
        *heads("qkv", 0, "q"),
        *heads("qkv", D, "k_new"),
        *heads("qkv", 2 * D, "v_new"),
        node("concat", ["k_cache", "k_new"], "k", dim=2),
        node("concat", ["v_cache", "v_new"], "v", dim=2),
        node("transpose", ["k"], "k_t", dim0=-1, dim1=-2),
        node("matmul", ["q", "k_t"], "scores"),
        node("mul", ["scores", HEAD_DIM ** -0.5], "scaled"),
        # Causal mask: query i sits at position p + i and sees keys 0..p+i.
        node("sym_add", ["p", "t"], "s"),
        node("arange", ["p", "s", 1], "q_pos"),
        node("unsqueeze", ["q_pos"], "q_col", dim=1),
        node("arange", [0, "s", 1], "k_pos"),
        node("le", ["k_pos", "q_col"], "visible"),
        node("where", ["visible", "scaled", -1e30], "masked"),
        node("softmax", ["masked"], "probs", dim=-1),
        node("matmul", ["probs", "v"], "attn"),
        node("transpose", ["attn"], "attn_t", dim0=1, dim1=2),
        node("reshape", ["attn_t", "b", "t", D], "attn_flat"),
        node("matmul", ["attn_flat", "w_o"], "attn_out"),
        node("add", ["x", "attn_out"], "h"),
        node("rms_norm", ["h", "norm2"], "n2"),
        node("matmul", ["n2", "w_up"], "up"),
        node("silu", ["up"], "act"),
        node("matmul", ["act", "w_down"], "down"),
        node("add", ["h", "down"], "y"),
    ]
    return {"inputs": [tensor("x", "f32", ["b", "t", D]),
                       tensor("k_cache", "f32", ["b", HEADS, "p", HEAD_DIM]),
                       tensor("v_cache", "f32", ["b", HEADS, "p", HEAD_DIM]),
                       tensor("norm1", "f32", [D]),
                       tensor("w_qkv", "f32", [D, 3 * D]),
                       tensor("w_o", "f32", [D, D]),
                       tensor("norm2", "f32", [D]),
                       tensor("w_up", "f32", [D, FFN]),
                       tensor("w_down", "f32", [FFN, D])],
            "nodes": nodes,
            "outputs": ["y", "k", "v"]}


def head_graph():
    return {"inputs": [tensor("x", "f32", ["b", "t", D]),
                       tensor("norm", "f32", [D]),
                       tensor("w_vocab", "f32", [D, VOCAB])],
            "nodes": [node("sym_size", ["x"], "t", dim=1),
                      node("slice", ["x", -1, "t", 1], "last", dim=1),
                      node("rms_norm", ["last", "norm"], "n"),
                      node("matmul", ["n", "w_vocab"], "logits"),
                      node("argmax", ["logits"], "next", dim=-1)],
            "outputs": ["next"]}


# What the serving loop reads as a number while tracing: it branches on
# whether a call is a decode step (t == 1) to pick its sampling path. A
# comparison guards the predicate only, never the size.
OBSERVED = {"embed": [], "block": [{"input": 0, "dim": 1, "as": "bool", "cmp": "eq", "value": 1}], "head": []}


def shape(dtype, dims):
    return {"dtype": dtype, "shape": dims}


def forward_calls(t, p, t_us):
    """The calls of one forward pass over t new positions with a cache of p."""
    calls = [("embed", [shape("i64", [1, t]), shape("f32", [VOCAB, D])])]
    block = [shape("f32", [1, t, D]), shape("f32", [1, HEADS, p, HEAD_DIM]), shape("f32", [1, HEADS, p, HEAD_DIM]),
             shape("f32", [D]), shape("f32", [D, 3 * D]), shape("f32", [D, D]), shape("f32", [D]),
             shape("f32", [D, FFN]), shape("f32", [FFN, D])]
    calls += [("block", block)] * LAYERS
    calls.append(("head", [shape("f32", [1, t, D]), shape("f32", [D]), shape("f32", [D, VOCAB])]))
    return [{"kind": "call", "site": site, "t_us": t_us, "inputs": inputs} for site, inputs in calls]


def read_requests(path, n):
    with open(path, newline="") as f:
        rows = csv.DictReader(f)
        missing = {"ContextTokens", "GeneratedTokens"} - set(rows.fieldnames or [])
        if missing:
            sys.exit(f"{path}: missing columns {sorted(missing)}")
        requests = []
        for line, row in enumerate(rows, start=2):
            if n is not None and len(requests) == n:
                break
            try:
                context, generated = int(row["ContextTokens"]), int(row["GeneratedTokens"])
            except ValueError:
                sys.exit(f"{path}:{line}: ContextTokens and GeneratedTokens must be integers")
            if context < 1 or generated < 1:
                sys.exit(f"{path}:{line}: a request needs at least one context and one generated token")
            requests.append((context, generated))
    return requests


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", required=True, help="an Azure LLM inference trace CSV")
    ap.add_argument("--requests", type=int, default=None, help="the first N requests (default: all)")
    ap.add_argument("--max-decode", type=int, default=None,
                    help="at most K decode steps per request (small test traces; the default keeps them all)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    requests = read_requests(args.csv, args.requests)
    note = (f"decoder-only transformer (D={D}, {HEADS} heads, {LAYERS} layers), {len(requests)} requests of "
            f"{args.csv.rsplit('/', 1)[-1]}; Azure LLM inference trace 2023, CC BY 4.0 (Patel et al., Splitwise, ISCA 2024)")
    graphs = {"embed": embed_graph(), "block": block_graph(), "head": head_graph()}
    with open(args.out, "w") as f:
        f.write(json.dumps({"format": "shapejit-trace", "version": 1, "note": note}) + "\n")
        f.write("# generated by bench/workloads/decoder.py " + " ".join(sys.argv[1:]) + "\n")
        for site, graph in graphs.items():
            f.write(json.dumps({"kind": "graph", "site": site, "graph": graph, "observed": OBSERVED[site]}) + "\n")
        t_us = 0
        for context, generated in requests:
            decode = generated - 1 if args.max_decode is None else min(generated - 1, args.max_decode)
            # Prefill over the prompt, then one position per generated token;
            # the first token comes out of the prefill.
            for step in range(decode + 1):
                t, p = (context, 0) if step == 0 else (1, context + step - 1)
                for call in forward_calls(t, p, t_us):
                    f.write(json.dumps(call, separators=(",", ":")) + "\n")
                t_us += 1000


if __name__ == "__main__":
    main()
