#!/usr/bin/env python3
"""Kernel time of the MiniLM-size encoder (examples/encoder.py) by sequence
length, one sentence at a time: is the time smooth in the length, no length
costing more than the next multiple of 16 does (issue 15)?

Each length's minimum over --rounds interleaved rounds of 3 calls, after a
first call that compiles (the length is symbolic: one compile in all). Prints
each length's time and every length that costs more than the next multiple
of 16, two ways: by the lengths' minima over all rounds, and by the median
over rounds of the length's time over its multiple's in the same round (the
two measured within a second of each other, so that the machine's drift
over minutes, which the minima of different rounds take in, cancels). Not
run by CI:

    PYTHONPATH=build/python taskset -c 0,1 python bench/python/encoder_lengths.py [--lo 8] [--hi 64] [--rounds 3] [--frozen]
"""
import argparse
import pathlib
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))
import encoder as E  # noqa: E402

import shapejit as sj  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lo", type=int, default=8)
    ap.add_argument("--hi", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--frozen", action="store_true", help="freeze the weights (shapejit.freeze: packed once)")
    args = ap.parse_args()
    params = E.random_params()
    if args.frozen:
        sj.freeze(params)
    f = sj.jit(E.encoder(params))
    lengths = range(args.lo, args.hi + 1)
    rounds = []  # per round: each length's minimum of its 3 calls
    for _ in range(args.rounds):
        times = {}
        for t in lengths:
            ids, mask = np.full((1, t), 1500, np.int64), np.ones((1, t), np.int64)
            f(ids, mask)
            for _ in range(3):
                t0 = time.perf_counter()
                f(ids, mask)
                times[t] = min(times.get(t, float("inf")), time.perf_counter() - t0)
        rounds.append(times)
    best = {t: min(r[t] for r in rounds) for t in lengths}
    print(" ".join(f"{t}:{best[t] * 1e3:.2f}" for t in lengths))
    pairs = [(t, (t + 15) // 16 * 16) for t in lengths if (t + 15) // 16 * 16 in best and t % 16]
    over = [(t, m) for t, m in pairs if best[t] > best[m]]
    print("by the minima, lengths costing more than the next multiple of 16:",
          ", ".join(f"{t} ({best[t] * 1e3:.2f} ms vs {m}: {best[m] * 1e3:.2f}, +{(best[t] / best[m] - 1) * 100:.1f}%)" for t, m in over) or "none")
    paired = {t: statistics.median(r[t] / r[m] for r in rounds) for t, m in pairs}
    print(f"by the median over {args.rounds} rounds of the time over the multiple's in the same round:",
          ", ".join(f"{t} ({paired[t]:.3f})" for t, _ in pairs if paired[t] > 1) or "none",
          f"(highest: {max(paired, key=paired.get)} at {max(paired.values()):.3f})" if paired else "")
    print(f"compiles: {f.stats()['compiles']}")


if __name__ == "__main__":
    main()
