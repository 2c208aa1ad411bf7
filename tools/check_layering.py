#!/usr/bin/env python3
"""Fails when code reaches against gpuprof's dependency direction (docs/architecture.md).

  check_layering.py SOURCE_DIR BUILD_DIR   # the real tree; exit 0 clean, 1 with one line per violation
  check_layering.py --self-test            # shows the check fails on planted violations

Two facts of the layering are checked, the ones nothing else would catch:

- device/ sits below cupti (cupti -> device/cuda, never the reverse): no file under src/device
  includes anything from cupti/, session/, inject/, torch/, cli/, db/ or replay/, nor a CUPTI header.
- The CLI never reaches the session or CUDA: no file under src/cli includes session/, cupti/,
  device/cuda/, inject/, torch/, a CUDA/CUPTI/NVML header or the session's and the PyTorch hooks' C
  APIs; and the gpuprof executable's link line (which carries every library gpuprof_cli_commands
  pulls in, transitively) names no session library (libgpuprof.so, gpuprof_session*), nothing of
  CUPTI and no CUDA library (libcuda, libcudart, libnvidia-ml, libnvrtc, gpuprof_device_cuda,
  gpuprof_chunk_kernels).

A link is read from BUILD_DIR's build.ninja (the Ninja generator) or from the target's link.txt
(Makefiles), so the check sees what the build really links, whichever CMake line brought it in.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

SOURCE_SUFFIXES = (".h", ".hpp", ".cc", ".cpp", ".cu", ".cuh")
INCLUDE_LINE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')

CUDA_HEADERS = r"^(cuda|cuda_runtime|cuda_runtime_api|cupti|cupti_[a-z_]+|nvml|nvrtc)\.h$"

# (folder under the source dir, [(pattern over the included path, what it reaches)], why).
INCLUDE_RULES = [
    ("src/device",
     [(r"^cupti/", "cupti"), (r"^session/", "session"), (r"^inject/", "inject"), (r"^torch/", "torch"),
      (r"^cli/", "cli"), (r"^db/", "db"), (r"^replay/", "replay"), (r"^cupti(_[a-z_]+)?\.h$", "CUPTI")],
     "device/ sits below replay and cupti (cupti -> device/cuda, never the reverse)"),
    ("src/cli",
     [(r"^session/", "session"), (r"^cupti/", "cupti"), (r"^device/cuda/", "device/cuda"),
      (r"^inject/", "inject"), (r"^torch/", "torch"), (CUDA_HEADERS, "CUDA"),
      (r"^gpuprof/gpuprof_(c|torch)\.h$", "the session's C API")],
     "the CLI never reaches the session or CUDA"),
]

# Tokens of the gpuprof executable's link line (matched against each token's file name).
FORBIDDEN_LINKS = [
    (r"^libgpuprof\.so", "session (libgpuprof.so)"),
    (r"gpuprof_session", "session"),
    (r"gpuprof_inject", "inject"),
    (r"^libgpuprof_torch\.so", "torch"),
    (r"cupti", "CUPTI"),
    (r"^(lib|-l)(cuda|cudart|nvidia-ml|nvrtc)([._]|$)", "CUDA"),
    (r"gpuprof_device_cuda|gpuprof_chunk_kernels", "CUDA (device/cuda)"),
    (r"^CUDA::", "CUDA"),
]
CLI_TARGET = "gpuprof_cli"


def include_violations(source_dir):
    found = []
    for folder, rules, why in INCLUDE_RULES:
        root = os.path.join(source_dir, folder)
        for dirpath, _, files in os.walk(root):
            for name in sorted(files):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        match = INCLUDE_LINE.match(line)
                        if not match:
                            continue
                        included = match.group(1)
                        for pattern, reached in rules:
                            if re.search(pattern, included):
                                rel = os.path.relpath(path, source_dir)
                                found.append(f"{rel}:{number}: includes {included} ({reached}): {why}")
    return found


def ninja_link_line(build_ninja, target):
    """The LINK_LIBRARIES of `target`'s link statement in build.ninja, or None."""
    # The rule is <LANG>_EXECUTABLE_LINKER__<target>_<config>; a config name has no underscore, so
    # gpuprof_cli_test's statement does not match gpuprof_cli.
    rule = re.compile(r"^build \S.*?: (CXX|C|CUDA)_EXECUTABLE_LINKER__" + re.escape(target) +
                      r"_[A-Za-z0-9]*( |$)")
    with open(build_ninja, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        if not rule.match(line):
            continue
        for body in lines[i + 1:]:
            if not body.startswith("  "):
                break
            key, _, value = body.strip().partition(" = ")
            if key == "LINK_LIBRARIES":
                return value
        return ""
    return None


def link_line(build_dir, target):
    build_ninja = os.path.join(build_dir, "build.ninja")
    if os.path.exists(build_ninja):
        return ninja_link_line(build_ninja, target)
    for dirpath, dirs, files in os.walk(build_dir):
        if os.path.basename(dirpath) == target + ".dir" and "link.txt" in files:
            with open(os.path.join(dirpath, "link.txt"), encoding="utf-8") as f:
                return f.read()
    return None


def link_violations(build_dir):
    line = link_line(build_dir, CLI_TARGET)
    if line is None:
        return [f"{build_dir}: no link line for {CLI_TARGET} (neither build.ninja nor its link.txt): "
                "the check cannot see what the CLI links"]
    found = []
    for token in line.split():
        name = os.path.basename(token.rstrip(","))
        for pattern, reached in FORBIDDEN_LINKS:
            if re.search(pattern, name):
                found.append(f"{CLI_TARGET} links {token} ({reached}): the CLI never links the session or CUDA")
                break
    return found


def check(source_dir, build_dir):
    violations = include_violations(source_dir) + link_violations(build_dir)
    for violation in violations:
        print("check_layering: " + violation)
    if violations:
        print(f"check_layering: {len(violations)} violation(s) of the dependency direction "
              "(docs/architecture.md, 'Dependency direction')")
        return 1
    print("check_layering: device/ includes nothing above it; the CLI includes and links no session or CUDA")
    return 0


def self_test():
    """Plants one violation of each kind in a scratch tree and checks that each is reported."""
    scratch = tempfile.mkdtemp(prefix="gpuprof_layering_")
    try:
        def write(rel, text):
            path = os.path.join(scratch, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)

        write("src/device/cuda/cuda_device.cc", '#include "device/cuda/cuda_device.h"\n#include <cuda.h>\n')
        write("src/cli/main.cc", '#include "cli/demo.h"\n#include "db/stats.h"\n')
        # A test of the CLI may link more; its statement comes first, and must not be taken for the CLI's.
        clean_link = ("build tests/cli_test: CXX_EXECUTABLE_LINKER__gpuprof_cli_test_RelWithDebInfo t.cc.o\n"
                      "  LINK_LIBRARIES = lib/libgpuprof.so\n"
                      "build bin/gpuprof: CXX_EXECUTABLE_LINKER__gpuprof_cli_RelWithDebInfo main.cc.o\n"
                      "  LINK_LIBRARIES = src/cli/libgpuprof_cli_commands.a src/db/libgpuprof_db.a "
                      "src/device/cuda/libgpuprof_cubin_symbols.a -ldl\n")
        write("build/build.ninja", clean_link)
        me = os.path.abspath(__file__)

        def run():
            result = subprocess.run([sys.executable, me, scratch, os.path.join(scratch, "build")],
                                    capture_output=True, text=True, check=False)
            return result.returncode, result.stdout

        failures = []
        code, out = run()
        if code != 0:
            failures.append(f"a clean tree failed:\n{out}")
        write("src/device/cuda/cuda_device.cc",
              '#include "device/cuda/cuda_device.h"\n#include "cupti/internal_work.h"\n')
        write("src/cli/main.cc", '#include "cli/demo.h"\n  #  include <cupti.h>\n#include "session/session.h"\n')
        write("build/build.ninja", clean_link.replace(
            "-ldl", "src/session/libgpuprof_session_core.a lib/libgpuprof.so /usr/local/cuda/lib64/libcupti.so -lcuda"))
        code, out = run()
        expected = [
            "src/device/cuda/cuda_device.cc:2: includes cupti/internal_work.h (cupti)",
            "src/cli/main.cc:2: includes cupti.h (CUDA)",
            "src/cli/main.cc:3: includes session/session.h (session)",
            "gpuprof_cli links src/session/libgpuprof_session_core.a (session)",
            "gpuprof_cli links lib/libgpuprof.so (session (libgpuprof.so))",
            "gpuprof_cli links /usr/local/cuda/lib64/libcupti.so (CUPTI)",
            "gpuprof_cli links -lcuda (CUDA)",
        ]
        if code != 1:
            failures.append(f"planted violations gave exit {code}, not 1:\n{out}")
        for line in expected:
            if line not in out:
                failures.append(f"not reported: {line}\n{out}")
        os.remove(os.path.join(scratch, "build/build.ninja"))
        code, out = run()
        if code != 1 or "no link line for gpuprof_cli" not in out:
            failures.append(f"a build without a link line for the CLI was not an error:\n{out}")
        for failure in failures:
            print("check_layering self-test: FAILED: " + failure)
        if failures:
            return 1
        print(f"check_layering self-test: the clean tree passes; {len(expected)} planted violations "
              "and a missing link line are each reported")
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 3:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    return check(argv[1], argv[2])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
