"""shapejit's first steps: a NumPy function compiled once for every batch size.

    PYTHONPATH=build/python build/venv/bin/python examples/quickstart.py

The weight W is read from the globals, so it is an input of the compiled
graph, not a constant: new weights do not recompile. The sizes are SymInts:
arithmetic on them is traced, and the branch on the sequence length guards
the predicate, not the value.
"""
import math

import numpy as np

import shapejit as sj

rng = np.random.default_rng(0)
W = rng.standard_normal((64, 256)).astype(np.float32)


@sj.jit
def ffn(x):
    b, t, d = x.shape
    if t > 512:  # guard_bool: one entry serves every t <= 512
        x = x[:, :512]
    return sj.gelu(x @ W).reshape(b * sj.sym_min(t, 512), -1)


def main():
    worst = 0.0
    for batch, tokens in [(2, 16), (8, 16), (3, 40)]:
        x = rng.standard_normal((batch, tokens, 64)).astype(np.float32)
        y = ffn(x)
        h = x @ W
        want = (0.5 * h * (1 + np.vectorize(math.erf)(h / np.sqrt(2)))).reshape(batch * tokens, -1)
        worst = max(worst, float(np.max(np.abs(y - want))))
        print(f"x {x.shape} -> y {y.shape}")
    stats = ffn.stats()
    print(f"calls {stats['calls']}, compiles {stats['compiles']}, worst difference from NumPy {worst:.1e}")
    print(ffn.explain(), end="")
    return stats, worst


if __name__ == "__main__":
    main()
