#!/usr/bin/env python3
"""Collection overhead of `gpuprof run` on examples/train_plain.py, against the plain run and torch.profiler.

Runs three variants of `train_plain.py --device cuda --steps N` as subprocesses, R times each, in
interleaved order (the order rotates every repeat), in the same run on the same GPU:

  plain           python3 train_plain.py ...
  gpuprof run     gpuprof run -o DIR -- python3 train_plain.py ...
  torch.profiler  python3 -c WRAPPER: imports train_plain as a module and calls its main(argv)
                  inside torch.profiler.profile(activities=[CPU, CUDA]), then exports the Chrome
                  trace (the counterpart of gpuprof writing its DB)

Per run: the per-step `time_ms` lines, the first --warmup steps dropped, median step time; per
variant: the median of those over the repeats, plus the median wall time of the whole process
(start to exit, so the profilers' work at exit, writing the DB or the trace, is counted).

Standard library only. Without torch or CUDA it prints "collection_overhead: skipped (...)" and
exits 0. `--self-test` checks the parsing on built-in sample output and needs neither.
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STEP_RE = re.compile(r"^step (\d+)/(\d+) loss \S+ time_ms ([0-9.]+)\s*$", re.M)
DB_RE = re.compile(r"^gpuprof: profile DB: (.+?)\s*$", re.M)
TORCH_RE = re.compile(r"^torch_profiler: stop_ms ([0-9.]+) export_ms ([0-9.]+) trace (.+) bytes (\d+)\s*$", re.M)

VARIANTS = ("plain", "gpuprof run", "torch.profiler")

# Run as `python3 -c WRAPPER SCRIPT STEPS TRACE`: train_plain.main(argv) inside the profiler.
WRAPPER = r"""
import importlib.util, os, sys, time
script, steps, trace = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, os.path.dirname(script))
spec = importlib.util.spec_from_file_location("train_plain", script)
train_plain = importlib.util.module_from_spec(spec)
spec.loader.exec_module(train_plain)
from torch.profiler import ProfilerActivity, profile
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    rc = train_plain.main(["--device", "cuda", "--steps", steps])
    stop = time.perf_counter()
exported = time.perf_counter()
prof.export_chrome_trace(trace)
done = time.perf_counter()
print(f"torch_profiler: stop_ms {(exported - stop) * 1e3:.1f} export_ms {(done - exported) * 1e3:.1f} "
      f"trace {trace} bytes {os.path.getsize(trace)}", flush=True)
sys.exit(rc)
"""


class ParseError(Exception):
    pass


def parse_steps(stdout, steps, warmup):
    """time_ms of steps warmup+1..steps from train_plain's output; checks every step is there."""
    found = {}
    for match in STEP_RE.finditer(stdout):
        index, total, ms = int(match.group(1)), int(match.group(2)), float(match.group(3))
        if total != steps:
            raise ParseError(f"step line says {total} steps, expected {steps}")
        found[index] = ms
    if sorted(found) != list(range(1, steps + 1)):
        raise ParseError(f"expected step lines 1..{steps}, found {len(found)}")
    return [found[i] for i in range(warmup + 1, steps + 1)]


def parse_db_path(stderr):
    matches = DB_RE.findall(stderr)
    return matches[-1] if matches else None


def parse_torch_line(stdout):
    match = TORCH_RE.search(stdout)
    if not match:
        return None
    return {"stop_ms": float(match.group(1)), "export_ms": float(match.group(2)),
            "trace": match.group(3), "bytes": int(match.group(4))}


def mib(size):
    return f"{size / (1 << 20):.2f} MiB"


def find_db(out_dir):
    dbs = sorted(Path(out_dir).rglob("ascend_pytorch_profiler*.db"))
    return str(dbs[-1]) if dbs else None


def command_for(variant, args, work, repeat):
    app = [args.python, args.script, "--device", "cuda", "--steps", str(args.steps)]
    if variant == "plain":
        return app
    if variant == "gpuprof run":
        return [args.gpuprof, "run", "-o", str(work / f"gpuprof_r{repeat}"), "--"] + app
    trace = work / f"torch_trace_r{repeat}.json"
    return [args.python, "-c", WRAPPER, args.script, str(args.steps), str(trace)]


def run_one(variant, args, work, repeat):
    cmd = command_for(variant, args, work, repeat)
    begin = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=args.timeout)
    wall_s = time.perf_counter() - begin
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-3000:]
        sys.exit(f"collection_overhead: {variant} (repeat {repeat + 1}) exited {proc.returncode}:\n"
                 f"$ {' '.join(cmd[:3])} ...\n{tail}")
    try:
        step_ms = parse_steps(proc.stdout, args.steps, args.warmup)
    except ParseError as err:
        sys.exit(f"collection_overhead: {variant} (repeat {repeat + 1}): {err}\n{proc.stdout[-2000:]}")
    result = {"median_ms": statistics.median(step_ms), "wall_s": wall_s}
    if variant == "gpuprof run":
        result["db"] = parse_db_path(proc.stderr) or find_db(work / f"gpuprof_r{repeat}")
    if variant == "torch.profiler":
        result["torch"] = parse_torch_line(proc.stdout)
    device = re.search(r"^device: (.*)$", proc.stdout, re.M)
    result["device"] = device.group(1) if device else "?"
    return result


def probe_cuda(python):
    """None when torch and CUDA are usable, else the reason to skip."""
    try:
        proc = subprocess.run([python, "-c", "import torch; print(torch.__version__, torch.cuda.is_available())"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"cannot run {python}: {err}"
    if proc.returncode != 0:
        return f"{python} cannot import torch"
    words = proc.stdout.split()
    if len(words) < 2 or words[-1] != "True":
        return f"torch {words[0] if words else '?'} sees no CUDA device"
    return None


def pct(value, base):
    return f"{(value / base - 1) * 100:+.1f}%"


def report(args, results):
    plain = statistics.median(r["median_ms"] for r in results["plain"])
    plain_wall = statistics.median(r["wall_s"] for r in results["plain"])
    print(f"\ncollection_overhead: {args.script} --device cuda --steps {args.steps}, steps 1..{args.warmup} "
          f"dropped, {args.repeats} repeats (interleaved)")
    print(f"device: {results['plain'][-1]['device']}")
    header = f"{'variant':<16} {'step ms':>9} {'overhead':>9} {'ratio':>6}  {'wall s':>7} {'wall +s':>8}  per-repeat step ms"
    print(header)
    print("-" * len(header))
    summary = {}
    for variant in VARIANTS:
        step = statistics.median(r["median_ms"] for r in results[variant])
        wall = statistics.median(r["wall_s"] for r in results[variant])
        summary[variant] = step
        per = " ".join(f"{r['median_ms']:.3f}" for r in results[variant])
        print(f"{variant:<16} {step:>9.3f} {pct(step, plain):>9} {step / plain:>6.3f}  {wall:>7.2f} "
              f"{wall - plain_wall:>+8.2f}  {per}")
    print("(step ms: median over repeats of each run's median step time; wall s: median process "
          "start-to-exit time, profiler's exit work included; wall +s: minus plain's)")
    db = results["gpuprof run"][-1].get("db")
    if db and os.path.exists(db):
        print(f"gpuprof DB (last run): {db} ({mib(os.path.getsize(db))})")
    else:
        print(f"gpuprof DB (last run): not found ({db})")
    torch_info = results["torch.profiler"][-1].get("torch")
    if torch_info:
        print(f"torch.profiler trace (last run): {torch_info['trace']} ({mib(torch_info['bytes'])}); "
              f"profile stop {torch_info['stop_ms']:.0f} ms, export_chrome_trace {torch_info['export_ms']:.0f} ms")
    print(f"gpuprof overhead {pct(summary['gpuprof run'], plain)} vs torch.profiler "
          f"{pct(summary['torch.profiler'], plain)}")


SAMPLE_PLAIN = """device: cuda:0 (NVIDIA H200), torch 2.11.0+cu128
step 1/14 loss 2.310000 time_ms 812.500
step 2/14 loss 2.300000 time_ms 3.100
step 3/14 loss 2.290000 time_ms 1.010
step 4/14 loss 2.280000 time_ms 1.020
step 5/14 loss 2.270000 time_ms 1.030
step 6/14 loss 2.260000 time_ms 1.040
step 7/14 loss 2.250000 time_ms 1.050
step 8/14 loss 2.240000 time_ms 1.060
step 9/14 loss 2.230000 time_ms 1.070
step 10/14 loss 2.220000 time_ms 1.080
step 11/14 loss 2.210000 time_ms 0.900
step 12/14 loss 2.200000 time_ms 0.800
step 13/14 loss 2.190000 time_ms 5.000
step 14/14 loss 2.180000 time_ms 0.700
done: 14 steps on cuda, final loss 2.180000, mean step 1.382 ms (steps 2..14)
torch_profiler: stop_ms 120.5 export_ms 300.2 trace /tmp/x/torch_trace_r0.json bytes 1048576
"""
SAMPLE_GPUPROF_STDERR = """gpuprof: profile DB: /tmp/x/gpuprof_r0/h_1_2_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler.db
gpuprof: top kernels:
"""


def self_test():
    steps = parse_steps(SAMPLE_PLAIN, 14, 10)
    assert steps == [0.9, 0.8, 5.0, 0.7], steps
    assert abs(statistics.median(steps) - 0.85) < 1e-9
    assert parse_steps(SAMPLE_PLAIN, 14, 0)[0] == 812.5
    for bad_steps, text in ((15, SAMPLE_PLAIN), (14, SAMPLE_PLAIN.replace("step 12/14", "step 12/15")),
                            (14, SAMPLE_PLAIN.replace("step 7/14 loss 2.250000 time_ms 1.050\n", ""))):
        try:
            parse_steps(text, bad_steps, 10)
        except ParseError:
            pass
        else:
            raise AssertionError("incomplete output was accepted")
    assert parse_db_path(SAMPLE_GPUPROF_STDERR).endswith("ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler.db")
    assert parse_db_path("no db\n") is None
    info = parse_torch_line(SAMPLE_PLAIN)
    assert info == {"stop_ms": 120.5, "export_ms": 300.2, "trace": "/tmp/x/torch_trace_r0.json",
                    "bytes": 1048576}, info
    compile(WRAPPER, "<wrapper>", "exec")
    # The report on fabricated results: exercises the table code end to end.
    fake = {v: [{"median_ms": m, "wall_s": w, "device": "cuda:0 (sample)", "db": None, "torch": info}]
            for v, m, w in (("plain", 1.0, 5.0), ("gpuprof run", 1.05, 6.0), ("torch.profiler", 1.5, 9.0))}
    report(argparse.Namespace(script="train_plain.py", steps=14, warmup=10, repeats=1), fake)
    print("collection_overhead: self-test passed")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpuprof", help="the gpuprof binary (BUILD/bin/gpuprof, BUILD/lib beside it)")
    parser.add_argument("--steps", type=int, default=200, help="training steps per run (default: 200)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each variant (default: 3)")
    parser.add_argument("--warmup", type=int, default=10, help="leading steps dropped (default: 10)")
    parser.add_argument("--script", default=str(REPO / "examples" / "train_plain.py"),
                        help="the training script (default: examples/train_plain.py)")
    parser.add_argument("--python", default=os.environ.get("GPUPROF_TEST_PYTHON", "python3"),
                        help="interpreter for the script (default: $GPUPROF_TEST_PYTHON or python3)")
    parser.add_argument("--work-dir", help="where DBs and traces go (default: a temporary directory, "
                        "removed at the end unless --keep)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per run (default: 600)")
    parser.add_argument("--self-test", action="store_true", help="check the parsing on built-in samples")
    args = parser.parse_args(argv)
    if args.self_test:
        return self_test()
    if not args.gpuprof:
        parser.error("--gpuprof is required")
    if args.steps <= args.warmup or args.repeats < 1:
        parser.error("need --steps > --warmup and --repeats >= 1")

    reason = probe_cuda(args.python)
    if reason:
        print(f"collection_overhead: skipped ({reason})")
        return 0
    args.gpuprof = str(Path(args.gpuprof).resolve())
    args.script = str(Path(args.script).resolve())
    for path in (args.gpuprof, args.script):
        if not os.path.isfile(path):
            sys.exit(f"collection_overhead: {path} not found")

    work = Path(args.work_dir or tempfile.mkdtemp(prefix="gpuprof_overhead_")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    results = {v: [] for v in VARIANTS}
    try:
        for repeat in range(args.repeats):
            order = VARIANTS[repeat % 3:] + VARIANTS[:repeat % 3]
            for variant in order:
                result = run_one(variant, args, work, repeat)
                results[variant].append(result)
                print(f"repeat {repeat + 1}/{args.repeats} {variant:<15} median step {result['median_ms']:.3f} ms, "
                      f"wall {result['wall_s']:.2f} s", flush=True)
        report(args, results)
    finally:
        if not args.work_dir and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
            print(f"(removed {work}; --keep or --work-dir to keep the DBs and traces)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
