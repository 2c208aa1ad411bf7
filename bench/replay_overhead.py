#!/usr/bin/env python3
"""Kernel-replay costs on examples/train_plain.py (issue 5, Done when), in one run on the GPU machine.

(a) Idle cost: step time of train_plain under `gpuprof replay -k <a kernel that never runs>`
    (replay configured: allocations tracked, every launch checked, nothing selected) against the
    same script under `gpuprof run` and plain, median step time over steps warmup+1..N.
(b) Time per replayed kernel against Nsight Compute's kernel replay with one timing metric: the
    first C launches of kernels matching a regex, replayed by
      ncu --replay-mode kernel --metrics gpu__time_duration.sum --clock-control none -k regex:R -c C
    and by
      gpuprof replay --passes P -k regex:R -c C
    on train_plain --steps S. Time per kernel = (wall time - the plain run's wall time) / C. Also
    the kernel durations each tool reports (ncu's gpu__time_duration.sum; gpuprof's median pass),
    for the same kernels by launch order.

    python3 bench/replay_overhead.py --gpuprof BUILD/bin/gpuprof [--steps 200] [--repeats 2]

Prints one table per part, each with the ratio to the peer. Needs torch with CUDA; ncu for (b).
"""

import argparse
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import collection_overhead as co  # noqa: E402  (train_plain parsing shared with the collection benchmark)

NEVER_KERNEL = "gpuprof_bench_no_such_kernel"


def run(cmd, timeout):
    begin = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    return proc, time.perf_counter() - begin


def app(args, steps):
    return [args.python, args.script, "--device", "cuda", "--steps", str(steps)]


def idle_part(args, work):
    variants = {
        "plain": lambda r: app(args, args.steps),
        "gpuprof run": lambda r: [args.gpuprof, "run", "-o", str(work / f"run{r}"), "--"] + app(args, args.steps),
        "gpuprof replay (idle)": lambda r: [args.gpuprof, "replay", "-k", NEVER_KERNEL, "-o", str(work / f"idle{r}"),
                                            "--"] + app(args, args.steps),
    }
    medians = {name: [] for name in variants}
    for repeat in range(args.repeats):
        for name, make in variants.items():  # interleaved, so drift hits every variant alike
            proc, _ = run(make(repeat), args.timeout)
            if proc.returncode != 0:
                sys.exit(f"replay_overhead: {name} exited {proc.returncode}:\n{(proc.stdout + proc.stderr)[-3000:]}")
            medians[name].append(statistics.median(co.parse_steps(proc.stdout, args.steps, args.warmup)))
    plain = statistics.median(medians["plain"])
    run_ms = statistics.median(medians["gpuprof run"])
    print(f"\n(a) replay configured, no kernel selected: train_plain --steps {args.steps}, median step over steps "
          f"{args.warmup + 1}..{args.steps}, median of {args.repeats} runs")
    print(f"{'variant':<24} {'step ms':>9} {'vs plain':>9} {'vs gpuprof run':>15}")
    for name in variants:
        ms = statistics.median(medians[name])
        print(f"{name:<24} {ms:>9.3f} {co.pct(ms, plain):>9} {co.pct(ms, run_ms):>15}")
    idle = statistics.median(medians["gpuprof replay (idle)"])
    print(f"target: replay configured with nothing selected costs <= 1% of the step time: "
          f"{(idle - run_ms) / plain * 100:+.2f}% of the plain step over gpuprof run "
          f"({'met' if idle - run_ms <= 0.01 * plain else 'NOT met'}; step-to-step noise between runs is several %)")
    return plain


LAUNCH_RE = re.compile(r"^launch_loop: (\d+) launches, ([0-9.]+) ns per launch", re.M)


def launch_part(args, work):
    """(c) The hook's cost per launch, from an empty-kernel loop (far less noisy than step times)."""
    loop = Path(args.gpuprof).resolve().parent.parent / "tests" / "gpu" / "gpu_test_launch_loop"
    if not loop.exists():
        print(f"\n(c) skipped: {loop} not built")
        return None
    n = str(args.launches)
    variants = {
        "plain": lambda r: [str(loop), n],
        "gpuprof run": lambda r: [args.gpuprof, "run", "-o", str(work / f"lrun{r}"), "--", str(loop), n],
        "gpuprof replay (idle)": lambda r: [args.gpuprof, "replay", "-k", NEVER_KERNEL, "-o", str(work / f"lidle{r}"),
                                            "--", str(loop), n],
    }
    per = {name: [] for name in variants}
    for repeat in range(args.repeats):
        for name, make in variants.items():
            proc, _ = run(make(repeat), args.timeout)
            match = LAUNCH_RE.search(proc.stdout)
            if proc.returncode != 0 or not match:
                sys.exit(f"replay_overhead: launch loop under {name} failed:\n{(proc.stdout + proc.stderr)[-2000:]}")
            per[name].append(float(match.group(2)))
    print(f"\n(c) per launch, {args.launches} launches of an empty kernel, median of {args.repeats} runs")
    print(f"{'variant':<24} {'ns/launch':>10} {'vs plain':>10} {'vs gpuprof run':>15}")
    plain = statistics.median(per["plain"])
    run_ns = statistics.median(per["gpuprof run"])
    for name in variants:
        ns = statistics.median(per[name])
        print(f"{name:<24} {ns:>10.1f} {ns - plain:>+9.1f}ns {ns - run_ns:>+14.1f}ns")
    return statistics.median(per["gpuprof replay (idle)"]) - run_ns


def db_passes(out_dir):
    dbs = sorted(Path(out_dir).rglob("*.db"))
    if not dbs:
        return []
    conn = sqlite3.connect(f"file:{dbs[-1]}?mode=ro", uri=True)
    rows = conn.execute(
        "SELECT k.id, s.value, k.replayed, (SELECT group_concat(durationNs) FROM GPUPROF_REPLAY_PASS p "
        "WHERE p.kernelId = k.id) FROM GPUPROF_REPLAY_KERNEL k JOIN STRING_IDS s ON s.id = k.name ORDER BY k.id"
    ).fetchall()
    out = []
    for _, name, replayed, durations in rows:
        values = sorted(int(v) for v in (durations or "").split(",") if v)
        out.append((name, replayed, statistics.median(values) / 1000 if values else None, len(values)))
    return out


def ncu_durations(text):
    """(kernel, microseconds) per profiled launch from ncu's default text report."""
    out = []
    name = None
    for line in text.splitlines():
        header = re.match(r"^\s{2}(\S.*?) \(\d+, \d+, \d+\)x\(\d+, \d+, \d+\)", line)
        if header:
            name = header.group(1)
            continue
        metric = re.match(r"^\s+gpu__time_duration\.sum\s+(\S+)\s+([\d.,]+)", line)
        if metric and name is not None:
            unit, value = metric.group(1), float(metric.group(2).replace(",", ""))
            scale = {"ns": 1e-3, "nsecond": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}.get(unit, 1.0)
            out.append((name, value * scale))
            name = None
    return out


def ncu_part(args, work):
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    if not os.path.exists(ncu):
        print("\n(b) skipped: ncu not found")
        return
    steps = args.ncu_steps
    plain, plain_wall = run(app(args, steps), args.timeout)
    if plain.returncode != 0:
        sys.exit(f"replay_overhead: plain run failed:\n{plain.stderr[-2000:]}")
    out_dir = work / "replay_ncu"
    ours, ours_wall = run([args.gpuprof, "replay", "--passes", str(args.passes), "-k", "regex:" + args.regex, "-c",
                          str(args.count), "-o", str(out_dir), "--"] + app(args, steps), args.timeout)
    if ours.returncode != 0:
        sys.exit(f"replay_overhead: gpuprof replay failed:\n{(ours.stdout + ours.stderr)[-3000:]}")
    theirs, theirs_wall = run([ncu, "--replay-mode", "kernel", "--metrics", "gpu__time_duration.sum",
                               "--clock-control", "none", "-k", "regex:" + args.regex, "-c", str(args.count)]
                              + app(args, steps), args.timeout)
    if theirs.returncode != 0:
        print(f"\n(b) ncu exited {theirs.returncode}; its output:\n{(theirs.stdout + theirs.stderr)[-3000:]}")
        return
    passes = db_passes(out_dir)
    replayed = [p for p in passes if p[1] == 1]
    ncu_rows = ncu_durations(theirs.stdout)
    n_ours = max(1, len(replayed))
    n_ncu = max(1, len(ncu_rows))
    ours_per = (ours_wall - plain_wall) / n_ours
    ncu_per = (theirs_wall - plain_wall) / n_ncu
    print(f"\n(b) time per replayed kernel, train_plain --steps {steps}, first {args.count} launches matching "
          f"regex:{args.regex} (plain run: {plain_wall:.2f} s wall)")
    print(f"{'tool':<44} {'kernels':>8} {'wall s':>8} {'s/kernel':>9} {'ratio':>7}")
    print(f"{'gpuprof replay --passes ' + str(args.passes):<44} {len(replayed):>8} {ours_wall:>8.2f} {ours_per:>9.3f} "
          f"{ours_per / ncu_per if ncu_per > 0 else float('nan'):>7.2f}")
    print(f"{'ncu --replay-mode kernel (gpu__time_duration)':<44} {len(ncu_rows):>8} {theirs_wall:>8.2f} "
          f"{ncu_per:>9.3f} {1.0:>7.2f}")
    print("kernel durations by launch order (us): gpuprof median pass | ncu gpu__time_duration.sum | kernel")
    for i in range(max(len(replayed), len(ncu_rows))):
        g = f"{replayed[i][2]:.2f}" if i < len(replayed) and replayed[i][2] is not None else "-"
        n = f"{ncu_rows[i][1]:.2f}" if i < len(ncu_rows) else "-"
        name = replayed[i][0] if i < len(replayed) else ncu_rows[i][0]
        print(f"  {g:>10} | {n:>10} | {name[:90]}")
    declined = [p for p in passes if p[1] != 1]
    if declined:
        print(f"  ({len(declined)} matching launches declined by gpuprof; see GPUPROF_REPLAY_KERNEL)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpuprof", required=True)
    parser.add_argument("--python", default=os.environ.get("GPUPROF_TEST_PYTHON", "python3"))
    parser.add_argument("--script", default=str(co.REPO / "examples" / "train_plain.py"))
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--ncu-steps", type=int, default=3)
    parser.add_argument("--regex", default="gemm", help="kernels to replay in part (b) (default: gemm)")
    parser.add_argument("--count", type=int, default=5, help="launches to replay in part (b) (default: 5)")
    parser.add_argument("--passes", type=int, default=5, help="gpuprof passes in part (b) (default: 5)")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--launches", type=int, default=200000, help="empty-kernel launches in part (c)")
    parser.add_argument("--launches-per-step", type=float, default=34.0,
                        help="kernel launches per train_plain step, to express (c) as a share of a step")
    parser.add_argument("--skip-idle", action="store_true")
    parser.add_argument("--skip-launch", action="store_true")
    parser.add_argument("--skip-ncu", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpuprof_replay_bench_") as tmp:
        work = Path(tmp)
        plain_step_ms = idle_part(args, work) if not args.skip_idle else None
        if not args.skip_launch:
            extra_ns = launch_part(args, work)
            if extra_ns is not None and plain_step_ms:
                share = extra_ns * args.launches_per_step / (plain_step_ms * 1e6) * 100
                print(f"hook cost per train_plain step: {extra_ns:+.1f} ns x {args.launches_per_step:g} launches = "
                      f"{share:+.3f}% of the plain step ({plain_step_ms:.3f} ms): "
                      f"{'met' if share <= 1.0 else 'NOT met'} (target <= 1%)")
        if not args.skip_ncu:
            ncu_part(args, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
