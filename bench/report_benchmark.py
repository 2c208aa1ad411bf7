#!/usr/bin/env python3
"""gpuprof report, diff and stats (with its findings) on a large DB: time and peak memory against
the targets, beside `gpuprof stats` of the same DB in the same run. Issue 22: report at most 5 MB and
5 s for 200k PYTORCH_API + 200k TASK rows; issue 41: findings (stats), diff and report each at most
10 s and 1 GiB for 2M + 2M rows, on the 2-core machine.

  python3 bench/report_benchmark.py [--build-dir build/gpu] [--rows 200000] [--repeats 5]

The DB comes from the DB writer benchmark's generator (bench/db_writer_benchmark --keep), written
once into a temporary folder that is removed afterwards. Times are medians of --repeats runs."""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

TARGET_SECONDS = 5.0
TARGET_BYTES = 5 * 1000 * 1000
TARGET_SECONDS_LARGE = 10.0  # issue 41, at 2M + 2M rows
TARGET_RSS_LARGE = 1 << 30


def timed(argv):
    """(seconds, peak resident bytes) of one run of argv."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"report_benchmark: {' '.join(argv)} failed")
    return time.monotonic() - start, usage.ru_maxrss * 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default="build/gpu")
    parser.add_argument("--rows", type=int, default=200000, help="PYTORCH_API and TASK rows, each")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    gpuprof = os.path.join(args.build_dir, "bin", "gpuprof")
    generator = os.path.join(args.build_dir, "bench", "db_writer_benchmark")
    for tool in (gpuprof, generator):
        if not os.access(tool, os.X_OK):
            sys.exit(f"report_benchmark: {tool} not found; build it (cmake --build --preset gpu)")
    work = tempfile.mkdtemp(prefix="gpuprof_report_bench_")
    try:
        subprocess.run([generator, "--rows", str(args.rows), "--no-peer", "--keep", "--with-api-calls",
                        "--out-dir", os.path.join(work, "db")], check=True, stdout=subprocess.DEVNULL)
        page = os.path.join(work, "report.html")
        db = os.path.join(work, "db")
        commands = {
            "gpuprof report": [gpuprof, "report", db, "-o", page, "--progress", "off"],
            "gpuprof stats (findings)": [gpuprof, "stats", db, "--progress", "off"],
            "gpuprof stats --format json": [gpuprof, "stats", db, "--format", "json", "--progress", "off"],
            "gpuprof diff (DB, itself)": [gpuprof, "diff", db, db],
        }
        runs = {name: [] for name in commands}
        for _ in range(args.repeats):  # interleaved, so a busy moment costs each alike
            for name, argv in commands.items():
                runs[name].append(timed(argv))
        size = os.path.getsize(page)
        large = args.rows >= 2000000
        seconds_target = TARGET_SECONDS_LARGE if large else TARGET_SECONDS
        print(f"report_benchmark: {args.rows} PYTORCH_API + {args.rows} TASK rows, {args.repeats} runs (median)")
        print(f"{'':30}{'seconds':>10}{'peak MiB':>10}{'target s':>10}")
        stats_median = statistics.median(t for t, _ in runs["gpuprof stats (findings)"])
        met = size <= TARGET_BYTES or large
        for name, samples in runs.items():
            seconds = statistics.median(t for t, _ in samples)
            rss = max(r for _, r in samples)
            target = seconds_target if name != "gpuprof stats --format json" else float("nan")
            print(f"{name:30}{seconds:10.3f}{rss / 2**20:10.1f}{target:10.1f}   {seconds / stats_median:.2f}x stats")
            if name != "gpuprof stats --format json":
                met = met and seconds <= seconds_target and (not large or rss <= TARGET_RSS_LARGE)
        print(f"page size: {size / 1e6:.3f} MB (target {TARGET_BYTES / 1e6:.1f} MB at 200k rows)")
        print("result:", "targets met" if met else "NOT met")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
