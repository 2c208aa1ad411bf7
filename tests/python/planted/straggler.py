"""Two gloo ranks training a small model, one of which may straggle (issue 41's slow-rank finding).

    python3 -m torch.distributed.run --nproc_per_node=2 straggler.py MODE OUT    MODE: straggler | even

Every step both ranks run the op "work" (50 ms, a sleep: steady on a busy machine); straggler: rank 1
also spends 30 ms per step outside every op (time.sleep, as a slow data path would) before the
gradients' all_reduce, so rank 0 waits for it there; even: neither does. Each rank
writes OUT.<rank>.json with what it planted per step, measured here: straggle_ms.
"""
import json
import os
import sys
import time

import torch
import torch.distributed as dist

mode, out = sys.argv[1], sys.argv[2]
os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = torch.nn.Linear(128, 128)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
planted = []
for step in range(8):
    loss = model(torch.randn(32, 128)).square().mean()
    opt.zero_grad()
    loss.backward()
    with torch.autograd.profiler.record_function("work"):
        time.sleep(0.050)
    start = time.perf_counter()
    if mode == "straggler" and rank == 1:
        time.sleep(0.030)
    straggled = time.perf_counter() - start
    for p in model.parameters():
        dist.all_reduce(p.grad)
    opt.step()
    planted.append({"straggle_ms": straggled * 1e3})
with open(f"{out}.{rank}.json", "w") as f:
    json.dump(planted, f)
dist.destroy_process_group()
