#!/usr/bin/env python3
"""The cache tiers' measurements (bench/results/README.md, issue 14), on the decoder trace of
the main job (scripts/run.sh makes it; this script makes it when missing).

  python3 bench/cache/measure.py [--requests N] [--only tiers|async|outage]

tiers:  a jax-like policy (a compile per shape) replayed three times with one
        redis-server: a fresh disk folder A (compiles), A again (disk loads),
        a fresh folder B (Redis loads). Prints each run's compile count, and the
        median milliseconds a kernel took from each origin.
async:  the default and jax policies with compile.async off and on, in one
        lockstep replay with an empty disk tier: p50/p99/max call latency,
        total time, stand-in calls.
outage: the jax policy with Redis, the server killed a third of the way in
        and started again at two thirds: calls failed (the replay stops at the
        first) and the slowest call.
Everything runs on build/shapejit; nothing here is needed by the build or CI.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOOL = os.path.join(ROOT, "build", "shapejit")


def trace(requests):
    path = os.path.join(ROOT, "build", "traces", f"decoder-conv-{requests}.jsonl")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        subprocess.run([os.path.join(ROOT, "build", "venv", "bin", "python"), os.path.join(ROOT, "bench", "workloads", "decoder.py"),
                        "--csv", os.path.join(ROOT, "bench", "workloads", "azure-llm-2023", "AzureLLMInferenceTrace_conv.csv"),
                        "--requests", str(requests), "--out", path], check=True)
    return path


class Redis:
    def __init__(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                      "--logfile", "/dev/null"])
        for _ in range(500):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.1).close()
                return
            except OSError:
                time.sleep(0.01)
        raise RuntimeError("redis-server did not start")

    def kill(self):
        if self.proc:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.proc = None

    @property
    def url(self):
        return f"redis://127.0.0.1:{self.port}"


def write_config(folder, name, config):
    path = os.path.join(folder, name + ".json")
    with open(path, "w") as f:
        json.dump(config, f)
    return path


def replay(trace_path, configs, env=None):
    cmd = [TOOL, "replay", trace_path, "--json", "--no-progress"]
    for c in configs:
        cmd += ["--config", c]
    t0 = time.monotonic()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return rows, time.monotonic() - t0, out.stderr


def jax(extra=None):
    c = {"policy": {"mode": "always_static", "cache_size_limit": 1000000}, "log": {"recompiles": False}}
    for k, v in (extra or {}).items():
        c.setdefault(k, {}).update(v)
    return c


def tiers(requests, work):
    t = trace(requests)
    redis = Redis()
    redis.start()
    try:
        runs = [("1: fresh folder A", "A"), ("2: folder A again", "A"), ("3: fresh folder B, same Redis", "B")]
        for label, folder in runs:
            c = write_config(work, "jax", jax({"cache": {"disk": {"path": os.path.join(work, folder)}, "remote": {"redis": redis.url}}}))
            [row], secs, _ = replay(t, [c])
            k = row["cache"]["kernel_ms"]
            print(f"{label:32s} compiles(entries) {row['compiles']:5d}  backend_compiles {row['backend_compiles']:5d}  "
                  f"disk_loads {row['disk_loads']:5d}  remote_loads {row['remote_loads']:5d}  compile_ms {row['compile_ms']:9.1f}  "
                  f"p50 ms: compile {k['compile_p50']:.2f} disk {k['disk_load_p50']:.3f} redis {k['remote_load_p50']:.3f}  "
                  f"total_ms {row['total_ms']:9.1f}  wall {secs:.1f}s", flush=True)
    finally:
        redis.kill()


def async_compare(requests, work):
    t = trace(requests)
    configs = []
    for policy, base in (("default", {"log": {"recompiles": False}}), ("jax", jax())):
        for on in (False, True):
            c = json.loads(json.dumps(base))
            c.setdefault("compile", {})["async"] = on
            c.setdefault("cache", {})["disk"] = {"max_mb": 0}  # every kernel compiles
            configs.append(write_config(work, f"{policy}-async-{'on' if on else 'off'}", c))
    rows, secs, _ = replay(t, configs)
    for r in rows:
        print(f"{r['config']:18s} compiles {r['compiles']:5d}  stand_in_calls {r['stand_in_calls']:6d}  call ms p50 {r['call_ms_p50']:.3f} "
              f"p99 {r['call_ms_p99']:.3f} max {r['call_ms_max']:.1f}  total_ms {r['total_ms']:.1f}  compile_ms {r['compile_ms']:.1f}", flush=True)
    print(f"(one lockstep replay, {secs:.1f} s wall)")


def outage(requests, work):
    t = trace(requests)
    redis = Redis()
    redis.start()
    c = write_config(work, "jax-redis", jax({"cache": {"disk": {"max_mb": 0}, "remote": {"redis": redis.url, "cooldown_ms": 1000}}}))
    cmd = [TOOL, "replay", t, "--json", "--no-progress", "--config", c]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # A dry run says how long the replay takes; here, a fixed schedule: kill
    # after 1/3 of the expected time (measured by an earlier run of this
    # function: --outage-at), start again at 2/3.
    expected = float(os.environ.get("OUTAGE_EXPECTED_S", "60"))
    time.sleep(expected / 3)
    redis.kill()
    killed = time.monotonic() - t0
    time.sleep(expected / 3)
    redis.start()
    restarted = time.monotonic() - t0
    out, err = proc.communicate()
    redis.kill()
    print(f"redis killed at {killed:.1f} s, started again at {restarted:.1f} s; replay exit {proc.returncode} after {time.monotonic() - t0:.1f} s")
    for line in err.splitlines():
        print("  log:", line)
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    for r in rows:
        rm = r["cache"]["remote"]
        print(f"calls {r['calls']}  errors {r['errors']}  compiles {r['compiles']}  slowest call {r['call_ms_max']:.1f} ms  p99 {r['call_ms_p99']:.3f} ms  "
              f"redis: hits {rm['hits']} misses {rm['misses']} errors {rm['errors']} skipped {rm['skipped']} writes {rm['writes']} dropped {rm['dropped']}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--only", choices=["tiers", "async", "outage"])
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="shapejit-cache-bench-")
    try:
        for name, fn in (("tiers", tiers), ("async", async_compare), ("outage", outage)):
            if a.only in (None, name):
                print(f"== {name} ({a.requests} requests)", flush=True)
                fn(a.requests, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
