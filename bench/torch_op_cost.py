#!/usr/bin/env python3
"""Added nanoseconds per PyTorch op: gpuprof.profile's hooks against PyTorch's profilers, on one
tiny CPU op (torch.neg of 4 floats) called N times, so the profilers' per-op cost is all there is.

Variants (each a fresh process; record_shapes and profile_memory on, as in torch_overhead.py):
  autograd   torch.autograd.profiler.profile (the legacy profiler)
  kineto     torch.profiler.profile(activities=[CPU]) (where torch has Kineto)
  gpuprof    gpuprof.profile, GPUPROF_DEVICE=0 (the torch hooks only; a CPU op has no kernels)
Prints ns/op without and with each profiler (best of 3 loops of N ops) and the added ns/op.

    python3 bench/torch_op_cost.py [--python /usr/bin/python3] [--gpuprof build/default/bin/gpuprof] [-n 100000]
"""

import argparse
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import os, sys, time
sys.path.insert(0, os.path.join(REPO, "python"))
import torch
variant, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
x = torch.randn(4)
def loop():
    begin = time.perf_counter()
    for _ in range(n):
        torch.neg(x)
    return (time.perf_counter() - begin) / n * 1e9
loop()
base = min(loop() for _ in range(3))
if variant == "autograd":
    prof = torch.autograd.profiler.profile(record_shapes=True, profile_memory=True)
elif variant == "kineto":
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                  profile_memory=True)
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
    parser.add_argument("--python", default="/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable)
    parser.add_argument("--gpuprof", default=os.path.join(REPO, "build", "default", "bin", "gpuprof"))
    parser.add_argument("-n", type=int, default=100000)
    args = parser.parse_args()
    import tempfile
    out = tempfile.mkdtemp(prefix="gpuprof_opcost_")
    script = os.path.join(out, "child.py")
    with open(script, "w") as f:
        f.write(f"REPO = {REPO!r}\n" + CHILD)
    env = dict(os.environ, GPUPROF_DEVICE="0",
               GPUPROF_LIB_DIR=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(args.gpuprof))), "lib"))
    print(f"{'variant':<40}{'ns/op':>9}{'profiled':>10}{'added':>8}")
    for variant, label in (("autograd", "torch.autograd.profiler"), ("kineto", "torch.profiler (CPU)"),
                           ("gpuprof", "gpuprof.profile (hooks only)")):
        done = subprocess.run([args.python, script, variant, str(args.n), out], capture_output=True, text=True,
                              timeout=600, env=env)
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
        if done.returncode != 0 or not lines:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            print(f"{label:<40}  unavailable: {last}")
            continue
        base, profiled = (float(v) for v in lines[-1].split()[1:])
        print(f"{label:<40}{base:>9.0f}{profiled:>10.0f}{profiled - base:>8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
