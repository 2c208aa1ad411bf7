"""A small CPU training loop that plants one cause of slow steps (issue 41's findings), or none.

    python3 slow_step.py MODE OUT.json    MODE: gc | dataloader | sync | launch | launch_fused | slow_op
                                          | pageable | pinned | empty_cache | clean
                                          (OUT "-": a line "planted JSON" on stdout)

gc: every step collects a heap of reference cycles (automatic collection is off, so the pauses are
exactly the planted ones); dataloader: every sample takes 25 ms to load; sync (needs a GPU): every
step queues 20 ms of matrix products and waits for them with torch.cuda.synchronize(); launch
(needs a GPU): 400 one-element kernels, 50 us of host work between launches, so the device idles
between kernels far shorter than their launches; launch_fused, its twin: the same host work, then
one kernel; pageable (needs a GPU): a 64 MiB host tensor in pageable memory copied to the device
with non_blocking=True every step; pinned, its twin: the same from pinned memory; empty_cache: every
step calls torch.cuda.empty_cache() (where torch sees no GPU it does nothing; on a GPU the step
first allocates and frees 2 GiB, so the call hands that cached block back with cudaFree and the
next step allocates it again with cudaMalloc); slow_op: the op "planted_op" (5 ms in every mode)
takes 20 ms. OUT.json receives what was planted per iteration, measured here: gc_ms (the
gc.collect() call), wait_ms (next(loader)), sync_ms (the synchronize call), copy_ms (the copy's
call), launch_ms (the launch loop, up to its kernels' end), empty_cache_ms (the empty_cache call,
after a synchronize so that no queued work lands in it) and op_ms (planted_op).
"""
import gc
import json
import sys
import time

import torch

mode, out = sys.argv[1], sys.argv[2]
gc.disable()  # only the planted collections
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)


class Samples(torch.utils.data.Dataset):
    def __len__(self):
        return 10**6

    def __getitem__(self, i):
        if mode == "dataloader":
            time.sleep(0.025)
        return torch.ones(64), torch.zeros(1)


planted = []
loader = iter(torch.utils.data.DataLoader(Samples(), batch_size=1))
for step in range(8):
    start = time.perf_counter()
    x, y = next(loader)
    waited = time.perf_counter() - start
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    start = time.perf_counter()
    with torch.autograd.profiler.record_function("planted_op"):
        time.sleep(0.020 if mode == "slow_op" else 0.005)
    op = time.perf_counter() - start
    collected = 0.0
    if mode == "gc":
        junk = []
        for i in range(150000):
            a = {}
            a["b"] = {"a": a}
            junk.append(a)
        del junk
        start = time.perf_counter()
        gc.collect()
        collected = time.perf_counter() - start
    synced = 0.0
    if mode == "sync":
        a = torch.ones(4096, 4096, device="cuda")
        start = time.perf_counter()
        while time.perf_counter() - start < 0.02:  # queue about 20 ms of device work
            a = a @ a * 1e-4
        start = time.perf_counter()
        torch.cuda.synchronize()
        synced = time.perf_counter() - start
    launched = 0.0
    if mode in ("launch", "launch_fused"):
        v = torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
        start = time.perf_counter()
        for i in range(400):
            if mode == "launch":
                v.add_(1.0)
            spin = time.perf_counter()
            while time.perf_counter() - spin < 50e-6:  # Python work between launches
                pass
        if mode == "launch_fused":
            v.add_(400.0)
        torch.cuda.synchronize()
        launched = time.perf_counter() - start
    copied = 0.0
    if mode in ("pageable", "pinned"):
        host = torch.ones(16 << 20)
        if mode == "pinned":
            host = host.pin_memory()
        torch.cuda.synchronize()
        start = time.perf_counter()
        on_device = host.to("cuda", non_blocking=True)
        copied = time.perf_counter() - start
        torch.cuda.synchronize()
    emptied = 0.0
    if mode == "empty_cache":
        if torch.cuda.is_available():
            block = torch.empty(512 << 20, device="cuda")  # 2 GiB of float32, kept by the allocator once freed
            block.fill_(1.0)
            del block
            torch.cuda.synchronize()
        start = time.perf_counter()
        torch.cuda.empty_cache()
        emptied = time.perf_counter() - start
    time.sleep(0.01)
    planted.append({"gc_ms": collected * 1e3, "wait_ms": waited * 1e3, "sync_ms": synced * 1e3,
                    "launch_ms": launched * 1e3, "copy_ms": copied * 1e3, "empty_cache_ms": emptied * 1e3,
                    "op_ms": op * 1e3})
if out == "-":
    print("planted " + json.dumps(planted))
else:
    with open(out, "w") as f:
        json.dump(planted, f)
