#!/usr/bin/env python3
"""Runs one GPU test case: `gpuprof run` on a test program, then checks what it wrote.

    run_case.py --list [--min-gpus 2]
    run_case.py --build-dir BUILD --case NAME [--work-dir DIR]

Everything is found from BUILD (a build folder of the `gpu` preset, wherever it was copied):
BUILD/bin/gpuprof, BUILD/lib/libgpuprof_inject.so and BUILD/tests/gpu/<program>. Commands that are
not test programs (examples/train_plain.py) run from the repository root, which is two levels
above this file. A case passes when:
  * `gpuprof run` exits 0 (the program's own exit status: each program checks its results),
  * the DBs that `gpuprof run` reported ("gpuprof: profile DB: PATH") are exactly those on disk,
  * check_db.py's expectation for the case holds (tests/gpu/check_db.py),
  * each of the case's stderr_has texts is on gpuprof's stderr exactly once (a once-only warning),
  * `gpuprof check` accepts every DB (schema and joins against the format), and
  * for a case with same_lines_as_plain (TrainTransformerReplay), the command also ran plainly
    first and the stdout lines matching that pattern (its losses) are the same in both runs,
  * for a case with ncu_metrics (the counter cases), Nsight Compute measured the same program's
    launches (`ncu --metrics ... --clock-control none --cache-control all --csv`, ncu_peer below)
    and check_db.py compares gpuprof's values with ncu's launch by launch; without ncu on the
    machine that comparison says "skipped" (and names $GPUPROF_NCU).
Exit status: 0 pass, 1 fail, 77 skipped (the reason printed; CTest's SKIP_RETURN_CODE).
CTest registers one test per case (tests/gpu/CMakeLists.txt); tools/gpu_check.sh runs them all.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_db  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIP = 77
RUN_TIMEOUT_S = 300


class Case:
    def __init__(self, expectation, program=None, command=None, flags=(), needs_torch=False, args=(),
                 subcommand="run", needs_torch_hooks=False, min_gpus=1, stderr_has=(), same_lines_as_plain=None,
                 ncu_metrics=None):
        self.expectation = expectation
        self.program = program        # a test program in BUILD/tests/gpu
        self.command = command        # or a command run from the repository root ({build}: BUILD)
        self.flags = list(flags)      # `gpuprof run` (or replay) flags
        self.needs_torch = needs_torch
        self.needs_torch_hooks = needs_torch_hooks  # BUILD/lib/libgpuprof_torch.so (tools/build_torch_hooks.sh)
        self.args = list(args)        # the program's arguments
        self.subcommand = subcommand  # "run" or "replay"
        self.min_gpus = min_gpus      # skipped on a machine with fewer
        self.stderr_has = list(stderr_has)  # texts on gpuprof's stderr exactly once (its warnings)
        # A regex: the command also runs plainly first, and the stdout lines it matches must be the
        # same under gpuprof (a replayed run computes what an unprofiled one does).
        self.same_lines_as_plain = same_lines_as_plain
        # A comma list: ncu measures these on the same program (ncu_peer), for check_db to compare.
        self.ncu_metrics = ncu_metrics


# tests/gpu/planted_kernels.cu, built beside the test programs.
PLANTED_KERNELS = "{build}/tests/gpu/gpu_test_planted_kernels.so"


def replay_case(mode, kernel=None, program="gpu_test_replay", args=None, flags=(), stderr_has=()):
    """`gpuprof replay --passes 3 [-k KERNEL] [FLAGS] -- PROGRAM ARGS` (check_db.REPLAY_PASSES);
    ARGS defaults to [MODE] for gpu_test_replay, else none."""
    flags = ["--passes", "3"] + (["-k", kernel] if kernel else []) + list(flags)
    if args is None:
        args = [mode] if program == "gpu_test_replay" else []
    return Case("replay_" + mode, program=program, args=args, flags=flags, subcommand="replay",
                stderr_has=stderr_has)


# NVLink multicast off in NCCL, PyTorch and NVSHMEM: on the GPU machines a program that uses it can
# put the host's shared GPUs out of service (the device tool's KINDS.md). Set explicitly for every
# command a case starts (gpuprof, and so the program it starts with its environment; the plain run; ncu),
# not only inherited; train_ddp.py prints what each rank saw and check_db.py checks it.
NVLINK_MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def command_environment():
    """This process's environment with NVLink multicast off."""
    return {**os.environ, **NVLINK_MULTICAST_OFF}

COUNTER_METRICS = ("dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum,"
                   "launch__grid_size,launch__block_size")

# CTest names are GpuRunTest.<key>.
CASES = {
    "Kernels": Case("kernels", program="gpu_test_kernels"),
    "Memcpy": Case("memcpy", program="gpu_test_memcpy"),
    "Nvtx": Case("nvtx", program="gpu_test_nvtx"),
    "ForkFollowChildren": Case("fork_follow", program="gpu_test_fork", flags=["--follow-children"]),
    "ForkParentOnly": Case("fork_parent_only", program="gpu_test_fork"),
    "ReplayInPlace": replay_case("inplace", "in_place_update"),
    "ReplayDeviceCounter": replay_case("counter", "count_launches"),
    "ReplayConstantTable": replay_case("constant", "apply_coefficients"),
    "ReplayStreamOrdered": replay_case("async", "in_place_update"),
    "ReplayGraphAndCapture": replay_case("graph"),
    "ReplayGlobaltimer": replay_case("timer", "write_globaltimer"),
    # Issue 24: graph launches replayed as a whole and node by node.
    "ReplayGraphWhole": replay_case("graph_whole", program="gpu_test_replay_graph", args=["chain"],
                                    flags=["--graph-replay", "graph"]),
    "ReplayGraphNodes": replay_case("graph_nodes", program="gpu_test_replay_graph", args=["chain"],
                                    flags=["--graph-replay", "node"]),
    "ReplayGraphAllocNodes": replay_case("graph_alloc", program="gpu_test_replay_graph", args=["alloc"],
                                         flags=["--graph-replay", "node"]),
    "ReplayGraphHostNode": replay_case("graph_host", program="gpu_test_replay_graph", args=["host"],
                                       flags=["--graph-replay", "node"]),
    # Rule C2: device printf replayed by default, with one warning; declined when the option is off.
    "ReplayPrintf": replay_case("printf", "say_hello", program="gpu_test_replay_printf",
                                stderr_has=["replaying say_hello, which uses device printf: a message it prints "
                                            "repeats once per pass"]),
    "ReplayPrintfDeclinedWhenOff": replay_case("printf_off", "say_hello", program="gpu_test_replay_printf",
                                               flags=["--no-replay-printf-kernels"]),
    "ReplayFreeOnAnotherThread": replay_case("free_thread", "slow_update"),
    "ReplayCudaArrayDeclined": replay_case("array", "in_place_update"),
    "ReplayTwoGpusSnapshotsOneDevice": Case("replay_two_gpu", program="gpu_test_replay", args=["two_gpu"],
                                            flags=["--passes", "3", "-k", "in_place_update"], subcommand="replay",
                                            min_gpus=2),
    # Issue 19: hardware counters over replay passes (GPUPROF_REPLAY_METRIC).
    "ReplayCounters": Case("replay_counters", program="gpu_test_replay_counters", subcommand="replay",
                           flags=["--passes", "3", "--metrics", COUNTER_METRICS], ncu_metrics=COUNTER_METRICS),
    # Issue 40 (W7): the same kernels in one cudaProfilerStart/Stop range of 20 launches, counted by
    # range replay from one pass set; ncu measures the same 20 launches one by one.
    "ReplayCountersRange": Case("replay_counters", program="gpu_test_replay_counters", args=["0", "range"],
                                subcommand="replay",
                                flags=["--passes", "3", "--replay-mode", "range", "--metrics", COUNTER_METRICS],
                                ncu_metrics=COUNTER_METRICS),
    # Issue 23: the same launches on device 1 (the counter passes in device 1's context); skipped on one GPU.
    "ReplayCountersDevice1": Case("replay_counters", program="gpu_test_replay_counters", args=["1"],
                                  subcommand="replay", flags=["--passes", "3", "--metrics", COUNTER_METRICS],
                                  ncu_metrics=COUNTER_METRICS, min_gpus=2),
    # --section SpeedOfLight on a large square cuBLAS GEMM (compute-bound) and a streaming copy
    # (memory-bound), beside ncu's values for the same launches.
    "ReplaySpeedOfLight": Case("replay_speed_of_light", program="gpu_test_replay_cublas", args=["sol"],
                               subcommand="replay", flags=["--passes", "2", "--section", "SpeedOfLight"],
                               ncu_metrics=",".join(check_db.SPEED_OF_LIGHT_METRICS)),
    "ReplayVmmBuffer": replay_case("vmm", "vmm_update", program="gpu_test_replay_driver", args=["vmm"]),
    "ReplayPtxModuleGlobal": replay_case("ptx", "ptx_count", program="gpu_test_replay_driver", args=["ptx"]),
    "ReplayOtherModuleGlobal": replay_case("cross_module", "bump_through", program="gpu_test_replay_driver",
                                           args=["cross_module"]),
    "ReplayOtherLibraryGlobal": replay_case("cross_library", "ptx_bump", program="gpu_test_replay_driver",
                                            args=["cross_library"]),
    # The batched engine's arena (issue 18): 4,096 regions, the application's writes between two
    # replayed launches, a reallocation at the same address, the spill-file tier, and the arena
    # giving way to the application.
    "ReplayManyRegions": replay_case("arena_many_regions", "strided_update", program="gpu_test_replay_arena",
                                     args=["many_regions"]),
    "ReplayWritesBetweenLaunches": replay_case("arena_between", "in_place_update", program="gpu_test_replay_arena",
                                               args=["between"]),
    "ReplayReallocatedBuffer": replay_case("arena_realloc", "in_place_update", program="gpu_test_replay_arena",
                                           args=["realloc"]),
    "ReplaySpillFile": Case("replay_arena_spill", program="gpu_test_replay_arena", args=["spill"],
                            flags=["--passes", "3", "-k", "in_place_update", "--storage", "file"],
                            subcommand="replay"),
    "ReplayArenaGivesWay": replay_case("arena_fill_after", "big_update", program="gpu_test_replay_arena",
                                       args=["fill_after"]),
    # Range replay (issue 40): the launches, copies, memset and events between cudaProfilerStart and
    # cudaProfilerStop recorded as the program runs them and re-issued per pass on gpuprof's streams.
    "ReplayRange": replay_case("range", program="gpu_test_replay_range", flags=["--replay-mode", "range"]),
    "ReplayRangeNvtx": replay_case("range_nvtx", program="gpu_test_replay_range", args=["nvtx"],
                                   flags=["--replay-mode", "range", "--range", "nvtx", "--nvtx-include",
                                          "replay-range"]),
    "ReplayCublasBetaOne": replay_case("cublas", "regex:gemm|Kernel", program="gpu_test_replay_cublas"),
    "TrainPlain": Case("train_plain",
                       command=["python3", "examples/train_plain.py", "--steps", "3", "--device", "cuda"],
                       needs_torch=True),
    "TrainProfiled": Case("train_profiled",
                          command=["python3", "examples/train_profiled.py", "--device", "cuda", "--steps", "8"],
                          needs_torch=True, needs_torch_hooks=True),
    # The default cuda_trace (launches,nvtx) takes the launch rows from gpuprof's callbacks; these
    # two take every call's from CUPTI's activity records instead.
    "TrainPlainEveryCall": Case("train_plain_every_call",
                                command=["python3", "examples/train_plain.py", "--steps", "3", "--device", "cuda"],
                                flags=["--cuda-trace", "runtime,driver,nvtx"], needs_torch=True),
    "TrainProfiledEveryCall": Case("train_profiled_every_call",
                                   command=["python3", "examples/train_profiled.py", "--device", "cuda", "--steps", "8"],
                                   flags=["--cuda-trace", "runtime,driver,nvtx"], needs_torch=True,
                                   needs_torch_hooks=True),
    # Two ranks over NCCL on two GPUs under torchrun (issues 7, 23), NVLink multicast off in the
    # environment gpuprof hands the ranks; skipped with fewer than 2 GPUs.
    "TwoRanksNccl": Case("two_ranks_nccl",
                         command=["python3", "-m", "torch.distributed.run", "--nproc_per_node=2",
                                  "--master_addr=127.0.0.1", "--master_port=29577", "examples/train_ddp.py"],
                         flags=["--with-modules"], needs_torch=True, needs_torch_hooks=True, min_gpus=2),
    # Every kernel of 3 transformer training steps replayed 3 times, the memory-efficient attention
    # kernels (fmha_cutlassF/B, which reference device printf) among them; the losses, printed as
    # hex floats, must be a plain run's bit for bit.
    # Range replay by training step (issue 40): every kernel of each step re-issued 5 times from one
    # snapshot per step and counted (--set basic) from one pass set per step; the losses must equal a
    # plain run's.
    "TrainTransformerRangeReplay": Case("train_transformer_range",
                                        command=["python3", "examples/train_transformer.py", "--steps", "4"],
                                        flags=["--passes", "5", "--replay-mode", "range", "--range", "step",
                                               "--set", "basic"],
                                        subcommand="replay", needs_torch=True, needs_torch_hooks=True,
                                        same_lines_as_plain=r"^step \d+ loss \S+$"),
    "TrainTransformerReplay": Case("train_transformer_replay",
                                   command=["python3", "examples/train_transformer.py", "--steps", "3"],
                                   flags=["--passes", "3"], subcommand="replay", needs_torch=True,
                                   same_lines_as_plain=r"^step \d+ loss \S+$"),
    # Issue 24: torch.compile(mode="reduce-overhead") runs its kernels in CUDA graphs; node-by-node
    # replay times each kernel node, and the printed checksums equal a plain run's.
    "InferCompiledGraphNodes": Case("infer_compiled_nodes",
                                    command=["python3", "examples/infer_compiled.py", "--steps", "6"],
                                    flags=["--passes", "3", "--graph-replay", "node"], subcommand="replay",
                                    needs_torch=True, same_lines_as_plain=r"^step \d+ checksum \S+ sum \S+$"),
    # gpuprof.profile(kernel_replay=...) under `gpuprof replay --from-script` (issue 6).
    "TrainProfiledReplay": Case("train_profiled_replay",
                                command=["python3", "examples/train_profiled.py", "--device", "cuda", "--steps", "8",
                                         "--replay-kernel", "regex:gemm", "--replay-passes", "3"],
                                flags=["--from-script"], subcommand="replay", needs_torch=True,
                                needs_torch_hooks=True),
    # Issue 41: a step that waits for 1.4 s of queued matrix products in torch.cuda.synchronize();
    # `gpuprof stats` finds the synchronizing call, with its time at stake.
    "FindingsSync": Case("findings_sync", command=["python3", "tests/python/planted/slow_step.py", "sync", "-"],
                         needs_torch=True, needs_torch_hooks=True),
    # Issue 41: 400 one-element kernels per step with 50 us of Python between launches (launch-bound),
    # and its twin doing the same host work around one kernel.
    "FindingsLaunchBound": Case("findings_launch", command=["python3", "tests/python/planted/slow_step.py", "launch",
                                                            "-"], needs_torch=True, needs_torch_hooks=True),
    "FindingsLaunchFused": Case("findings_launch_fused",
                                command=["python3", "tests/python/planted/slow_step.py", "launch_fused", "-"],
                                needs_torch=True, needs_torch_hooks=True),
    # Issue 41: 500 one-block reductions per step beside a large elementwise op that streams DRAM,
    # counted (--set basic) on the op's first 4 launches and the first reduction (iteration 0, a step
    # the findings leave out): tiny-grids names the reductions; the op, near DRAM peak, is in neither
    # counter rule. The twin under `gpuprof run` has no counters: tiny-grids alone, and the note says so.
    "FindingsKernels": Case("findings_kernels", command=["python3", "tests/python/planted/kernels.py", "-"],
                            flags=["--passes", "2", "--set", "basic", "-k", "regex:MulFunctor|reduce_kernel",
                                   "-c", "5"],
                            subcommand="replay", needs_torch=True, needs_torch_hooks=True),
    "FindingsKernelsNoCounters": Case("findings_kernels_no_counters",
                                      command=["python3", "tests/python/planted/kernels.py", "-"],
                                      needs_torch=True, needs_torch_hooks=True),
    # Issue 41: a 64 MiB copy from pageable host memory per step (pageable-copies), and its pinned twin.
    "FindingsPageable": Case("findings_pageable",
                             command=["python3", "tests/python/planted/slow_step.py", "pageable", "-"],
                             needs_torch=True, needs_torch_hooks=True),
    "FindingsPinned": Case("findings_pinned", command=["python3", "tests/python/planted/slow_step.py", "pinned", "-"],
                           needs_torch=True, needs_torch_hooks=True),
    # Issue 41: kernels of tests/gpu/planted_kernels.cu under `gpuprof replay --set basic` (and the
    # DRAM bytes, for the bandwidth the finding gives), their first launches (iteration 0, a step
    # left out) counted: a pointer chase, memory-bound far below DRAM peak (memory-bound-kernels),
    # and a grid where one block works (low-occupancy).
    "FindingsOwnKernels": Case("findings_own_kernels",
                               command=["python3", "tests/python/planted/own_kernels.py", "counters", "-",
                                        PLANTED_KERNELS],
                               flags=["--passes", "2", "--set", "basic", "--metrics",
                                      "dram__bytes_read.sum,dram__bytes_write.sum", "-k", "regex:planted_", "-c", "4"],
                               subcommand="replay", needs_torch=True, needs_torch_hooks=True),
    # Issue 41: a kernel queued behind a host function that sleeps 5 ms, 4 times a step (launch-delay),
    # and its twin, where Python sleeps the 5 ms between the launches (the device waits on the host).
    "FindingsLaunchDelay": Case("findings_launch_delay",
                                command=["python3", "tests/python/planted/own_kernels.py", "launch_delay", "-",
                                         PLANTED_KERNELS], needs_torch=True, needs_torch_hooks=True),
    "FindingsHostWait": Case("findings_host_wait",
                             command=["python3", "tests/python/planted/own_kernels.py", "host_wait", "-",
                                      PLANTED_KERNELS], needs_torch=True, needs_torch_hooks=True),
    # Issue 41: torch.cuda.empty_cache() after 2 GiB was allocated and freed, every step: the call
    # hands the cached block back with cudaFree (empty-cache), the next step allocates it again.
    "FindingsEmptyCache": Case("findings_empty_cache",
                               command=["python3", "tests/python/planted/slow_step.py", "empty_cache", "-"],
                               needs_torch=True, needs_torch_hooks=True),
    # Issue 39: a script's own torch.profiler (CUDA activity) and gpuprof.profile under `gpuprof run`.
    "UserProfilersUnderRun": Case("user_profilers", command=["python3", "tests/gpu/user_profilers.py"],
                                  needs_torch=True, needs_torch_hooks=True,
                                  stderr_has=["so torch.profiler sees no GPU kernels"]),
}


def python_for_commands():
    """The interpreter for Python commands: $GPUPROF_TEST_PYTHON, else python3 from PATH."""
    return os.environ.get("GPUPROF_TEST_PYTHON") or shutil.which("python3") or "python3"


def torch_skip_reason(python):
    probe = subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                           capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        return f"torch is not importable by {python} ({last}); install PyTorch to run this case"
    return None


def gpu_count():
    """GPUs nvidia-smi lists (0 without it)."""
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in listed.stdout.splitlines() if line.startswith("GPU "))


def dump(title, text):
    print(f"---- {title} ----")
    print(text.rstrip("\n") if text.strip() else "(empty)")


def matching_lines(text, pattern):
    return re.findall(pattern, text or "", re.M)


def run_plain(command, pattern, case_dir):
    """Runs the command without gpuprof; returns the stdout lines matching pattern, or the reason it failed."""
    print("$ " + " ".join(command) + "   (plain, for comparison)")
    begin = time.monotonic()
    try:
        plain = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, errors="replace",
                               env=command_environment(), timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"the plain run did not finish within {RUN_TIMEOUT_S} s"
    print(f"exit status {plain.returncode} after {time.monotonic() - begin:.1f} s")
    with open(os.path.join(case_dir, "plain_stdout.txt"), "w", encoding="utf-8") as f:
        f.write(plain.stdout)
    if plain.returncode != 0:
        dump("plain stdout", plain.stdout)
        dump("plain stderr", plain.stderr)
        return f"the plain run exited {plain.returncode}"
    lines = matching_lines(plain.stdout, pattern)
    if not lines:
        dump("plain stdout", plain.stdout)
        return f"the plain run printed no line matching {pattern!r}"
    return lines


def compare_with_plain(plain, profiled, what):
    """Failures (a list) unless the profiled run printed exactly the plain run's lines."""
    if profiled == plain:
        print(f"{what} printed the plain run's {len(plain)} compared lines exactly")
        return []
    for i in range(max(len(plain), len(profiled))):
        mine = profiled[i] if i < len(profiled) else "(missing)"
        theirs = plain[i] if i < len(plain) else "(missing)"
        if mine != theirs:
            return [f"{what} differs from the plain run at compared line {i + 1}: {mine!r}, plain {theirs!r} "
                    f"({len(profiled)} lines against {len(plain)})"]
    return []


def find_ncu():
    """Nsight Compute's CLI: $GPUPROF_NCU, ncu on PATH, then the toolkit's; None when absent."""
    for candidate in (os.environ.get("GPUPROF_NCU"), shutil.which("ncu"), "/usr/local/cuda/bin/ncu"):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def parse_ncu_csv(text):
    """ncu --csv --print-units base output -> [{"kernel": name, "metrics": {name: (value, unit)}}] in
    launch order (ncu's ID). Values lose their thousands separators; a non-number stays a string."""
    import csv
    lines = [line for line in text.splitlines() if line.startswith('"')]
    launches = {}
    for row in csv.DictReader(lines):
        launch = launches.setdefault(int(row["ID"]), {"kernel": row["Kernel Name"], "metrics": {}})
        raw = row["Metric Value"].replace(",", "")
        try:
            value = float(raw)
        except ValueError:
            value = raw
        launch["metrics"][row["Metric Name"]] = (value, row["Metric Unit"])
    return [launches[i] for i in sorted(launches)]


def ncu_peer(case, command, case_dir):
    """Runs ncu on the case's command; the parsed launches, or a string saying why there are none."""
    ncu = find_ncu()
    if ncu is None:
        return "no ncu on PATH, in /usr/local/cuda/bin or in $GPUPROF_NCU"
    argv = [ncu, "--metrics", case.ncu_metrics, "--clock-control", "none", "--cache-control", "all",
            "--replay-mode", "kernel", "--csv", "--print-units", "base", "--target-processes", "all", *command]
    print("$ " + " ".join(argv) + "   (the peer)")
    begin = time.monotonic()
    try:
        peer = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, errors="replace",
                              env=command_environment(), timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"ncu did not finish within {RUN_TIMEOUT_S} s"
    print(f"ncu exit status {peer.returncode} after {time.monotonic() - begin:.1f} s")
    with open(os.path.join(case_dir, "ncu.csv"), "w", encoding="utf-8") as f:
        f.write(peer.stdout)
    if peer.returncode != 0:
        dump("ncu stderr", peer.stderr)
        return f"ncu exited {peer.returncode}"
    launches = parse_ncu_csv(peer.stdout)
    if not launches:
        dump("ncu stdout", peer.stdout)
        return "ncu printed no metric row"
    return launches


def run_case(name, build_dir, work_dir):
    case = CASES[name]
    build_dir = os.path.abspath(build_dir)
    gpuprof = os.path.join(build_dir, "bin", "gpuprof")
    os.environ["GPUPROF_CLI"] = gpuprof  # for expectations that read the DB through the CLI
    inject = os.path.join(build_dir, "lib", "libgpuprof_inject.so")
    for path, what in ((gpuprof, "the gpuprof CLI"), (inject, "the injection library")):
        if not os.path.isfile(path):
            print(f"FAIL: {what} is missing: {path} (build the `gpu` preset: cmake --preset gpu && "
                  f"cmake --build --preset gpu)")
            return 1
    if case.program:
        program = os.path.join(build_dir, "tests", "gpu", case.program)
        if not os.path.isfile(program):
            print(f"FAIL: test program missing: {program} (target {case.program})")
            return 1
        command = [program, *case.args]
    else:
        command = [arg.replace("{build}", build_dir) for arg in case.command]
        if command[0] == "python3":
            command[0] = python_for_commands()
    if case.needs_torch:
        reason = torch_skip_reason(command[0])
        if reason:
            print(f"SKIP: {reason}")
            return SKIP
    hooks = os.path.join(build_dir, "lib", "libgpuprof_torch.so")
    if case.needs_torch_hooks and not os.path.isfile(hooks):
        print(f"SKIP: {hooks} is missing; build it against this machine's torch: "
              f"bash tools/build_torch_hooks.sh {os.path.join(build_dir, 'lib')}")
        return SKIP

    if case.min_gpus > 1:
        gpus = gpu_count()
        if gpus < case.min_gpus:
            print(f"SKIP: needs {case.min_gpus} GPUs, this machine has {gpus}")
            return SKIP

    case_dir = os.path.join(os.path.abspath(work_dir), name)
    out_dir = os.path.join(case_dir, "out")
    shutil.rmtree(case_dir, ignore_errors=True)
    os.makedirs(case_dir)
    plain_lines = None
    if case.same_lines_as_plain:
        plain_lines = run_plain(command, case.same_lines_as_plain, case_dir)
        if isinstance(plain_lines, str):
            print(f"FAIL: {name}: {plain_lines}")
            return 1
    argv = [gpuprof, case.subcommand, "-o", out_dir, *case.flags, "--", *command]
    print("$ " + " ".join(argv))
    begin = time.monotonic()
    try:
        result = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, errors="replace",
                                env=command_environment(), timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        dump("stdout", e.stdout or "")
        dump("stderr", e.stderr or "")
        print(f"FAIL: `gpuprof {case.subcommand}` did not finish within {RUN_TIMEOUT_S} s")
        return 1
    print(f"exit status {result.returncode} after {time.monotonic() - begin:.1f} s")
    dump("stdout (the program)", result.stdout)
    dump("stderr (the program and gpuprof)", result.stderr)
    with open(os.path.join(case_dir, "program_stdout.txt"), "w", encoding="utf-8") as f:
        f.write(result.stdout)

    skip = re.search(r"^gpuprof-test: skip reason=(\S+)", result.stdout, re.M)
    if skip and result.returncode == 0:
        print(f"SKIP: the program skipped itself: {skip.group(1)}")
        return SKIP

    failures = []
    if result.returncode != 0:
        failures.append(f"`gpuprof run` exited {result.returncode}, expected 0")
    on_disk = sorted(check_db.find_dbs(out_dir))
    reported = sorted({line.split("gpuprof: profile DB: ", 1)[1].strip()
                       for line in result.stderr.splitlines() if line.startswith("gpuprof: profile DB: ")})
    if reported != on_disk:
        failures.append(f"`gpuprof run` reported DBs {reported}, but {on_disk} are on disk")

    if plain_lines is not None:
        failures += compare_with_plain(plain_lines, matching_lines(result.stdout, case.same_lines_as_plain),
                                       f"`gpuprof {case.subcommand}`")

    peer = None
    if case.ncu_metrics:
        peer = ncu_peer(case, command, case_dir)
        if isinstance(peer, str):
            print(f"SKIPPED: the comparison with Nsight Compute: {peer}")

    print(f"---- check_db.py {case.expectation} ----")
    failures += check_db.check(case.expectation, out_dir, result.stdout, peer=peer)
    for text in case.stderr_has:
        if result.stderr.count(text) != 1:
            failures.append(f"gpuprof's stderr has {result.stderr.count(text)} lines with {text!r}, expected one")

    for db in on_disk:
        checked = subprocess.run([gpuprof, "check", db], capture_output=True, text=True, errors="replace")
        print(f"$ gpuprof check {db}  -> {checked.returncode}")
        if checked.stdout.strip():
            print(checked.stdout.rstrip())
        if checked.returncode != 0:
            dump("gpuprof check stderr", checked.stderr)
            failures.append(f"`gpuprof check {db}` exited {checked.returncode}")

    if failures:
        print(f"FAIL: {name}: {len(failures)} problem(s):")
        for failure in failures:
            print(f"  - {failure}")
        return 1
    print(f"PASS: {name}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print the case names, one per line")
    parser.add_argument("--min-gpus", type=int, default=1, metavar="N",
                        help="with --list: only the cases that need at least N GPUs (2: the two-GPU cases)")
    parser.add_argument("--build-dir", help="the build folder (gpu preset)")
    parser.add_argument("--case", choices=sorted(CASES))
    parser.add_argument("--work-dir", help="where each case writes (default: BUILD/tests/gpu/work)")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(name for name, case in CASES.items() if case.min_gpus >= args.min_gpus))
        return 0
    if not args.build_dir or not args.case:
        parser.error("--build-dir and --case are required (or --list)")
    work_dir = args.work_dir or os.path.join(args.build_dir, "tests", "gpu", "work")
    return run_case(args.case, args.build_dir, work_dir)


if __name__ == "__main__":
    sys.exit(main())
