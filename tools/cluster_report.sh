#!/usr/bin/env bash
# What a user of a multi-rank profile runs on it, in one go, on the development machine (issue 23):
#
#   bash tools/cluster_report.sh [--gpuprof CLI] DIR [OUT]
#
# DIR holds the rank profiles (the *_ascend_pt run directories `gpuprof run` wrote for each rank,
# e.g. the two_ranks folder `tools/gpu_check.sh --two-gpu` brings back from the GPU machine).
# It runs, from the repository root:
#   gpuprof stats DIR                         (printed)
#   gpuprof report DIR -o OUT/gpuprof_report.html
#   msprof-analyze cluster -d DIR -m RECIPE --output_path OUT/RECIPE   for cluster_time_summary,
#     communication_time_sum, communication_matrix_sum and hccl_sum, then the rows of each table of
#     the recipe's OUT/RECIPE/cluster_analysis_output/cluster_analysis.db
# OUT defaults to DIR's sibling DIR_cluster_report; nothing is written elsewhere. CLI defaults to
# build/default/bin/gpuprof; msprof-analyze is ../shared/third_party/msprof-analyze beside the
# repository (or $MSPROF_ANALYZE). Exit status 1 when a step fails or a recipe's DB has no row
# (msprof-analyze itself exits 0 either way), 2 on bad usage.
set -u -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage() {
  echo "usage: tools/cluster_report.sh [--gpuprof CLI] DIR [OUT]" >&2
  exit 2
}

gpuprof=build/default/bin/gpuprof
if [[ "${1:-}" == "--gpuprof" ]]; then
  [[ $# -ge 2 ]] || usage
  gpuprof=$2
  shift 2
fi
[[ $# -ge 1 && $# -le 2 ]] || usage
dir=${1%/}
out=${2:-${dir}_cluster_report}
msprof=${MSPROF_ANALYZE:-../shared/third_party/msprof-analyze}
python=${GPUPROF_TEST_PYTHON:-python3}

if [[ ! -d "$dir" ]]; then
  echo "cluster_report: $dir is not a directory (give the folder with the ranks' *_ascend_pt directories)" >&2
  exit 2
fi
if ! compgen -G "$dir/*_ascend_pt" > /dev/null; then
  echo "cluster_report: no *_ascend_pt run directory in $dir; give the folder gpuprof run wrote the ranks into" >&2
  exit 2
fi
if [[ ! -x "$gpuprof" ]]; then
  echo "cluster_report: no gpuprof CLI at $gpuprof; build it (cmake --build --preset default) or pass --gpuprof" >&2
  exit 2
fi
if [[ ! -d "$msprof/msprof_analyze" ]]; then
  echo "cluster_report: msprof-analyze not found at $msprof; set MSPROF_ANALYZE to its source folder" >&2
  exit 2
fi
mkdir -p "$out"
failed=0

echo "==== gpuprof stats $dir"
"$gpuprof" stats "$dir" || failed=1

echo
echo "==== gpuprof report $dir -o $out/gpuprof_report.html"
"$gpuprof" report "$dir" -o "$out/gpuprof_report.html" || failed=1
ls -l "$out/gpuprof_report.html" 2> /dev/null

for recipe in cluster_time_summary communication_time_sum communication_matrix_sum hccl_sum; do
  echo
  echo "==== msprof-analyze cluster -d $dir -m $recipe"
  rm -rf "${out:?}/$recipe"
  PYTHONPATH="$msprof" "$python" -c \
    'import sys; from msprof_analyze.cli.entrance import msprof_analyze_cli; sys.exit(msprof_analyze_cli())' \
    cluster -d "$dir" -m "$recipe" --output_path "$out/$recipe" --force > "$out/$recipe.log" 2>&1
  rc=$?
  db="$out/$recipe/cluster_analysis_output/cluster_analysis.db"
  if [[ $rc -ne 0 || ! -f "$db" ]]; then
    [[ -f "$db" ]] && written="wrote $db" || written="wrote no $db"
    echo "FAILED: $recipe exited $rc and $written; the end of its log ($out/$recipe.log):"
    tail -n 20 "$out/$recipe.log"
    failed=1
    continue
  fi
  # Each table's rows, and the first row of each; no row at all is a failure.
  "$python" - "$db" << 'EOF' || failed=1
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
total = 0
for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
    count = db.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]
    total += count
    first = db.execute(f'SELECT * FROM "{table}" LIMIT 1').fetchone()
    print(f"  {table}: {count} rows" + (f"; first {first}" if first else ""))
if total == 0:
    print("FAILED: no row in any table")
    sys.exit(1)
EOF
done

echo
if [[ $failed -eq 0 ]]; then
  echo "cluster_report: every step wrote its output under $out"
else
  echo "cluster_report: a step FAILED (above); outputs under $out"
fi
exit $failed
