#!/usr/bin/env bash
# README's main job, after tools/setup.sh: profiles examples/train_profiled.py (gpuprof.profile
# with a schedule) on the GPU when PyTorch sees one, else on the CPU, and prints `gpuprof stats`
# of the DB it wrote. On a GPU the script runs under `gpuprof run`, so its kernels, copies and CUDA
# API calls are in the same DB. Output under build/example_profile (or $1).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

python=build/venv/bin/python
gpuprof=build/venv/bin/gpuprof
for need in "$python" "$gpuprof"; do
  [[ -x "$need" ]] || { echo "profile_example: $need is missing; run: bash tools/setup.sh" >&2; exit 1; }
done
out=${1:-build/example_profile}
rm -rf "$out"
mkdir -p "$out"
# The script's output goes to stderr (the terminal, or a redirected log, which keeps all of it)
# and to a log the DB path is read from.
log="$out/example.log"
if "$python" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "profile_example: a GPU is available: gpuprof run -- train_profiled.py --device cuda"
  "$gpuprof" run -o "$out" -- "$python" examples/train_profiled.py --device cuda --out "$out" 2>&1 | tee "$log" >&2
else
  echo "profile_example: no GPU: profiling train_profiled.py on the CPU"
  "$python" examples/train_profiled.py --device cpu --out "$out" 2>&1 | tee "$log" >&2
fi
db=$(sed -n 's/^gpuprof: profile DB: //p' "$log" | tail -n 1)
[[ -n "$db" ]] || { echo "profile_example: no DB was written (see above)" >&2; exit 1; }
echo
"$gpuprof" stats "$db"
cat <<NEXT

Next steps (gpuprof is build/venv/bin/gpuprof; '. build/venv/bin/activate' puts it on PATH):
  the DB:         $db
                  (msprof-analyze and MindStudio Insight read it, and analysis.db beside it)
  a timeline:     gpuprof export --format perfetto '$db' -o trace.json   # open in ui.perfetto.dev
  check it:       gpuprof check '$db'
  kernel replay:  gpuprof demo   # N passes on identical inputs, on a simulated device
  your script:    gpuprof run -- python3 your_script.py   # or gpuprof.profile(...) inside it
NEXT
