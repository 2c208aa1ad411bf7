"""Issue 21 on the GPU machine, with a plain CUDA program (gpu_test_launch_loop, no Python in it):
- SIGTERM sent to `gpuprof run` is forwarded; the program finalizes its profile (kernels recorded
  up to the signal) and ends with the signal's status (143);
- on a terminal, run's live line counts the program's launches and kernels.

  python3 tests/gpu/signal_progress.py --build-dir BUILD --work-dir DIR
Exit 0 when both hold, 1 otherwise (what was seen is printed)."""

import argparse
import fcntl
import os
import pty
import re
import signal
import sqlite3
import struct
import subprocess
import sys
import termios
import time

LOOP_LAUNCHES = "400000000"  # far more than it gets through before the signal


def final_db(stderr):
    found = re.findall(r"gpuprof: profile DB: (\S+\.db)", stderr)
    return found[-1] if found else None


def sigterm_case(gpuprof, program, work):
    out = os.path.join(work, "sigterm")
    proc = subprocess.Popen([gpuprof, "run", "-o", out, "--", program, LOOP_LAUNCHES], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(6)  # CUDA is up and launching
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=240)
    print("$ gpuprof run -- gpu_test_launch_loop", LOOP_LAUNCHES, "; SIGTERM after 6 s")
    print(stderr[-3000:])
    problems = []
    if proc.returncode != 128 + signal.SIGTERM:
        problems.append("exit status %d, expected 143 (SIGTERM's)" % proc.returncode)
    db = final_db(stderr)
    if db is None:
        problems.append("no finalized profile DB named")
    else:
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
        tasks = con.execute("SELECT COUNT(*) FROM TASK").fetchone()[0]
        print("TASK rows in", db, ":", tasks)
        if tasks < 1000:
            problems.append("only %d TASK rows" % tasks)
        check = subprocess.run([gpuprof, "check", db], capture_output=True, text=True)
        print(check.stdout.strip())
        if check.returncode != 0:
            problems.append("gpuprof check failed: " + check.stdout + check.stderr)
    return problems


def progress_case(gpuprof, program, work):
    out = os.path.join(work, "progress")
    screen, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    proc = subprocess.Popen([gpuprof, "run", "-o", out, "--", program, "3000000"], stdin=subprocess.DEVNULL,
                            stdout=terminal, stderr=terminal, env=dict(os.environ, TERM="xterm"))
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(screen, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(screen)
    status = proc.wait(timeout=240)
    text = shown.decode("utf-8", "replace")
    lines = re.findall(r"gpuprof run: ([\d,]+) launches, ([\d,]+) kernels, [\d,]+ ops[^\x1b]*", text)
    print("$ gpuprof run -- gpu_test_launch_loop 3000000   (on a terminal)")
    for launches, kernels in lines[-3:]:
        print("  live line: %s launches, %s kernels" % (launches, kernels))
    problems = []
    if status != 0:
        problems.append("exit status %d" % status)
    if not lines or max(int(k.replace(",", "")) for _, k in lines) == 0:
        problems.append("no live line with kernels counted: " + repr(text[-1500:]))
    if "\x1b[r" not in text:
        problems.append("the scroll region was not given back")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default="build/gpu")
    parser.add_argument("--work-dir", default="/tmp/gpuprof_signal_progress")
    args = parser.parse_args()
    gpuprof = os.path.abspath(os.path.join(args.build_dir, "bin", "gpuprof"))
    program = os.path.abspath(os.path.join(args.build_dir, "tests", "gpu", "gpu_test_launch_loop"))
    os.makedirs(args.work_dir, exist_ok=True)
    problems = sigterm_case(gpuprof, program, args.work_dir) + progress_case(gpuprof, program, args.work_dir)
    for problem in problems:
        print("FAIL:", problem)
    print("signal_progress:", "passed" if not problems else "FAILED")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
