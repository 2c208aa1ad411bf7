#!/usr/bin/env bash
# Prepares a fresh Debian 12 machine: installs the packages in tools/packages.txt (skipped when
# present), configures the `default` preset into build/default and builds what the main job needs
# (the gpuprof_runtime target: the CLI, libgpuprof.so, the injection library, the torch hooks; the
# tests and benchmarks are built by the test command), and makes build/venv: a Python environment
# over the system Python that has torch (/usr/bin/python3 with Debian's python3-torch; the system
# Python itself refuses installs) in which `import gpuprof` finds this checkout's python/ package,
# and whose bin/ holds a `gpuprof` that runs build/default/bin/gpuprof (`. build/venv/bin/activate`
# puts both on PATH).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash tools/install_packages.sh
cmake --preset default
cmake --build --preset default --target gpuprof_runtime

python=${GPUPROF_PYTHON:-/usr/bin/python3}
if [[ ! -x build/venv/bin/python ]]; then
  "$python" -m venv --without-pip --system-site-packages build/venv
fi
site=$(build/venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$PWD/python" > "$site/gpuprof.pth"
build/venv/bin/python -c 'import gpuprof' || {
  echo "setup: build/venv cannot import gpuprof" >&2
  exit 1
}
# A wrapper, not a link: the CLI finds its libraries beside its own executable.
printf '#!/bin/sh\nexec %q "$@"\n' "$PWD/build/default/bin/gpuprof" > build/venv/bin/gpuprof
chmod +x build/venv/bin/gpuprof
echo "setup: build/venv/bin/python imports gpuprof from $PWD/python"
echo "setup: . build/venv/bin/activate puts gpuprof ($PWD/build/default/bin/gpuprof) and that python on PATH"
