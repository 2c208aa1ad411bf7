"""A script's own profilers under `gpuprof run` on the GPU (issue 39, items 1 and 2): torch.profiler
with CUDA activity runs to its end with its own CPU results (it sees no GPU kernels: gpuprof holds
CUDA's one CUPTI subscriber, said once), and a script's gpuprof.profile has its figures, its
kernels' device time among them, right after its recording, from the run's collection. Prints what
it saw, then `user_profilers: ok`; tests/gpu/check_db.py (user_profilers) checks the lines and the
run's DB. Run by tests/gpu/run_case.py (UserProfilersUnderRun)."""
import json
import os
import sys
import tempfile

import torch

import gpuprof


def train(model, x, steps, each=None):
    for _ in range(steps):
        model(x).sum().backward()
        if each is not None:
            each.step()
    torch.cuda.synchronize()


def main():
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 64)).cuda()
    x = torch.randn(128, 256, device="cuda")
    train(model, x, 2)
    work = tempfile.mkdtemp(prefix="user_profilers_")

    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts, record_shapes=True, profile_memory=True) as p:
        train(model, x, 3)
    events = p.key_averages()
    print(events.table(sort_by="cpu_time_total", row_limit=5))
    cpu_ops = sum(e.count for e in events if e.key.startswith("aten::"))
    print(f"torch_profiler_cpu_ops {cpu_ops}", flush=True)
    torch_trace = os.path.join(work, "torch_trace.json")
    p.export_chrome_trace(torch_trace)
    with open(torch_trace) as f:
        kernels = [e for e in json.load(f).get("traceEvents", []) if e.get("cat") == "kernel"]
    print(f"torch_profiler_kernels {len(kernels)}", flush=True)

    with gpuprof.profile(activities=[gpuprof.ProfilerActivity.CPU, gpuprof.ProfilerActivity.CUDA],
                         schedule=gpuprof.schedule(wait=1, warmup=0, active=2, repeat=1)) as prof:
        train(model, x, 4, each=prof)
    print(f"gpuprof_db_path {prof.db_path}", flush=True)
    averages = prof.key_averages()
    print(averages.table(sort_by="cpu_time_total", row_limit=5))
    ops = sum(e.count for e in averages if e.key.startswith("aten::"))
    steps = sum(e.count for e in averages if e.key.startswith("ProfilerStep"))
    device_us = sum(getattr(e, "self_cuda_time_total", 0) or getattr(e, "self_device_time_total", 0) for e in averages)
    print(f"gpuprof_profile_ops {ops} steps {steps} device_us {device_us:.1f}", flush=True)
    trace = os.path.join(work, "gpuprof_trace.json")
    prof.export_chrome_trace(trace)
    with open(trace) as f:
        events = json.load(f).get("traceEvents", [])
    print(f"gpuprof_trace_kernels {sum(1 for e in events if e.get('cat') == 'kernel')}", flush=True)
    print("user_profilers: ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
