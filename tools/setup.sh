#!/usr/bin/env bash
# Prepares a fresh Debian 12 machine: installs the packages in tools/packages.txt (skipped when
# present), configures and builds the `default` preset into build/default, and makes build/venv:
# a Python environment over the system Python that has torch (/usr/bin/python3 with Debian's
# python3-torch; the system Python itself refuses installs) in which `import gpuprof` finds this
# checkout's python/ package.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash tools/install_packages.sh
cmake --preset default
cmake --build --preset default

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
echo "setup: build/venv/bin/python imports gpuprof from $PWD/python"
