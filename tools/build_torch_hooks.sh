#!/usr/bin/env bash
# Builds libgpuprof_torch.so (src/torch) against the torch of the Python given, next to an existing
# libgpuprof.so: for the GPU machine (docs/gpu_machine.md: the PyTorch hooks are compiled there
# against its torch, linking the libgpuprof.so built on the development machine; no CMake
# configure, so no SQLite headers needed).
#
#   bash tools/build_torch_hooks.sh LIB_DIR [PYTHON]     # LIB_DIR holds libgpuprof.so; PYTHON: python3
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [[ $# -lt 1 || ! -f "$1/libgpuprof.so" ]]; then
  echo "usage: tools/build_torch_hooks.sh LIB_DIR [PYTHON]   (LIB_DIR must hold libgpuprof.so)" >&2
  exit 2
fi
lib_dir=$(cd "$1" && pwd)
python=${2:-python3}
read -r torch_dir abi < <("$python" -c 'import os, torch; print(os.path.dirname(torch.__file__), int(torch._C._GLIBCXX_USE_CXX11_ABI))')
# -DNDEBUG as torch's release build: its headers' class layouts depend on it (torch_hooks.cc).
"${CXX:-g++}" -std=c++20 -O2 -DNDEBUG -fPIC -shared -fvisibility=hidden -Wall -Wextra \
  -D_GLIBCXX_USE_CXX11_ABI="$abi" -Isrc -Iinclude \
  -isystem "$torch_dir/include" -isystem "$torch_dir/include/torch/csrc/api/include" \
  src/torch/torch_hooks.cc src/torch/op_buffer.cc -o "$lib_dir/libgpuprof_torch.so" \
  -L"$lib_dir" -lgpuprof -L"$torch_dir/lib" -ltorch_cpu -lc10 \
  -Wl,-rpath,'$ORIGIN' -Wl,-rpath,"$torch_dir/lib"
echo "build_torch_hooks: $lib_dir/libgpuprof_torch.so against torch in $torch_dir"
