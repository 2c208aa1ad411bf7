#!/usr/bin/env python3
"""Inference through torch.compile(mode="reduce-overhead"): a target for graph replay (issue 24).

A small MLP block stack (LayerNorm, Linear, GELU, Linear, residual) runs --steps forward passes on a
fixed batch. Under mode "reduce-overhead" (the default) torch.compile's Triton kernels run inside a
CUDA graph (cudagraph trees: a warm-up step eagerly, a captured step, then graph replays); with
--mode default the same compiled kernels are launched one by one, outside any graph, which is the
baseline a graph replay's per-node durations are compared with. Each step prints the output's
checksum as exact integers, one line per step:

    step 3 checksum 0x1f2e3d4c5b6a7988 sum 0x1.2345p+10

so a run under `gpuprof replay --graph-replay node` and a plain run can be compared line by line.

    gpuprof replay --passes 3 --graph-replay node -- python3 examples/infer_compiled.py
    gpuprof replay --passes 3 -- python3 examples/infer_compiled.py --mode default

Without a usable CUDA GPU it exits 1 with "needs a CUDA GPU".
"""

import argparse
import hashlib
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8, help="forward passes (default 8)")
    parser.add_argument("--mode", default="reduce-overhead", choices=["reduce-overhead", "default"],
                        help="torch.compile mode: reduce-overhead runs the kernels in a CUDA graph (default)")
    parser.add_argument("--width", type=int, default=1024, help="model width (default 1024)")
    parser.add_argument("--layers", type=int, default=4, help="MLP blocks (default 4)")
    parser.add_argument("--batch", type=int, default=256, help="rows per step (default 256)")
    args = parser.parse_args()
    try:
        import torch
        from torch import nn
    except ImportError as error:
        print(f"needs PyTorch: {error}", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("needs a CUDA GPU (torch.cuda.is_available() is False)", file=sys.stderr)
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)

    class Block(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.norm = nn.LayerNorm(width)
            self.up = nn.Linear(width, 2 * width)
            self.down = nn.Linear(2 * width, width)

        def forward(self, x):
            return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))

    model = nn.Sequential(*[Block(args.width) for _ in range(args.layers)]).cuda().eval()
    compiled = torch.compile(model, mode=args.mode)
    generator = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(args.batch, args.width, device="cuda", generator=generator)
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; mode {args.mode}")
    with torch.no_grad():
        for step in range(args.steps):
            out = compiled(x)
            host = out.detach().cpu()
            digest = hashlib.blake2b(host.numpy().tobytes(), digest_size=8).hexdigest()
            print(f"step {step} checksum 0x{digest} sum {float(host.double().sum()).hex()}", flush=True)
            x = x * 0.5 + out.detach() * 0.001  # the next step's input depends on this one's output
    print(f"done: {args.steps} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
