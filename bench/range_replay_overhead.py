#!/usr/bin/env python3
"""Range replay against Nsight Compute's kernel replay (issue 40's benchmark), in one run on the GPU
machine.

On examples/train_transformer.py (--steps S, default 8), every kernel of whole optimizer steps:
  counters   gpuprof replay --replay-mode range --range step -s 2 --passes 2 --set basic -c R
             against ncu --set basic --cache-control all --clock-control none -c C
  timing     gpuprof replay --replay-mode range --range step -s 2 --passes 5 -c R
             against ncu --metrics gpu__time_duration.sum ... -c C (kernel replay today: 1.5 ms)
  whole      gpuprof replay --replay-mode range --range step -s 1 --passes 3 (every steady step),
             process wall against the plain run
for R in --ranges (1,3) and C in --counts (20,200). Cost per kernel = (time at the higher count -
time at the lower) / (replayed launches at the higher - at the lower), so start-up, the warm-up steps
and the process's own work drop out; on the example's timed span (timed_s) and on the process wall.
The floor in the same run: each replayed range's line "replay: range N ...: restore, re-issue, Start+
Stop and decode" (range_replay.cc), as medians over the counter run's ranges.

Targets: counters >= 100x cheaper per kernel than ncu; timing <= 0.1 ms per kernel; whole <= 1.3x the
plain run. Every gpuprof run's losses must equal the plain run's; a failed or differing run is named
and the script exits 1.

    python3 bench/range_replay_overhead.py --gpuprof BUILD/bin/gpuprof [--out DIR]
    python3 bench/range_replay_overhead.py --self-test   # the arithmetic and table on made-up runs

Without torch and CUDA: "range_replay_overhead: skipped (...)", exit 0. Without ncu the peer cells
say "ncu not found".
"""

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import collection_overhead as co  # noqa: E402
import replay_overhead as ro  # noqa: E402  (runs, medians and the per-kernel difference are shared)

TARGET_COUNTERS_VS_NCU = 100.0
TARGET_TIMING_MS = 0.1
TARGET_WHOLE_RATIO = 1.3

FLOOR_RE = re.compile(
    r"replay: range \d+ on device \d+: (\d+) launches, [0-9.]+ ms in passes; timing passes \d+: restore "
    r"([0-9.]+) ms/pass, re-issue ([0-9.]+) ms/pass \(([0-9.]+) us/launch\)(?:; keep ([0-9.]+) ms \([0-9.]+ MiB[^)]*\), hashes "
    r"([0-9.]+) ms/pass, put back ([0-9.]+) ms)?(?:; counter passes (\d+): restore "
    r"([0-9.]+) ms/pass, re-issue ([0-9.]+) ms/pass, Start\+Stop and decode ([0-9.]+) ms/pass)?")
RANGE_FLAGS = ["replay", "--replay-mode", "range", "--range", "step"]


def variants(args, ncu):
    """(key, label, command prefix, wants -o) in run order."""
    low, high = args.ranges
    out = [(("plain",), "plain", [], False)]
    for r in (low, high):
        out.append((("counters", r), f"range --set {args.set} --passes 2 -s 2 -c {r}",
                    [args.gpuprof, *RANGE_FLAGS, "-s", "2", "--passes", "2", "--set", args.set, "-c", str(r)], True))
    for r in (low, high):
        out.append((("timing", r), f"range --passes 5 -s 2 -c {r}",
                    [args.gpuprof, *RANGE_FLAGS, "-s", "2", "--passes", "5", "-c", str(r)], True))
    out.append((("whole",), "range --passes 3 -s 1 (every steady step)",
                [args.gpuprof, *RANGE_FLAGS, "-s", "1", "--passes", "3"], True))
    if ncu:
        for c in args.counts:
            out.append((("ncu_counters", c), f"ncu --set {args.set} -c {c}",
                        [ncu, "--replay-mode", "kernel", "--set", args.set, "--cache-control", "all",
                         "--clock-control", "none", "-c", str(c)], False))
        for c in args.counts:
            out.append((("ncu_timing", c), f"ncu --metrics gpu__time_duration.sum -c {c}",
                        [ncu, "--replay-mode", "kernel", "--metrics", "gpu__time_duration.sum", "--cache-control",
                         "all", "--clock-control", "none", "-c", str(c)], False))
    return out


def floor_of(log_text):
    """Medians over a run's replayed ranges: {launches, restore_ms, reissue_ms, reissue_us_per_launch,
    counter_passes, counter_restore_ms, counter_reissue_ms, start_stop_ms}; None without a line."""
    rows = FLOOR_RE.findall(log_text or "")
    if not rows:
        return None
    names = ("launches", "restore_ms", "reissue_ms", "reissue_us_per_launch", "keep_ms", "hash_ms",
             "put_back_ms", "counter_passes", "counter_restore_ms", "counter_reissue_ms", "start_stop_ms")
    out = {}
    for i, name in enumerate(names):
        values = [float(r[i]) for r in rows if r[i] != ""]
        out[name] = statistics.median(values) if values else None
    out["ranges"] = len(rows)
    return out


def figures(runs, args, clock):
    """Per-kernel costs and ratios on `clock` from the median runs {key: record}."""
    def of(key, field):
        run = runs.get(key)
        return run.get(field) if run and run.get("ok") else None

    def cost(kind, counts, launches_field):
        low, high = counts
        return ro.per_kernel(of((kind, low), clock), of((kind, high), clock),
                             of((kind, low), launches_field), of((kind, high), launches_field))

    out = {
        "counters_s": cost("counters", args.ranges, "replayed"),
        "timing_s": cost("timing", args.ranges, "replayed"),
        "ncu_counters_s": cost("ncu_counters", args.counts, "launches"),
        "ncu_timing_s": cost("ncu_timing", args.counts, "launches"),
        "whole_ratio": ro.ratio(of(("whole",), clock), of(("plain",), clock)),
    }
    out["counters_vs_ncu"] = ro.ratio(out["ncu_counters_s"], out["counters_s"])
    out["timing_vs_ncu"] = ro.ratio(out["ncu_timing_s"], out["timing_s"])
    return out


def table(timed, wall, floor, args, ncu_note):
    peer = lambda value: ncu_note or "ncu " + ro.ms(value)  # noqa: E731
    lines = ["| figure | gpuprof | peer | ratio | target | verdict |", "|---|---|---|---|---|---|"]
    lines.append(f"| --set {args.set}, every kernel of whole steps, per kernel (timed span) | "
                 f"{ro.ms(timed['counters_s'])} | {peer(timed['ncu_counters_s'])} | "
                 f"{ro.faster(timed['counters_vs_ncu'])} | >= {TARGET_COUNTERS_VS_NCU:g}x cheaper | "
                 f"{ro.verdict(timed['counters_vs_ncu'], TARGET_COUNTERS_VS_NCU, at_most=False)} |")
    lines.append(f"| the same, process wall | {ro.ms(wall['counters_s'])} | {peer(wall['ncu_counters_s'])} | "
                 f"{ro.faster(wall['counters_vs_ncu'])} | - | - |")
    timing_ms = None if timed["timing_s"] is None else timed["timing_s"] * 1e3
    lines.append(f"| timing only, --passes 5, per kernel (timed span) | {ro.ms(timed['timing_s'])} | "
                 f"{peer(timed['ncu_timing_s'])} | {ro.faster(timed['timing_vs_ncu'])} | "
                 f"<= {TARGET_TIMING_MS:g} ms | {ro.verdict(timing_ms, TARGET_TIMING_MS)} |")
    lines.append(f"| the same, process wall | {ro.ms(wall['timing_s'])} | {peer(wall['ncu_timing_s'])} | "
                 f"{ro.faster(wall['timing_vs_ncu'])} | - | - |")
    lines.append(f"| every steady step as a range x3, process wall / plain | {ro.times(wall['whole_ratio'])} | "
                 f"plain run | - | <= {TARGET_WHOLE_RATIO:g}x | "
                 f"{ro.verdict(wall['whole_ratio'], TARGET_WHOLE_RATIO)} |")
    if floor:
        def f(name, unit="ms"):
            value = floor.get(name)
            if value is None:
                return "-"
            return f"{value:g} {unit}" if unit in ("launches", "passes") else f"{value:.3f} {unit}"
        lines.append(f"| (floor, median of {floor['ranges']} ranges of {f('launches', 'launches')}) timing pass: "
                     f"restore {f('restore_ms')}, re-issue {f('reissue_ms')} ({f('reissue_us_per_launch', 'us')} "
                     f"per launch) | - | - | - | - | - |")
        lines.append(f"| (floor) counter pass ({f('counter_passes', 'passes')}): restore {f('counter_restore_ms')}, "
                     f"re-issue {f('counter_reissue_ms')}, Start+Stop and decode {f('start_stop_ms')} "
                     f"| - | - | - | - | - |")
    return lines


def self_test():
    def rec(timed, wall, replayed=None, launches=None, ok=True):
        return {"timed_s": timed, "wall_s": wall, "replayed": replayed, "launches": launches, "ok": ok}

    args = parse_args(["--gpuprof", "/bin/true"])
    runs = {("plain",): rec(1.0, 10.0), ("counters", 1): rec(2.0, 12.0, 500), ("counters", 3): rec(3.0, 13.0, 1500),
            ("timing", 1): rec(1.5, 11.0, 500), ("timing", 3): rec(1.55, 11.1, 1500), ("whole",): rec(1.2, 12.0, 3500),
            ("ncu_counters", 20): rec(10.0, 20.0, None, 20), ("ncu_counters", 200): rec(82.0, 92.0, None, 200),
            ("ncu_timing", 20): rec(1.0, 11.0, None, 20), ("ncu_timing", 200): rec(3.0, 13.0, None, 200)}
    timed, wall = figures(runs, args, "timed_s"), figures(runs, args, "wall_s")
    close = lambda a, b: a is not None and abs(a - b) < 1e-9  # noqa: E731
    assert close(timed["counters_s"], 0.001) and close(timed["ncu_counters_s"], 0.4), timed
    assert close(timed["counters_vs_ncu"], 400) and close(timed["timing_s"], 0.00005), timed
    assert close(wall["whole_ratio"], 1.2), wall
    log = ("[gpuprof] info: replay: range 1 on device 0: 500 launches, 900.000 ms in passes; timing passes 1: "
           "restore 1.000 ms/pass, re-issue 20.000 ms/pass (40.000 us/launch); keep 3.000 ms (12.000 MiB, 0.000 MiB through host memory), hashes 0.500 ms/pass, "
           "put back 2.000 ms; counter passes 9: restore 1.500 "
           "ms/pass, re-issue 30.000 ms/pass, Start+Stop and decode 19.500 ms/pass\n"
           "[gpuprof] info: replay: range 2 on device 0: 510 launches, 950.000 ms in passes; timing passes 1: "
           "restore 3.000 ms/pass, re-issue 22.000 ms/pass (43.137 us/launch)\n")
    floor = floor_of(log)
    assert floor["ranges"] == 2 and close(floor["restore_ms"], 2.0) and close(floor["start_stop_ms"], 19.5), floor
    assert close(floor["keep_ms"], 3.0) and close(floor["hash_ms"], 0.5), floor
    text = "\n".join(table(timed, wall, floor, args, None))
    assert "| 1.000 ms | ncu 400.000 ms | 400.0x faster | >= 100x cheaper | met |" in text, text
    assert "Start+Stop and decode 19.500 ms" in text, text
    assert "| 1.20x | plain run | - | <= 1.3x | met |" in text, text
    text = "\n".join(table(figures({}, args, "timed_s"), wall, None, args, "ncu not found"))
    assert "ncu not found" in text and "not measured" in text, text
    print("\n".join(table(timed, wall, floor, args, None)))
    print("range_replay_overhead: self-test passed")
    return 0


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpuprof", help="the gpuprof binary (BUILD/bin/gpuprof, BUILD/lib beside it)")
    parser.add_argument("--python", default=os.environ.get("GPUPROF_TEST_PYTHON", "python3"),
                        help="interpreter for the example (default: $GPUPROF_TEST_PYTHON or python3)")
    parser.add_argument("--transformer-script", default=str(ro.TRANSFORMER),
                        help="the example (default: examples/train_transformer.py)")
    parser.add_argument("--transformer-steps", type=int, default=8, help="steps of every run (default: 8)")
    parser.add_argument("--ranges", type=lambda t: ro.pair(t, "--ranges", 1), default=(1, 3),
                        help="LOW,HIGH: the -c (steps replayed) of gpuprof's two runs (default: 1,3)")
    parser.add_argument("--counts", type=lambda t: ro.pair(t, "--counts", 1), default=(20, 200),
                        help="LOW,HIGH: the -c (kernels) of ncu's two runs (default: 20,200)")
    parser.add_argument("--set", default="basic", choices=("basic", "full"), help="the metric set (default: basic)")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each variant, interleaved (default: 1)")
    parser.add_argument("--transformer-timeout", type=float, default=600, help="seconds per run (default: 600)")
    parser.add_argument("--out", help="keep the DBs and logs here and write range_replay_overhead.json")
    parser.add_argument("--self-test", action="store_true", help="check the arithmetic and table, then exit")
    args = parser.parse_args(argv)
    if not args.self_test and not args.gpuprof:
        parser.error("--gpuprof is required")
    if args.repeats < 1:
        parser.error("need --repeats >= 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.self_test:
        return self_test()
    reason = co.probe_cuda(args.python)
    if reason:
        print(f"range_replay_overhead: skipped ({reason})")
        return 0
    args.gpuprof = str(Path(args.gpuprof).resolve())
    args.transformer_script = str(Path(args.transformer_script).resolve())
    ncu = ro.find_ncu()
    with tempfile.TemporaryDirectory(prefix="gpuprof_range_bench_") as tmp:
        work = Path(args.out).resolve() if args.out else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        plan = variants(args, ncu)
        print(f"examples/train_transformer.py --steps {args.transformer_steps}: range replay by step (-c "
              f"{args.ranges[0]} and {args.ranges[1]} steps) and ncu (-c {args.counts[0]} and {args.counts[1]} "
              f"kernels); {args.repeats} repeat(s), interleaved", flush=True)
        floors = {}  # the floor lines of the higher count's runs, by kind

        def inspect(key, record, log_path):
            text = log_path.read_text() if log_path.exists() else ""
            if key[0].startswith("ncu") and record.get("ok"):
                record["launches"] = ro.ncu_profiled(text) or None  # its '==PROF== Profiling' lines
            if key[0] in ("counters", "timing") and key[1] == args.ranges[1]:
                floors[key[0]] = floor_of(text) or floors.get(key[0])
            return f", {record['replayed']} replayed" if record.get("replayed") is not None else ""

        records = ro.run_interleaved(args, work, plan, inspect)
        floor, timing_floor = floors.get("counters"), floors.get("timing")
        healthy = ro.losses_match_plain(records, plan, lambda _, wants_out: wants_out)
        ncu_note = "ncu not found" if ncu is None else None
        if ncu and not all(r.get("ok") for key in records if key[0].startswith("ncu") for r in records[key]):
            ncu_note = "ncu failed (see its log)"
        result = {}
        for clock in ("timed_s", "wall_s"):
            medians = {key: ro.median_run(records[key], clock) for key in records}
            result[clock] = figures(medians, args, clock)
        print()
        for line in table(result["timed_s"], result["wall_s"], floor, args, ncu_note):
            print(line)
        if timing_floor:
            def ms_or_dash(value):
                return "-" if value is None else f"{value:.3f}"
            print(f"timing-only run (--passes 5): median of {timing_floor['ranges']} ranges of "
                  f"{timing_floor['launches']:g} launches: restore {ms_or_dash(timing_floor['restore_ms'])} ms/pass, "
                  f"re-issue {ms_or_dash(timing_floor['reissue_ms'])} ms/pass "
                  f"({ms_or_dash(timing_floor['reissue_us_per_launch'])} us per launch), output kept aside "
                  f"{ms_or_dash(timing_floor['keep_ms'])} ms, output hashes {ms_or_dash(timing_floor['hash_ms'])} "
                  f"ms/pass, put back {ms_or_dash(timing_floor['put_back_ms'])} ms")
        engine = {key: ro.median_run(records[key], "engine_s") for key in records}
        engine_cost = figures(engine, args, "engine_s")["timing_s"]
        print(f"timing-only, in-engine time per kernel (replayNs: snapshot, passes, restores, hashes): "
              f"{ro.ms(engine_cost)}")
        print(f"(medians of {args.repeats} repeat(s); ncu runs kernel replay with --cache-control all "
              "--clock-control none; gpuprof flushes the L2 before each pass of a range)")
        if not healthy:
            print("range_replay_overhead: a gpuprof run failed or its losses differ from the plain run: the "
                  "figures above do not count")
        if args.out:
            (work / "range_replay_overhead.json").write_text(json.dumps(
                {"figures": result, "floor": floor, "timing_floor": timing_floor, "healthy": healthy, "ncu": ncu,
                 "runs": [r for key in records for r in records[key]]}, indent=2, default=str) + "\n")
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
