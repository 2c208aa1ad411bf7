#!/usr/bin/env python3
"""Usage: check_rule_map.py RULES_MD BUILD_DIR

Checks docs/replay_rules.md against the tests CTest knows in BUILD_DIR: every rule line
("R1: SuiteTest.Case, ...") names at least one test, every named test exists exactly as
`ctest -N` lists it, and every rule of the required set has a line. Prints one line per problem
and exits 1 when there is any."""
import re
import subprocess
import sys

REQUIRED = [f"R{i}" for i in range(1, 14)] + ["B1", "B6"]


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    rules_md, build_dir = sys.argv[1], sys.argv[2]
    listed = subprocess.run(["ctest", "--test-dir", build_dir, "-N"], capture_output=True, text=True, check=True)
    known = set(re.findall(r"Test\s+#\d+:\s+(\S+)", listed.stdout))
    problems = []
    seen = {}
    with open(rules_md, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            m = re.match(r"^-?\s*\*{0,2}([RBC]\d+)\*{0,2}:\s*(.*)$", line.strip())
            if not m:
                continue
            rule, rest = m.group(1), m.group(2)
            if rule in seen:
                problems.append(f"{rules_md}:{number}: {rule} appears twice (lines {seen[rule]} and {number})")
            seen[rule] = number
            names = re.findall(r"`([^`]+)`", rest)
            if not names:
                problems.append(f"{rules_md}:{number}: {rule} names no test (write test names in backticks)")
            for name in names:
                if name not in known:
                    problems.append(f"{rules_md}:{number}: {rule}: no test named {name} in `ctest -N` of {build_dir}")
    for rule in REQUIRED:
        if rule not in seen:
            problems.append(f"{rules_md}: rule {rule} has no line")
    for p in problems:
        print(p)
    if not problems:
        print(f"{rules_md}: {len(seen)} rules map to existing tests")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
