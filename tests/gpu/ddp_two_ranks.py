#!/usr/bin/env python3
"""Two-rank DistributedDataParallel training on two GPUs over NCCL (issue 7's GPU case): run under
`gpuprof run --with-modules -- python3 -m torch.distributed.run --nproc_per_node=2 THIS`. Each
rank prints "rank N done on cuda:N"; exit status 0 when both ranks agree on the final weights."""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).cuda()
    ddp = DistributedDataParallel(model, device_ids=[local_rank])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    torch.manual_seed(1 + rank)
    for _ in range(5):
        x = torch.randn(64, 256, device="cuda")
        loss = ddp(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.empty_like(weights) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, weights)
    torch.cuda.synchronize()
    same = all(torch.equal(gathered[0], g) for g in gathered)
    print(f"rank {rank} done on cuda:{local_rank}, replicas identical: {same}", flush=True)
    dist.destroy_process_group()
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
