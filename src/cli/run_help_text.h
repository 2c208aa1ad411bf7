// The --help texts of `gpuprof run` and `gpuprof replay`: descriptions, usage lines and footers
// (hand-broken within 100 columns; cli_help_text_test checks them through the commands' --help).
#pragma once

namespace gpuprof::cli {

inline constexpr const char* kRunDescription =
    "Run an application under gpuprof: profile its CUDA work (kernels, copies, memsets, runtime API calls, "
    "NVTX ranges) into a profile DB, then print where each DB is and a short summary";

inline constexpr const char* kRunUsage =
    "Usage: gpuprof run [-o DIR] [--follow-children] [--no-record-shapes] [--no-profile-memory]\n"
    "                   [--with-stack] [--with-modules] [--cuda-trace LIST] [--] APP [ARGS...]";
inline constexpr const char* kReplayUsage =
    "Usage: gpuprof replay [-k NAME|regex:PATTERN] [-s N] [-c N] [OPTIONS] [--] APP [ARGS...]\n"
    "       gpuprof replay --from-script [OPTIONS] -- python3 SCRIPT [ARGS...]";

inline constexpr const char* kRunFooter =
    R"(APP and everything after it belong to the application, even arguments that look like gpuprof's
flags; `--` ends gpuprof's flags explicitly. APP is looked up in PATH like a shell does.

How it works: gpuprof sets CUDA_INJECTION64_PATH to libgpuprof_inject.so, so the CUDA driver loads
gpuprof into the application when the application initializes CUDA; the application needs no change
(a PyTorch script need not import gpuprof). The library is taken from $GPUPROF_INJECT_LIBRARY, else
<dir of gpuprof>/../lib/, else <dir of gpuprof>/lib/. Each profiled process writes
  DIR/<host>_<pid>_<time>_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler[_<rank>].db
and when the application ends gpuprof prints each DB's path with its top kernels, device tasks and
CUDA API time (`gpuprof stats`, `export` and `check` read the DB further). When no DB was written it
says why in one line: usually that the application never initialized CUDA (a CPU-only run).

PyTorch scripts: when the script imports torch, the gpuprof Python package (installed beside
gpuprof, python/ of its checkout, or $GPUPROF_PYTHON_DIR) also records its ops, input shapes
(--no-record-shapes: off), allocator events (--no-profile-memory: off), Python call stacks
(--with-stack: on) and steps, on the CPU too: each optimizer.step() ends a step unless the script
calls gpuprof.profile's step() itself; a script's own gpuprof.profile joins the run's DB.

Child processes: without --follow-children only the process gpuprof started is profiled (a child
that uses CUDA runs unprofiled); with it, every descendant that uses CUDA writes its own DB, named
by its own pid. A CUDA context never survives fork(): a child must initialize CUDA itself.

Signals: SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to gpuprof are forwarded to the application (a
Ctrl-C typed at the terminal reaches the application directly and is not sent twice). gpuprof waits
for the application, so its DB is finalized before the summary is printed.

Environment: GPUPROF_LOG_LEVEL (the session's log level) and GPUPROF_WORKER_NAME (replaces
<host>_<pid> in the run directory's name) pass through to the application; gpuprof sets
CUDA_INJECTION64_PATH, GPUPROF_OUTPUT_DIR, GPUPROF_RESULT_FILE, GPUPROF_FOLLOW_CHILDREN and
GPUPROF_ROOT_PID, GPUPROF_CUDA_TRACE (with --cuda-trace), NVTX_INJECTION64_PATH (to the
injection library, when that library provides InitializeInjectionNvtx2 and the variable is not
already set), and LD_PRELOAD: the user's, then libgpuprof_exec_guard.so, so that a process that
calls exec finalizes its DB first (--no-exec-guard or GPUPROF_EXEC_GUARD=0: not added; left out by
itself, with one line, when APP or LD_PRELOAD has a sanitizer runtime, which must be loaded first).

CUDA API calls: by default (--cuda-trace launches,nvtx) gpuprof records, of both APIs, only the
calls that launch, copy, set, allocate, free or wait (the CANN_API rows of every kernel, copy and
memset stay), through its own callbacks; --cuda-trace runtime,driver,nvtx records every call as a
CUPTI activity record, at a higher cost; with none of runtime, driver and launches the CUDA calls
are missing from CANN_API, and PyTorch ops reach their kernels only through per-op external ids.

Output: gpuprof's own lines go to stderr; the application's stdout and stderr are untouched.

Exit status: the application's; 128+N if signal N killed it; 127 if APP was not found and 126 if it
could not be executed (as in a shell); 1 if gpuprof could not set the run up; 2 for usage errors.

Example: gpuprof run -o prof -- python3 examples/train_plain.py --steps 5
)";

inline constexpr const char* kReplayDescription =
    "Run an application with kernel replay: selected kernel launches run N passes on identical inputs "
    "(device memory snapshotted before the first and restored before each later pass; the application "
    "sees one ordinary run), timed per pass, checked for determinism; results go to the profile DB";
inline constexpr const char* kReplayFooter = R"(
Selection (as Nsight Compute's): -k NAME matches the kernel's function name exactly (demangled, e.g.
'gemm_kernel', or mangled); -k regex:PATTERN searches the name with a regular expression; -s N lets
the first N matching launches run unreplayed; -c N replays at most N launches. Without -k every
kernel launch is replayed (slow for a large program: pick kernels).

Each pass flushes the L2 cache first (--cache-control all, Nsight Compute's default) unless
--cache-control none. --restore auto writes back only the chunks a pass changed; full writes
everything back. Snapshots are kept in device memory while --device-reserve MiB stay free (then
pinned host memory, then pageable); the DB's snapshotDeviceBytes says where they went. --strict
declines launches while host-mapped, managed or IPC memory is live (writes to it cannot be undone).

Kernels that use device printf are replayed, and what they print repeats once per pass (one
warning per kernel says so; --no-replay-printf-kernels declines them). Kernels that use device
malloc/free, and every launch while CUDA arrays exist (their writes cannot be undone), are declined
unless --replay-malloc-kernels or --replay-with-live-arrays.

Declined launches (launches into a capturing stream, the side effects above, a device that does
not drain) run once, unreplayed; the reason is in the DB and in one warning line.

CUDA graphs (torch.compile mode="reduce-overhead", torch.cuda.CUDAGraph, cudaGraphLaunch) run once,
unreplayed, unless --graph-replay asks: graph replays a selected graph launch as one unit (the
graph's duration and each kernel node's, per pass); node runs its nodes one at a time and replays
each kernel node that -k selects in place, with the inputs it has inside the graph. -k selects a
graph launch when one of its kernel nodes matches; -s and -c count graph launches. A graph with
host, memory-allocation or conditional nodes is replayed whole instead of node by node (the DB's
graphFallback says why). The application's graphs are relaunched as usual afterwards.

Hardware counters (Nsight Compute's names; docs/metrics.md): --metrics LIST, --section LIST and
--set basic|full choose metrics, collected over extra counter passes after the timed passes (each
pass on the same restored inputs); the DB keeps them per launch. The launch__* metrics (grid, block,
registers, shared memory, theoretical occupancy) come from the launch and need no pass. Nothing is
collected by default. Counters need profiling permission (root, or the driver's
RmProfilingAdminOnly=0); without it the launches are still replayed and timed, and the reason is
recorded. --query-metrics lists the names (--chip GH100 for a chip, --json for JSON) and runs no
application. --clock-control base locks SM and memory clocks to base for the passes (root only;
otherwise a warning and the clocks as they are); the default none never changes them.

Range replay (--replay-mode range, Nsight Compute's name; gpuprof still reports every kernel): a
whole range of one device's work is replayed per pass, the application's own run being pass 1, its
operations recorded as they run and re-issued in their order after a restore. --range says what
delimits a range: profiler (cudaProfilerStart/Stop, the default), nvtx (the NVTX range
--nvtx-include NAME names) or step (one training step: optimizer step to optimizer step, or
gpuprof.profile's step() to step()). --range nvtx/step and --nvtx-include imply --replay-mode
range. -s and -c then count ranges. A range with a host function, an allocation or free, a kernel
declined above, or more than --max-range-operations operations or --max-range-host-mib MiB of
captured host data is declined whole and runs as it did.

--from-script leaves the choice to the program: nothing is replayed until it calls
gpuprof.profile(kernel_replay=gpuprof.KernelReplay(passes=..., kernel=...)), and only while that
profile records (python/README.md).

Example: gpuprof replay --passes 5 -k regex:gemm -c 3 -- python3 examples/train_plain.py --steps 5
         gpuprof replay --graph-replay node -- python3 examples/infer_compiled.py
         gpuprof replay --range step -s 2 -c 1 -- python3 examples/train_plain.py --steps 5
         gpuprof replay --from-script -- \
             python3 examples/train_profiled.py --replay-kernel regex:gemm
         gpuprof replay -k regex:gemm -c 1 --section SpeedOfLight,Occupancy -- ./app
         gpuprof replay --query-metrics --chip GH100
)";

}  // namespace gpuprof::cli
