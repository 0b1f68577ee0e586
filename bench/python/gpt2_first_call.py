"""The first call of GPT-2-small traced whole, each in a fresh process.

examples/gpt2_numpy.py's forward pass (12 layers, 768 wide, 12 heads, vocab
50257, random weights) on a prompt of 8 tokens, under @shapejit.jit with a
disk tier in a new folder. Each round runs two processes one after the
other: the first compiles every kernel (a cold compile), the second finds
them on the disk tier. Each prints its first call's time and what the Jit's
stats say it spent (trace, specialize, compile and its phases), and how much
that call added to the process's peak resident memory.

    taskset -c 0,1 build/venv/bin/python bench/python/gpt2_first_call.py [ROUNDS]
"""
import json
import os
import subprocess
import sys
import tempfile
import time

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def vm_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(field + " not in /proc/self/status")


def first_call(disk):
    sys.path.insert(0, os.path.join(root, "examples"))
    import numpy as np
    import shapejit
    import gpt2_numpy

    params = gpt2_numpy.random_params(50257, 1024, 768, 12)
    ids = np.arange(8)
    f = shapejit.jit(gpt2_numpy.forward, config={"cache": {"disk": {"path": disk}}})
    # The peak from here on: Linux resets VmHWM to the current RSS.
    with open("/proc/self/clear_refs", "w") as f_:
        f_.write("5")
    peak_before = vm_kb("VmHWM")
    t0 = time.perf_counter()
    f(ids, params, 12)
    call_ms = 1e3 * (time.perf_counter() - t0)
    peak_after = vm_kb("VmHWM")
    s = f.stats()
    print(json.dumps({"call_ms": call_ms, "trace_ms": s["trace_ms"], "specialize_ms": s["specialize_ms"],
                      "compile_ms": s["compile_ms"], "phases_ms": s["compile_phases_ms"], "steps": s["steps"],
                      "added_peak_mb": (peak_after - peak_before) / 1024}))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        first_call(sys.argv[2])
        return
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    env = dict(os.environ, PYTHONPATH=os.path.join(root, "build", "python"))
    for r in range(rounds):
        with tempfile.TemporaryDirectory() as disk:
            for kind in ("cold", "disk"):
                out = subprocess.run([sys.executable, __file__, "--child", disk], env=env, check=True,
                                     capture_output=True, text=True).stdout
                s = json.loads(out.strip().splitlines()[-1])
                ph = s["phases_ms"]
                print(f"round {r} {kind}: call {s['call_ms']:.0f} ms = trace {s['trace_ms']:.0f} + specialize "
                      f"{s['specialize_ms']:.0f} + compile {s['compile_ms']:.0f} (lower {ph['lower']:.0f}, steps "
                      f"{ph['steps']:.0f}: {s['steps']['compiled']} of {s['steps']['distinct']} distinct compiled) "
                      f"+ run; added peak {s['added_peak_mb']:.0f} MB")


if __name__ == "__main__":
    main()
