"""A small CUDA training loop that plants the per-kernel and launch findings PyTorch's own kernels do
not give on demand (issue 41), with kernels of tests/gpu/planted_kernels.cu called through ctypes on
PyTorch's current stream.

    python3 own_kernels.py MODE OUT.json LIBRARY    MODE: counters | launch_delay | host_wait
                                                    (OUT "-": a line "planted JSON" on stdout;
                                                    LIBRARY: BUILD/tests/gpu/gpu_test_planted_kernels.so)

Each of 8 iterations runs one SGD step of a tiny model (steps are optimizer step to optimizer step),
then:
counters (under `gpuprof replay --set basic`): 2 pointer chases (dependent 128-byte loads at random
places over 1 GiB, 8 warps per SM: memory-bound far below DRAM peak) and 2 launches of a grid of
16 blocks per SM where only block 0 works (achieved occupancy far below the theoretical), then a
wait for them (as a loop that reads its loss every step);
launch_delay: 4 times a small kernel, a host function queued on the stream that sleeps 5 ms, and
the next small kernel, launched at once, which waits on the idle device for the host function;
host_wait, its twin: the same 5 ms slept by Python between the two kernels, so the device waits on
the host, not on a launched kernel.
OUT.json receives what was planted: the SM count, the chase's warps and hops (each moves one
128-byte line from DRAM), the busy block's warps and an SM's most warps (counters); per iteration, host_wait_ms: the time the host functions (launch_delay) or Python
(host_wait) slept.
"""
import ctypes
import json
import sys
import time

import torch

mode, out, library = sys.argv[1], sys.argv[2], sys.argv[3]
planted_kernels = ctypes.CDLL(library)
planted_kernels.planted_host_waited_ns.restype = ctypes.c_int64
torch.manual_seed(0)
device = torch.device("cuda")
props = torch.cuda.get_device_properties(device)
model = torch.nn.Linear(64, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.ones(8, 64, device=device)
y = torch.zeros(8, 1, device=device)
ITERATIONS, HOST_WAIT_US = 8, 5000


def check(error, what):
    if error != 0:
        sys.exit(f"own_kernels.py: {what} failed with CUDA error {error}")


def stream():
    return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)


# 1 GiB of lines, so the L2 cache (50 MiB on an H100) holds few of them.
LINES, HOPS, BUSY_ITERATIONS = 8 * 1024 * 1024, 3000, 1_000_000
if mode == "counters":
    # Every 128-byte line holds, 32 times, the index of the next line of one random cycle.
    order = torch.randperm(LINES, device=device)
    following = torch.empty(LINES, dtype=torch.int32, device=device)
    following[order] = order.roll(-1).to(torch.int32)
    chain = following.unsqueeze(1).expand(LINES, 32).contiguous()
    ends = torch.zeros(planted_kernels.planted_pointer_chase_warps(), dtype=torch.int32, device=device)
    sink = torch.zeros(256, device=device)
small = torch.ones(1024, device=device)

planted = []
for step in range(ITERATIONS):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if mode == "counters":
        for _ in range(2):
            check(planted_kernels.planted_pointer_chase_launch(ctypes.c_void_p(chain.data_ptr()), LINES, HOPS,
                                                               ctypes.c_void_p(ends.data_ptr()), stream()),
                  "planted_pointer_chase")
            check(planted_kernels.planted_one_busy_block_launch(ctypes.c_void_p(sink.data_ptr()), BUSY_ITERATIONS,
                                                                stream()), "planted_one_busy_block")
        # As a loop that reads its loss every step: the step waits for its kernels, so they run in it.
        torch.cuda.synchronize()
    waited = 0.0
    if mode in ("launch_delay", "host_wait"):
        torch.cuda.synchronize()
        before = planted_kernels.planted_host_waited_ns()
        for _ in range(4):
            small.mul_(1.0001)
            if mode == "launch_delay":
                check(planted_kernels.planted_host_wait(stream(), HOST_WAIT_US), "cudaLaunchHostFunc")
            else:
                start = time.perf_counter()
                time.sleep(HOST_WAIT_US / 1e6)
                waited += time.perf_counter() - start
            small.mul_(1.0001)
        torch.cuda.synchronize()
        if mode == "launch_delay":
            waited = (planted_kernels.planted_host_waited_ns() - before) / 1e9
    planted.append({"host_wait_ms": waited * 1e3})
torch.cuda.synchronize()

result = {"device": props.name, "sms": props.multi_processor_count,
          "chase_warps": planted_kernels.planted_pointer_chase_warps(), "chase_hops": HOPS,
          "busy_block_warps": planted_kernels.planted_one_busy_block_warps(),
          "max_warps_per_sm": planted_kernels.planted_max_warps_per_sm(), "iterations": planted}
if out == "-":
    print("planted " + json.dumps(result))
else:
    with open(out, "w") as f:
        json.dump(result, f)
