#!/usr/bin/env bash
# Prepares a fresh Debian 12 machine: installs the packages in tools/packages.txt (skipped when
# present) and configures and builds the `default` preset into build/default.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash tools/install_packages.sh
cmake --preset default
cmake --build --preset default
