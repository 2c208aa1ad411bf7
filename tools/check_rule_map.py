#!/usr/bin/env python3
"""Usage: check_rule_map.py [--spec REPLAY_SPEC_MD] RULES_MD BUILD_DIR

Checks docs/replay_rules.md: every rule of the replay specification (R, C, B and W) names at least
one test that exists, and every test it names exists. Prints one line per problem and exits 1
when there is any.

The rules: every line of REPLAY_SPEC.md that starts with a rule id ("R1  Inventory ..."), read
from --spec, else from ../shared/REPLAY_SPEC.md beside this checkout; where neither is there,
the fallback list FALLBACK_RULES below (it must list what REPLAY_SPEC.md lists).

RULES_MD has two kinds of entries:
  * host rule lines, "R1: `SuiteTest.Case`, `Other.Case`": each name exactly as `ctest -N` lists
    it in BUILD_DIR. In a build without CUDA (GPUPROF_ENABLE_CUDA off), tests CTest registers
    only in CUDA builds are not listed: a name missing there is accepted when a test source under
    tests/ defines it, and said so.
  * rows of the table under the heading "On the GPU": "| R1, R10 | `GpuRunTest.Case` | ... |".
    GPU tests are registered only in CUDA builds, so their names are checked against the sources
    that register them: GpuRunTest.<case> against the cases of tests/gpu/run_case.py (`--list`,
    what tests/gpu/CMakeLists.txt registers), Suite.Case against the TEST macros of the sources of
    the gtest executables tests/gpu/CMakeLists.txt adds with label gpu.
A rule is mapped when a host line or a GPU row names at least one existing test for it."""
import os
import re
import subprocess
import sys

# REPLAY_SPEC.md's rules, for a checkout without ../shared. Keep in step with the spec.
FALLBACK_RULES = ([f"R{i}" for i in range(1, 15)] + [f"C{i}" for i in range(1, 6)] +
                  [f"B{i}" for i in range(1, 9)] + [f"W{i}" for i in range(1, 8)])

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_SPEC = os.path.join(os.path.dirname(REPO), "shared", "REPLAY_SPEC.md")
RULE_ID = re.compile(r"^([RCBW]\d+)$")
GPU_HEADING = re.compile(r"^#+\s*On the GPU\b")
TEST_MACRO = re.compile(r"^\s*(?:TEST|TEST_F|TYPED_TEST)\(\s*(\w+)\s*,\s*(\w+)\s*\)", re.M)
TEST_P_MACRO = re.compile(r"^\s*TEST_P\(\s*(\w+)\s*,\s*(\w+)\s*\)", re.M)
INSTANTIATE_MACRO = re.compile(r"INSTANTIATE_TEST_SUITE_P\(\s*(\w+)\s*,\s*(\w+)\s*,", re.M)


def spec_rules(path):
    """The rule ids REPLAY_SPEC.md defines, in order: lines that start with one."""
    rules = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^([RCBW]\d+)\s", line)
            if m and m.group(1) not in rules:
                rules.append(m.group(1))
    return rules


def ctest_names(build_dir):
    listed = subprocess.run(["ctest", "--test-dir", build_dir, "-N"], capture_output=True, text=True, check=True)
    return set(re.findall(r"Test\s+#\d+:\s+(\S+)", listed.stdout))


def build_has_cuda(build_dir):
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt"), encoding="utf-8") as f:
            cache = f.read()
    except OSError:
        return False
    m = re.search(r"^GPUPROF_ENABLE_CUDA:BOOL=(\S+)", cache, re.M)
    return m is not None and m.group(1).upper() in ("ON", "1", "TRUE", "YES", "Y")


def gtest_names_in(paths):
    """The test names the gtest sources `paths` define, as gtest names them (parameterized ones as
    Prefix/Suite.Case, without the parameter suffix)."""
    names, params = set(), set()
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        names.update(f"{s}.{c}" for s, c in TEST_MACRO.findall(text))
        cases = TEST_P_MACRO.findall(text)
        for prefix, suite in INSTANTIATE_MACRO.findall(text):
            params.update(f"{prefix}/{s}.{c}" for s, c in cases if s == suite)
    return names, params


def defined_in(name, names, params):
    return name in names or any(name.startswith(p + "/") for p in params)


def source_test_names():
    paths = []
    for root, _, files in os.walk(os.path.join(REPO, "tests")):
        paths += [os.path.join(root, f) for f in files if f.endswith((".cc", ".cpp"))]
    return gtest_names_in(paths)


def gpu_test_names(problems):
    """GpuRunTest.<case> for the cases of tests/gpu/run_case.py, and the tests of the gtest
    executables tests/gpu/CMakeLists.txt adds with label gpu."""
    gpu_dir = os.path.join(REPO, "tests", "gpu")
    names = set()
    listed = subprocess.run([sys.executable, os.path.join(gpu_dir, "run_case.py"), "--list"],
                            capture_output=True, text=True)
    if listed.returncode != 0:
        problems.append(f"tests/gpu/run_case.py --list failed ({listed.returncode}): {listed.stderr.strip()}")
    names.update("GpuRunTest." + case for case in listed.stdout.split())
    with open(os.path.join(gpu_dir, "CMakeLists.txt"), encoding="utf-8") as f:
        cmake = f.read()
    sources = []
    for call in re.findall(r"gpuprof_add_gtest\((.*?)\)", cmake, re.S):
        m = re.search(r"\bSOURCES\s+(.*?)(?=\b(?:LIBS|LABELS)\b|$)", call, re.S)
        labels = re.search(r"\bLABELS\s+([^\n]*)", call)
        if m and labels and "gpu" in re.split(r"[\s;\"]+", labels.group(1)):
            sources += [os.path.join(gpu_dir, s) for s in m.group(1).split() if s.endswith((".cc", ".cpp"))]
    gtests, params = gtest_names_in(sources)
    return names | gtests, params


def parse(rules_md, problems):
    """{rule: [(line number, [names])]} for host lines and for GPU rows, and whether the GPU table
    was found."""
    host, gpu = {}, {}
    in_gpu = found_gpu = False
    with open(rules_md, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.strip()
            if line.startswith("#"):
                in_gpu = GPU_HEADING.match(line) is not None
                found_gpu |= in_gpu
                continue
            if in_gpu and line.startswith("|"):
                cells = [c.strip() for c in line.strip("|").split("|")]
                if len(cells) < 2 or not cells[0] or set(cells[0]) <= set("-: ") or cells[0].lower() == "rule":
                    continue
                rules = [r.strip() for r in cells[0].split(",")]
                bad = [r for r in rules if not RULE_ID.match(r)]
                if bad:
                    problems.append(f"{rules_md}:{number}: GPU row with an unknown rule column {cells[0]!r}")
                    continue
                names = re.findall(r"`([^`]+)`", cells[1])
                if not names:
                    problems.append(f"{rules_md}:{number}: GPU row for {cells[0]} names no test "
                                    "(write test names in backticks)")
                for rule in rules:
                    gpu.setdefault(rule, []).append((number, names))
                continue
            m = re.match(r"^-?\s*\*{0,2}([RBCW]\d+)\*{0,2}:\s*(.*)$", line)
            if not m:
                continue
            rule, rest = m.group(1), m.group(2)
            pending = re.match(r"^not implemented \(issue (\d+)\)", rest)
            if pending:
                # A rule whose feature does not exist yet has no test that could fail; it is named
                # with the issue that builds it, and reported on every run until then.
                PENDING[rule] = (number, pending.group(1))
                continue
            if rule in host:
                problems.append(f"{rules_md}:{number}: {rule} appears twice (lines {host[rule][0][0]} and {number})")
            names = re.findall(r"`([^`]+)`", rest)
            if not names:
                problems.append(f"{rules_md}:{number}: {rule} names no test (write test names in backticks)")
            host.setdefault(rule, []).append((number, names))
    return host, gpu, found_gpu


PENDING = {}  # rule -> (line, issue): "R: not implemented (issue N)" lines


def main(argv):
    args = list(argv)
    spec = None
    if len(args) >= 2 and args[0] == "--spec":
        spec = args[1]
        args = args[2:]
    if len(args) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    rules_md, build_dir = args
    problems, notes = [], []

    if spec is None and os.path.exists(DEFAULT_SPEC):
        spec = DEFAULT_SPEC
    if spec is not None:
        required = spec_rules(spec)
        if not required:
            problems.append(f"{spec}: no rule lines found")
        notes.append(f"rules from {spec}: {len(required)}")
        stale = sorted(set(required) ^ set(FALLBACK_RULES))
        if stale:
            notes.append(f"FALLBACK_RULES in {os.path.relpath(__file__, REPO)} differs from the spec in {stale}: "
                         "update it")
    else:
        required = FALLBACK_RULES
        notes.append(f"no {DEFAULT_SPEC}: rules from the fallback list ({len(required)})")

    host, gpu, found_gpu = parse(rules_md, problems)
    if not found_gpu:
        problems.append(f"{rules_md}: no table under a heading \"On the GPU\"")

    known = ctest_names(build_dir)
    cuda = build_has_cuda(build_dir)
    sources = None
    from_sources = []
    mapped = set()
    for rule, entries in sorted(host.items()):
        for number, names in entries:
            for name in names:
                if name.startswith("GpuRunTest."):
                    problems.append(f"{rules_md}:{number}: {rule}: {name} is a GPU case: name it in the GPU table")
                    continue
                if name in known:
                    mapped.add(rule)
                    continue
                if not cuda:
                    if sources is None:
                        sources = source_test_names()
                    if defined_in(name, *sources):
                        from_sources.append(name)
                        mapped.add(rule)
                        continue
                problems.append(f"{rules_md}:{number}: {rule}: no test named {name} in `ctest -N` of {build_dir}"
                                + ("" if cuda else " nor in the test sources"))
    if from_sources:
        notes.append(f"{len(set(from_sources))} test(s) not registered in {build_dir} (built without CUDA), "
                     "found in the test sources")

    gpu_known, gpu_params = gpu_test_names(problems)
    rows = sorted({(number, tuple(names)) for entries in gpu.values() for number, names in entries})
    for number, names in rows:
        rules = [rule for rule, entries in gpu.items() if any(n == number for n, _ in entries)]
        for name in names:
            if defined_in(name, gpu_known, gpu_params):
                mapped.update(rules)
            else:
                problems.append(f"{rules_md}:{number}: GPU row for {', '.join(rules)}: no GPU test named {name} "
                                "(tests/gpu/run_case.py --list, tests/gpu/CMakeLists.txt's gpu gtests)")

    for rule in sorted(set(host) | set(gpu)):
        if rule not in required:
            problems.append(f"{rules_md}: {rule} is not a rule of the specification")
    for rule, (number, issue) in sorted(PENDING.items()):
        if rule in host or rule in gpu:
            problems.append(f"{rules_md}:{number}: {rule} is marked not implemented but also names tests")
        else:
            notes.append(f"{rule} is not implemented yet (issue {issue}): no test exists for it")
    for rule in required:
        if rule in PENDING:
            continue
        if rule not in host and rule not in gpu:
            problems.append(f"{rules_md}: rule {rule} has no line and no GPU row (every rule needs a test)")
        elif rule not in mapped:
            problems.append(f"{rules_md}: rule {rule} names no existing test")

    for n in notes:
        print(f"note: {n}")
    for p in problems:
        print(p)
    if not problems:
        implemented = len(required) - len(PENDING)
        print(f"{rules_md}: all {implemented} implemented rules map to existing tests "
              f"({len(host)} host lines, {sum(len(e) for e in gpu.values())} GPU rule entries); "
              f"{len(PENDING)} not implemented yet: {', '.join(sorted(PENDING)) or 'none'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
