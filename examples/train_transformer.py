#!/usr/bin/env python3
"""Train a small decoder-only transformer on a CUDA GPU, bit-reproducibly: a target for kernel replay.

Each step's loss is printed as an exact hex float, one line per step:

    step 3 loss 0x1.e3f2a60000000p+2

so a run under `gpuprof replay` and a plain run can be compared line by line (they must be equal).
The model: token and position embeddings, N decoder blocks (LayerNorm, multi-head causal
self-attention, LayerNorm, GELU MLP, residuals), a final LayerNorm and an untied output layer;
AdamW in fp32 on a fixed synthetic next-token task. Attention goes through
torch.nn.functional.scaled_dot_product_attention restricted to the memory-efficient backend, so the
CUTLASS kernels fmha_cutlassF_* (forward) and fmha_cutlassB_* (backward) run; torch 2.11's are
known to reference device printf, which makes them a test of replaying such kernels.

Determinism: the seed fixes the weights (made on the CPU) and the data (made on the GPU by a seeded
generator); cuBLAS gets a fixed workspace (CUBLAS_WORKSPACE_CONFIG, set before CUDA starts), cuDNN
deterministic, no TF32, and torch.use_deterministic_algorithms(True). That last one is strict by
default, not warn_only: with warn_only=True, torch lets the memory-efficient attention backward
split the keys over thread blocks and add the partial gradients with atomics (its
attention_backward.cu forces one split only in strict mode), and then two plain runs already differ.
--warn-only is there for a torch that raises on an op here.

Sizes (the defaults; every one is a flag). d_model 256, 6 layers, 4 heads of 64, MLP 1024,
sequence 128, batch 4, vocabulary 2048:
  parameters       5,820,416 (6 x 789,760 per block + 2 x 2048 x 256 embedding/output + 128 x 256
                   positions + 512 final norm), in 77 tensors;
  AdamW            parameters, gradients, exp_avg, exp_avg_sq: 4 x 22.2 MiB = 88.8 MiB in 308 tensors;
  activations      kept for the backward, per block (512 tokens): LayerNorm outputs, q/k/v, the
                   attention output, two residual sums (8 x 512 x 256 floats) and the MLP's hidden
                   layer before and after GELU (2 x 512 x 1024): 8 MiB in about 13 tensors; 6 blocks
                   48 MiB, plus logits and their log-softmax 8 MiB;
  total            about 145 MiB in about 390 caching-allocator blocks, if everything were live at
                   once (it is not: gradients appear while the backward frees activations), in a few
                   dozen cudaMalloc segments of PyTorch's caching allocator: the device memory a replay
                   snapshot covers. The last line measures it ("memory: ...").
A few hundred kernel launches per step (forward, backward, AdamW's multi-tensor kernels, the NaN fills
of deterministic mode's uninitialized memory); not yet counted on the GPU.

Output: "device: ...", "config: ...", "model: ...", the step lines, then
"done: N steps ..., timed_s S" (S: seconds from CUDA being ready to the last step's end, so the
interpreter's and CUDA's start-up, 8-13 s on the GPU machine, are not in it) and "memory: ...".
Without a usable CUDA GPU it exits 1 with "needs a CUDA GPU" (examples/train_plain.py's convention
for --device cuda); --help and the estimate work without PyTorch.
"""

import argparse
import os
import sys
import time

# cuBLAS needs a fixed workspace configuration for deterministic results; it must be set before
# CUDA is initialized (a value the user set wins).
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

try:
    import torch
    import torch.nn.functional as F
    from torch import nn
except ImportError as error:  # --help and --estimate-only still work; main() says what is missing
    torch = F = nn = None
    TORCH_IMPORT_ERROR = error

# The modules derive from nn.Module; without torch they are never instantiated.
_Module = nn.Module if nn is not None else object


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=10, help="training steps (default: 10)")
    parser.add_argument("--layers", type=int, default=6, help="decoder blocks (default: 6)")
    parser.add_argument("--d-model", type=int, default=256, help="model width (default: 256)")
    parser.add_argument("--heads", type=int, default=4, help="attention heads (default: 4; head size d_model/heads)")
    parser.add_argument("--d-ff", type=int, default=1024, help="MLP hidden width (default: 1024)")
    parser.add_argument("--seq-len", type=int, default=128, help="tokens per sequence (default: 128)")
    parser.add_argument("--batch-size", type=int, default=4, help="sequences per step (default: 4)")
    parser.add_argument("--vocab", type=int, default=2048, help="vocabulary size (default: 2048)")
    parser.add_argument("--batches", type=int, default=8, help="distinct batches, used in turn (default: 8)")
    parser.add_argument("--lr", type=float, default=1e-3, help="AdamW learning rate (default: 1e-3)")
    parser.add_argument("--seed", type=int, default=0, help="seed for weights and data (default: 0)")
    parser.add_argument("--warn-only", action="store_true",
                        help="torch.use_deterministic_algorithms(True, warn_only=True): an op without a "
                             "deterministic kernel warns instead of raising, and the losses may differ "
                             "between runs (the attention backward is one such op)")
    parser.add_argument("--estimate-only", action="store_true",
                        help="print the config and the size estimate, then exit (needs no torch or GPU)")
    args = parser.parse_args(argv)
    for name in ("steps", "layers", "d_model", "heads", "d_ff", "seq_len", "batch_size", "vocab", "batches"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.d_model % args.heads:
        parser.error(f"--d-model {args.d_model} is not a multiple of --heads {args.heads}")
    if (args.d_model // args.heads) % 8:
        parser.error("the head size (d_model / heads) must be a multiple of 8 for the memory-efficient kernels")
    if args.vocab < 2:
        parser.error("--vocab must be at least 2")
    return args


def estimate(args):
    """Parameters, tensors and bytes the sizes imply (the arithmetic of the module docstring)."""
    d, f, vocab, seq = args.d_model, args.d_ff, args.vocab, args.seq_len
    tokens = args.batch_size * seq
    per_block = 2 * (2 * d) + (3 * d * d + 3 * d) + (d * d + d) + (d * f + f) + (f * d + d)
    parameters = args.layers * per_block + vocab * d + seq * d + 2 * d + d * vocab
    parameter_tensors = 12 * args.layers + 5
    # Floats kept for the backward: per block 8 (tokens x d) tensors and 2 (tokens x d_ff); then the
    # final norm's output, the logits and their log-softmax.
    activations = args.layers * (8 * tokens * d + 2 * tokens * f) + tokens * d + 2 * tokens * vocab
    optimizer_bytes = 4 * 4 * parameters  # parameters, gradients, exp_avg, exp_avg_sq (fp32)
    activation_bytes = 4 * activations
    return {
        "parameters": parameters,
        "per_block": per_block,
        "parameter_tensors": parameter_tensors,
        "optimizer_bytes": optimizer_bytes,
        "activation_bytes": activation_bytes,
        "total_bytes": optimizer_bytes + activation_bytes,
        "blocks": 4 * parameter_tensors + 13 * args.layers + 6,
    }


def mib(size):
    return size / (1 << 20)


def describe(args):
    e = estimate(args)
    return (f"config: layers {args.layers} d_model {args.d_model} heads {args.heads} d_ff {args.d_ff} "
            f"seq {args.seq_len} batch {args.batch_size} vocab {args.vocab} batches {args.batches} "
            f"steps {args.steps} seed {args.seed} determinism {'warn_only' if args.warn_only else 'strict'}\n"
            f"model: {e['parameters']:,} parameters in {e['parameter_tensors']} tensors; estimate "
            f"{mib(e['total_bytes']):.1f} MiB if all were live at once: parameters, gradients and AdamW "
            f"states {mib(e['optimizer_bytes']):.1f} MiB, activations {mib(e['activation_bytes']):.1f} MiB; "
            f"about {e['blocks']} allocator blocks")


def efficient_attention():
    """A context manager that leaves scaled_dot_product_attention only the memory-efficient backend."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # torch before 2.3
        return torch.backends.cuda.sdp_kernel(enable_flash=False, enable_math=False, enable_mem_efficient=True)
    return sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION)


class Block(_Module):
    """Pre-norm decoder block: x + attention(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, d_model, heads, d_ff):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        batch, seq, d_model = x.shape
        # (batch, seq, 3, heads, head) -> three (batch, heads, seq, head) views of one tensor.
        q, k, v = self.qkv(self.norm1(x)).view(batch, seq, 3, self.heads, d_model // self.heads) \
                                         .permute(2, 0, 3, 1, 4).unbind(0)
        with efficient_attention():
            attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attended.transpose(1, 2).reshape(batch, seq, d_model))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class TinyTransformer(_Module):
    def __init__(self, args):
        super().__init__()
        self.token = nn.Embedding(args.vocab, args.d_model)
        self.position = nn.Embedding(args.seq_len, args.d_model)
        self.blocks = nn.ModuleList(Block(args.d_model, args.heads, args.d_ff) for _ in range(args.layers))
        self.norm = nn.LayerNorm(args.d_model)
        self.out = nn.Linear(args.d_model, args.vocab, bias=False)

    def forward(self, tokens):
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.token(tokens) + self.position(positions)
        for block in self.blocks:
            x = block(x)
        return self.out(self.norm(x))


def synthetic_data(args, device):
    """--batches batches of arithmetic sequences mod vocab (start and stride 1..8 random per sequence):
    the next token follows from the ones before it, so the loss falls. Made on the device from a
    seeded generator."""
    generator = torch.Generator(device=device).manual_seed(args.seed)
    shape = (args.batches, args.batch_size, 1)
    start = torch.randint(0, args.vocab, shape, generator=generator, device=device)
    stride = torch.randint(1, 9, shape, generator=generator, device=device)
    sequences = (start + stride * torch.arange(args.seq_len + 1, device=device)) % args.vocab
    return sequences[..., :-1].contiguous(), sequences[..., 1:].contiguous()


def cuda_device():
    if torch is None:
        sys.exit(f"train_transformer.py: error: needs PyTorch with CUDA; import torch failed: {TORCH_IMPORT_ERROR}")
    if not torch.cuda.is_available():
        sys.exit("train_transformer.py: error: needs a CUDA GPU; torch.cuda.is_available() is False "
                 "(no GPU, or a CPU-only PyTorch build); the memory-efficient attention kernels are CUDA-only")
    return torch.device("cuda", 0)


def main(argv=None):
    args = parse_args(argv)
    if args.estimate_only:
        print(describe(args), flush=True)
        return 0
    device = cuda_device()

    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True, warn_only=args.warn_only)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    print(f"device: {device} ({torch.cuda.get_device_name(device)}), torch {torch.__version__}", flush=True)
    print(describe(args), flush=True)
    torch.cuda.synchronize(device)  # CUDA is up (context, gpuprof's injection): timed_s starts here
    begin = time.perf_counter()

    model = TinyTransformer(args).to(device)  # weights made on the CPU from the seed, then copied
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    inputs, targets = synthetic_data(args, device)

    step_s = []
    loss_value = float("nan")
    for step in range(args.steps):
        step_begin = time.perf_counter()
        x, y = inputs[step % args.batches], targets[step % args.batches]
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x).view(-1, args.vocab), y.view(-1))
        loss.backward()
        optimizer.step()
        loss_value = loss.item()  # waits for the step's device work; an fp32 value, exact as a double
        step_s.append(time.perf_counter() - step_begin)
        print(f"step {step + 1} loss {loss_value.hex()}", flush=True)
    timed_s = time.perf_counter() - begin

    # The first step pays for loading kernels and creating cuBLAS handles.
    steady = step_s[1:] or step_s
    print(f"done: {args.steps} steps on {device}, final loss {loss_value:.6f}, mean step "
          f"{sum(steady) / len(steady) * 1e3:.3f} ms (steps {min(2, args.steps)}..{args.steps}), "
          f"timed_s {timed_s:.3f}", flush=True)
    stats = torch.cuda.memory_stats(device)
    print(f"memory: peak allocated {mib(stats['allocated_bytes.all.peak']):.1f} MiB in "
          f"{stats['allocation.all.peak']} blocks ({stats['allocation.all.allocated']} allocations in all); "
          f"peak reserved {mib(stats['reserved_bytes.all.peak']):.1f} MiB in {stats['segment.all.peak']} "
          f"segments ({stats['segment.all.allocated']} cudaMalloc calls)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
