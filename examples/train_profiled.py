#!/usr/bin/env python3
"""train_plain.py's training, profiled from the inside with gpuprof.profile and a schedule.

    python3 examples/train_profiled.py [--device auto|cpu|cuda] [--steps N] [--out DIR]
                                       [--wait W] [--warmup U] [--active A]
                                       [--replay-kernel NAME|regex:PATTERN [--replay-passes P] [--replay-count C]]

Steps 1..W run unprofiled, then U warm-up steps, then A recorded steps (one DB with their ops,
input shapes, allocator events, forward/backward links and one STEP_TIME row per step); later
steps run unprofiled. With --replay-kernel, the kernels it selects are replayed P times each while
the profile records (gpuprof.KernelReplay; run the script as `gpuprof replay --from-script --
python3 examples/train_profiled.py --replay-kernel regex:gemm`). The last line is "gpuprof: profile DB: PATH" (read it with `gpuprof stats
PATH`). Needs the gpuprof package importable (tools/setup.sh makes build/venv, whose python has
it) and its native libraries built.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(HERE, "..", "python"))  # the checkout's package, when not installed

import train_plain  # noqa: E402  (the same model, data and step)
import torch  # noqa: E402

import gpuprof  # noqa: E402


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument("--steps", type=int, default=8, help="training steps (default: 8)")
    parser.add_argument("--out", default="gpuprof_output", help="folder for the DB (default: ./gpuprof_output)")
    parser.add_argument("--wait", type=int, default=1, help="unprofiled steps first (default: 1)")
    parser.add_argument("--warmup", type=int, default=1, help="warm-up steps (default: 1)")
    parser.add_argument("--active", type=int, default=3, help="recorded steps (default: 3)")
    parser.add_argument("--replay-kernel", help="replay the kernels this selects while recording: a function name "
                                                "or regex:PATTERN (needs `gpuprof replay --from-script`)")
    parser.add_argument("--replay-passes", type=int, default=3, help="passes per replayed launch (default: 3)")
    parser.add_argument("--replay-count", type=int, default=0, help="replayed launches at most (default: 0, no limit)")
    args = parser.parse_args(argv)
    if args.steps < args.wait + args.warmup + args.active:
        parser.error(f"--steps {args.steps} is shorter than wait + warmup + active "
                     f"({args.wait + args.warmup + args.active}): nothing would be saved")
    return args


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(0)
    device = train_plain.pick_device(args.device)
    print(f"device: {device}, torch {torch.__version__}", flush=True)
    inputs, labels = train_plain.synthetic_data(0)
    model, optimizer, loss_fn = train_plain.make_model(device)
    inputs, labels = inputs.to(device), labels.to(device)
    activities = [gpuprof.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(gpuprof.ProfilerActivity.CUDA)
    handler = gpuprof.db_handler(args.out)
    replay = None
    if args.replay_kernel:
        replay = gpuprof.KernelReplay(passes=args.replay_passes, kernel=args.replay_kernel, count=args.replay_count)
    batch = 128
    with gpuprof.profile(activities=activities,
                         schedule=gpuprof.schedule(wait=args.wait, warmup=args.warmup, active=args.active, repeat=1),
                         on_trace_ready=handler, record_shapes=True, profile_memory=True,
                         gc_detect_threshold=1.0, kernel_replay=replay) as prof:
        for step in range(args.steps):
            first = (step * batch) % train_plain.SAMPLES
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(inputs[first:first + batch]), labels[first:first + batch])
            loss.backward()
            optimizer.step()
            print(f"step {step + 1}/{args.steps} loss {loss.item():.6f}"
                  + (" (replaying kernels)" if prof.replaying else ""), flush=True)
            prof.step()
    for path in handler.db_paths:
        print(f"gpuprof: profile DB: {path}", flush=True)
    if not handler.db_paths:
        print("gpuprof: no DB of this script's own (under `gpuprof run` the run's DB holds its steps)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
