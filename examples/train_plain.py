#!/usr/bin/env python3
"""Train a small MLP on synthetic data for a few steps: the plain target for `gpuprof run`.

It does not import gpuprof: `gpuprof run -- python3 examples/train_plain.py` profiles it from the
outside (the CUDA driver loads gpuprof's injection library when PyTorch initializes CUDA). It runs
on the CPU or a CUDA GPU, is deterministic for a given --seed (same data, same initial weights,
deterministic algorithms), and prints the device, then one line per step:

    step 3/10 loss 2.154321 time_ms 1.234

time_ms is the step's wall time, measured after the step's work finished on the device, so runs
with and without a profiler can be compared step by step.
"""

import argparse
import os
import sys
import time

# cuBLAS needs a fixed workspace configuration for deterministic results; it must be set before
# CUDA is initialized (a value the user set wins).
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402  (after the environment above)
from torch import nn  # noqa: E402

IN_FEATURES = 64
HIDDEN = 256
CLASSES = 10
SAMPLES = 2048


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="where to train; auto picks cuda when a GPU is usable (default: auto)")
    parser.add_argument("--steps", type=int, default=10, help="training steps (default: 10)")
    parser.add_argument("--batch-size", type=int, default=128, help="samples per step (default: 128)")
    parser.add_argument("--seed", type=int, default=0, help="seed for data and weights (default: 0)")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    if not 1 <= args.batch_size <= SAMPLES:
        parser.error(f"--batch-size must be between 1 and {SAMPLES}")
    return args


def pick_device(choice):
    if choice == "cpu":
        return torch.device("cpu")
    if torch.cuda.is_available():
        return torch.device("cuda", 0)
    if choice == "cuda":
        sys.exit("train_plain.py: error: --device cuda, but torch.cuda.is_available() is False "
                 "(no GPU, or a CPU-only PyTorch build); use --device cpu or auto")
    return torch.device("cpu")


def synthetic_data(seed):
    """A fixed classification problem: labels come from a fixed random projection, so it is learnable."""
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randn(SAMPLES, IN_FEATURES, generator=generator)
    projection = torch.randn(IN_FEATURES, CLASSES, generator=generator)
    labels = (inputs @ projection).argmax(dim=1)
    return inputs, labels


def make_model(device):
    """The 3-layer MLP, its SGD optimizer and loss, weights from the current torch seed."""
    model = nn.Sequential(nn.Linear(IN_FEATURES, HIDDEN), nn.ReLU(),
                          nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                          nn.Linear(HIDDEN, CLASSES)).to(device)
    return model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9), nn.CrossEntropyLoss()


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    device = pick_device(args.device)

    if device.type == "cuda":
        print(f"device: {device} ({torch.cuda.get_device_name(device)}), torch {torch.__version__}", flush=True)
    else:
        print(f"device: cpu, torch {torch.__version__}", flush=True)

    # Data and weights are made on the CPU from the seed, then moved: the same numbers on every device.
    inputs, labels = synthetic_data(args.seed)
    model, optimizer, loss_fn = make_model(device)
    inputs, labels = inputs.to(device), labels.to(device)

    batches = SAMPLES // args.batch_size
    step_ms = []
    loss_value = float("nan")
    for step in range(args.steps):
        begin = time.perf_counter()
        first = (step % batches) * args.batch_size
        x = inputs[first:first + args.batch_size]
        y = labels[first:first + args.batch_size]
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        loss_value = loss.item()  # waits for the step's device work
        elapsed_ms = (time.perf_counter() - begin) * 1e3
        step_ms.append(elapsed_ms)
        print(f"step {step + 1}/{args.steps} loss {loss_value:.6f} time_ms {elapsed_ms:.3f}", flush=True)

    # The first step pays for lazy initialization (CUDA context, cuBLAS handles, kernel loading).
    steady = step_ms[1:] or step_ms
    print(f"done: {args.steps} steps on {device.type}, final loss {loss_value:.6f}, "
          f"mean step {sum(steady) / len(steady):.3f} ms (steps 2..{args.steps})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
