"""check_db.py's expectations for the replay cases (kernel, graph, node and range replay, the
counter cases and their comparison with Nsight Compute). Only the standard library."""

import os
import re
import statistics

from check_db_common import (  # noqa: E402
    parse_program_output,
    check_common,
    kernel_matches,
    one_db,
    replaying_db)


REPLAY_PASSES = 3  # run_case.py runs the replay cases with --passes 3


def replay_rows(c, dbs, what):
    db = one_db(c, dbs, what)
    if db is None:
        return None, []
    check_common(c, db)
    rows = db.replay_kernels()
    c.note("replay rows: " + "; ".join(
        f"{r['name']} replayed={r['replayed']} decline={r['decline']} passes={len(r['pass_rows'])} "
        f"deterministic={r['deterministic']} regions={r['regions']} bytes={r['bytes']} "
        f"on_device={r['device_bytes']}" for r in rows))
    return db, rows


def expect_replayed(c, rows, kernel, launches, deterministic=True):
    mine = [r for r in rows if r["name"] == kernel]
    c.expect(len(mine) == launches, f"{kernel}: expected {launches} replay row(s), found {len(mine)}")
    for r in mine:
        c.expect(r["replayed"] == 1, f"{kernel} launch {r['launch_index']} not replayed: {r['decline']}")
        c.expect(len(r["pass_rows"]) == REPLAY_PASSES,
                 f"{kernel} launch {r['launch_index']}: {len(r['pass_rows'])} pass rows, expected {REPLAY_PASSES}")
        c.expect(all(p["duration"] > 0 for p in r["pass_rows"]), f"{kernel}: a pass without a duration")
        c.expect(all((p["clock_before"] or 0) > 0 and (p["clock_after"] or 0) > 0 for p in r["pass_rows"]),
                 f"{kernel}: a pass without its SM clocks (C3, NVML)")
        c.expect(r["bytes"] > 0, f"{kernel}: the snapshot captured no bytes")
        # replayNs spans the capture and every pass's kernel.
        kernels_ns = sum(p["duration"] or 0 for p in r["pass_rows"])
        c.expect((r["replay_ns"] or 0) >= (r["snapshot_ns"] or 0) + kernels_ns,
                 f"{kernel} launch {r['launch_index']}: replayNs {r['replay_ns']} below the capture "
                 f"({r['snapshot_ns']} ns) plus the passes' kernels ({kernels_ns} ns)")
        # B2: the test programs' footprints fit the device tier (2 GiB reserve on a 141 GB GPU).
        c.expect(r["device_bytes"] == r["bytes"],
                 f"{kernel}: {r['device_bytes']} of {r['bytes']} snapshot bytes on the device, expected all")
        if deterministic:
            c.expect(r["deterministic"] == 1, f"{kernel} launch {r['launch_index']} flagged nondeterministic")
        else:
            c.expect(r["deterministic"] == 0, f"{kernel} launch {r['launch_index']} not flagged nondeterministic")
            c.expect(any(p["matches"] == 0 for p in r["pass_rows"]), f"{kernel}: no pass marked as differing")


def expect_replay_arena_many_regions(c, dbs, program_output):
    _, rows = replay_rows(c, dbs, "replay_arena many_regions")
    expect_replayed(c, rows, "strided_update", 2)
    for r in rows:
        c.expect(r["regions"] >= 4096, f"strided_update: {r['regions']} snapshot regions, expected >= 4096")
        later = [p for p in r["pass_rows"] if p["pass"] > 1]
        c.expect(all(p["bytes_restored"] > 0 for p in later), "strided_update: a later pass restored nothing")


def expect_replay_arena_between(c, dbs, program_output):
    _, rows = replay_rows(c, dbs, "replay_arena between")
    expect_replayed(c, rows, "in_place_update", 2)


def expect_replay_arena_realloc(c, dbs, program_output):
    _, rows = replay_rows(c, dbs, "replay_arena realloc")
    expect_replayed(c, rows, "in_place_update", 2)


def expect_replay_arena_spill(c, dbs, program_output):
    db, rows = replay_rows(c, dbs, "replay_arena spill")
    mine = [r for r in rows if r["name"] == "in_place_update"]
    c.expect(len(mine) == 2, f"in_place_update: expected 2 replay rows, found {len(mine)}")
    for r in mine:
        c.expect(r["replayed"] == 1, f"in_place_update launch {r['launch_index']} not replayed: {r['decline']}")
        c.expect(r["bytes"] > 0 and r["device_bytes"] == 0,
                 f"in_place_update: {r['device_bytes']} of {r['bytes']} snapshot bytes on the device, "
                 "expected none with --storage file")
    c.expect(re.search(r"spill file .*gpuprof-spill.* mode 600", program_output or "") is not None,
             "the program saw no spill file of mode 600")
    if db is not None:
        out_dir = os.path.dirname(db.path)
        left = [n for n in os.listdir(out_dir) if "gpuprof-spill" in n]
        c.expect(not left, f"spill file(s) left in the output directory: {left}")


def expect_replay_arena_fill_after(c, dbs, program_output):
    _, rows = replay_rows(c, dbs, "replay_arena fill_after")
    expect_replayed(c, rows, "big_update", 1)


def expect_replay_inplace(c, dbs, program_output):
    _, rows = replay_rows(c, dbs, "replay inplace")
    expect_replayed(c, rows, "in_place_update", 2)
    for r in rows:
        later = [p for p in r["pass_rows"] if p["pass"] > 1]
        c.expect(all(p["bytes_restored"] > 0 for p in later), "in_place_update: a later pass restored nothing")


RANGE_KERNELS = ["scale_add", "accumulate", "double_into", "add_into"]  # replay_range.cu, in issue order


def expect_replay_range(c, dbs, program_output):
    """W6: one record per launch of the range, replayMode 'range', every pass; the program checked
    its own results (a corrupting replay exits 1 before this runs)."""
    c.expect("gpuprof-test: range launches=4 results=ok" in (program_output or ""),
             "the program did not report its range's results as ok")
    _, rows = replay_rows(c, dbs, "replay_range")
    mine = [r for r in rows if r["mode"] == "range"]
    c.expect([r["name"] for r in mine] == RANGE_KERNELS,
             f"range rows {[r['name'] for r in mine]}, expected {RANGE_KERNELS} (one per launch, in order)")
    for r in mine:
        c.expect(r["replayed"] == 1, f"{r['name']} (range) not replayed: {r['decline']} {r['detail']}")
        c.expect(len(r["pass_rows"]) == REPLAY_PASSES,
                 f"{r['name']} (range): {len(r['pass_rows'])} pass rows, expected {REPLAY_PASSES}")
        # W6: pass 1 from the application's own kernel record, passes 2..N re-issued and timed.
        c.expect(all((p["duration"] or 0) > 0 for p in r["pass_rows"]),
                 f"{r['name']} (range): a pass without a duration: {r['pass_rows']}")
        c.note(f"{r['name']} (range) pass durations ns: {[p['duration'] for p in r['pass_rows']]}")
        c.expect(r["deterministic"] == 1, f"{r['name']} (range) flagged nondeterministic")


def expect_train_transformer_range(c, dbs, program_output):
    """examples/train_transformer.py under `gpuprof replay --replay-mode range --range step --passes 5`:
    each optimizer step closes a range; the replayed ranges' launches all have 5 pass rows, re-issued
    passes with durations, in order within their range, and their steps' output deterministic (the
    losses equal a plain run's: run_case.py)."""
    db = one_db(c, dbs, "train_transformer range replay")
    if db is None:
        return
    check_common(c, db)
    rows = [r for r in db.replay_kernels() if r["mode"] == "range"]
    replayed = [r for r in rows if r["replayed"] == 1]
    declined = sorted({(r["decline"], r["detail"]) for r in rows if r["replayed"] != 1})
    ranges = db.query("SELECT COUNT(DISTINCT rangeId) FROM GPUPROF_REPLAY_KERNEL WHERE replayMode = 'range' "
                      "AND replayed = 1")[0][0]
    c.note(f"{len(rows)} range rows, {len(replayed)} replayed launches in {ranges} range(s); declined {declined or 'none'}")
    c.expect(ranges >= 2, f"{ranges} replayed range(s), expected the steady steps (>= 2)")
    for r in replayed:
        c.expect(len(r["pass_rows"]) == 5, f"{r['name']} (range): {len(r['pass_rows'])} pass rows, expected 5")
        c.expect(all((p["duration"] or 0) > 0 for p in r["pass_rows"]),
                 f"{r['name']} (range): a pass without a duration (pass 1: the application's kernel record)")
    # Pass 1 is CUPTI's record of the application's launch; passes 2..N are timed by gpuprof around
    # its re-issued launches: how far the two measures lie apart, kernel by kernel.
    ratios = sorted(statistics.median(p["duration"] for p in r["pass_rows"] if p["pass"] > 1) /
                    r["pass_rows"][0]["duration"] for r in replayed
                    if r["pass_rows"] and (r["pass_rows"][0]["duration"] or 0) > 0)
    if ratios:
        c.note(f"re-issued median / pass 1, over {len(ratios)} launches: p10 {ratios[len(ratios) // 10]:.2f}, "
               f"median {ratios[len(ratios) // 2]:.2f}, p90 {ratios[len(ratios) * 9 // 10]:.2f}")
        # W6: every pass timed by CUPTI's kernel records, so the same kernel reads alike (CUDA events
        # around the re-issued launches read 3.1x pass 1's record at the median on the H100).
        c.expect(0.67 <= ratios[len(ratios) // 2] <= 1.5,
                 f"re-issued passes read {ratios[len(ratios) // 2]:.2f}x pass 1 at the median: not timed alike")
    nondeterministic = sum(1 for r in replayed if r["deterministic"] != 1)
    c.note(f"{nondeterministic} replayed launches in nondeterministic ranges")
    # --set basic (W7): every replayed launch has its metrics from the range's shared pass set.
    metrics = replay_metrics(db)
    without = [r for r in replayed if not metrics.get(r["id"])]
    c.note(f"{len(replayed) - len(without)} of {len(replayed)} replayed launches with metrics")
    c.expect(not without, f"{len(without)} replayed launches without metrics, e.g. "
                          f"{[(r['name'], counter_status(db, r['id'])) for r in without[:3]]}")


def expect_replay_counter(c, dbs, program_output):
    _, rows = replay_rows(c, dbs, "replay counter")
    expect_replayed(c, rows, "count_launches", 3)


def expect_replay_constant(c, dbs, program_output):
    _, rows = replay_rows(c, dbs, "replay constant")
    expect_replayed(c, rows, "apply_coefficients", 2)


def expect_replay_async(c, dbs, program_output):
    _, rows = replay_rows(c, dbs, "replay async")
    expect_replayed(c, rows, "in_place_update", 2)


def expect_replay_graph(c, dbs, program_output):
    _, rows = replay_rows(c, dbs, "replay graph")
    reasons = sorted(r["decline"] or "" for r in rows)
    c.expect("stream-capture" in reasons, f"no launch declined for stream capture: {reasons}")
    c.expect("graph-launch" in reasons, f"no graph launch declined: {reasons}")
    c.expect(all(r["replayed"] == 0 for r in rows), "a captured or graph launch was replayed")


CHAIN_KERNELS = ("chain_scale", "chain_add", "chain_finish")


def expect_replay_graph_whole(c, dbs, program_output):
    """--graph-replay graph: each of the 3 launches of the chain graph replayed as one unit."""
    _, rows = replay_rows(c, dbs, "replay graph_whole")
    c.expect("graph chain launches=3 ok" in (program_output or ""), "the program's own check did not pass")
    graphs = [r for r in rows if r["mode"] == "graph"]
    c.expect(len(graphs) == 3, f"expected 3 whole-graph rows, found {len(graphs)}")
    for r in graphs:
        c.expect(r["replayed"] == 1, f"graph launch {r['launch_index']} not replayed: {r['decline']}: {r['detail']}")
        c.expect(len(r["pass_rows"]) == REPLAY_PASSES, f"graph launch {r['launch_index']}: {len(r['pass_rows'])} passes")
        c.expect(all(p["duration"] > 0 for p in r["pass_rows"]), "a graph pass without a duration")
        c.expect(r["deterministic"] == 1, f"graph launch {r['launch_index']} flagged nondeterministic")
        c.expect(r["graph_id"] is not None and r["name"] == f"graph {r['graph_id']}", f"graph row named {r['name']}")
        # Each kernel node's duration in each pass, from CUPTI's records of the passes.
        nodes = r["graph_nodes"]
        # CUPTI's names, as TASK has them: "chain_scale(unsigned int*, int)".
        c.expect(sorted({(n["name"] or "").split("(")[0] for n in nodes}) == sorted(CHAIN_KERNELS) and
                 len(nodes) == len(CHAIN_KERNELS) * REPLAY_PASSES and all(n["duration"] > 0 for n in nodes),
                 f"graph launch {r['launch_index']}: kernel node rows {[(n['pass'], n['name'], n['duration']) for n in nodes]}")
    if graphs:
        c.note("kernel node durations of the first graph launch (pass, name, ns): " + "; ".join(
            f"{n['pass']} {n['name']} {n['duration']}" for n in graphs[0]["graph_nodes"]))
    c.note("whole-graph pass durations (ns): " + "; ".join(
        ",".join(str(p["duration"]) for p in r["pass_rows"]) for r in graphs))


def expect_replay_graph_nodes(c, dbs, program_output):
    """--graph-replay node: every kernel node of every launch replayed in place, identical inputs per
    pass (deterministic), and the program's results those of ordinary launches."""
    _, rows = replay_rows(c, dbs, "replay graph_nodes")
    c.expect("graph chain launches=3 ok" in (program_output or ""), "the program's own check did not pass")
    for kernel in CHAIN_KERNELS:
        mine = [r for r in rows if r["name"] == kernel and r["mode"] != "kernel"]  # not the capture's launches
        c.expect(len(mine) == 3, f"{kernel}: expected 3 node rows (one per graph launch), found {len(mine)}")
        for r in mine:
            c.expect(r["mode"] == "node" and r["replayed"] == 1,
                     f"{kernel}: mode {r['mode']}, replayed {r['replayed']} ({r['decline']}: {r['detail']})")
            c.expect(r["graph_node_id"] is not None, f"{kernel}: no graphNodeId")
            c.expect(len(r["pass_rows"]) == REPLAY_PASSES and all(p["duration"] > 0 for p in r["pass_rows"]),
                     f"{kernel}: passes {[(p['pass'], p['duration']) for p in r['pass_rows']]}")
            c.expect(r["deterministic"] == 1, f"{kernel}: per-node inputs differed between passes")
        c.note(f"{kernel} node pass durations (ns): " + "; ".join(
            ",".join(str(p["duration"]) for p in r["pass_rows"]) for r in mine))


def expect_replay_graph_alloc(c, dbs, program_output):
    """Graphs with memory-allocation nodes: node mode falls back to whole-graph replay with the reason;
    the graph that leaves its allocation is relaunched by the program after it frees it."""
    _, rows = replay_rows(c, dbs, "replay graph_alloc")
    c.expect("graph alloc launches=3 ok" in (program_output or ""), "the program's own check did not pass")
    graphs = [r for r in rows if r["mode"] == "graph"]
    c.expect(len(graphs) == 6, f"expected 6 whole-graph rows (2 graphs x 3 launches), found {len(graphs)}")
    for r in graphs:
        c.expect(r["replayed"] == 1, f"{r['name']} launch {r['launch_index']} not replayed: {r['decline']}: {r['detail']}")
        c.expect("memory-allocation node" in (r["graph_fallback"] or ""), f"fallback reason {r['graph_fallback']!r}")
        c.expect(len(r["pass_rows"]) == REPLAY_PASSES, f"{r['name']}: {len(r['pass_rows'])} passes")


def expect_replay_graph_host(c, dbs, program_output):
    """A host node: node mode falls back to whole-graph replay, with the reason in the DB."""
    _, rows = replay_rows(c, dbs, "replay graph_host")
    c.expect("graph host" in (program_output or "") and " ok" in (program_output or ""),
             "the program's own check did not pass")
    # The kernels launched into the stream while it was being captured are declined (stream-capture).
    graphs = [r for r in rows if r["mode"] != "kernel"]
    c.expect(len(graphs) == 1 and graphs[0]["mode"] == "graph" and graphs[0]["replayed"] == 1,
             f"graph rows: {[(r['name'], r['mode'], r['replayed'], r['decline']) for r in graphs]}")
    if graphs:
        c.expect("host node" in (graphs[0]["graph_fallback"] or ""), f"fallback reason {graphs[0]['graph_fallback']!r}")
    c.expect("host_calls=4" in (program_output or ""),
             "the host node should run once per pass (3) and once for the application's launch")


def expect_infer_compiled_nodes(c, dbs, program_output):
    """examples/infer_compiled.py (torch.compile reduce-overhead) under --graph-replay node: the graph
    launches' kernel nodes are replayed in place and timed; run_case.py compares the checksums."""
    db = replaying_db(c, dbs, "infer_compiled replay")
    if db is None:
        return
    check_common(c, db)
    rows = db.replay_kernels()
    nodes = [r for r in rows if r["mode"] == "node"]
    replayed = [r for r in nodes if r["replayed"] == 1]
    c.expect(len(replayed) > 0, f"no kernel node replayed ({len(rows)} rows: "
             f"{sorted({(r['mode'], r['decline']) for r in rows}, key=str)})")
    c.expect(all(len(r["pass_rows"]) == REPLAY_PASSES and all(p["duration"] > 0 for p in r["pass_rows"])
                 for r in replayed), "a replayed kernel node without its passes' durations")
    c.expect(all(r["deterministic"] == 1 for r in replayed), "a kernel node flagged nondeterministic")
    by_name = {}
    for r in replayed:
        by_name.setdefault(r["name"], []).extend(p["duration"] for p in r["pass_rows"])
    c.note(f"{len(replayed)} kernel nodes replayed in {len({r['graph_id'] for r in replayed})} graph(s); "
           f"median pass ns per kernel: " + "; ".join(
               f"{name} {sorted(d)[len(d) // 2]}" for name, d in sorted(by_name.items())))


def expect_replay_timer(c, dbs, program_output):
    _, rows = replay_rows(c, dbs, "replay timer")
    expect_replayed(c, rows, "write_globaltimer", 1, deterministic=False)


PRINTF_MESSAGE = "hello from the device"  # what say_hello prints (tests/gpu/replay_printf.cu)


def expect_replay_printf(c, dbs, program_output):
    """C2: device printf is replayed by default; the message repeats once per pass, and once more
    for the application's own launch, which runs after the passes (run_case.py checks the warning)."""
    _, rows = replay_rows(c, dbs, "replay printf")
    expect_replayed(c, rows, "say_hello", 1)
    printed = (program_output or "").count(PRINTF_MESSAGE)
    c.expect(printed == REPLAY_PASSES + 1,
             f"say_hello printed {printed} times, expected {REPLAY_PASSES + 1} ({REPLAY_PASSES} passes and the "
             f"application's launch)")


def expect_replay_printf_off(c, dbs, program_output):
    """`--no-replay-printf-kernels`: declined, run once, and the reason names the option."""
    _, rows = replay_rows(c, dbs, "replay printf_off")
    mine = [r for r in rows if r["name"] == "say_hello"]
    c.expect(len(mine) == 1 and mine[0]["replayed"] == 0 and mine[0]["decline"] == "side-effects",
             f"say_hello: expected one launch declined for side-effects, found "
             f"{[(r['replayed'], r['decline']) for r in mine]}")
    c.expect(all("--replay-printf-kernels=1" in (r["detail"] or "") for r in mine),
             f"say_hello: the decline detail does not name --replay-printf-kernels=1: {[r['detail'] for r in mine]}")
    printed = (program_output or "").count(PRINTF_MESSAGE)
    c.expect(printed == 1, f"say_hello printed {printed} times, expected once (declined)")


def expect_replay_free_thread(c, dbs, program_output):
    _, rows = replay_rows(c, dbs, "replay free_thread")
    expect_replayed(c, rows, "slow_update", 1)


def expect_replay_array(c, dbs, program_output):
    _, rows = replay_rows(c, dbs, "replay array")
    mine = [r for r in rows if r["name"] == "in_place_update"]
    c.expect(len(mine) == 1 and mine[0]["replayed"] == 0 and mine[0]["decline"] == "incomplete-snapshot",
             f"in_place_update with a CUDA array live: expected one launch declined incomplete-snapshot, found "
             f"{[(r['replayed'], r['decline']) for r in mine]}")
    c.expect(all("--replay-with-live-arrays=1" in (r["detail"] or "") for r in mine),
             f"in_place_update: the decline detail does not name --replay-with-live-arrays=1: "
             f"{[r['detail'] for r in mine]}")


def expect_replay_vmm(c, dbs, program_output):
    _, rows = replay_rows(c, dbs, "replay vmm")
    expect_replayed(c, rows, "vmm_update", 1)


def expect_replay_ptx(c, dbs, program_output):
    _, rows = replay_rows(c, dbs, "replay ptx")
    expect_replayed(c, rows, "ptx_count", 3)


def expect_replay_cross_module(c, dbs, program_output):
    _, rows = replay_rows(c, dbs, "replay cross_module")
    expect_replayed(c, rows, "bump_through", 3)


def expect_replay_cross_library(c, dbs, program_output):
    _, rows = replay_rows(c, dbs, "replay cross_library")
    expect_replayed(c, rows, "ptx_bump", 3)


def expect_replay_cublas(c, dbs, program_output):
    _, rows = replay_rows(c, dbs, "replay cublas")
    replayed = [r for r in rows if r["replayed"] == 1]
    c.expect(len(replayed) >= 2, f"expected both GEMMs' kernels replayed, found {len(replayed)} replayed rows")
    c.expect(all(r["deterministic"] == 1 for r in replayed), "a cuBLAS GEMM kernel flagged nondeterministic")


def expect_replay_two_gpu(c, dbs, program_output):
    _, rows = replay_rows(c, dbs, "replay two_gpu")
    expect_replayed(c, rows, "in_place_update", 1)
    for r in rows:
        c.expect(r["device"] == 0, f"the replayed launch ran on device {r['device']}, expected 0")
        # x is 4 MiB on device 0; device 1's 64 MiB buffer must not be in device 0's snapshot.
        c.expect(4 << 20 <= (r["bytes"] or 0) < 64 << 20,
                 f"snapshot of device 0 holds {r['bytes']} bytes: expected its 4 MiB buffer, not device 1's 64 MiB")


def expect_train_transformer_replay(c, dbs, program_output):
    """examples/train_transformer.py under `gpuprof replay --passes 3` with no selection, so every
    kernel launch is selected: the memory-efficient attention kernels, one fmha_cutlassF (forward)
    and one fmha_cutlassB (backward) per block and step, are all replayed 3 times and found
    deterministic (declineReason NULL). They reference device printf, so a build that declines
    such kernels by default fails here. run_case.py compares the losses with a plain run."""
    config = re.search(r"^config: layers (\d+) .*\bsteps (\d+)\b", program_output or "", re.M)
    c.expect(config is not None, "the program printed no 'config: layers L ... steps N' line")
    db = one_db(c, dbs, "train_transformer replay")
    if db is None:
        return
    check_common(c, db)
    rows = db.replay_kernels()
    replayed = [r for r in rows if r["replayed"] == 1]
    declined = {}
    for r in rows:
        if r["replayed"] != 1:
            declined[r["decline"]] = declined.get(r["decline"], 0) + 1
    c.note(f"{len(rows)} selected launches, {len(replayed)} replayed, declined {declined or 'none'}; "
           f"{len(db.kernels())} kernel rows in TASK (the passes are gpuprof's own, not among them); "
           f"{sum(1 for r in replayed if r['deterministic'] != 1)} replayed launches flagged nondeterministic")
    c.expect(len(replayed) > 0, "no launch replayed")
    expected = int(config.group(1)) * int(config.group(2)) if config else None
    for family in ("fmha_cutlassF", "fmha_cutlassB"):
        mine = [r for r in rows if family in (r["name"] or "")]
        c.note(f"{family}: {len(mine)} launches, names {sorted({r['name'] for r in mine})[:2]}")
        c.expect(len(mine) > 0, f"no {family} launch in GPUPROF_REPLAY_KERNEL: the memory-efficient attention "
                                f"kernels did not run (another SDPA backend?)")
        if expected is not None:
            c.expect(len(mine) == expected, f"{family}: {len(mine)} launches, expected one per block and step "
                                            f"({expected})")
        not_replayed = [r for r in mine if r["replayed"] != 1 or r["decline"] is not None]
        reasons = sorted({str(r["decline"]) for r in not_replayed})
        hint = (" (side-effects: this build declines kernels that reference device printf by default)"
                if "side-effects" in reasons else "")
        c.expect(not not_replayed, f"{family}: {len(not_replayed)} of {len(mine)} launches not replayed: "
                                   f"{reasons}{hint}")
        c.expect(all(len(r["pass_rows"]) == REPLAY_PASSES for r in mine if r["replayed"] == 1),
                 f"{family}: a replayed launch without {REPLAY_PASSES} pass rows")
        c.expect(all(p["duration"] > 0 for r in mine for p in r["pass_rows"]), f"{family}: a pass without a duration")
        flagged = [r["launch_index"] for r in mine if r["replayed"] == 1 and r["deterministic"] != 1]
        c.expect(not flagged, f"{family}: launches {flagged[:8]} flagged nondeterministic (strict deterministic "
                              f"algorithms make the attention backward use one key split)")


# ---- Hardware counters over replay passes (issue 19) -------------------------------------------

def replay_metrics(db):
    """kernelId -> {name: (value, unit, passes)} from GPUPROF_REPLAY_METRIC(kernelId, name, unit, value,
    passes); name and unit are STRING_IDS ids."""
    out = {}
    if "GPUPROF_REPLAY_METRIC" not in db.tables:
        return out
    for kernel_id, name_id, unit_id, value, passes in db.query(
            "SELECT kernelId, name, unit, value, passes FROM GPUPROF_REPLAY_METRIC ORDER BY kernelId"):
        out.setdefault(kernel_id, {})[db.text(name_id)] = (value, db.text(unit_id), passes)
    return out


def counter_status(db, kernel_id):
    """The replay row's counter status (why it has no counters), when the DB stores one."""
    columns = [r[1] for r in db.query("PRAGMA table_info(GPUPROF_REPLAY_KERNEL)")]
    for column in ("counterStatus", "counter_status", "counterDetail"):
        if column in columns:
            row = db.query(f"SELECT {column} FROM GPUPROF_REPLAY_KERNEL WHERE id = ?", kernel_id)
            if row and row[0][0] is not None:
                value = row[0][0]
                return db.text(value) if isinstance(value, int) else str(value)
    return "(no counter status column)"


# The metrics of Nsight Compute's SpeedOfLight section (its section file, SpeedOfLight.section, in
# ncu 2025/2026): what `--section SpeedOfLight` must give for every replayed launch.
SPEED_OF_LIGHT_METRICS = (
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__time_duration.sum",
    "dram__cycles_elapsed.avg.per_second",
    "smsp__cycles_elapsed.avg.per_second",
    "gpc__cycles_elapsed.max",
    "sm__cycles_active.avg",
)
COMPUTE_THROUGHPUT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEMORY_THROUGHPUT = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"


def compare_with_ncu(c, rows, metrics, peer, exact=(), within_2pct=(), loose=(), only=None):
    """gpuprof's replayed launches (rows, in launch order) against ncu's (peer, in launch order), one
    for one: `exact` names equal, `within_2pct` within 2%, `loose` (throughput percentages, clocks
    not locked) within 10 points or 25%, whichever is wider; `only`: compare that kernel's launches
    alone. A string peer: the comparison is skipped, and says why."""
    if peer is None:
        return
    if isinstance(peer, str):
        c.note(f"SKIPPED: the comparison with ncu ({peer})")
        return
    ours = sorted((r for r in rows if r["replayed"] == 1), key=lambda r: r["launch_index"])
    c.expect(len(ours) == len(peer), f"ncu measured {len(peer)} launches, gpuprof replayed {len(ours)}")
    for r, theirs in zip(ours, peer):
        if only is not None and r["name"] != only:
            continue
        c.expect(r["name"] in theirs["kernel"], f"launch {r['launch_index']}: gpuprof's {r['name']} is ncu's "
                                                f"{theirs['kernel']}")
        got = metrics.get(r["id"], {})
        for name in (*exact, *within_2pct, *loose):
            mine = got.get(name, (None,))[0]
            peer_value = theirs["metrics"].get(name, (None,))[0]
            if mine is None or not isinstance(peer_value, float):
                c.expect(False, f"{r['name']} launch {r['launch_index']}: {name} gpuprof {mine}, ncu {peer_value}")
                continue
            c.note(f"{r['name']} launch {r['launch_index']} {name}: gpuprof {mine:.6g}, ncu {peer_value:.6g}")
            if name in exact:
                c.expect(mine == peer_value, f"{r['name']} launch {r['launch_index']}: {name} = {mine:.0f}, "
                                             f"ncu {peer_value:.0f} (differs by {mine - peer_value:+.0f})")
            elif name in within_2pct:
                c.expect(abs(mine - peer_value) <= 0.02 * abs(peer_value),
                         f"{r['name']} launch {r['launch_index']}: {name} = {mine:.0f}, not within 2% of ncu's "
                         f"{peer_value:.0f}")
            else:
                c.expect(abs(mine - peer_value) <= max(10.0, 0.25 * abs(peer_value)),
                         f"{r['name']} launch {r['launch_index']}: {name} = {mine:.2f}, far from ncu's "
                         f"{peer_value:.2f}")


def expect_replay_speed_of_light(c, dbs, program_output, peer=None):
    """`--section SpeedOfLight` on gpu_test_replay_cublas sol: a 4096^3 SGEMM and a 2 GiB copy. Every
    section metric for every replayed launch; compute above memory throughput for the GEMM, memory
    above compute for the copy; ncu's values for the same launches loosely alike."""
    db, rows = replay_rows(c, dbs, "replay_speed_of_light")
    if db is None:
        return
    metrics = replay_metrics(db)
    replayed = sorted((r for r in rows if r["replayed"] == 1), key=lambda r: r["launch_index"])
    c.expect(any("gemm" in r["name"].lower() or "Kernel" in r["name"] for r in replayed), "no GEMM kernel replayed")
    c.expect(any(r["name"] == "stream_copy" for r in replayed), "stream_copy was not replayed")
    for r in replayed:
        got = metrics.get(r["id"], {})
        missing = [m for m in SPEED_OF_LIGHT_METRICS if m not in got]
        c.expect(not missing, f"{r['name']} launch {r['launch_index']}: no {missing}; counter status: "
                              f"{counter_status(db, r['id'])}")
        if COMPUTE_THROUGHPUT not in got or MEMORY_THROUGHPUT not in got:
            continue
        compute, memory = got[COMPUTE_THROUGHPUT][0], got[MEMORY_THROUGHPUT][0]
        c.note(f"{r['name']}: compute {compute:.2f}%, memory {memory:.2f}%, duration "
               f"{got.get('gpu__time_duration.sum', (0,))[0]:.0f} ns")
        if r["name"] == "stream_copy":
            c.expect(memory > compute, f"stream_copy: memory throughput {memory:.2f}% not above compute {compute:.2f}%")
        elif r["launch_index"] == replayed[0]["launch_index"]:
            c.expect(compute > memory, f"{r['name']} (the GEMM): compute throughput {compute:.2f}% not above "
                                       f"memory {memory:.2f}%")
    compare_with_ncu(c, rows, metrics, peer, loose=(COMPUTE_THROUGHPUT, MEMORY_THROUGHPUT))


def expect_replay_counters(c, dbs, program_output, peer=None):
    db, rows = replay_rows(c, dbs, "replay_counters")
    if db is None:
        return
    c.expect("GPUPROF_REPLAY_METRIC" in db.tables, "no GPUPROF_REPLAY_METRIC table")
    metrics = replay_metrics(db)
    launches = [f for what, f in parse_program_output(program_output) if what == "launch"]
    # Every launch ran on the device the program names (0, or 1 in ReplayCountersDevice1): the replay
    # rows, and so the counter passes, are that device's.
    headers = [f for what, f in parse_program_output(program_output) if what == "counters"]
    devices = [int(f["device"]) for f in headers]
    c.expect(len(devices) == 1, f"expected one 'counters device=N' line, found {len(devices)}")
    # `range`: the 20 launches are one cudaProfilerStart/Stop range, counted by range replay (W7).
    mode = headers[0].get("mode", "kernel") if headers else "kernel"
    rows = [r for r in rows if r["mode"] == mode]
    if mode == "range":
        ranges = sorted({r["range_id"] for r in rows})
        c.note(f"range replay: {len(rows)} launches in range(s) {ranges}")
        c.expect(len(ranges) == 1, f"expected the 20 launches in one range, found ranges {ranges}")
    if devices:
        c.note(f"counters on device {devices[0]}")
        on_other = sorted({r["device"] for r in rows} - {devices[0]})
        c.expect(not on_other, f"replay rows on device(s) {on_other}, the program ran on device {devices[0]}")
        on_task = sorted({k["device"] for k in db.kernels()} - {devices[0]})
        c.expect(not on_task, f"TASK rows on device(s) {on_task}, the program ran on device {devices[0]}")

    def values_of(kernel):
        """The metric rows of each replayed launch of `kernel`, in launch order; a launch without them
        fails with its full counter status."""
        out = []
        for r in sorted((r for r in rows if r["name"] == kernel), key=lambda r: r["launch_index"]):
            c.expect(r["replayed"] == 1, f"{kernel} launch {r['launch_index']} not replayed: {r['decline']} "
                                         f"{r['detail']}")
            got = metrics.get(r["id"], {})
            c.expect(bool(got), f"{kernel} launch {r['launch_index']}: no counter values; counter status: "
                                f"{counter_status(db, r['id'])}")
            out.append(got)
        return out

    def value(got, name):
        return got[name][0] if name in got else None

    # stream_copy: bytes within 2% of what it copied.
    copied = [int(f["bytes"]) for f in launches if f.get("kernel") == "stream_copy"]
    c.expect(len(copied) == 1, f"expected one stream_copy line, found {len(copied)}")
    copy_values = values_of("stream_copy")
    c.expect(len(copy_values) == 1, f"stream_copy: {len(copy_values)} replayed launches, expected 1")
    if copied and copy_values:
        for name in ("dram__bytes_read.sum", "dram__bytes_write.sum"):
            got = value(copy_values[0], name)
            c.expect(got is not None, f"stream_copy: no {name}")
            if got is not None:
                c.note(f"stream_copy {name} = {got:.0f} (copied {copied[0]})")
                c.expect(abs(got - copied[0]) <= 0.02 * copied[0],
                         f"stream_copy: {name} = {got:.0f}, not within 2% of {copied[0]}")
                unit = copy_values[0][name][1]
                c.expect(unit in ("byte", "bytes", "B"), f"stream_copy: {name} unit {unit!r}")
                c.expect((copy_values[0][name][2] or 0) >= 1, f"stream_copy: {name} needs no pass?")

    # fma_loop: the same count in every launch of each K, and linear in K.
    ks = [int(f["k"]) for f in launches if f.get("kernel") == "fma_loop"]
    fma_launches = 6 if mode == "kernel" else 18
    fma_values = values_of("fma_loop")
    c.expect(len(fma_values) == len(ks) == fma_launches, f"fma_loop: {len(fma_values)} replayed launches, "
                                                         f"{len(ks)} printed, expected {fma_launches}")
    if len(fma_values) == len(ks) == fma_launches:
        inst = [value(v, "smsp__inst_executed.sum") for v in fma_values]
        c.note(f"fma_loop smsp__inst_executed.sum by k: {list(zip(ks, inst))}")
        if all(i is not None for i in inst):
            by_k = {}
            for k, i in zip(ks, inst):
                by_k.setdefault(k, []).append(i)
            for k, counts in by_k.items():
                c.expect(len(set(counts)) == 1, f"fma_loop k={k}: instructions differ between launches: {counts}")
            first = [by_k[k][0] for k in sorted(by_k)]
            c.expect(len(first) == 3 and first[2] - first[1] == first[1] - first[0],
                     f"fma_loop: instructions not linear in k ({first})")
            warps = int(launches[[f.get("kernel") for f in launches].index("fma_loop")]["warps"])
            if len(first) == 3:
                c.expect(first[1] - first[0] >= min(ks) * warps,
                         f"fma_loop: {first[1] - first[0]} instructions for {min(ks)} more FMAs in {warps} warps")
        else:
            c.expect(False, "fma_loop: a launch without smsp__inst_executed.sum")

    # fixed_grid: launch__* exact.
    grid = [f for f in launches if f.get("kernel") == "fixed_grid"]
    grid_values = values_of("fixed_grid")
    c.expect(len(grid_values) == 1 and len(grid) == 1, "fixed_grid: expected one replayed launch")
    if grid_values and grid:
        c.expect(value(grid_values[0], "launch__grid_size") == int(grid[0]["grid_size"]),
                 f"fixed_grid: launch__grid_size {value(grid_values[0], 'launch__grid_size')}, "
                 f"expected {grid[0]['grid_size']}")
        c.expect(value(grid_values[0], "launch__block_size") == int(grid[0]["block_size"]),
                 f"fixed_grid: launch__block_size {value(grid_values[0], 'launch__block_size')}, "
                 f"expected {grid[0]['block_size']}")
        passes = grid_values[0].get("launch__grid_size", (None, None, None))[2]
        c.expect(passes == 0, f"fixed_grid: launch__grid_size has passes {passes}, expected 0 (no counter pass)")

    # Counter passes are gpuprof's own work (C1): the application's TASK rows hold each kernel once.
    kernels = [k["name"] for k in db.kernels()]
    for name, launched in (("stream_copy", 1), ("fma_loop", fma_launches), ("fixed_grid", 1)):
        seen = sum(1 for k in kernels if kernel_matches(k, name))
        c.expect(seen == launched, f"{name}: {seen} TASK rows, expected {launched} (counter passes leaked?)")

    # The same launches under ncu: instruction counts and launch attributes exact, bytes within 2%.
    compare_with_ncu(c, rows, metrics, peer, exact=("smsp__inst_executed.sum", "launch__grid_size",
                                                    "launch__block_size"))
    compare_with_ncu(c, rows, metrics, peer, within_2pct=("dram__bytes_read.sum", "dram__bytes_write.sum"),
                     only="stream_copy")
