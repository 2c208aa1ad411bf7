#!/usr/bin/env bash
# Fails when a tracked C++/CUDA file differs from what clang-format (with the repository's
# .clang-format) makes of it, and names each such file. `tools/check_format.sh --fix` rewrites them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v clang-format >/dev/null 2>&1; then
  echo "check_format: clang-format not found; install it (tools/packages-test.txt lists it: bash tools/install_packages.sh tools/packages-test.txt)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files -- '*.cc' '*.h' '*.cu' '*.cuh')
if [[ "${1:-}" == "--fix" ]]; then
  clang-format -i -- "${files[@]}"
  echo "check_format: formatted ${#files[@]} files"
  exit 0
fi
bad=()
for file in "${files[@]}"; do
  if ! clang-format --dry-run --Werror -- "$file" >/dev/null 2>&1; then bad+=("$file"); fi
done
if ((${#bad[@]} > 0)); then
  echo "check_format: ${#bad[@]} of ${#files[@]} files are not formatted ($(clang-format --version | head -n 1)):"
  printf '  %s\n' "${bad[@]}"
  echo "check_format: run 'bash tools/check_format.sh --fix' (or clang-format -i FILE) and commit the result"
  exit 1
fi
echo "check_format: all ${#files[@]} C++/CUDA files are formatted ($(clang-format --version | head -n 1))"
