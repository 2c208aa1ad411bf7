#!/usr/bin/env bash
# The rule map's check must fail when a rule loses its test: run it on copies of docs/replay_rules.md
# with R2's line removed (R2 has no GPU row), with a test renamed, and with B8 claimed as pending beside its line of tests.
# Usage: check_rule_map_selftest.sh PYTHON RULES_MD BUILD_DIR
set -uo pipefail
python="$1" rules="$2" build="$3"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
status=0
expect_failure() {  # expect_failure WHAT FILE PATTERN
  local out
  out="$("$python" "$(dirname "$0")/check_rule_map.py" "$2" "$build" 2>&1)"
  if [[ $? -eq 0 ]] || ! grep -q -- "$3" <<<"$out"; then
    echo "FAIL: $1: the check passed or did not say '$3':"
    echo "$out"
    status=1
  else
    echo "ok: $1 fails: $(grep -- "$3" <<<"$out" | head -n 1)"
  fi
}
grep -v '^R2: ' "$rules" >"$tmp/no_r2.md"
expect_failure "a rule without a line" "$tmp/no_r2.md" "rule R2 has no line"
sed -e 's/`InterceptorTest.SecondInstanceAttachesInsteadOfWrappingTheWrapper`/`InterceptorTest.NoSuchTest`/' "$rules" >"$tmp/renamed.md"
expect_failure "a rule whose only test does not exist" "$tmp/renamed.md" "no test named InterceptorTest.NoSuchTest"
sed -e 's/^\(B8: `.*\)$/\1\nB8: not implemented (issue 24)/' "$rules" >"$tmp/pending.md"
expect_failure "a pending rule that names a test" "$tmp/pending.md" "B8 is marked not implemented but also names tests"
exit "$status"
