"""A small CUDA training loop for the per-kernel findings (issue 41): a large elementwise op that
streams DRAM, and many reductions over a small tensor, each launched with a grid far smaller than
the device's SMs.

    python3 kernels.py OUT.json    (OUT "-": a line "planted JSON" on stdout)

Each of 8 iterations: big.mul_(0.999) over 64 Mi floats (256 MiB read and 256 MiB written) 4 times,
then small.sum() over 1,000 floats 500 times (PyTorch's reduce_kernel: a grid of one block, a few
microseconds each), then one SGD step of a tiny model (steps are optimizer step to optimizer step).
OUT.json receives the device's name and SM count as torch reports them (the tiny-grid rule's SM
count comes from gpuprof's table of devices: the check compares the two), and what was planted.
"""
import json
import sys

import torch

out = sys.argv[1]
torch.manual_seed(0)
device = torch.device("cuda")
props = torch.cuda.get_device_properties(device)
big = torch.ones(64 * 1024 * 1024, device=device)
small = torch.ones(1000, device=device)
model = torch.nn.Linear(64, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.ones(8, 64, device=device)
y = torch.zeros(8, 1, device=device)
BIG_OPS, REDUCTIONS, ITERATIONS = 4, 500, 8

for step in range(ITERATIONS):
    for _ in range(BIG_OPS):
        big.mul_(0.999)
    for _ in range(REDUCTIONS):
        small.sum()  # the result is not used: the launch is what is planted
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
torch.cuda.synchronize()

planted = {"device": props.name, "sms": props.multi_processor_count, "big_ops_per_step": BIG_OPS,
           "big_bytes": big.numel() * big.element_size(), "reductions_per_step": REDUCTIONS,
           "small_elements": small.numel()}
if out == "-":
    print("planted " + json.dumps(planted))
else:
    with open(out, "w") as f:
        json.dump(planted, f)
