#!/usr/bin/env python3
"""Data-parallel training on two (or more) ranks: the distributed target for `gpuprof run`.

    gpuprof run -o DIR --with-modules -- python3 -m torch.distributed.run --nproc_per_node=2 examples/train_ddp.py

Each rank trains the same small MLP on its own synthetic batches. The collectives are explicit, so
a profile has a known set of them: one broadcast per parameter from rank 0 at the start; per step
one all_reduce in the forward pass (CrossRankCenter, a module that centers its input on the mean
over every rank's batch, as SyncBatchNorm does its statistics) and one all_reduce per parameter
(the gradients, averaged); one all_gather of the final weights (every rank checks that the
replicas are identical) and one barrier. With --steps 3 (the default) and the model's 4 parameters
that is 4 + 3 + 12 + 1 + 1 = 21 collectives per rank; the forward one runs inside a module, so a
--with-modules profile places communication under its module (msprof-analyze's module_statistic).

The backend is NCCL when every rank has a GPU of its own (LOCAL_WORLD_SIZE <= the GPU count), else gloo
on the CPU over the loopback interface (GLOO_SOCKET_IFNAME=lo unless set), so it runs on a machine
without a GPU. When gpuprof's Python package is importable (it is under `gpuprof run`), each step
is bracketed by two mstx marks, "stepN_start" and "stepN_stop", the pair msprof-analyze's mstx_sum
times (its _start/_stop rule), and the whole loop by "train_start" and "train_stop" (the last one
after every step, outside any torch op). Each rank prints

    rank 0 done on cpu, replicas identical: True

and the exit status is 1 when the replicas differ. Before training each rank prints its backend and
the variables that keep NVLink multicast off (on the shared GPU machines they must reach every rank:
NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1), "unset" for one
that is not set:

    rank 0 backend gloo, NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
"""

import argparse
import os
import sys

import torch
import torch.distributed as dist

# The variables that turn NVLink multicast off in NCCL, PyTorch and NVSHMEM (printed at the start).
MULTICAST_VARIABLES = ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")

try:  # the marks are optional: the example runs without gpuprof too
    from gpuprof import mstx
except ImportError:  # pragma: no cover
    mstx = None


class CrossRankCenter(torch.nn.Module):
    """Subtracts the mean of its input over the batches of every rank (one all_reduce)."""

    def forward(self, x):
        total = torch.stack([x.detach().sum(0), torch.full_like(x[0], x.shape[0])])
        dist.all_reduce(total)
        return x - total[0] / total[1]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3, help="training steps (default 3)")
    parser.add_argument("--backend", choices=("auto", "gloo", "nccl"), default="auto",
                        help="auto: nccl when every rank has a GPU, else gloo on the CPU")
    parser.add_argument("--print-every", type=int, default=0, metavar="N",
                        help="print 'rank R step S' after every N-th step (default 0: only the final line)")
    return parser.parse_args()


def main():
    args = parse_args()
    if "LOCAL_RANK" not in os.environ:
        raise SystemExit("train_ddp.py: run it under torch.distributed.run (torchrun), e.g. "
                         "python3 -m torch.distributed.run --nproc_per_node=2 examples/train_ddp.py")
    local_rank = int(os.environ["LOCAL_RANK"])
    backend = args.backend
    if backend == "auto":
        # One choice for every rank: each must have a GPU of its own (on a machine with fewer GPUs than
        # local ranks, rank 0 on NCCL and rank 1 on gloo would never meet).
        local_ranks = int(os.environ.get("LOCAL_WORLD_SIZE", local_rank + 1))
        backend = "nccl" if torch.cuda.is_available() and local_ranks <= torch.cuda.device_count() else "gloo"
    if backend == "gloo":
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        device = torch.device("cpu")
    else:
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    dist.init_process_group(backend)
    rank = dist.get_rank()
    world = dist.get_world_size()
    seen = " ".join(f"{name}={os.environ.get(name, 'unset')}" for name in MULTICAST_VARIABLES)
    sys.stdout.write(f"rank {rank} backend {backend}, {seen}\n")  # one write: see --print-every
    sys.stdout.flush()

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), CrossRankCenter(), torch.nn.ReLU(),
                                torch.nn.Linear(32, 4)).to(device)
    for p in model.parameters():
        dist.broadcast(p.data, 0)  # the same start on every rank
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + rank)  # each rank its own data
    if mstx:
        mstx.mark("train_start")
    for step in range(args.steps):
        if mstx:
            mstx.mark(f"step{step}_start")
        loss = model(torch.randn(8, 16, device=device)).square().mean()
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        if mstx:
            mstx.mark(f"step{step}_stop")  # before opt.step(), which closes the ProfilerStep op
        opt.step()
        if args.print_every > 0 and (step + 1) % args.print_every == 0:
            # One write: under `python -u` (torchrun's ranks) print() writes the text and the newline
            # apart, and two ranks' lines on one pipe would interleave.
            sys.stdout.write(f"rank {rank} step {step + 1}\n")
            sys.stdout.flush()
    if mstx:
        mstx.mark("train_stop")
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.empty_like(weights) for _ in range(world)]
    dist.all_gather(gathered, weights)
    dist.barrier()
    same = all(torch.equal(gathered[0], g) for g in gathered)
    print(f"rank {rank} done on {device}, replicas identical: {same}", flush=True)
    dist.destroy_process_group()
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
