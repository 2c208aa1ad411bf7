#!/usr/bin/env python3
"""gpuprof report on a large DB: its size and time against the targets (issue 22: at most 5 MB and
5 s for 200k PYTORCH_API + 200k TASK rows on the 2-core machine), beside `gpuprof stats` of the same
DB in the same run (the report reads what stats reads, and more: the ratio is what the page costs).

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


def timed(argv):
    start = time.monotonic()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - start


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
        report_s, stats_s = [], []
        for _ in range(args.repeats):  # interleaved, so a busy moment costs both alike
            report_s.append(timed([gpuprof, "report", os.path.join(work, "db"), "-o", page, "--progress", "off"]))
            stats_s.append(timed([gpuprof, "stats", os.path.join(work, "db"), "--progress", "off"]))
        size = os.path.getsize(page)
        report_median = statistics.median(report_s)
        stats_median = statistics.median(stats_s)
        print(f"report_benchmark: {args.rows} PYTORCH_API + {args.rows} TASK rows, {args.repeats} runs (median)")
        print(f"{'':24}{'seconds':>10}{'target':>10}")
        print(f"{'gpuprof report':24}{report_median:10.3f}{TARGET_SECONDS:10.1f}")
        print(f"{'gpuprof stats (peer)':24}{stats_median:10.3f}")
        print(f"report / stats: {report_median / stats_median:.2f}x")
        print(f"page size: {size / 1e6:.3f} MB (target {TARGET_BYTES / 1e6:.1f} MB)")
        met = report_median <= TARGET_SECONDS and size <= TARGET_BYTES
        print("result:", "targets met" if met else "NOT met")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
