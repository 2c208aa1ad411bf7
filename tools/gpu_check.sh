#!/usr/bin/env bash
# The one script to run on the GPU machine (docs/gpu_machine.md): the `gpu` tests, then the examples,
# then a short table (test, result, seconds) as the last lines.
#
#   bash tools/gpu_check.sh [BUILD_DIR]        # from the repository root; BUILD_DIR: build/gpu
#
# BUILD_DIR is a build of the `gpu` preset made on the development machine and copied here, maybe
# to another absolute path than where it was configured, and without CMake's files: only
# BUILD_DIR/bin (gpuprof), BUILD_DIR/lib (libgpuprof.so, libgpuprof_inject.so) and
# BUILD_DIR/tests/gpu (the test programs) are used. So this script does not run ctest (its
# CTestTestfile.cmake holds the development machine's paths) and cannot re-configure (no
# sqlite3.h here): it runs the same cases CTest registers, through tests/gpu/run_case.py, with
# paths relative to the repository root.
#
#   bash tools/gpu_check.sh --stage BUILD_DIR STAGE_DIR   # on the development machine
#
# --stage copies just what this script uses (bin/gpuprof, lib/*.so, tests/gpu/gpu_test_*,
# bench/replay_device_benchmark) from BUILD_DIR into STAGE_DIR with debug info stripped, a few MiB
# to carry to the GPU machine in place of the whole build folder; then run
# `bash tools/gpu_check.sh STAGE_DIR` there.
#
#   bash tools/gpu_check.sh --device-bench [BUILD_DIR [ARGS...]]   # on the GPU machine, from the root
#
# --device-bench runs only BUILD_DIR/bench/replay_device_benchmark (replay's snapshot and restore
# on GPU 0 against CUPTI's Checkpoint API and the copy floors, bench/README.md); ARGS go to it
# (--quick, --repeat, --tiers, ...). It dlopens the toolkit's libcheckpoint.so, so
# /usr/local/cuda/lib64 is added to LD_LIBRARY_PATH. Its exit status is the benchmark's. The normal
# run (no option) includes its --quick smoke run as one line of the table.
#
#   bash tools/gpu_check.sh --overhead [BUILD_DIR [ARGS...]]   # on the GPU machine, from the root
#
# --overhead runs only bench/collection_overhead.py (step-time overhead of `gpuprof run` and of
# torch.profiler on examples/train_plain.py, bench/README.md) with BUILD_DIR/bin/gpuprof; ARGS go
# to it (--steps, --repeats, ...). Its exit status is the benchmark's.
#
#   bash tools/gpu_check.sh --replay-overhead [BUILD_DIR [ARGS...]]   # on the GPU machine, from the root
#
# --replay-overhead runs only bench/replay_overhead.py (replay's idle cost on train_plain, and on
# examples/train_transformer.py its cost per replayed kernel and per extra pass against Nsight
# Compute's kernel replay, and every kernel replayed x3 against the plain run; bench/README.md)
# with BUILD_DIR/bin/gpuprof; ARGS go to it (--quick for a smoke run, --skip-idle, --out DIR, ...).
# Its exit status is the benchmark's.
#
#   bash tools/gpu_check.sh --counter-overhead [BUILD_DIR [ARGS...]]   # on the GPU machine, from the root
#
# --counter-overhead runs only bench/counter_overhead.py (hardware counters with --set basic on
# examples/train_transformer.py against ncu --set basic, issue 19; bench/README.md); ARGS go to it.
#
#   bash tools/gpu_check.sh --range-overhead [BUILD_DIR [ARGS...]]   # on the GPU machine, from the root
#
# --range-overhead runs only bench/range_replay_overhead.py (range replay by training step with --set
# basic and timing only, per kernel, against ncu's kernel replay; every steady step x3 against the
# plain run; issue 40; bench/README.md); ARGS go to it.
#
#   bash tools/gpu_check.sh --two-gpu [BUILD_DIR [BRING_BACK_DIR]]   # on nvidia-h200-x2, from the root
#
# --two-gpu runs only the two-GPU cases (run_case.py --list --min-gpus 2: TwoRanksNccl,
# ReplayTwoGpusSnapshotsOneDevice, ReplayCountersDevice1; issue 23) after building the PyTorch hooks,
# then copies TwoRanksNccl's rank profiles (its *_ascend_pt directories) to BRING_BACK_DIR/two_ranks
# (default $OUT/two_ranks when $OUT is set, as in a device call), for tools/cluster_report.sh on the
# development machine. Its table is the normal run's. On a machine with one GPU every case says skipped.
#
# Every command this script and run_case.py start has NVLink multicast off (NCCL_NVLS_ENABLE=0,
# TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1, exported below): on the shared GPU
# machines a program that uses it can put the host's GPUs out of service.
#
# Environment: GPU_CHECK_WORK (default /tmp/gpuprof_gpu_check) holds each case's output and DBs;
# GPUPROF_TEST_PYTHON picks the interpreter for the Python cases (default: python3).
# Exit status: 0 when nothing failed (skips allowed), 1 otherwise.
set -u -o pipefail

if [[ "${1:-}" == "--stage" ]]; then
  if [[ $# -ne 3 ]]; then
    echo "usage: tools/gpu_check.sh --stage BUILD_DIR STAGE_DIR" >&2
    exit 2
  fi
  from=$2
  to=$3
  missing=0
  for need in "$from/bin/gpuprof" "$from/lib/libgpuprof_inject.so" "$from/tests/gpu/gpu_test_kernels"; do
    [[ -e "$need" ]] || { echo "gpu_check: --stage: $need is missing; build it first (cmake --build --preset gpu)" >&2; missing=1; }
  done
  [[ $missing -eq 0 ]] || exit 1
  rm -rf "$to"
  mkdir -p "$to/bin" "$to/lib" "$to/tests/gpu"
  cp -a "$from/bin/gpuprof" "$to/bin/"
  cp -a "$from"/lib/*.so* "$to/lib/"
  # The PyTorch hooks are built on the GPU machine against its torch (step 0 below), never carried.
  rm -f "$to/lib/libgpuprof_torch.so"
  cp -a "$from"/tests/gpu/gpu_test_* "$to/tests/gpu/"
  for gtest in chunk_kernels_gpu_test cuda_device_gpu_test; do
    [[ -x "$from/tests/gpu/$gtest" ]] && cp -a "$from/tests/gpu/$gtest" "$to/tests/gpu/"
  done
  for bench in replay_device_benchmark counter_floor; do
    if [[ -x "$from/bench/$bench" ]]; then
      mkdir -p "$to/bench"
      cp -a "$from/bench/$bench" "$to/bench/"
    else
      echo "gpu_check: --stage: $from/bench/$bench is missing (not staged); build it with" \
           "cmake --build --preset gpu --target $bench" >&2
    fi
  done
  # Debug info is most of the size; the machine-code is what runs there.
  find "$to" -type f -exec strip --strip-debug {} \; 2>/dev/null
  du -sh "$to"
  exit 0
fi

# The CUPTI Checkpoint library the device benchmark dlopens lives in the toolkit, not in the stage.
device_bench_env() {
  LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64" "$@"
}

if [[ "${1:-}" == "--device-bench" ]]; then
  bench="${2:-build/gpu}/bench/replay_device_benchmark"
  if [[ ! -x "$bench" ]]; then
    echo "gpu_check: $bench not found; build it on the development machine" \
         "(cmake --build --preset gpu --target replay_device_benchmark) and stage it (--stage)" >&2
    exit 1
  fi
  device_bench_env "$bench" "${@:3}"
  exit $?
fi

if [[ "${1:-}" == "--overhead" ]]; then
  exec "${GPUPROF_TEST_PYTHON:-python3}" bench/collection_overhead.py --gpuprof "${2:-build/gpu}/bin/gpuprof" "${@:3}"
fi

if [[ "${1:-}" == "--replay-overhead" ]]; then
  exec "${GPUPROF_TEST_PYTHON:-python3}" bench/replay_overhead.py --gpuprof "${2:-build/gpu}/bin/gpuprof" "${@:3}"
fi

if [[ "${1:-}" == "--range-overhead" ]]; then
  exec "${GPUPROF_TEST_PYTHON:-python3}" bench/range_replay_overhead.py --gpuprof "${2:-build/gpu}/bin/gpuprof" "${@:3}"
fi

if [[ "${1:-}" == "--counter-overhead" ]]; then
  exec "${GPUPROF_TEST_PYTHON:-python3}" bench/counter_overhead.py --gpuprof "${2:-build/gpu}/bin/gpuprof" "${@:3}"
fi

# NVLink multicast off for everything started from here (see the header).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

two_gpu=0
bring_back=""
if [[ "${1:-}" == "--two-gpu" ]]; then
  two_gpu=1
  bring_back="${3:-${OUT:-}}"
  shift
fi

build_dir="${1:-build/gpu}"
work="${GPU_CHECK_WORK:-/tmp/gpuprof_gpu_check}"
python="${GPUPROF_TEST_PYTHON:-python3}"

if [[ ! -f tests/gpu/run_case.py ]]; then
  echo "gpu_check: run me from the repository root (tests/gpu/run_case.py not found in $PWD)" >&2
  exit 1
fi
if [[ ! -x "$build_dir/bin/gpuprof" ]]; then
  echo "gpu_check: $build_dir/bin/gpuprof not found; build the gpu preset on the development machine" \
       "(cmake --preset gpu && cmake --build --preset gpu --target gpuprof_gpu_tests) and copy $build_dir" >&2
  exit 1
fi
rm -rf "$work"
mkdir -p "$work"

names=()
results=()
seconds=()

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
since() {  # start_ms -> "12.3"
  local ms=$(( $(now_ms) - $1 ))
  echo "$(( ms / 1000 )).$(( (ms % 1000) / 100 ))"
}

record() {  # name, result, seconds
  names+=("$1")
  results+=("$2")
  seconds+=("$3")
}

echo "== gpu_check: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>/dev/null || \
  echo "(nvidia-smi not available)"
echo "repository: $PWD   build: $build_dir   work: $work"

# ---- 0. the PyTorch hooks, against this machine's torch (docs/gpu_machine.md) -------------------
if "$python" -c 'import torch' >/dev/null 2>&1; then
  echo
  echo "==== build libgpuprof_torch.so"
  start=$(now_ms)
  if bash tools/build_torch_hooks.sh "$build_dir/lib" "$python"; then
    record "build libgpuprof_torch.so" passed "$(since "$start")"
  else
    record "build libgpuprof_torch.so" "FAILED" "$(since "$start")"
  fi
fi

# ---- 1. the gpu tests (the cases CTest registers as GpuRunTest.<case>) --------------------------
if [[ $two_gpu -eq 1 ]]; then
  mapfile -t cases < <("$python" tests/gpu/run_case.py --list --min-gpus 2)
else
  mapfile -t cases < <("$python" tests/gpu/run_case.py --list)
fi
for case in "${cases[@]}"; do
  echo
  echo "==== GpuRunTest.$case"
  start=$(now_ms)
  "$python" tests/gpu/run_case.py --build-dir "$build_dir" --case "$case" --work-dir "$work/tests"
  rc=$?
  elapsed=$(since "$start")
  case $rc in
    0) result=passed ;;
    77) result=skipped ;;
    *) result="FAILED (exit $rc)" ;;
  esac
  record "GpuRunTest.$case" "$result" "$elapsed"
done

# ---- 1'. --two-gpu: bring TwoRanksNccl's rank profiles back; nothing else runs ----------------------
if [[ $two_gpu -eq 1 ]]; then
  ranks="$work/tests/TwoRanksNccl/out"
  if [[ -z "$bring_back" ]]; then
    echo "gpu_check: --two-gpu: no BRING_BACK_DIR and no \$OUT; the rank profiles stay in $ranks"
  elif compgen -G "$ranks/*_ascend_pt" > /dev/null; then
    mkdir -p "$bring_back/two_ranks"
    cp -a "$ranks"/*_ascend_pt "$bring_back/two_ranks/"
    echo "gpu_check: the rank profiles are in $bring_back/two_ranks:"
    find "$bring_back/two_ranks" -name '*.db' -exec ls -l {} \;
    record "bring back the rank profiles" passed "0"
  else
    record "bring back the rank profiles" "skipped (TwoRanksNccl wrote none)" "0"
  fi
else  # the rest of the normal run, up to the table

# ---- 1b. gtest programs with the gpu label (chunk kernels and CudaDevice's arena, B1-B3) ---------
for gtest in "$build_dir"/tests/gpu/chunk_kernels_gpu_test "$build_dir"/tests/gpu/cuda_device_gpu_test; do
  [[ -x "$gtest" ]] || continue
  name=$(basename "$gtest")
  echo
  echo "==== $name"
  start=$(now_ms)
  "$gtest" 2>&1 | tail -n 25
  rc=${PIPESTATUS[0]}
  record "$name" "$([[ $rc -eq 0 ]] && echo passed || echo "FAILED (exit $rc)")" "$(since "$start")"
done

# ---- 1c. the Python package's tests (label python) against this machine's torch ------------------
if [[ -f "$build_dir/lib/libgpuprof_torch.so" ]]; then
  echo
  echo "==== python tests (tests/python)"
  start=$(now_ms)
  (cd tests/python && GPUPROF_LIB_DIR="$PWD/../../$build_dir/lib" GPUPROF_CLI="$PWD/../../$build_dir/bin/gpuprof" \
     "$python" -m unittest test_schedule test_profile test_signals test_run_reports 2>&1 | tail -n 30
   exit "${PIPESTATUS[0]}")
  rc=$?
  record "python tests (tests/python)" "$([[ $rc -eq 0 ]] && echo passed || echo "FAILED (exit $rc)")" "$(since "$start")"
fi

# ---- 1c'. a plain CUDA program stopped by SIGTERM, and run's live line (issue 21) ----------------
if [[ -x "$build_dir/tests/gpu/gpu_test_launch_loop" ]]; then
  echo
  echo "==== signal and progress (tests/gpu/signal_progress.py)"
  start=$(now_ms)
  "$python" tests/gpu/signal_progress.py --build-dir "$build_dir" --work-dir "$work/signal_progress" 2>&1
  rc=$?
  record "signal and progress (plain CUDA program)" "$([[ $rc -eq 0 ]] && echo passed || echo "FAILED (exit $rc)")" \
    "$(since "$start")"
fi

# ---- 1d. the replay device benchmark's smoke run (bench/README.md): every restore it makes verified --
if [[ -x "$build_dir/bench/replay_device_benchmark" ]]; then
  echo
  echo "==== replay_device_benchmark --quick"
  start=$(now_ms)
  device_bench_env "$build_dir/bench/replay_device_benchmark" --quick 2>&1
  rc=$?
  record "replay_device_benchmark --quick" "$([[ $rc -eq 0 ]] && echo passed || echo "FAILED (exit $rc)")" \
    "$(since "$start")"
fi

# ---- 2. the examples, plain and under `gpuprof run` ---------------------------------------------
run_example() {  # name, command...
  local name=$1
  shift
  echo
  echo "==== $name"
  echo "\$ $*"
  local start rc elapsed log
  log="$work/$(echo "$name" | tr -c 'A-Za-z0-9_\n' '_').log"
  start=$(now_ms)
  "$@" > "$log" 2>&1
  rc=$?
  elapsed=$(since "$start")
  cat "$log"
  if [[ $rc -eq 0 ]]; then
    # The example's own summary line (mean step time) goes into the table.
    local summary
    summary=$(grep -m1 '^done:' "$log" | sed 's/^done: //')
    record "$name" "passed${summary:+: $summary}" "$elapsed"
  else
    record "$name" "FAILED (exit $rc)" "$elapsed"
  fi
}

if "$python" -c 'import torch' > /dev/null 2>&1; then
  run_example "train_plain (plain)" "$python" examples/train_plain.py --steps 20 --device cuda
  run_example "train_plain (gpuprof run)" "$build_dir/bin/gpuprof" run -o "$work/examples" -- \
    "$python" examples/train_plain.py --steps 20 --device cuda
  # Kernel replay of the first launches of every kernel: the losses must be an unprofiled run's.
  run_example "train_plain (gpuprof replay)" "$build_dir/bin/gpuprof" replay --passes 3 -c 40 \
    -o "$work/replay" -- "$python" examples/train_plain.py --steps 20 --device cuda
  plain_log="$work/train_plain__plain_.log"
  replay_log="$work/train_plain__gpuprof_replay_.log"
  if [[ -f "$plain_log" && -f "$replay_log" ]]; then
    if diff <(grep -o '^step [0-9/]* loss [0-9.]*' "$plain_log") \
            <(grep -o '^step [0-9/]* loss [0-9.]*' "$replay_log") > "$work/replay_losses.diff"; then
      record "train_plain replay losses = plain" "passed" "0"
    else
      cat "$work/replay_losses.diff"
      record "train_plain replay losses = plain" "FAILED (losses differ)" "0"
    fi
  fi
  # The transformer (fmha_cutlassF/B attention kernels, which reference device printf), plainly and
  # with every attention launch of its 10 steps replayed: the hex-float losses must be equal bit for
  # bit. (GpuRunTest.TrainTransformerReplay replays every kernel of 3 steps.)
  run_example "train_transformer (plain)" "$python" examples/train_transformer.py
  run_example "train_transformer (gpuprof replay)" "$build_dir/bin/gpuprof" replay --passes 3 \
    -k regex:fmha_cutlass -o "$work/replay_transformer" -- "$python" examples/train_transformer.py
  plain_log="$work/train_transformer__plain_.log"
  replay_log="$work/train_transformer__gpuprof_replay_.log"
  if [[ -f "$plain_log" && -f "$replay_log" ]]; then
    if grep -q '^step [0-9]* loss ' "$plain_log" && \
       diff <(grep '^step [0-9]* loss ' "$plain_log") <(grep '^step [0-9]* loss ' "$replay_log") \
         > "$work/replay_transformer_losses.diff"; then
      record "train_transformer losses = plain" "passed" "0"
    else
      cat "$work/replay_transformer_losses.diff"
      record "train_transformer losses = plain" "FAILED (losses differ or missing)" "0"
    fi
  fi
else
  echo
  echo "==== examples: skipped: $python cannot import torch"
  record "train_plain" "skipped (torch not importable)" "0"
fi

fi  # --two-gpu

# ---- 3. the table ---------------------------------------------------------------------------------
failed=0
passed=0
skipped=0
for r in "${results[@]}"; do
  case $r in
    passed*) passed=$((passed + 1)) ;;
    skipped*) skipped=$((skipped + 1)) ;;
    *) failed=$((failed + 1)) ;;
  esac
done
echo
echo "== gpu_check summary (build: $build_dir)"
printf '%-36s %8s  %s\n' "test" "seconds" "result"
for i in "${!names[@]}"; do
  printf '%-36s %8s  %s\n' "${names[$i]}" "${seconds[$i]}" "${results[$i]}"
done
echo "gpu_check: $passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
