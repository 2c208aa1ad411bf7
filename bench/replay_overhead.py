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

(d) Replay's costs on a real training step, examples/train_transformer.py (issue 18), against
    Nsight Compute on the same launches: the first C launches of every kernel (no -k) replayed by
      gpuprof replay --passes P -c C      for P in --pass-pair (2, 6) and C in --counts (20, 200)
      ncu --replay-mode kernel --metrics gpu__time_duration.sum --cache-control all
          --clock-control none -c C       for C in --counts
    and the whole example with every kernel replayed (`gpuprof replay --passes 3`, no -c) against
    the plain run. Each run's time is the example's own `timed_s` (CUDA ready to the last step's
    end: the 8-13 s of interpreter and CUDA start-up, which differ by seconds from run to run, are
    left out) and the process wall time. Cost per kernel = (time at C=200 - time at C=20) /
    (launches at 200 - launches at 20), so the start-up drops out; per extra pass = (cost at 6
    passes - cost at 2) / 4. Every gpuprof run's losses must be the plain run's, bit for bit, or
    the run fails. Prints a markdown table with issue 18's targets: <= 2.5 ms per replayed kernel,
    <= 0.3 ms per extra pass, >= 30x faster than ncu's one-metric replay, every kernel x3 <= 2x
    the plain run. --out DIR keeps the DBs and logs there and writes DIR/replay_overhead.json
    (every run's raw timings and the figures).

    python3 bench/replay_overhead.py --gpuprof BUILD/bin/gpuprof [--steps 200] [--repeats 2]
    python3 bench/replay_overhead.py --gpuprof BUILD/bin/gpuprof --skip-idle --skip-launch --skip-ncu --out DIR
    python3 bench/replay_overhead.py --gpuprof BUILD/bin/gpuprof --quick      # a small smoke run of every part
    python3 bench/replay_overhead.py --self-test                              # the arithmetic and table on fakes

Prints one table per part, each with the ratio to the peer. Needs torch with CUDA (without it:
"replay_overhead: skipped (...)", exit 0); ncu for (b) and (d)'s peer (a row "ncu not found" when
it is neither on PATH nor /usr/local/cuda/bin/ncu). Exit status 1 when a gpuprof run failed or its
losses differed from the plain run's.
"""

import argparse
import json
import os
import re
import shutil
import signal
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
    """(CompletedProcess, wall seconds). The command runs in its own process group, and a timeout or
    an interrupt kills that group: gpuprof's and ncu's application (a grandchild) must not be left
    running on the GPU. Raises subprocess.TimeoutExpired after the kill."""
    begin = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except BaseException:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr), time.perf_counter() - begin


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
    dbs = sorted(Path(out_dir).rglob("ascend_pytorch_profiler*.db"))
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
    ncu = find_ncu()
    if ncu is None:
        print("\n(b) skipped: ncu not found")
        return
    steps = args.ncu_steps
    plain, plain_wall = run(app(args, steps), args.timeout)
    if plain.returncode != 0:
        sys.exit(f"replay_overhead: plain run failed:\n{plain.stderr[-2000:]}")
    out_dir = work / "replay_ncu"
    shutil.rmtree(out_dir, ignore_errors=True)  # an --out directory may hold an earlier run's DB
    ours, ours_wall = run([args.gpuprof, "replay", "--passes", str(args.passes), "-k", "regex:" + args.regex, "-c",
                          str(args.count), "-o", str(out_dir), "--"] + app(args, steps), args.timeout)
    if ours.returncode != 0:
        sys.exit(f"replay_overhead: gpuprof replay failed:\n{(ours.stdout + ours.stderr)[-3000:]}")
    try:
        theirs, theirs_wall = run([ncu, "--replay-mode", "kernel", "--metrics", "gpu__time_duration.sum",
                                   "--clock-control", "none", "-k", "regex:" + args.regex, "-c", str(args.count)]
                                  + app(args, steps), args.timeout)
    except subprocess.TimeoutExpired:
        print(f"\n(b) ncu did not finish within {args.timeout:g} s")
        return
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


# ---- (d) train_transformer: cost per replayed kernel and per extra pass, against ncu -------------

TRANSFORMER = co.REPO / "examples" / "train_transformer.py"
LOSS_RE = re.compile(r"^step \d+ loss \S+$", re.M)
TIMED_RE = re.compile(r"^done: .*\btimed_s ([0-9.]+)\s*$", re.M)
NCU_PROFILED_RE = re.compile(r"^==PROF== Profiling ", re.M)

# Issue 18's targets.
TARGET_FIXED_MS = 2.5        # cost per replayed kernel
TARGET_PER_PASS_MS = 0.3     # per extra pass
TARGET_VS_NCU = 30.0         # ncu's cost per kernel / gpuprof's
TARGET_WHOLE_RATIO = 2.0     # every kernel replayed x3 / the plain run


def find_ncu():
    """ncu on PATH, else CUDA's default place; None when neither exists."""
    found = shutil.which("ncu")
    if found:
        return found
    return "/usr/local/cuda/bin/ncu" if os.path.exists("/usr/local/cuda/bin/ncu") else None


def pair(text, what, minimum):
    """'20,200' -> (20, 200), increasing, each >= minimum (argparse type)."""
    try:
        low, high = (int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what}: expected two integers LOW,HIGH, got {text!r}") from None
    if not minimum <= low < high:
        raise argparse.ArgumentTypeError(f"{what}: need {minimum} <= LOW < HIGH, got {text!r}")
    return low, high


def parse_timed_s(stdout):
    match = TIMED_RE.search(stdout or "")
    return float(match.group(1)) if match else None


def replay_counts(out_dir):
    """(selected launches, replayed, {declineReason: count}, seconds the engine held launches: the sum
    of replayNs, None for a DB without the column) from the run's DB; None without a DB."""
    dbs = sorted(Path(out_dir).rglob("ascend_pytorch_profiler*.db"))
    if not dbs:
        return None
    conn = sqlite3.connect(f"file:{dbs[-1]}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT replayed, declineReason, COUNT(*) FROM GPUPROF_REPLAY_KERNEL "
                            "GROUP BY replayed, declineReason").fetchall()
        columns = {row[1] for row in conn.execute("PRAGMA table_info(GPUPROF_REPLAY_KERNEL)")}
        held_ns = (conn.execute("SELECT COALESCE(SUM(replayNs), 0) FROM GPUPROF_REPLAY_KERNEL").fetchone()[0]
                   if "replayNs" in columns else None)
    finally:
        conn.close()
    selected = sum(n for _, _, n in rows)
    replayed = sum(n for r, _, n in rows if r == 1)
    declined = {str(reason): n for r, reason, n in rows if r != 1}
    return selected, replayed, declined, None if held_ns is None else held_ns / 1e9


def ncu_profiled(text):
    """Kernels ncu profiled: its '==PROF== Profiling' lines, else the report's gpu__time_duration rows."""
    return len(NCU_PROFILED_RE.findall(text or "")) or len(ncu_durations(text or ""))


def per_kernel(time_low, time_high, launches_low, launches_high):
    """Seconds per launch between two runs that differ only in how many launches were replayed."""
    if None in (time_low, time_high, launches_low, launches_high) or launches_high <= launches_low:
        return None
    return (time_high - time_low) / (launches_high - launches_low)


def per_extra_pass(cost_low, cost_high, passes_low, passes_high):
    if cost_low is None or cost_high is None:
        return None
    return (cost_high - cost_low) / (passes_high - passes_low)


def ratio(numerator, denominator):
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def verdict(value, target, at_most=True):
    if value is None:
        return "not measured"
    return "met" if (value <= target if at_most else value >= target) else "NOT met"


def ms(seconds):
    return "-" if seconds is None else f"{seconds * 1e3:.3f} ms"


def secs(seconds):
    return "-" if seconds is None else f"{seconds:.2f} s"


def times(value):
    return "-" if value is None else f"{value:.2f}x"


def faster(value):
    return "-" if value is None else f"{value:.1f}x faster"


def transformer_figures(runs, passes, counts, clock):
    """The figures from the median run of each variant. runs: {variant key: record}; records have
    'timed_s', 'wall_s', 'launches' (selected, or ncu's profiled), 'ok'. clock: 'timed_s' or 'wall_s'."""
    low_c, high_c = counts

    def time_of(key):
        run = runs.get(key)
        return run.get(clock) if run and run.get("ok") else None

    def launches_of(key):
        run = runs.get(key)
        return run.get("launches") if run and run.get("ok") else None

    cost = {}
    for p in passes:
        cost[p] = per_kernel(time_of(("gpuprof", p, low_c)), time_of(("gpuprof", p, high_c)),
                             launches_of(("gpuprof", p, low_c)), launches_of(("gpuprof", p, high_c)))
    ncu_cost = per_kernel(time_of(("ncu", low_c)), time_of(("ncu", high_c)),
                          launches_of(("ncu", low_c)), launches_of(("ncu", high_c)))
    return {
        "cost_per_kernel_s": {str(p): cost[p] for p in passes},
        "per_extra_pass_s": per_extra_pass(cost[passes[0]], cost[passes[1]], passes[0], passes[1]),
        "ncu_per_kernel_s": ncu_cost,
        "ncu_over_gpuprof": ratio(ncu_cost, cost[passes[0]]),
        "whole_s": time_of(("whole",)),
        "plain_s": time_of(("plain",)),
        "whole_over_plain": ratio(time_of(("whole",)), time_of(("plain",))),
    }


def transformer_table(timed, wall, passes, counts, ncu_note, engine=None):
    """Markdown lines: issue 18's figures from the timed span, with the wall-time versions beside, and
    (engine: the figures on the DBs' replayNs sums) the time the engine itself held each launch, the
    floor under the timed-span cost measured in the same runs."""
    low_p, high_p = passes
    low_c, high_c = counts
    lines = [
        "| figure | gpuprof | peer | ratio | target | verdict |",
        "|---|---|---|---|---|---|",
    ]
    fixed = timed["cost_per_kernel_s"][str(low_p)]
    lines.append(f"| cost per replayed kernel, --passes {low_p} ((t@{high_c} - t@{low_c}) / launches) | {ms(fixed)} "
                 f"| - | - | <= {TARGET_FIXED_MS} ms | {verdict(fixed, TARGET_FIXED_MS / 1e3)} |")
    lines.append(f"| cost per replayed kernel, --passes {high_p} | {ms(timed['cost_per_kernel_s'][str(high_p)])} "
                 f"| - | - | - | - |")
    lines.append(f"| per extra pass ((cost@{high_p} - cost@{low_p}) / {high_p - low_p}) | "
                 f"{ms(timed['per_extra_pass_s'])} | - | - | <= {TARGET_PER_PASS_MS} ms | "
                 f"{verdict(timed['per_extra_pass_s'], TARGET_PER_PASS_MS / 1e3)} |")
    lines.append(f"| per kernel vs Nsight Compute's one-metric kernel replay (--passes {low_p}) | {ms(fixed)} | "
                 f"{ncu_note or 'ncu ' + ms(timed['ncu_per_kernel_s'])} | {faster(timed['ncu_over_gpuprof'])} | "
                 f">= {TARGET_VS_NCU:g}x faster | "
                 f"{verdict(timed['ncu_over_gpuprof'], TARGET_VS_NCU, at_most=False)} |")
    lines.append(f"| every kernel replayed x3, timed span | {secs(timed['whole_s'])} | plain {secs(timed['plain_s'])} "
                 f"| {times(timed['whole_over_plain'])} | - (issue 18's target is on the process wall) | - |")
    lines.append(f"| every kernel replayed x3, process wall | {secs(wall['whole_s'])} | plain {secs(wall['plain_s'])} "
                 f"| {times(wall['whole_over_plain'])} | <= {TARGET_WHOLE_RATIO:g}x | "
                 f"{verdict(wall['whole_over_plain'], TARGET_WHOLE_RATIO)} |")
    lines.append(f"| (process wall) cost per replayed kernel, --passes {low_p} | "
                 f"{ms(wall['cost_per_kernel_s'][str(low_p)])} | {ncu_note or 'ncu ' + ms(wall['ncu_per_kernel_s'])} "
                 f"| {faster(wall['ncu_over_gpuprof'])} | - | - |")
    lines.append(f"| (process wall) per extra pass | {ms(wall['per_extra_pass_s'])} | - | - | - | - |")
    if engine is not None:
        held = engine["cost_per_kernel_s"][str(low_p)]
        outside = None if held is None or fixed is None else fixed - held
        lines.append(f"| (floor) in-engine time per replayed kernel, --passes {low_p} (the DBs' replayNs: drain, "
                     f"capture, passes, restores) | {ms(held)} | "
                     f"{ncu_note or 'ncu ' + ms(timed['ncu_per_kernel_s'])} "
                     f"| {faster(ratio(timed['ncu_per_kernel_s'], held))} | - | - |")
        lines.append(f"| (floor) in-engine time per extra pass | {ms(engine['per_extra_pass_s'])} | - | - | - | - |")
        lines.append(f"| timed-span cost outside the engine per replayed kernel (hook, records, noise) | "
                     f"{ms(outside)} | - | - | - | - |")
    return lines


def transformer_variants(args, ncu):
    """(key, label, command prefix or None for plain, needs an -o dir) in run order."""
    low_c, high_c = args.counts
    variants = [(("plain",), "plain", [], False)]
    for p in args.pass_pair:
        for c in (low_c, high_c):
            variants.append((("gpuprof", p, c), f"gpuprof replay --passes {p} -c {c}",
                             [args.gpuprof, "replay", "--passes", str(p), "-c", str(c)], True))
    if ncu:
        for c in (low_c, high_c):
            variants.append((("ncu", c), f"ncu --replay-mode kernel -c {c}",
                             [ncu, "--replay-mode", "kernel", "--metrics", "gpu__time_duration.sum",
                              "--cache-control", "all", "--clock-control", "none", "-c", str(c)], False))
    variants.append((("whole",), "gpuprof replay --passes 3 (every kernel)",
                     [args.gpuprof, "replay", "--passes", "3"], True))
    return variants


def transformer_run(args, work, key, label, prefix, wants_out, repeat):
    name = "_".join(str(k) for k in key) + f"_r{repeat}"
    out_dir = work / name
    shutil.rmtree(out_dir, ignore_errors=True)  # an --out directory may hold an earlier run's DBs
    cmd = list(prefix) + (["-o", str(out_dir), "--"] if wants_out else []) + \
        [args.python, args.transformer_script, "--steps", str(args.transformer_steps)]
    record = {"variant": label, "repeat": repeat, "command": cmd, "ok": False}
    try:
        proc, wall = run(cmd, args.transformer_timeout)
    except subprocess.TimeoutExpired:
        record["error"] = f"did not finish within {args.transformer_timeout:g} s"
        return record
    (work / f"{name}.log").write_text(f"$ {' '.join(cmd)}\n---- stdout\n{proc.stdout}\n---- stderr\n{proc.stderr}")
    record.update(rc=proc.returncode, wall_s=wall, timed_s=parse_timed_s(proc.stdout),
                  losses=LOSS_RE.findall(proc.stdout))
    if proc.returncode != 0:
        record["error"] = f"exited {proc.returncode}: {(proc.stdout + proc.stderr)[-1500:]}"
        return record
    if key[0] == "ncu":
        record["launches"] = ncu_profiled(proc.stdout + proc.stderr) or None
    elif wants_out:
        counts = replay_counts(out_dir)
        if counts is None:
            record["error"] = f"no DB under {out_dir}"
            return record
        record["launches"], record["replayed"], record["declined"], record["engine_s"] = counts
    record["ok"] = True
    return record


def run_interleaved(args, work, plan, inspect=None):
    """Runs each variant of `plan` ((key, label, prefix, wants_out), as transformer_variants gives)
    args.repeats times, the order rotated each repeat, printing one status line per run.
    `inspect(key, record, log_path)` may add to a record and returns words for its status line.
    Returns {key: [records]}."""
    records = {key: [] for key, _, _, _ in plan}
    for repeat in range(args.repeats):
        shift = repeat % len(plan)
        for key, label, prefix, wants_out in plan[shift:] + plan[:shift]:
            record = transformer_run(args, work, key, label, prefix, wants_out, repeat)
            said = inspect(key, record, work / ("_".join(str(k) for k in key) + f"_r{repeat}.log")) if inspect else ""
            records[key].append(record)
            state = "ok" if record["ok"] else "FAILED: " + record.get("error", "?")[:300]
            extra = f", {record['launches']} launches" if record.get("launches") is not None else ""
            print(f"  repeat {repeat + 1} {label:<48} wall {secs(record.get('wall_s'))}, timed "
                  f"{secs(record.get('timed_s'))}{extra}{said or ''}: {state}", flush=True)
    return records


def losses_match_plain(records, plan, profiled):
    """True when the plain run succeeded and every run of a variant `profiled(key, wants_out)` names
    succeeded with its losses; each one that did not is printed."""
    plain = next((r["losses"] for r in records[("plain",)] if r.get("ok")), None)
    healthy = bool(plain)
    for key, label, _, wants_out in plan:
        if not profiled(key, wants_out):
            continue
        for r in records[key]:
            if not r.get("ok") or r.get("losses") != plain:
                healthy = False
                print(f"  {label} (repeat {r['repeat'] + 1}): {r.get('error') or 'LOSSES DIFFER from plain'}")
    return healthy


def median_run(records, clock):
    """The record whose `clock` is the median of the successful ones (the lower middle for an even count)."""
    good = sorted((r for r in records if r.get("ok") and r.get(clock) is not None), key=lambda r: r[clock])
    return good[(len(good) - 1) // 2] if good else (records[-1] if records else None)


def transformer_part(args, work):
    """(d). Returns True when every gpuprof run succeeded with the plain run's losses."""
    ncu = find_ncu()
    variants = transformer_variants(args, ncu)
    records = {key: [] for key, _, _, _ in variants}
    healthy = True
    print(f"\n(d) examples/train_transformer.py --steps {args.transformer_steps}: replay of the first "
          f"{args.counts[0]} and {args.counts[1]} launches at --passes {args.pass_pair[0]} and {args.pass_pair[1]}, "
          f"ncu on the same launches, every kernel x3; {args.repeats} repeat(s), interleaved", flush=True)
    for repeat in range(args.repeats):
        shift = repeat % len(variants)
        for key, label, prefix, wants_out in variants[shift:] + variants[:shift]:
            record = transformer_run(args, work, key, label, prefix, wants_out, repeat)
            records[key].append(record)
            state = "ok" if record["ok"] else "FAILED: " + record.get("error", "?")[:300]
            extra = ""
            if record.get("launches") is not None:
                extra = f", {record['launches']} launches" + (
                    f" ({record['replayed']} replayed, declined {record['declined'] or 'none'})"
                    if "replayed" in record else "") + (
                    f", engine {secs(record['engine_s'])}" if record.get("engine_s") is not None else "")
            print(f"  repeat {repeat + 1} {label:<44} wall {secs(record.get('wall_s'))}, timed "
                  f"{secs(record.get('timed_s'))}{extra}: {state}", flush=True)
    plain_losses = next((r["losses"] for r in records[("plain",)] if r.get("ok")), None)
    if not plain_losses:
        print("  the plain run failed or printed no loss line: no figures")
        healthy = False
    for key, label, _, _ in variants:
        for record in records[key]:
            record["losses_match"] = bool(plain_losses) and record.get("losses") == plain_losses
            if key[0] == "ncu":
                if record.get("ok") and not record["losses_match"]:
                    print(f"  note: {label} (repeat {record['repeat'] + 1}) printed other losses than the plain run")
                continue
            if key[0] != "plain" and (not record.get("ok") or not record["losses_match"]):
                healthy = False
                why = record.get("error") or "LOSSES DIFFER from the plain run's"
                print(f"  {label} (repeat {record['repeat'] + 1}): {why[:500]}")
    for key, label, _, _ in variants:
        if key[0] == "gpuprof":
            run_ = median_run(records[key], "timed_s")
            if run_ and run_.get("ok") and run_.get("launches", 0) < key[2]:
                print(f"  note: {label} replayed only {run_['launches']} launches: the example has fewer than "
                      f"{key[2]}; raise --transformer-steps")
    ncu_note = None
    if ncu is None:
        ncu_note = "ncu not found"
    elif not all(r.get("ok") for key in records if key[0] == "ncu" for r in records[key]):
        failed = next(r for key in records if key[0] == "ncu" for r in records[key] if not r.get("ok"))
        ncu_note = f"ncu failed ({failed.get('error', '?')[:60].splitlines()[0]})"
    figures = {}
    for clock in ("timed_s", "wall_s", "engine_s"):
        medians = {key: median_run(records[key], clock) for key in records}
        figures[clock] = transformer_figures(medians, args.pass_pair, args.counts, clock)
    print()
    for line in transformer_table(figures["timed_s"], figures["wall_s"], args.pass_pair, args.counts, ncu_note,
                                  figures["engine_s"]):
        print(line)
    print("(timed span: the example's timed_s, CUDA ready to the last step's end; process wall: start to exit. "
          "Cost per kernel divides by the launches the DB (or ncu) counted between the two -c runs; medians of "
          f"{args.repeats} repeat(s). ncu is `ncu --replay-mode kernel --metrics gpu__time_duration.sum "
          "--cache-control all --clock-control none -c C`.)")
    if not healthy:
        print("replay_overhead: a gpuprof run failed or its losses differ from the plain run: the figures above "
              "do not count")
    if args.out:
        out = Path(args.out) / "replay_overhead.json"
        payload = {
            "script": str(args.transformer_script), "steps": args.transformer_steps, "counts": list(args.counts),
            "passes": list(args.pass_pair), "repeats": args.repeats, "ncu": ncu, "ncu_note": ncu_note,
            "healthy": healthy, "figures": figures,
            "targets": {"per_kernel_ms": TARGET_FIXED_MS, "per_extra_pass_ms": TARGET_PER_PASS_MS,
                        "vs_ncu": TARGET_VS_NCU, "whole_over_plain": TARGET_WHOLE_RATIO},
            "runs": [r for key in records for r in records[key]],
        }
        out.write_text(json.dumps(payload, indent=2, default=str) + "\n")
        print(f"raw timings: {out}")
    return healthy


SAMPLE_TRANSFORMER = """device: cuda:0 (NVIDIA H200), torch 2.11.0+cu130
config: layers 6 d_model 256 heads 4 d_ff 1024 seq 128 batch 4 vocab 2048 batches 8 steps 2 seed 0 determinism strict
step 1 loss 0x1.f42fd40000000p+2
step 2 loss 0x1.f348940000000p+2
done: 2 steps on cuda:0, final loss 7.801, mean step 4.100 ms (steps 2..2), timed_s 1.234
memory: peak allocated 140.0 MiB in 390 blocks (2000 allocations in all); peak reserved 160.0 MiB in 30 segments
"""
SAMPLE_NCU = """==PROF== Connected to process 1234
==PROF== Profiling "vectorized_elementwise_kernel" - 0: 0%....50%....100% - 1 pass
==PROF== Profiling "fmha_cutlassF_f32_aligned_64x64_rf_sm80" - 1: 0%....50%....100% - 1 pass
==PROF== Disconnected from process 1234
"""


def self_test():
    """The parsing, the arithmetic and the table on made-up runs: no GPU, torch or ncu needed."""
    assert parse_timed_s(SAMPLE_TRANSFORMER) == 1.234
    assert parse_timed_s("step 1 loss 0x1p+0\n") is None
    assert LOSS_RE.findall(SAMPLE_TRANSFORMER) == ["step 1 loss 0x1.f42fd40000000p+2", "step 2 loss 0x1.f348940000000p+2"]
    assert ncu_profiled(SAMPLE_NCU) == 2
    assert pair("20,200", "--counts", 1) == (20, 200)
    for bad in ("200,20", "5", "a,b", "0,3"):
        try:
            pair(bad, "--counts", 1)
        except argparse.ArgumentTypeError:
            continue
        raise AssertionError(f"pair accepted {bad!r}")
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "h_1_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler.db"
        db.parent.mkdir(parents=True)
        conn = sqlite3.connect(db)
        conn.execute("CREATE TABLE GPUPROF_REPLAY_KERNEL (id INTEGER PRIMARY KEY, replayed INTEGER, declineReason TEXT)")
        conn.executemany("INSERT INTO GPUPROF_REPLAY_KERNEL (replayed, declineReason) VALUES (?, ?)",
                         [(1, None)] * 18 + [(0, "side-effects")] * 2)
        conn.commit()
        conn.close()
        assert replay_counts(tmp) == (20, 18, {"side-effects": 2}, None), replay_counts(tmp)
        conn = sqlite3.connect(db)
        conn.execute("ALTER TABLE GPUPROF_REPLAY_KERNEL ADD COLUMN replayNs INTEGER")
        conn.execute("UPDATE GPUPROF_REPLAY_KERNEL SET replayNs = 250000 WHERE replayed = 1")
        conn.commit()
        conn.close()
        counted = replay_counts(tmp)
        assert counted[:3] == (20, 18, {"side-effects": 2}) and abs(counted[3] - 0.0045) < 1e-12, counted
        assert replay_counts(Path(tmp) / "none") is None

    def rec(timed, wall, launches=None, ok=True):
        return {"timed_s": timed, "wall_s": wall, "launches": launches, "ok": ok}

    runs = {("plain",): rec(10.0, 20.0), ("whole",): rec(15.0, 26.0, 2500),
            ("gpuprof", 2, 20): rec(10.0, 21.0, 20), ("gpuprof", 2, 200): rec(10.36, 21.9, 200),
            ("gpuprof", 6, 20): rec(10.0, 21.0, 20), ("gpuprof", 6, 200): rec(10.432, 22.0, 200),
            ("ncu", 20): rec(12.0, 30.0, 20), ("ncu", 200): rec(120.0, 140.0, 200)}
    timed = transformer_figures(runs, (2, 6), (20, 200), "timed_s")
    close = lambda a, b: a is not None and abs(a - b) < 1e-9  # noqa: E731
    assert close(timed["cost_per_kernel_s"]["2"], 0.002) and close(timed["cost_per_kernel_s"]["6"], 0.0024), timed
    assert close(timed["per_extra_pass_s"], 0.0001) and close(timed["ncu_per_kernel_s"], 0.6), timed
    assert close(timed["ncu_over_gpuprof"], 300.0) and close(timed["whole_over_plain"], 1.5), timed
    wall = transformer_figures(runs, (2, 6), (20, 200), "wall_s")
    assert close(wall["cost_per_kernel_s"]["2"], 0.005) and close(wall["whole_over_plain"], 1.3), wall
    engine_runs = {("gpuprof", 2, 20): {"engine_s": 0.01, "launches": 20, "ok": True},
                   ("gpuprof", 2, 200): {"engine_s": 0.19, "launches": 200, "ok": True},
                   ("gpuprof", 6, 20): {"engine_s": 0.02, "launches": 20, "ok": True},
                   ("gpuprof", 6, 200): {"engine_s": 0.236, "launches": 200, "ok": True}}
    engine = transformer_figures(engine_runs, (2, 6), (20, 200), "engine_s")
    assert close(engine["cost_per_kernel_s"]["2"], 0.001) and close(engine["per_extra_pass_s"], 0.00005), engine
    assert engine["ncu_per_kernel_s"] is None, engine
    table = transformer_table(timed, wall, (2, 6), (20, 200), None, engine)
    assert table[0].startswith("| figure | gpuprof | peer | ratio | target | verdict |")
    assert "| 1.000 ms | ncu 600.000 ms | 600.0x faster |" in "\n".join(table), table
    assert "outside the engine per replayed kernel (hook, records, noise) | 1.000 ms |" in "\n".join(table), table
    assert all(line.count("|") == 7 for line in table), table
    text = "\n".join(table)
    assert "| 2.000 ms |" in text and "ncu 600.000 ms" in text and "300.0x faster" in text and "NOT met" not in text
    # A slow replay misses its targets; without ncu the peer says so and the ratio is not measured.
    runs[("gpuprof", 2, 200)] = rec(11.0, 22.0, 200)
    runs[("ncu", 20)], runs[("ncu", 200)] = None, None
    slow = transformer_figures(runs, (2, 6), (20, 200), "timed_s")
    text = "\n".join(transformer_table(slow, wall, (2, 6), (20, 200), "ncu not found"))
    assert "NOT met" in text and "| ncu not found |" in text and "not measured" in text, text
    # A failed run gives no figure rather than a wrong one.
    runs[("gpuprof", 6, 20)] = rec(None, None, ok=False)
    assert transformer_figures(runs, (2, 6), (20, 200), "timed_s")["per_extra_pass_s"] is None
    assert median_run([rec(3.0, 0), rec(1.0, 0), rec(2.0, 0), rec(None, None, ok=False)], "timed_s")["timed_s"] == 2.0
    assert median_run([rec(3.0, 0), rec(1.0, 0)], "timed_s")["timed_s"] == 1.0
    args = parse_args(["--gpuprof", "/bin/true", "--quick"])
    assert (args.transformer_steps, args.counts, args.repeats) == (QUICK["transformer_steps"], QUICK["counts"], 1)
    args = parse_args(["--gpuprof", "/bin/true", "--quick", "--counts", "10,40", "--repeats", "3"])
    assert (args.counts, args.repeats) == ((10, 40), 3), args
    args = parse_args(["--gpuprof", "/bin/true"])
    assert (args.counts, args.pass_pair, args.transformer_steps) == ((20, 200), (2, 6), 10), args
    for line in table:
        print(line)
    print("replay_overhead: self-test passed")
    return 0


# Defaults, and the smaller ones of --quick (a smoke run of every part); a flag given wins over both.
DEFAULTS = {"steps": 200, "warmup": 10, "repeats": 2, "ncu_steps": 3, "count": 5, "launches": 200000,
            "transformer_steps": 10, "counts": (20, 200)}
QUICK = {"steps": 20, "warmup": 5, "repeats": 1, "ncu_steps": 2, "count": 2, "launches": 20000,
         "transformer_steps": 2, "counts": (5, 25)}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpuprof", help="the gpuprof binary (BUILD/bin/gpuprof, BUILD/lib beside it)")
    parser.add_argument("--python", default=os.environ.get("GPUPROF_TEST_PYTHON", "python3"),
                        help="interpreter for the examples (default: $GPUPROF_TEST_PYTHON or python3)")
    parser.add_argument("--script", default=str(co.REPO / "examples" / "train_plain.py"),
                        help="the script of parts (a) and (b) (default: examples/train_plain.py)")
    parser.add_argument("--steps", type=int, help="train_plain steps in part (a) (default: 200; --quick 20)")
    parser.add_argument("--warmup", type=int, help="leading steps dropped in part (a) (default: 10; --quick 5)")
    parser.add_argument("--repeats", type=int, help="runs of each variant (default: 2; --quick 1)")
    parser.add_argument("--ncu-steps", type=int, help="train_plain steps in part (b) (default: 3; --quick 2)")
    parser.add_argument("--regex", default="gemm", help="kernels to replay in part (b) (default: gemm)")
    parser.add_argument("--count", type=int, help="launches to replay in part (b) (default: 5; --quick 2)")
    parser.add_argument("--passes", type=int, default=5, help="gpuprof passes in part (b) (default: 5)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per run in parts (a)-(c) (default: 300)")
    parser.add_argument("--launches", type=int,
                        help="empty-kernel launches in part (c) (default: 200000; --quick 20000)")
    parser.add_argument("--launches-per-step", type=float, default=34.0,
                        help="kernel launches per train_plain step, to express (c) as a share of a step")
    parser.add_argument("--transformer-script", default=str(TRANSFORMER),
                        help="the script of part (d) (default: examples/train_transformer.py)")
    parser.add_argument("--transformer-steps", type=int,
                        help="train_transformer steps in every run of part (d) (default: 10; --quick 2); "
                             "enough that the higher --counts launches exist (a few hundred per step)")
    parser.add_argument("--counts", type=lambda t: pair(t, "--counts", 1),
                        help="LOW,HIGH: the -c of part (d)'s two runs per tool (default: 20,200; --quick 5,25)")
    parser.add_argument("--pass-pair", type=lambda t: pair(t, "--pass-pair", 2), default=(2, 6),
                        help="LOW,HIGH: gpuprof --passes of part (d) (default: 2,6)")
    parser.add_argument("--transformer-timeout", type=float, default=1800,
                        help="seconds per run in part (d) (default: 1800; ncu -c 200 is the slow one)")
    parser.add_argument("--out", help="keep every part's DBs and logs in this directory and write "
                                      "replay_overhead.json (part (d)'s raw timings and figures) there")
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run of every part")
    parser.add_argument("--skip-idle", action="store_true", help="leave out part (a)")
    parser.add_argument("--skip-launch", action="store_true", help="leave out part (c)")
    parser.add_argument("--skip-ncu", action="store_true", help="leave out part (b)")
    parser.add_argument("--skip-transformer", action="store_true", help="leave out part (d)")
    parser.add_argument("--self-test", action="store_true",
                        help="check the parsing, arithmetic and table on made-up runs, then exit")
    args = parser.parse_args(argv)
    for name, value in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if not args.self_test and not args.gpuprof:
        parser.error("--gpuprof is required")
    if args.steps <= args.warmup or args.repeats < 1:
        parser.error("need --steps > --warmup and --repeats >= 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.self_test:
        return self_test()
    reason = co.probe_cuda(args.python)
    if reason:
        print(f"replay_overhead: skipped ({reason})")
        return 0
    args.gpuprof = str(Path(args.gpuprof).resolve())
    args.transformer_script = str(Path(args.transformer_script).resolve())
    for path in (args.gpuprof, args.script, args.transformer_script):
        if not os.path.isfile(path):
            sys.exit(f"replay_overhead: {path} not found")
    healthy = True
    with tempfile.TemporaryDirectory(prefix="gpuprof_replay_bench_") as tmp:
        work = Path(tmp)
        if args.out:
            work = Path(args.out).resolve()
            work.mkdir(parents=True, exist_ok=True)
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
        if not args.skip_transformer:
            healthy = transformer_part(args, work)
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
