#!/usr/bin/env python3
"""Added nanoseconds per PyTorch op: gpuprof.profile's hooks against PyTorch's profilers, on one
tiny op (torch.neg of 4 floats) called N times, so the profilers' per-op cost is all there is.
Each process times the loop without a profiler and then with one, so the difference is read
within one process (no noise between processes).

Variants (each a fresh process; record_shapes and profile_memory on, as in torch_overhead.py):
  autograd   torch.autograd.profiler.profile (the legacy profiler)
  kineto     torch.profiler.profile(activities=[CPU]) (where torch has Kineto)
  gpuprof    gpuprof.profile, GPUPROF_DEVICE=0 (the torch hooks only; a CPU op has no kernels)
  floor      no profiler: a do-nothing RecordFunction callback that asks for the inputs
             (bench/record_function_floor.cc, built by record_function_floor.py), the part of
             every row above that is torch's own dispatch cost
With --device cuda the tensor is on the GPU, so every op is one kernel launch, and also:
  kineto_cuda    torch.profiler.profile(activities=[CPU, CUDA]): Kineto's hooks plus its CUPTI
  gpuprof_cuda   gpuprof.profile with CUPTI as a GPU run profiles by default (kernels, the
                 launching API calls through gpuprof's callbacks, NVTX, per-op external ids)
  gpuprof_noapi  the same with GPUPROF_CUDA_TRACE=none (kernels only: no API records, no NVTX)
  gpuprof_nocorr the same with GPUPROF_TORCH_DEVICE_CORRELATION=0 (no per-op correlation push/pop)
  gpuprof_runtime the same with GPUPROF_CUDA_TRACE=runtime (no driver API records, no NVTX)
  gpuprof_nonvtx the same with GPUPROF_CUDA_TRACE=runtime,driver (no NVTX)
  gpuprof_everycall the same with GPUPROF_CUDA_TRACE=runtime,driver,nvtx (every runtime and
                 driver call as a CUPTI activity record; the default before launches)
Prints ns/op without and with each profiler (best of 3 loops of N ops) and the added ns/op.

    python3 bench/torch_op_cost.py [--python /usr/bin/python3] [--gpuprof build/default/bin/gpuprof] [-n 100000]
                                   [--device cpu|cuda] [--repeats 1] [--variants LIST] [--cpus LIST]
"""

import argparse
import os
import subprocess
import sys

# bench/ is the script's directory, first on sys.path
from record_function_floor import FLOOR_LIB_VARIABLE, build_floor
from torch_overhead import PYTHON_HELP, parse_cpus, python_with_torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import os, sys, time
sys.path.insert(0, os.path.join(REPO, "python"))
import torch
variant, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
device = sys.argv[4]
x = torch.randn(4, device=device)
def sync():
    if device == "cuda":
        torch.cuda.synchronize()
def loop():
    sync()
    begin = time.perf_counter()
    for _ in range(n):
        torch.neg(x)
    sync()
    return (time.perf_counter() - begin) / n * 1e9
loop()
base = min(loop() for _ in range(3))
if variant == "autograd":
    prof = torch.autograd.profiler.profile(record_shapes=True, profile_memory=True)
elif variant == "kineto":
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                  profile_memory=True)
elif variant == "kineto_cuda":
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                              torch.profiler.ProfilerActivity.CUDA],
                                  record_shapes=True, profile_memory=True)
elif variant == "floor":
    sys.path.insert(0, os.path.join(REPO, "bench"))
    from record_function_floor import Floor
    prof = Floor()
else:
    import gpuprof
    prof = gpuprof.profile(record_shapes=True, profile_memory=True, on_trace_ready=gpuprof.db_handler(out))
prof.__enter__()
profiled = min(loop() for _ in range(3))
prof.__exit__(None, None, None)
print(f"RESULT {base:.1f} {profiled:.1f}")
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=None, help=PYTHON_HELP)
    parser.add_argument("--gpuprof", default=os.path.join(REPO, "build", "default", "bin", "gpuprof"))
    parser.add_argument("-n", type=int, default=100000)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="cuda: the op runs on the GPU and the CUPTI variants are added")
    parser.add_argument("--repeats", type=int, default=1, help="processes per variant (rows are interleaved)")
    parser.add_argument("--variants", type=lambda text: text.split(","), default=None, metavar="LIST",
                        help="comma list of the variants to run (default: all for --device)")
    parser.add_argument("--cpus", type=parse_cpus, default=None, metavar="LIST",
                        help="run every process on these CPUs only, e.g. 2-7")
    args = parser.parse_args()
    if args.python is None:
        args.python = python_with_torch()
    import tempfile
    out = tempfile.mkdtemp(prefix="gpuprof_opcost_")
    script = os.path.join(out, "child.py")
    with open(script, "w") as f:
        f.write(f"REPO = {REPO!r}\n" + CHILD)
    lib_dir = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(args.gpuprof))), "lib")
    variants = [("autograd", "torch.autograd.profiler", {}), ("kineto", "torch.profiler (CPU)", {}),
                ("gpuprof", "gpuprof.profile (hooks only)", {"GPUPROF_DEVICE": "0"}),
                ("floor", "RecordFunction floor (no profiler)", {})]
    if args.device == "cuda":
        variants += [("kineto_cuda", "torch.profiler (CPU, CUDA)", {}),
                     ("gpuprof_cuda", "gpuprof.profile (hooks + CUPTI)", {}),
                     ("gpuprof_noapi", "  CUPTI kernels only (no API, NVTX)", {"GPUPROF_CUDA_TRACE": "none"}),
                     ("gpuprof_nocorr", "  no per-op correlation", {"GPUPROF_TORCH_DEVICE_CORRELATION": "0"}),
                     ("gpuprof_runtime", "  runtime API only (no driver, NVTX)", {"GPUPROF_CUDA_TRACE": "runtime"}),
                     ("gpuprof_nonvtx", "  no NVTX", {"GPUPROF_CUDA_TRACE": "runtime,driver"}),
                     ("gpuprof_everycall", "  every API call (activity records)",
                      {"GPUPROF_CUDA_TRACE": "runtime,driver,nvtx"})]
    if args.variants:
        unknown = set(args.variants) - {v[0] for v in variants}
        if unknown:
            parser.error(f"--variants: unknown {', '.join(sorted(unknown))}; choose from "
                         f"{', '.join(v[0] for v in variants)}")
        variants = [v for v in variants if v[0] in args.variants]
    floor_error = None
    if any(v[0] == "floor" for v in variants):
        try:
            os.environ[FLOOR_LIB_VARIABLE] = build_floor(args.python, out)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            floor_error = str(e).splitlines()[0]
    pin = (lambda: os.sched_setaffinity(0, args.cpus)) if args.cpus else None
    print(f"torch.neg of 4 floats on {args.device}, {args.n} ops per loop, best of 3 loops; "
          f"{args.repeats} process(es) per variant, one row each")
    print(f"{'variant':<40}{'ns/op':>9}{'profiled':>10}{'added':>8}")
    for _ in range(args.repeats):
        for variant, label, extra in variants:
            if variant == "floor" and floor_error:
                print(f"{label:<40}  unavailable: {floor_error}")
                continue
            env = dict(os.environ, GPUPROF_LIB_DIR=lib_dir, **extra)
            done = subprocess.run([args.python, script, variant, str(args.n), out, args.device], capture_output=True,
                                  text=True, timeout=600, env=env, preexec_fn=pin)
            lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
            if done.returncode != 0 or not lines:
                last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                print(f"{label:<40}  unavailable: {last}")
                continue
            base, profiled = (float(v) for v in lines[-1].split()[1:])
            print(f"{label:<40}{base:>9.0f}{profiled:>10.0f}{profiled - base:>8.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
