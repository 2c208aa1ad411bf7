#!/usr/bin/env python3
"""Hardware counters over replay passes against Nsight Compute (issue 19's benchmark), in one run on
the GPU machine.

On examples/train_transformer.py, the first C launches of every kernel (no -k), for C in --counts
(20, 200):
  gpuprof replay --passes P --set S -c C
  ncu --replay-mode kernel --set S --cache-control all --clock-control none -c C
with S = --set (basic) and P = --passes (2, the fewest timing passes). Cost per kernel =
(time at C=200 - time at C=20) / (launches at 200 - launches at 20), so start-up drops out, on the
example's own timed span (timed_s), on the process wall and, for gpuprof, on the engine's own time
(the DB's replayNs). Target: gpuprof >= 20x faster per kernel than ncu. Every gpuprof run's losses
must equal the plain run's; a failed or differing run is named and the script exits 1. Also printed:
how many launches got counters, their counter passes and the first reason a launch had none.

    python3 bench/counter_overhead.py --gpuprof BUILD/bin/gpuprof [--repeats 2] [--out DIR]
    bash tools/gpu_check.sh --counter-overhead build/gpu-stage
    python3 bench/counter_overhead.py --self-test       # the arithmetic and table on made-up runs

Without torch and CUDA: "counter_overhead: skipped (...)", exit 0. Without ncu the peer cell says
"ncu not found" and no ratio is printed.
"""

import argparse
import json
import os
import sqlite3
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import collection_overhead as co  # noqa: E402
import replay_overhead as ro  # noqa: E402  (runs, medians and the per-kernel difference are shared)

TARGET_VS_NCU = 20.0


def counter_counts(out_dir):
    """(launches with every metric, median counter passes, first counterStatus) from a run's DB, or
    None without a DB or without the counter columns."""
    dbs = sorted(Path(out_dir).rglob("ascend_pytorch_profiler*.db"))
    if not dbs:
        return None
    conn = sqlite3.connect(f"file:{dbs[-1]}?mode=ro", uri=True)
    try:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(GPUPROF_REPLAY_KERNEL)")}
        if not {"counterPasses", "counterStatus"} <= columns:
            return None
        with_counters = conn.execute("SELECT COUNT(*) FROM GPUPROF_REPLAY_KERNEL WHERE replayed = 1 AND "
                                     "counterStatus IS NULL AND counterPasses > 0").fetchone()[0]
        passes = [r[0] for r in conn.execute("SELECT counterPasses FROM GPUPROF_REPLAY_KERNEL WHERE "
                                             "counterPasses > 0 ORDER BY counterPasses")]
        status = conn.execute("SELECT counterStatus FROM GPUPROF_REPLAY_KERNEL WHERE counterStatus IS NOT NULL "
                              "LIMIT 1").fetchone()
    finally:
        conn.close()
    return with_counters, (passes[(len(passes) - 1) // 2] if passes else 0), (status[0] if status else None)


def variants(args, ncu):
    low, high = args.counts
    out = [(("plain",), "plain", [], False)]
    for c in (low, high):
        out.append((("gpuprof", c), f"gpuprof replay --passes {args.passes} --set {args.set} -c {c}",
                    [args.gpuprof, "replay", "--passes", str(args.passes), "--set", args.set, "-c", str(c)], True))
    if ncu:
        for c in (low, high):
            out.append((("ncu", c), f"ncu --replay-mode kernel --set {args.set} -c {c}",
                        [ncu, "--replay-mode", "kernel", "--set", args.set, "--cache-control", "all",
                         "--clock-control", "none", "-c", str(c)], False))
    return out


def figures(runs, counts, clock):
    """Cost per kernel of gpuprof and ncu on `clock` from the median runs {key: record}."""
    low, high = counts

    def of(key, field):
        run = runs.get(key)
        return run.get(field) if run and run.get("ok") else None

    mine = ro.per_kernel(of(("gpuprof", low), clock), of(("gpuprof", high), clock),
                         of(("gpuprof", low), "launches"), of(("gpuprof", high), "launches"))
    peer = ro.per_kernel(of(("ncu", low), clock), of(("ncu", high), clock),
                         of(("ncu", low), "launches"), of(("ncu", high), "launches"))
    return {"gpuprof_s": mine, "ncu_s": peer, "ncu_over_gpuprof": ro.ratio(peer, mine)}


def table(timed, wall, engine, args, ncu_note):
    low, high = args.counts
    peer = lambda f: ncu_note or "ncu " + ro.ms(f["ncu_s"])  # noqa: E731
    lines = ["| figure | gpuprof | peer | ratio | target | verdict |", "|---|---|---|---|---|---|"]
    lines.append(f"| cost per kernel with --set {args.set}, timed span ((t@{high} - t@{low}) / launches) | "
                 f"{ro.ms(timed['gpuprof_s'])} | {peer(timed)} | {ro.faster(timed['ncu_over_gpuprof'])} | "
                 f">= {TARGET_VS_NCU:g}x faster | "
                 f"{ro.verdict(timed['ncu_over_gpuprof'], TARGET_VS_NCU, at_most=False)} |")
    lines.append(f"| the same, process wall | {ro.ms(wall['gpuprof_s'])} | {peer(wall)} | "
                 f"{ro.faster(wall['ncu_over_gpuprof'])} | - | - |")
    lines.append(f"| (floor) in-engine time per kernel (replayNs: drain, capture, timing and counter passes) | "
                 f"{ro.ms(engine['gpuprof_s'])} | {peer(timed)} | "
                 f"{ro.faster(ro.ratio(timed['ncu_s'], engine['gpuprof_s']))} | - | - |")
    return lines


def self_test():
    def rec(timed, wall, launches, engine=None, ok=True):
        return {"timed_s": timed, "wall_s": wall, "launches": launches, "engine_s": engine, "ok": ok}

    runs = {("plain",): rec(1.0, 10.0, None), ("gpuprof", 20): rec(1.0, 10.0, 20, 0.02),
            ("gpuprof", 200): rec(1.18, 10.9, 200, 0.11), ("ncu", 20): rec(20.0, 40.0, 20),
            ("ncu", 200): rec(92.0, 130.0, 200)}
    timed, wall, engine = (figures(runs, (20, 200), c) for c in ("timed_s", "wall_s", "engine_s"))
    close = lambda a, b: a is not None and abs(a - b) < 1e-9  # noqa: E731
    assert close(timed["gpuprof_s"], 0.001) and close(timed["ncu_s"], 0.4) and close(timed["ncu_over_gpuprof"], 400)
    assert close(wall["gpuprof_s"], 0.005) and close(engine["gpuprof_s"], 0.0005) and engine["ncu_s"] is None
    args = parse_args(["--gpuprof", "/bin/true"])
    text = "\n".join(table(timed, wall, engine, args, None))
    assert "| 1.000 ms | ncu 400.000 ms | 400.0x faster | >= 20x faster | met |" in text, text
    assert "| 0.500 ms | ncu 400.000 ms | 800.0x faster |" in text, text
    text = "\n".join(table(figures({}, (20, 200), "timed_s"), wall, engine, args, "ncu not found"))
    assert "ncu not found" in text and "not measured" in text, text
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "x_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler.db"
        db.parent.mkdir(parents=True)
        conn = sqlite3.connect(db)
        conn.execute("CREATE TABLE GPUPROF_REPLAY_KERNEL (replayed INTEGER, counterPasses INTEGER, counterStatus TEXT)")
        conn.executemany("INSERT INTO GPUPROF_REPLAY_KERNEL VALUES (?, ?, ?)",
                         [(1, 10, None), (1, 12, None), (1, 0, "counters not permitted"), (0, 0, None)])
        conn.commit()
        conn.close()
        assert counter_counts(tmp) == (2, 10, "counters not permitted"), counter_counts(tmp)
        assert counter_counts(Path(tmp) / "none") is None
    print("\n".join(table(timed, wall, engine, args, None)))
    print("counter_overhead: self-test passed")
    return 0


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpuprof", help="the gpuprof binary (BUILD/bin/gpuprof, BUILD/lib beside it)")
    parser.add_argument("--python", default=os.environ.get("GPUPROF_TEST_PYTHON", "python3"),
                        help="interpreter for the example (default: $GPUPROF_TEST_PYTHON or python3)")
    parser.add_argument("--transformer-script", default=str(ro.TRANSFORMER),
                        help="the example (default: examples/train_transformer.py)")
    parser.add_argument("--transformer-steps", type=int, default=10,
                        help="steps of every run (default: 10, enough that the higher count's launches exist)")
    parser.add_argument("--counts", type=lambda t: ro.pair(t, "--counts", 1), default=(20, 200),
                        help="LOW,HIGH: the -c of the two runs per tool (default: 20,200)")
    parser.add_argument("--set", default="basic", choices=("basic", "full"), help="the metric set (default: basic)")
    parser.add_argument("--passes", type=int, default=2, help="gpuprof's timing passes (default: 2, the fewest)")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each variant, interleaved (default: 2)")
    parser.add_argument("--transformer-timeout", type=float, default=1800, help="seconds per run (default: 1800)")
    parser.add_argument("--out", help="keep the DBs and logs here and write counter_overhead.json")
    parser.add_argument("--self-test", action="store_true", help="check the arithmetic and table, then exit")
    args = parser.parse_args(argv)
    if not args.self_test and not args.gpuprof:
        parser.error("--gpuprof is required")
    if args.repeats < 1 or args.passes < 2:
        parser.error("need --repeats >= 1 and --passes >= 2")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.self_test:
        return self_test()
    reason = co.probe_cuda(args.python)
    if reason:
        print(f"counter_overhead: skipped ({reason})")
        return 0
    args.gpuprof = str(Path(args.gpuprof).resolve())
    args.transformer_script = str(Path(args.transformer_script).resolve())
    ncu = ro.find_ncu()
    with tempfile.TemporaryDirectory(prefix="gpuprof_counter_bench_") as tmp:
        work = Path(args.out).resolve() if args.out else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        plan = variants(args, ncu)
        print(f"examples/train_transformer.py --steps {args.transformer_steps}: --set {args.set} on the first "
              f"{args.counts[0]} and {args.counts[1]} launches, gpuprof (--passes {args.passes}) and ncu; "
              f"{args.repeats} repeat(s), interleaved", flush=True)

        def inspect(key, record, log_path):
            if key[0] != "gpuprof" or not record.get("ok"):
                return ""
            counted = counter_counts(log_path.with_suffix(""))
            if not counted:
                return ""
            record["with_counters"], record["counter_passes"], record["counter_status"] = counted
            said = f", {counted[0]} with counters ({counted[1]} counter passes, median)"
            return said + (f", first reason for none: {counted[2][:200]}" if counted[2] else "")

        records = ro.run_interleaved(args, work, plan, inspect)
        healthy = ro.losses_match_plain(records, plan, lambda key, _: key[0] == "gpuprof")
        ncu_note = "ncu not found" if ncu is None else None
        if ncu and not all(r.get("ok") for key in records if key[0] == "ncu" for r in records[key]):
            ncu_note = "ncu failed (see its log)"
        result = {}
        for clock in ("timed_s", "wall_s", "engine_s"):
            medians = {key: ro.median_run(records[key], clock) for key in records}
            result[clock] = figures(medians, args.counts, clock)
        print()
        for line in table(result["timed_s"], result["wall_s"], result["engine_s"], args, ncu_note):
            print(line)
        print(f"(medians of {args.repeats} repeat(s); ncu is `ncu --replay-mode kernel --set {args.set} "
              "--cache-control all --clock-control none -c C`)")
        if not healthy:
            print("counter_overhead: a gpuprof run failed or its losses differ from the plain run: the figures "
                  "above do not count")
        if args.out:
            (work / "counter_overhead.json").write_text(json.dumps(
                {"figures": result, "healthy": healthy, "ncu": ncu,
                 "runs": [r for key in records for r in records[key]]}, indent=2, default=str) + "\n")
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
