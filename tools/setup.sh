#!/usr/bin/env bash
# Prepares a fresh Debian 12 machine for the main job: installs the packages in tools/packages.txt
# (skipped when present; the tests' packages are tools/packages-test.txt, .ci/run's), configures
# the `default` preset into build/default and builds only gpuprof_runtime (the CLI, libgpuprof.so,
# the injection library, the torch hooks, the man page; the tests and benchmarks are the test
# command's to build), installs that into build/install as `cmake --install` would anywhere
# (cmake/GpuprofInstall.cmake), and makes build/venv over the installed tree: a Python environment
# over the system Python that has torch (/usr/bin/python3 with Debian's python3-torch; the system
# Python itself refuses installs) that imports the installed gpuprof package, and whose bin/ holds
# the installed `gpuprof` (`. build/venv/bin/activate` puts both on PATH).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash tools/install_packages.sh tools/packages.txt
cmake --preset default
cmake --build --preset default --target gpuprof_runtime
rm -rf build/install
cmake --install build/default --prefix "$PWD/build/install" >/dev/null

python=${GPUPROF_PYTHON:-/usr/bin/python3}
if [[ ! -x build/venv/bin/python ]]; then
  "$python" -m venv --without-pip --system-site-packages build/venv
fi
# The installed package's folder (build/install/lib/python3.X/dist-packages, as /usr/lib/... for
# a .deb) joins the venv's path; the command is the installed one, which finds its libraries and
# package relative to itself.
pythondir=$(sed -n 's/^GPUPROF_INSTALL_PYTHONDIR:[A-Z]*=//p' build/default/CMakeCache.txt)
site=$(build/venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$PWD/build/install/$pythondir" > "$site/gpuprof.pth"
ln -sfn "$PWD/build/install/bin/gpuprof" build/venv/bin/gpuprof
build/venv/bin/python -c 'import gpuprof' || {
  echo "setup: build/venv cannot import gpuprof" >&2
  exit 1
}
echo "setup: installed into $PWD/build/install; build/venv/bin/python imports gpuprof from there"
echo "setup: . build/venv/bin/activate puts gpuprof ($PWD/build/install/bin/gpuprof) and that python on PATH"
