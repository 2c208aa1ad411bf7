#!/usr/bin/env bash
# install_packages.sh [LIST...]: installs whichever Debian packages of the lists (default:
# tools/packages.txt, what the main job needs; .ci/run adds tools/packages-test.txt) are not
# installed yet, in one apt-get call. When all are present it only says so: no apt-get update, no
# network, no root needed.
set -euo pipefail

lists=("$@")
((${#lists[@]})) || lists=("$(dirname "${BASH_SOURCE[0]}")/packages.txt")
for list in "${lists[@]}"; do
  [[ -r $list ]] || { echo "install_packages: cannot read the package list $list" >&2; exit 1; }
done
mapfile -t packages < <(sed -e 's/#.*//' "${lists[@]}" | tr -s ' \t' '\n' | sed -e '/^$/d')

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "install_packages: dpkg-query not found; this needs Debian or Ubuntu. Packages: ${packages[*]}" >&2
  exit 1
fi

missing=()
for package in "${packages[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null)" != "install ok installed" ]]; then
    missing+=("$package")
  fi
done
if ((${#missing[@]} == 0)); then
  echo "install_packages: all ${#packages[@]} packages in ${lists[*]} are installed"
  exit 0
fi

echo "install_packages: installing ${missing[*]}"
as_root=()
if ((EUID != 0)); then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install_packages: not root and no sudo; as root run: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  as_root=(sudo)
fi
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
