#!/usr/bin/env bash
# InstallTest.InstalledTreeRunsWithoutTheCheckout (tests/integration/CMakeLists.txt):
#   install_test.sh BUILD_DIR SOURCE_DIR PYTHONDIR WITH_TORCH(ON|OFF) WITH_MAN(ON|OFF)
# (PYTHONDIR: the package's folder under the prefix, GPUPROF_INSTALL_PYTHONDIR)
#
# `cmake --install` into a temporary prefix, then that prefix moved elsewhere (nothing may depend on
# where it was installed), then: the installed files name neither the build tree nor the checkout
# (RUNPATH/RPATH of the ELF files, the text of the others), and `gpuprof --version`,
# `gpuprof demo`, `python3 -c "import gpuprof"` (and, with torch, `gpuprof run` of a torch script,
# which loads the installed Python package and libraries) run from another directory with a clean
# environment while the checkout and the build tree are hidden (a tmpfs mounted over them in a
# private mount namespace, where unshare allows it; otherwise they stay visible and the reference
# checks alone stand for that).
set -euo pipefail

build=$(realpath "$1")
source=$(realpath "$2")
pythondir=$3
with_torch=$4
with_man=$5
python=/usr/bin/python3
[[ -x $python ]] || python=$(command -v python3)

fail() {
  echo "install_test: FAIL: $*" >&2
  exit 1
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpuprof-install-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
case "$tmp/" in
  "$source"/* | "$build"/*) fail "the temporary folder $tmp is inside the tree it must hide; set TMPDIR elsewhere" ;;
esac

mkdir "$tmp/installed"
cmake --install "$build" --prefix "$tmp/installed" >"$tmp/install.log" || {
  cat "$tmp/install.log" >&2
  fail "cmake --install $build failed"
}
mv "$tmp/installed" "$tmp/prefix"
prefix=$tmp/prefix
pydir=$prefix/$pythondir

expected=(bin/gpuprof lib/libgpuprof.so lib/libgpuprof_inject.so
  "$pythondir/gpuprof/__init__.py" "$pythondir/gpuprof/_install_layout.py"
  "$pythondir/gpuprof/_autoload/sitecustomize.py" share/bash-completion/completions/gpuprof)
[[ $with_torch == ON ]] && expected+=(lib/libgpuprof_torch.so)
[[ $with_man == ON ]] && expected+=(share/man/man1/gpuprof.1)
for file in "${expected[@]}"; do
  [[ -f $prefix/$file ]] || fail "cmake --install put no $file under the prefix (installed: $(cd "$prefix" && find . -type f | sort | tr '\n' ' '))"
done
echo "install_test: installed ${#expected[@]} expected files: ${expected[*]}"

# Nothing installed may point back into the build tree or the checkout.
while IFS= read -r -d '' file; do
  if head -c 4 "$file" | grep -q $'\x7fELF'; then
    paths=$(readelf -d "$file" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')
    for path in ${paths//:/ }; do
      # shellcheck disable=SC2016  # the literal $ORIGIN
      [[ $path == '$ORIGIN' || $path == '$ORIGIN/'* ]] || fail "${file#"$prefix"/} has RUNPATH/RPATH $path (only \$ORIGIN-relative paths may be installed)"
    done
  elif grep -qF -e "$source" -e "$build" "$file"; then
    fail "${file#"$prefix"/} names the checkout or build tree: $(grep -nF -e "$source" -e "$build" "$file" | head -n 3)"
  fi
done < <(find "$prefix" -type f -print0)
echo "install_test: no installed file names $source or $build (ELF files: \$ORIGIN RUNPATHs only)"

# The commands, run from $tmp in a clean environment (no GPUPROF_LIB_DIR, PYTHONPATH only to reach
# the prefix's package, as a user of a non-system prefix sets it).
cat >"$tmp/commands.sh" <<'COMMANDS'
set -euo pipefail
cd "$TMP"
gpuprof --version
gpuprof demo >demo.log 2>&1 || { cat demo.log; echo "gpuprof demo failed"; exit 1; }
grep 'results match' demo.log
PYTHONPATH=$PYDIR "$PYTHON" -c 'import gpuprof, gpuprof._native as n; print("import gpuprof:", gpuprof.__file__, "libraries:", n.lib_dir())'
if [[ $WITH_TORCH == ON ]] && "$PYTHON" -c 'import torch' 2>/dev/null; then
  gpuprof run -o out -- "$PYTHON" -c 'import torch; x = torch.ones(8, 8); print(float((x @ x).sum()))' >run.log 2>&1 ||
    { cat run.log; echo "gpuprof run of a torch script failed"; exit 1; }
  grep -q '^gpuprof: profile DB: ' run.log || { cat run.log; echo "gpuprof run wrote no DB: the installed package did not profile the script"; exit 1; }
  echo "gpuprof run of a torch script: $(grep '^gpuprof: profile DB: ' run.log)"
fi
COMMANDS
clean_env=(env -i PATH="$prefix/bin:/usr/bin:/bin" HOME="$tmp" TMP="$tmp" PYDIR="$pydir" PYTHON="$python"
  WITH_TORCH="$with_torch" LANG=C.UTF-8)
hide="mount -t tmpfs gpuprof-hidden '$source' && "
case "$build/" in
  "$source"/*) ;;  # hidden with the checkout
  *) hide+="mount -t tmpfs gpuprof-hidden '$build' && " ;;
esac
unshare_cmd=()
if unshare -m --propagation private true 2>/dev/null; then
  unshare_cmd=(unshare -m --propagation private)
elif unshare -rm --propagation private true 2>/dev/null; then
  unshare_cmd=(unshare -rm --propagation private)
fi
if ((${#unshare_cmd[@]})); then
  echo "install_test: running with $source and $build hidden (tmpfs over them)"
  "${unshare_cmd[@]}" bash -c "${hide}[[ ! -e '$build/CMakeCache.txt' ]] && exec \"\$@\"" hide \
    "${clean_env[@]}" bash "$tmp/commands.sh" || fail "a command failed in the installed tree (output above)"
else
  echo "install_test: unshare cannot make a mount namespace here; the checkout stays visible (the reference checks above stand for hiding it)"
  "${clean_env[@]}" bash "$tmp/commands.sh" || fail "a command failed in the installed tree (output above)"
fi
echo "install_test: ok"
