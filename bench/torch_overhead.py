#!/usr/bin/env python3
"""Step-time cost of profiling a PyTorch training loop: gpuprof.profile against PyTorch's own
profiler, same options (record_shapes, profile_memory), in one run (issue 6's benchmark).

Variants, each a fresh process running train_plain.py's model and step for --steps steps with the
profiler recording every step:
  none      no profiler
  torch     on the CPU torch.autograd.profiler.profile (Debian's torch has no Kineto); with a GPU
            torch.profiler.profile(activities=[CPU, CUDA])
  gpuprof   gpuprof.profile (its session starts in the process; on a GPU it collects the kernels
            from then on, as torch.profiler does, with its default cuda_trace launches,nvtx)
  gpuprof_host  (GPU only, for the breakdown) gpuprof.profile with GPUPROF_DEVICE=0: the torch
            hooks and the DB, without CUPTI
With --breakdown (GPU), also:
  gpuprof_bare  the hooks without shapes or memory, no CUPTI: RecordFunction's own floor plus ours
  gpuprof_nocorr  gpuprof.profile with CUPTI but no per-op external correlation push/pop
            (GPUPROF_TORCH_DEVICE_CORRELATION=0; ops are then linked to kernels by time)
  gpuprof_nonvtx  gpuprof.profile without NVTX collection (GPUPROF_CUDA_TRACE=launches)
  gpuprof_runtime gpuprof.profile with the runtime API alone (GPUPROF_CUDA_TRACE=runtime: no driver
            API records, no NVTX)
  gpuprof_everycall gpuprof.profile with GPUPROF_CUDA_TRACE=runtime,driver,nvtx: every runtime
            and driver call as a CUPTI activity record (the default before launches,nvtx)
  gpuprof_kernels gpuprof.profile with GPUPROF_CUDA_TRACE=none: kernels, copies and memsets without
            API records or NVTX (ops still linked to kernels by external correlation)
  gpuprof_cupti_floor gpuprof.profile with CUPTI's kernel, memcpy and memset records alone: no API
            rows, no NVTX, no per-op correlation (GPUPROF_CUDA_TRACE=none and
            GPUPROF_TORCH_DEVICE_CORRELATION=0); its CUPTI part is what any profiler that records
            the kernels pays CUPTI (torch.profiler's CUDA activity enables the same kinds)
  torch_cpu     torch.profiler with activities=[CPU] only (Kineto's host side, same options; note
            that torch's CPU activity still enables CUPTI's runtime and driver API records when
            CUDA is present: kineto_shim's CPU activity set holds CUDA_RUNTIME and CUDA_DRIVER)
so the added time splits into RecordFunction, shapes + memory, and CUPTI, for both profilers.
Always, where a C++ compiler and torch's headers are found:
  floor     RecordFunction's own cost: a global callback that asks for the inputs (as record_shapes
            does) and records nothing (bench/record_function_floor.cc, compiled by
            record_function_floor.py against the torch of --python). Both profilers pay it; the
            report says how much of the target it leaves to gpuprof's own recording.
  floor_noinputs  (by name in --variants) the same callback without asking for the inputs: what
            merely having a RecordFunction callback registered costs
Reported: median step time over steps --warmup+1..N (median of --repeats processes), steps/s,
the time added per step against `none`, the spread of the per-process medians, and the ratio
gpuprof/torch of the added time (target <= 0.5; flagged "within noise" when one variant's
processes spread wider than an added time). With --windows (paired), also each variant's added CPU
time per step over every thread of the process (work a profiler moves to other threads shows
there, not in the step's wall time) and a 95% bootstrap interval of the ratio, whose verdict is
"met" only when the whole interval is <= 0.5. Also the time from stop() to a finished output: gpuprof's DB against torch's
export_chrome_trace (plus the profiler's own stop for torch).

    python3 bench/torch_overhead.py [--python /usr/bin/python3] [--gpuprof build/default/bin/gpuprof]
                                    (the native libraries are taken from the lib/ beside --gpuprof's bin/)
                                    [--steps 60] [--warmup 10] [--repeats 3] [--device auto|cpu|cuda]
                                    [--breakdown] [--variants LIST] [--cpus LIST] [--threads N]
"""

import argparse
import atexit
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile

from record_function_floor import FLOOR_LIB_VARIABLE, build_floor  # bench/ is first on sys.path

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, os, sys, time
sys.path.insert(0, os.path.join(REPO, "examples"))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "bench"))
import torch
import train_plain as tp

variant, steps, device_name, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
threads, windows = int(sys.argv[5]), int(sys.argv[6])
if threads > 0:
    torch.set_num_threads(threads)
device = tp.pick_device(device_name)
torch.manual_seed(0)
inputs, labels = tp.synthetic_data(0)
model, optimizer, loss_fn = tp.make_model(device)
inputs, labels = inputs.to(device), labels.to(device)

def sync():
    if device.type == "cuda":
        torch.cuda.synchronize()

def step(i):
    first = (i * 128) % tp.SAMPLES
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(inputs[first:first + 128]), labels[first:first + 128])
    loss.backward()
    optimizer.step()
    return loss.item()

def make_profiler():
    if variant == "none":
        return None
    if variant in ("floor", "floor_noinputs"):
        from record_function_floor import Floor
        return Floor(inputs=variant == "floor")
    if variant == "torch":
        if device.type == "cuda":
            acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
            return torch.profiler.profile(activities=acts, record_shapes=True, profile_memory=True)
        return torch.autograd.profiler.profile(record_shapes=True, profile_memory=True)
    if variant == "torch_cpu":
        return torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                      profile_memory=True)
    import gpuprof  # gpuprof and its breakdown variants
    full = variant != "gpuprof_bare"
    return gpuprof.profile(record_shapes=full, profile_memory=full, on_trace_ready=gpuprof.db_handler(out))

def timed_steps(count):
    times = []
    for i in range(count):
        begin = time.perf_counter()
        step(i)
        sync()
        times.append((time.perf_counter() - begin) * 1e3)
    return times

step(0); sync()  # lazy initialization outside the measurement
if windows > 0:
    # Paired in one process: `windows` times, `steps` steps without a profiler, then `steps` steps
    # with a fresh one (started and stopped outside the timed steps).
    # Also each half's CPU time per step, every thread of the process (time.process_time): a profiler
    # whose work runs on other threads pays it there, not in the step's wall time.
    pairs, cpu_pairs = [], []
    for _ in range(windows):
        cpu = time.process_time()
        plain = timed_steps(steps)
        cpu_plain = (time.process_time() - cpu) * 1e3 / steps
        prof = make_profiler()
        prof.__enter__()
        cpu = time.process_time()
        profiled = timed_steps(steps)
        cpu_profiled = (time.process_time() - cpu) * 1e3 / steps
        prof.__exit__(None, None, None)
        pairs.append([plain, profiled])
        cpu_pairs.append([cpu_plain, cpu_profiled])
    print("RESULT " + json.dumps({"pairs_ms": pairs, "cpu_ms_per_step": cpu_pairs}))
    sys.exit(0)
prof = make_profiler()
if prof is not None:
    prof.__enter__()
times = timed_steps(steps)
finish_s = None
if prof is not None:
    begin = time.perf_counter()
    prof.__exit__(None, None, None)
    if variant == "torch":
        prof.export_chrome_trace(os.path.join(out, "trace.json"))
    finish_s = time.perf_counter() - begin
print("RESULT " + json.dumps({"times_ms": times, "finish_s": finish_s}))
"""


VARIANT_NAMES = {"none": "no profiler", "torch": "PyTorch's profiler", "gpuprof": "gpuprof.profile",
                 "gpuprof_host": "  (gpuprof.profile, no CUPTI)",
                 "gpuprof_bare": "  (hooks only: no shapes/memory/CUPTI)", "gpuprof_nocorr": "  (no external correlation)",
                 "gpuprof_nonvtx": "  (no NVTX collection)", "gpuprof_runtime": "  (runtime API only: no driver, NVTX)",
                 "gpuprof_everycall": "  (every API call: activity records)",
                 "gpuprof_kernels": "  (kernels only: no API, NVTX)",
                 "gpuprof_cupti_floor": "  (CUPTI floor: task records alone)",
                 "torch_cpu": "  (torch.profiler, CPU activity only)",
                 "floor": "RecordFunction floor",
                 "floor_noinputs": "  (floor without inputs)"}


# What each gpuprof breakdown variant sets for its process (see the module docstring).
VARIANT_ENV = {
    "gpuprof_host": {"GPUPROF_DEVICE": "0"},  # the torch hooks alone, no CUPTI collection
    "gpuprof_bare": {"GPUPROF_DEVICE": "0"},
    "gpuprof_nocorr": {"GPUPROF_TORCH_DEVICE_CORRELATION": "0"},
    "gpuprof_nonvtx": {"GPUPROF_CUDA_TRACE": "launches"},
    "gpuprof_runtime": {"GPUPROF_CUDA_TRACE": "runtime"},
    "gpuprof_kernels": {"GPUPROF_CUDA_TRACE": "none"},
    "gpuprof_cupti_floor": {"GPUPROF_CUDA_TRACE": "none", "GPUPROF_TORCH_DEVICE_CORRELATION": "0"},
    "gpuprof_everycall": {"GPUPROF_CUDA_TRACE": "runtime,driver,nvtx"},
}


def parse_cpus(text):
    """'2-5,8' -> {2, 3, 4, 5, 8}; argparse turns the ValueError into a usage error naming --cpus."""
    cpus = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        if not first.isdigit() or (last and not last.isdigit()):
            raise ValueError(text)
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


PYTHON_HELP = ("the Python whose torch is measured (default: the first of $GPUPROF_TEST_PYTHON, /usr/bin/python3 "
               "and this interpreter that can import torch)")


def python_with_torch(candidates=None):
    """The default --python: the first candidate that imports torch (Debian's torch is in
    /usr/bin/python3 while python3 on PATH may lack it; on the GPU machine it is the reverse).
    Exits naming the interpreters tried and the fix when none does."""
    if candidates is None:
        candidates = [os.environ.get("GPUPROF_TEST_PYTHON"), "/usr/bin/python3", sys.executable]
    tried = []
    for python in candidates:
        if not python or python in tried or not os.path.exists(python):
            continue
        tried.append(python)
        try:
            if subprocess.run([python, "-c", "import torch"], capture_output=True, timeout=120).returncode == 0:
                return python
        except (OSError, subprocess.TimeoutExpired):
            pass
    sys.exit(f"no Python with torch among {', '.join(tried) or 'the candidates'}: install torch "
             "(Debian: apt install python3-torch) or pass --python PATH of an interpreter that has it")


def floor_line(floor, peer_added, peer):
    """How much of the target RecordFunction's own cost leaves to gpuprof's recording."""
    room = 0.5 * peer_added - floor
    return (f"RecordFunction floor (paid by both profilers before they record anything): {floor:.3f} ms/step, "
            f"{floor / peer_added:.2f} of {peer}'s added time; "
            + (f"at <= 0.5x, {room:.3f} ms/step are left for gpuprof's own recording" if room > 0 else
               "by this run's figures 0.5x of it is below the floor, which any profiler built on RecordFunction with inputs pays"))


def run_variant(args, variant, gpu):
    out = tempfile.mkdtemp(prefix=f"gpuprof_bench_{variant}_")
    script = os.path.join(out, "child.py")
    with open(script, "w") as f:
        f.write(f"REPO = {REPO!r}\n" + CHILD)
    cmd = [args.python, script, variant, str(args.steps), args.device, out, str(args.threads), str(args.windows)]
    env = dict(os.environ)
    env["GPUPROF_LIB_DIR"] = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(args.gpuprof))), "lib")
    env.update(VARIANT_ENV.get(variant, {}))
    pin = (lambda: os.sched_setaffinity(0, args.cpus)) if args.cpus else None
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env, preexec_fn=pin)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        sys.exit(f"torch_overhead: the {variant} run failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    result = json.loads(lines[-1][len("RESULT "):])
    if args.windows:
        dbs = len(db_files(out))
        shutil.rmtree(out, ignore_errors=True)
        return result["pairs_ms"], dbs, result["cpu_ms_per_step"]
    steady = result["times_ms"][args.warmup:]
    contents = db_contents(out) if variant.startswith("gpuprof") else None
    shutil.rmtree(out, ignore_errors=True)
    return statistics.median(steady), result["finish_s"], contents


def db_files(out):
    return [os.path.join(root, name) for root, _, names in os.walk(out) for name in names
            if name.startswith("ascend_pytorch_profiler") and name.endswith(".db")]


def window_added(pair, warmup):
    """One window's added time: median profiled step minus median plain step just before it."""
    plain, profiled = pair
    return statistics.median(profiled[warmup:]) - statistics.median(plain[warmup:])


def ratio_interval(ours, theirs, resamples=2000, seed=1):
    """95% bootstrap interval of median(ours) / median(theirs), each list resampled with replacement
    (windows of one variant are taken as exchangeable); (None, None) when a resample's peer median is
    not positive."""
    import random
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        peer = statistics.median(rng.choices(theirs, k=len(theirs)))
        if peer <= 0:
            return None, None
        ratios.append(statistics.median(rng.choices(ours, k=len(ours))) / peer)
    ratios.sort()
    return ratios[int(0.025 * resamples)], ratios[int(0.975 * resamples) - 1]


def report_paired(args, variants, results, names, peer, gpu, version):
    """--windows: every process times its own plain and profiled steps, so the added time is read
    without the spread between processes."""
    print(f"\ntrain_plain step, {'GPU' if gpu else 'CPU'}, torch {version}: paired in each process, {args.windows} "
          f"windows of {args.steps} plain steps then {args.steps} profiled steps (a fresh profiler per window, "
          f"started and stopped outside the timed steps; the first {args.warmup} steps of each half skipped); "
          f"{args.repeats} processes per variant"
          + (f"; processes on CPUs {','.join(map(str, sorted(args.cpus)))}" if args.cpus else ""))
    print(f"{'variant':<40}{'plain ms':>9}{'added ms/step':>15}{'processes':>17}{'windows':>17}{'DBs':>6}"
          f"{'added CPU ms/step':>19}")
    # Each process's window added times, then each process's median of them.
    windows = {v: [[window_added(p, args.warmup) for p in pairs] for pairs, _, _ in results[v]] for v in variants}
    process_added = {v: [statistics.median(w) for w in windows[v]] for v in variants}
    added = {}
    for v in variants:
        every_window = [a for w in windows[v] for a in w]
        plain = statistics.median(statistics.median(p[0][args.warmup:]) for pairs, _, _ in results[v] for p in pairs)
        added[v] = statistics.median(process_added[v])
        dbs = "-" if not v.startswith("gpuprof") else ",".join(str(n) for _, n, _ in results[v])
        cpu_added = statistics.median(prof - plain for _, _, cpu in results[v] for plain, prof in cpu)
        print(f"{names[v]:<40}{plain:>9.3f}{added[v]:>15.3f}{min(process_added[v]):>8.3f}-"
              f"{max(process_added[v]):<8.3f}{min(every_window):>8.3f}-{max(every_window):<8.3f}{dbs:>6}"
              f"{cpu_added:>19.3f}")
    print("(added CPU ms/step: the process's CPU time per step, every thread, profiled minus plain half, median "
          "over windows; the steps' wall time is what the target is about)")
    if added["torch"] <= 0:
        print(f"{peer} added no time; no ratio")
        return
    ratio = added["gpuprof"] / added["torch"]
    print(f"added time per step, gpuprof / {peer}: {ratio:.2f} (target <= 0.5: {'met' if ratio <= 0.5 else 'NOT met'})")
    low, high = ratio_interval([a for w in windows["gpuprof"] for a in w], [a for w in windows["torch"] for a in w])
    if low is not None:
        verdict = "met" if high <= 0.5 else "NOT met" if low > 0.5 else "not decided at this run's precision"
        print(f"95% interval of that ratio (bootstrap over the windows of each variant): {low:.2f} to {high:.2f}; "
              f"target {verdict}")
    per_round = [ours / theirs for ours, theirs in zip(process_added["gpuprof"], process_added["torch"]) if theirs > 0]
    if per_round:
        print(f"the same ratio round by round ({len(per_round)} rounds): median {statistics.median(per_round):.2f}, "
              f"range {min(per_round):.2f} to {max(per_round):.2f}")
    for v in variants[2:]:
        if v.startswith("gpuprof"):
            print(f"  {names[v].strip():<40} ratio {added[v] / added['torch']:.2f}")
    if "floor" in added:
        print(floor_line(added["floor"], added["torch"], peer))
        low, high = ratio_interval([a for w in windows["floor"] for a in w], [a for w in windows["torch"] for a in w])
        if low is not None:
            print(f"95% interval of floor / {peer}: {low:.2f} to {high:.2f}"
                  + ("; the floor alone is above 0.5x: no RecordFunction-based profiler with inputs can meet the "
                     "target in this run" if low > 0.5 else ""))


def db_contents(out):
    """What a variant's DB holds, so a cheaper variant is not read as a win when it records less:
    ops, ops linked to a device task (CONNECTION_IDS -> TASK), device tasks, CANN_API rows."""
    dbs = db_files(out)
    if len(dbs) != 1:
        return None
    con = sqlite3.connect(f"file:{dbs[0]}?mode=ro", uri=True)
    try:
        def count(sql):
            try:
                return con.execute(sql).fetchone()[0]
            except sqlite3.Error:
                return 0  # the table is absent when nothing of its kind was recorded
        return {
            "ops": count("SELECT COUNT(*) FROM PYTORCH_API"),
            "linked": count("SELECT COUNT(DISTINCT p.rowid) FROM PYTORCH_API p JOIN CONNECTION_IDS c "
                            "ON c.id = p.connectionId JOIN TASK t ON t.connectionId = c.connectionId"),
            "tasks": count("SELECT COUNT(*) FROM TASK"),
            "api": count("SELECT COUNT(*) FROM CANN_API"),
        }
    finally:
        con.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=None, help=PYTHON_HELP)
    parser.add_argument("--gpuprof", default=os.path.join(REPO, "build", "default", "bin", "gpuprof"))
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument("--breakdown", action="store_true",
                        help="GPU: also the variants that split the added time (see the module docstring)")
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads in every variant (0: torch's default)")
    parser.add_argument("--cpus", type=parse_cpus, default=None, metavar="LIST",
                        help="run every variant's process on these CPUs only, e.g. 2-7 or 2,3,4 (same cores for "
                             "all, so core placement stops adding to the spread between processes)")
    parser.add_argument("--variants", type=lambda text: text.split(","), default=None, metavar="LIST",
                        help="comma list of variants to run (none, torch and gpuprof are always run)")
    parser.add_argument("--windows", type=int, default=0, metavar="N",
                        help="paired in each process: N windows of --steps plain steps then --steps profiled "
                             "steps, so the spread between processes drops out (0: one profiled run per process, "
                             "against separate no-profiler processes)")
    args = parser.parse_args()
    if args.windows < 0:
        parser.error("--windows must be 0 or more")
    if args.steps <= args.warmup:
        parser.error("--steps must be larger than --warmup")
    if args.python is None:
        args.python = python_with_torch()
    probe = subprocess.run([args.python, "-c", "import torch; print(int(torch.cuda.is_available()), torch.__version__)"],
                           capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        sys.exit(f"torch_overhead: {args.python} cannot import torch: {probe.stderr.strip()}\n"
                 "pass --python PATH of an interpreter that has torch")
    cuda_available, version = probe.stdout.split()
    gpu = args.device == "cuda" or (args.device == "auto" and cuda_available == "1")
    peer = "torch.profiler" if gpu else "torch.autograd.profiler"
    variants = ("none", "torch", "gpuprof") + (("gpuprof_host",) if gpu else ())
    if gpu and args.breakdown:
        variants += ("gpuprof_bare", "gpuprof_nocorr", "gpuprof_nonvtx", "gpuprof_runtime", "gpuprof_everycall", "gpuprof_kernels",
                     "gpuprof_cupti_floor",
                     "torch_cpu")
    if args.variants:
        known = VARIANT_NAMES.keys() - ({"gpuprof_host", "gpuprof_bare", "gpuprof_nocorr", "gpuprof_nonvtx",
                                          "gpuprof_runtime", "gpuprof_everycall", "gpuprof_kernels", "gpuprof_cupti_floor",
                                          "torch_cpu"}
                                         if not gpu else set())
        unknown = [v for v in args.variants if v not in known]
        if unknown:
            parser.error(f"--variants: unknown {', '.join(unknown)}; choose from {', '.join(sorted(known))}")
        variants = ("none", "torch", "gpuprof") + tuple(v for v in args.variants if v not in ("none", "torch", "gpuprof"))
    if not args.variants:
        variants += ("floor",)
    if "floor" in variants or "floor_noinputs" in variants:
        floor_dir = tempfile.mkdtemp(prefix="gpuprof_bench_floor_")
        atexit.register(shutil.rmtree, floor_dir, True)
        try:
            os.environ[FLOOR_LIB_VARIABLE] = build_floor(args.python, floor_dir)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            if args.variants:  # asked for by name
                sys.exit(f"torch_overhead: --variants floor: {e}")
            print(f"torch_overhead: the RecordFunction floor is left out: {e}", file=sys.stderr)
            variants = tuple(v for v in variants if v not in ("floor", "floor_noinputs"))
    if args.windows:
        variants = tuple(v for v in variants if v != "none")  # each process times its own plain steps
    results = {v: [] for v in variants}
    for _ in range(args.repeats):  # interleaved, so drift hits every variant alike
        for variant in results:
            results[variant].append(run_variant(args, variant, gpu))
    names = dict(VARIANT_NAMES, torch=peer)
    if args.windows:
        report_paired(args, variants, results, names, peer, gpu, version)
        return 0
    step = {v: statistics.median(r[0] for r in rs) for v, rs in results.items()}
    finish = {v: statistics.median(r[1] for r in rs) if rs[0][1] is not None else None for v, rs in results.items()}
    print(f"\ntrain_plain step, {'GPU' if gpu else 'CPU'}, torch {version}: median step over steps "
          f"{args.warmup + 1}..{args.steps}, median of {args.repeats} processes; profilers record every step "
          "with record_shapes and profile_memory" + (f"; torch threads {args.threads}" if args.threads else "")
          + (f"; processes on CPUs {','.join(map(str, sorted(args.cpus)))}" if args.cpus else ""))
    print(f"{'variant':<34}{'step ms':>9}{'steps/s':>10}{'added ms/step':>15}{'process spread ms':>19}")
    for v in variants:
        added = step[v] - step["none"]
        medians = [r[0] for r in results[v]]
        spread = f"{min(medians):.3f}-{max(medians):.3f}"
        print(f"{names[v]:<34}{step[v]:>9.3f}{1e3 / step[v]:>10.1f}{added:>15.3f}{spread:>19}")
    torch_added = step["torch"] - step["none"]
    gpuprof_added = step["gpuprof"] - step["none"]
    ratio = gpuprof_added / torch_added if torch_added > 0 else float("nan")
    verdict = "met" if ratio <= 0.5 else "NOT met"
    # The added times are differences of medians; when the processes of one variant spread wider
    # than the difference being read, the ratio says little (compare the spread column).
    noise = max(max(r[0] for r in results[v]) - min(r[0] for r in results[v]) for v in ("none", "torch", "gpuprof"))
    if noise > abs(torch_added) or noise > abs(gpuprof_added):
        verdict += f"; within noise: the processes of one variant spread {noise:.3f} ms"

    print(f"added time per step, gpuprof / {peer}: {ratio:.2f} (target <= 0.5: {verdict})")
    # Paired: each round ran every variant back to back, so the ratio within a round is not moved
    # by drift between rounds; its range across rounds says how firm the verdict above is.
    def paired(variant):
        return [(ours[0] - none[0]) / (torch_[0] - none[0])
                for none, torch_, ours in zip(results["none"], results["torch"], results[variant])
                if torch_[0] - none[0] > 0]
    rounds = paired("gpuprof")
    if rounds:
        firm = all(r <= 0.5 for r in rounds) or all(r > 0.5 for r in rounds)
        print(f"the same ratio within each round ({len(rounds)} of {args.repeats} rounds where {peer} added time): "
              f"median {statistics.median(rounds):.2f}, range {min(rounds):.2f} to {max(rounds):.2f}"
              f" ({'every round on the same side of 0.5' if firm else 'rounds on both sides of 0.5'})")
        # Differences first, then medians: each round's added time is read against that round's
        # own no-profiler process, so a slow or fast round moves both profilers alike.
        def added_in_rounds(variant):
            return statistics.median(ours[0] - none[0] for none, ours in zip(results["none"], results[variant]))
        ours_added, peer_added = added_in_rounds("gpuprof"), added_in_rounds("torch")
        print(f"median over rounds of the added time: gpuprof {ours_added:.3f} ms, {peer} {peer_added:.3f} ms, "
              f"ratio {ours_added / peer_added:.2f}" if peer_added > 0 else "")
        for v in variants[3:]:
            if v.startswith("gpuprof"):
                r = paired(v)
                print(f"  {names[v].strip():<40} within-round ratio median {statistics.median(r):.2f}, "
                      f"range {min(r):.2f} to {max(r):.2f}")
    if "floor" in step and torch_added > 0:
        print(floor_line(step["floor"] - step["none"], torch_added, peer))
    print(f"\nwhat each gpuprof variant's DB holds (last round)")
    print(f"{'variant':<40}{'ops':>9}{'ops->task':>11}{'tasks':>9}{'CANN_API':>10}")
    for v in variants:
        contents = results[v][-1][2]
        if v.startswith("gpuprof"):
            row = ("".join(f"{contents[k]:>{w}}" for k, w in (("ops", 9), ("linked", 11), ("tasks", 9), ("api", 10)))
                   if contents else "  no single DB found")
            print(f"{names[v].strip():<40}{row}")
    print(f"\ntime from stop() to a finished output (median of {args.repeats})")
    print(f"{'variant':<50}{'seconds':>9}")
    print(f"{peer + ' stop + export_chrome_trace':<50}{finish['torch']:>9.3f}")
    print(f"{'gpuprof.profile stop (DB finalized)':<50}{finish['gpuprof']:>9.3f}")
    if finish["torch"]:
        print(f"ratio gpuprof / {peer}: {finish['gpuprof'] / finish['torch']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
