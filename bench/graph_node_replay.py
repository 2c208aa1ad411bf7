#!/usr/bin/env python3
"""Graph replay (issue 24): per-kernel pass durations of torch.compile's kernels replayed as CUDA
graph nodes (node by node, in place) against the same kernels launched outside a graph.

Runs examples/infer_compiled.py twice under `gpuprof replay --passes N`:
  graph   --graph-replay node, torch.compile(mode="reduce-overhead"): the kernels run in CUDA graphs
  kernel  torch.compile(mode="default"): the same Triton kernels, launched one by one
and prints, per kernel name, the median pass duration of each and their ratio, from the two DBs'
GPUPROF_REPLAY_KERNEL / GPUPROF_REPLAY_PASS rows (replayMode 'node' for the graph run). Both runs
also time the replay itself: replayNs summed over the replayed rows.

    python3 bench/graph_node_replay.py --gpuprof build/gpu/bin/gpuprof --out /tmp/graph_bench

Without a CUDA GPU it prints "skipped: ..." and exits 0.
"""

import argparse
import glob
import os
import sqlite3
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(gpuprof, out, name, flags, mode, steps, passes):
    out_dir = os.path.join(out, name)
    command = [gpuprof, "replay", "--passes", str(passes), *flags, "-o", out_dir, "--",
               sys.executable, os.path.join(REPO, "examples", "infer_compiled.py"), "--mode", mode,
               "--steps", str(steps)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"{name}: `{' '.join(command)}` exited {result.returncode}:\n{result.stderr[-3000:]}")
    # torch.compile's compile workers get DBs of their own: the one with replay rows is the program's.
    dbs = [db for db in glob.glob(os.path.join(out_dir, "**", "ascend_pytorch_profiler*.db"), recursive=True)
           if sqlite3.connect(db).execute("SELECT COUNT(*) FROM GPUPROF_REPLAY_KERNEL").fetchone()[0] > 0]
    if len(dbs) != 1:
        raise SystemExit(f"{name}: expected one DB with replay rows under {out_dir}, found {dbs}")
    lines = [line for line in result.stdout.splitlines() if line.startswith("step ")]
    return dbs[0], lines


def durations(db, mode):
    conn = sqlite3.connect(db)
    has_mode = any(c[1] == "replayMode" for c in conn.execute("PRAGMA table_info(GPUPROF_REPLAY_KERNEL)"))
    where = "k.replayed = 1" + (f" AND k.replayMode = '{mode}'" if has_mode else "")
    by_name = {}
    for name, duration in conn.execute(
            "SELECT s.value, p.durationNs FROM GPUPROF_REPLAY_PASS p JOIN GPUPROF_REPLAY_KERNEL k "
            "ON k.id = p.kernelId JOIN STRING_IDS s ON s.id = k.name WHERE " + where):
        by_name.setdefault(name, []).append(duration)
    replay_ns = conn.execute("SELECT COALESCE(SUM(replayNs), 0), COUNT(*) FROM GPUPROF_REPLAY_KERNEL k "
                             "WHERE " + where).fetchone()
    conn.close()
    return by_name, replay_ns


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpuprof", default=os.path.join(REPO, "build", "gpu", "bin", "gpuprof"))
    parser.add_argument("--out", default="/tmp/gpuprof_graph_bench")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--passes", type=int, default=5)
    args = parser.parse_args()
    try:
        import torch
        if not torch.cuda.is_available():
            print("skipped: no CUDA GPU (torch.cuda.is_available() is False)")
            return 0
    except ImportError:
        print("skipped: PyTorch is not importable")
        return 0
    graph_db, graph_lines = run(args.gpuprof, args.out, "graph", ["--graph-replay", "node"], "reduce-overhead",
                                args.steps, args.passes)
    kernel_db, kernel_lines = run(args.gpuprof, args.out, "kernel", [], "default", args.steps, args.passes)
    graph, graph_replay = durations(graph_db, "node")
    kernel, kernel_replay = durations(kernel_db, "kernel")
    print(f"checksums equal between the two runs: {graph_lines == kernel_lines} ({len(graph_lines)} steps)")
    print(f"graph run: {graph_replay[1]} kernel nodes replayed, replay held {graph_replay[0] / 1e6:.1f} ms; "
          f"kernel run: {kernel_replay[1]} launches replayed, replay held {kernel_replay[0] / 1e6:.1f} ms")
    print(f"{'kernel':60s} {'node passes':>11s} {'node median us':>14s} {'launch passes':>13s} "
          f"{'launch median us':>16s} {'node/launch':>11s}")
    for name in sorted(set(graph) | set(kernel)):
        g = graph.get(name, [])
        k = kernel.get(name, [])
        gm = statistics.median(g) / 1e3 if g else None
        km = statistics.median(k) / 1e3 if k else None
        ratio = f"{gm / km:.2f}" if gm and km else "-"
        print(f"{name[:60]:60s} {len(g):11d} {gm if gm is not None else float('nan'):14.2f} {len(k):13d} "
              f"{km if km is not None else float('nan'):16.2f} {ratio:>11s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
