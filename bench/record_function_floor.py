"""RecordFunction's own cost, for torch_overhead.py and torch_op_cost.py: record_function_floor.cc
built against the torch being measured, and a context manager that turns its do-nothing callback
(inputs requested, as record_shapes does) on and off in the measured process.

    lib = build_floor("/usr/bin/python3", out_dir)   # in the benchmark: RuntimeError names what is missing
    os.environ[FLOOR_LIB_VARIABLE] = lib             # the child processes inherit it
    with Floor():                                    # in a child: no profiler, only the callback
        ...
"""

import os
import shutil
import subprocess

BENCH = os.path.dirname(os.path.abspath(__file__))
FLOOR_LIB_VARIABLE = "GPUPROF_BENCH_FLOOR_LIB"


def build_floor(python, out_dir):
    """Compiles record_function_floor.cc against `python`'s torch, with tools/build_torch_hooks.sh's
    flags; returns the library's path. RuntimeError names what is missing."""
    probe = subprocess.run([python, "-c", "import os, torch; print(os.path.dirname(torch.__file__), "
                            "int(torch._C._GLIBCXX_USE_CXX11_ABI))"], capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        raise RuntimeError(f"{python} cannot import torch")
    torch_dir, abi = probe.stdout.split()
    if not os.path.isfile(os.path.join(torch_dir, "include", "ATen", "record_function.h")):
        raise RuntimeError(f"torch's C++ headers are not under {torch_dir}/include (Debian: apt install libtorch-dev)")
    cxx = os.environ.get("CXX", "g++")
    if shutil.which(cxx) is None:
        raise RuntimeError(f"no C++ compiler '{cxx}' (apt install g++, or set CXX)")
    lib = os.path.join(out_dir, "librecord_function_floor.so")
    cmd = [cxx, "-std=c++20", "-O2", "-DNDEBUG", "-fPIC", "-shared", "-fvisibility=hidden",
           f"-D_GLIBCXX_USE_CXX11_ABI={abi}", "-isystem", os.path.join(torch_dir, "include"),
           "-isystem", os.path.join(torch_dir, "include", "torch", "csrc", "api", "include"),
           os.path.join(BENCH, "record_function_floor.cc"), "-o", lib,
           "-L" + os.path.join(torch_dir, "lib"), "-ltorch_cpu", "-lc10", "-Wl,-rpath," + os.path.join(torch_dir, "lib")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"compiling record_function_floor.cc failed:\n{done.stderr[-2000:]}")
    return lib


class Floor:
    """The do-nothing callback on while inside; the library is $GPUPROF_BENCH_FLOOR_LIB. inputs=False:
    the callback does not ask for the op's inputs (what a profiler without record_shapes pays)."""

    def __init__(self, inputs=True):
        import ctypes
        self.lib = ctypes.CDLL(os.environ[FLOOR_LIB_VARIABLE])
        self.mode = 1 if inputs else 0

    def __enter__(self):
        if self.lib.gpuprof_bench_floor_set(self.mode) != 0:
            raise RuntimeError("torch refused the floor's RecordFunction callback")
        return self

    def __exit__(self, *exc):
        self.lib.gpuprof_bench_floor_set(-1)
