#!/usr/bin/env python3
"""Checks the profile DB(s) that `gpuprof run` wrote for one of the GPU test programs.

    check_db.py EXPECTATION PATH [--program-output FILE]

PATH is a .db file or a directory searched for `*_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler*.db` (the
`-o` directory of `gpuprof run`). FILE is the program's stdout: its "gpuprof-test: process ..."
lines give the pid and OS thread id the rows must carry. EXPECTATION is one of EXPECTATIONS below,
each the work one program in tests/gpu launched (see the comment at the top of that program).

What is checked follows DB_SPEC.md section 7 and what src/db/profile_writer.cc stores:
  * TASK + COMPUTE_TASK_INFO (joined on globalTaskId): kernel names (STRING_IDS, demangled),
    gridDim / blockDim (STRING_IDS ids of "x,y,z"), blockNum (= gridX*gridY*gridZ), streamId,
    taskType (STRING_IDS 'KERNEL' / 'MEMCPY_ASYNC' / 'MEMSET');
  * every TASK joins its `launch` row in CANN_API (type 10000 'node', name 'launch',
    connectionId = TASK.connectionId = the CUPTI correlation id) and the runtime row of the same
    call (type 5000, connectionId + 2**32) that names the API (cudaLaunchKernel, cudaMemcpy, ...);
    globalTid = (pid << 32) | OS tid;
  * MEMCPY_INFO(globalTaskId, size, memcpyOperation) with ENUM_MEMCPY_OPERATION ids
    (1 host to device, 2 device to host, 3 device to device);
  * MSTX_EVENTS: eventType (ENUM_MSTX_EVENT_TYPE), message and domain (STRING_IDS), threads,
    connectionId 4294967295 for host-only ranges, an id of their own (4 << 32 and up) for host-only marks;
  * times are Unix-epoch ns inside SESSION_TIME_INFO, and PRAGMA integrity_check is 'ok'.

The reader and the checks every case makes are in check_db_common.py, the replay cases'
expectations in check_db_replay.py, the findings cases' in check_db_findings.py; this file holds the
others, the table of expectations and the command line.

Exit status 0 when every check passed, 1 otherwise (each failure printed as "FAIL: ...").
Only the standard library (sqlite3) is used: it runs on the GPU machine as it is.
"""


import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The shared reader and checks, and the replay cases' expectations, live beside this file; their
# names are this module's too (run_case.py and the host tests use check_db.find_dbs, ...).
from check_db_common import (  # noqa: E402
    INVALID_ID,
    MEMCPY_DTOD,
    MEMCPY_DTOH,
    MEMCPY_HTOD,
    MSTX_MARKER,
    MSTX_MARKER_EX,
    MSTX_PUSH_POP,
    MSTX_START_END,
    RANGE_SKEW_NS,
    Checker,
    find_dbs,
    find_partial_dbs,
    parse_program_output,
    processes,
    global_tid,
    ProfileDb,
    check_common,
    kernel_matches,
    one_db,
    main_process)
from check_db_findings import (  # noqa: E402
    expect_findings_empty_cache,
    expect_findings_kernels,
    expect_findings_host_wait,
    expect_findings_kernels_no_counters,
    expect_findings_launch,
    expect_findings_launch_delay,
    expect_findings_launch_fused,
    expect_findings_own_kernels,
    expect_findings_pageable,
    expect_findings_pinned,
    expect_findings_sync)
from check_db_replay import (  # noqa: E402
    REPLAY_PASSES,
    expect_replay_arena_many_regions,
    expect_replay_arena_between,
    expect_replay_arena_realloc,
    expect_replay_arena_spill,
    expect_replay_arena_fill_after,
    expect_replay_inplace,
    expect_replay_range,
    expect_train_transformer_range,
    expect_replay_counter,
    expect_replay_constant,
    expect_replay_async,
    expect_replay_graph,
    expect_replay_graph_whole,
    expect_replay_graph_nodes,
    expect_replay_graph_alloc,
    expect_replay_graph_host,
    expect_infer_compiled_nodes,
    expect_replay_timer,
    expect_replay_printf,
    expect_replay_printf_off,
    expect_replay_free_thread,
    expect_replay_array,
    expect_replay_vmm,
    expect_replay_ptx,
    expect_replay_cross_module,
    expect_replay_cross_library,
    expect_replay_cublas,
    expect_replay_two_gpu,
    expect_train_transformer_replay,
    SPEED_OF_LIGHT_METRICS,
    COMPUTE_THROUGHPUT,
    compare_with_ncu,
    expect_replay_speed_of_light,
    expect_replay_counters)


def expect_kernels(c, dbs, program_output):
    proc = main_process(c, program_output)
    db = one_db(c, dbs, "kernels")
    if db is None:
        return
    joins = check_common(c, db, proc.get("pid"))
    kernels = db.kernels()
    groups = {
        "vector_add": dict(count=3, grid="64,1,1", block="256,1,1", block_num=64),
        "scale_kernel<float>": dict(count=2, grid="32,4,1", block="32,2,2", block_num=128),
    }
    found = {base: [k for k in kernels if kernel_matches(k["name"], base)] for base in groups}
    others = [k["name"] for k in kernels if not any(kernel_matches(k["name"], b) for b in groups)]
    c.expect(not others, f"kernels the program did not launch (gpuprof's own work must stay invisible, C1): {others}")
    c.expect(len(kernels) == 5, f"expected 5 kernels, found {len(kernels)}")
    streams = {}
    for base, want in groups.items():
        rows = found[base]
        c.note(f"{base}: {len(rows)} launches, names {sorted({k['name'] for k in rows})}")
        c.expect(len(rows) == want["count"], f"{base}: {len(rows)} launches, expected {want['count']}")
        for k in rows:
            where = f"{base} (task {k['task_id']})"
            c.expect(k["grid"] == want["grid"], f"{where}: gridDim {k['grid']!r}, expected {want['grid']!r}")
            c.expect(k["block"] == want["block"], f"{where}: blockDim {k['block']!r}, expected {want['block']!r}")
            c.expect(k["block_num"] == want["block_num"], f"{where}: blockNum {k['block_num']}, expected {want['block_num']}")
            c.expect(k["type"] == "KERNEL", f"{where}: taskType {k['type']!r}, expected 'KERNEL'")
            short = base.split("<")[0]
            c.expect(k["op_type"] is not None and short in k["op_type"], f"{where}: opType {k['op_type']!r} lacks {short!r}")
            c.expect(k["device"] == proc.get("device", 0), f"{where}: deviceId {k['device']}")
            join = joins.get(k["connection"])
            if c.expect(join is not None, f"{where}: does not join its launch (connectionId {k['connection']})"):
                launch, runtime = join
                c.expect(runtime["name"] is not None and runtime["name"].startswith("cudaLaunchKernel"),
                         f"{where}: launched by {runtime['name']!r}, expected cudaLaunchKernel")
                if "pid" in proc and "tid" in proc:
                    c.expect(launch["global_tid"] == global_tid(proc["pid"], proc["tid"]),
                             f"{where}: launch globalTid {launch['global_tid']} != (pid {proc['pid']} << 32) | "
                             f"tid {proc['tid']} = {global_tid(proc['pid'], proc['tid'])}")
        stream_ids = {k["stream"] for k in rows}
        c.expect(len(stream_ids) == 1, f"{base}: launched on one stream, found streamIds {sorted(stream_ids)}")
        streams[base] = stream_ids
        connections = [k["connection"] for k in rows]
        c.expect(len(set(connections)) == len(connections), f"{base}: connectionIds repeat: {connections}")
    c.expect(not (streams["vector_add"] & streams["scale_kernel<float>"]),
             f"vector_add (created stream) and scale_kernel<float> (default stream) share streamId "
             f"{streams['vector_add'] & streams['scale_kernel<float>']}")


# (size, ENUM_MEMCPY_OPERATION id, API, stream) in program order (memcpy.cu).
MEMCPY_PROGRAM = [
    (4194304, MEMCPY_HTOD, "cudaMemcpy", "default"),
    (1048576, MEMCPY_DTOD, "cudaMemcpy", "default"),
    (2097152, MEMCPY_DTOH, "cudaMemcpy", "default"),
    (65536, MEMCPY_HTOD, "cudaMemcpyAsync", "created"),
    (12345, MEMCPY_DTOH, "cudaMemcpyAsync", "created"),
    (1048576, MEMCPY_DTOH, "cudaMemcpy", "default"),
]


def api_is(name, api):
    """'cudaMemcpy' matches cudaMemcpy and cudaMemcpy_ptds-style variants, not cudaMemcpyAsync."""
    return name is not None and (name == api or name.startswith(api + "_"))


def expect_memcpy(c, dbs, program_output):
    proc = main_process(c, program_output)
    db = one_db(c, dbs, "memcpy")
    if db is None:
        return
    joins = check_common(c, db, proc.get("pid"))
    c.expect(not db.kernels(), "the memcpy program launches no kernel, but COMPUTE_TASK_INFO has rows")
    copies = db.memcpys()
    c.note("MEMCPY_INFO: " + ", ".join(f"{m['size']}B op {m['operation']} stream {m['stream']}" for m in copies))
    for m in copies:
        c.expect(m["type"] == "MEMCPY_ASYNC",
                 f"MEMCPY_INFO row of task {m['task_id']} joins a TASK of type {m['type']!r}, expected 'MEMCPY_ASYNC'")
    remaining = list(copies)
    matched = []
    for size, operation, api, stream in MEMCPY_PROGRAM:
        hit = next((m for m in remaining if m["size"] == size and m["operation"] == operation), None)
        if not c.expect(hit is not None, f"no MEMCPY_INFO row with size {size} and memcpyOperation {operation} ({api})"):
            continue
        remaining.remove(hit)
        matched.append((hit, api, stream))
        join = joins.get(hit["connection"])
        if c.expect(join is not None, f"the {size}-byte copy does not join its launch row"):
            c.expect(api_is(join[1]["name"], api), f"the {size}-byte copy was made by {join[1]['name']!r}, expected {api}")
    c.expect(not remaining, f"MEMCPY_INFO rows the program did not make: "
                            f"{[(m['size'], m['operation']) for m in remaining]}")
    starts = [m["start"] for m, _, _ in matched]
    c.expect(starts == sorted(starts), "the copies' TASK start times are not in program order")
    created = {m["stream"] for m, _, s in matched if s == "created"}
    default = {m["stream"] for m, _, s in matched if s == "default"}
    c.expect(len(created) == 1, f"the async copies ran on one created stream, found streamIds {sorted(created)}")
    c.expect(not (created & default), f"the created stream's id {created} is also the default stream's {default}")

    memsets = [t for t in db.tasks() if t["type"] == "MEMSET"]
    if c.expect(len(memsets) == 1, f"expected one MEMSET task, found {len(memsets)}"):
        memset = memsets[0]
        join = joins.get(memset["connection"])
        if c.expect(join is not None, "the memset does not join its launch row"):
            c.expect(api_is(join[1]["name"], "cudaMemset"), f"the memset was made by {join[1]['name']!r}")
        c.expect(all(m["task_id"] != memset["task_id"] for m in copies), "the MEMSET task has a MEMCPY_INFO row")
        if len(matched) == len(MEMCPY_PROGRAM):
            # Program order: the memset comes between the async round trip and the last copy.
            c.expect(matched[4][0]["start"] <= memset["start"] <= matched[5][0]["start"],
                     "the MEMSET task is not between the copies that came before and after it")


def contains(outer, inner_start, inner_end, skew):
    return outer["start"] - skew <= inner_start and inner_end <= outer["end"] + skew


def expect_nvtx(c, dbs, program_output):
    proc = main_process(c, program_output)
    db = one_db(c, dbs, "nvtx")
    if db is None:
        return
    check_common(c, db, proc.get("pid"))
    events = db.mstx()
    c.note("MSTX_EVENTS: " + ", ".join(f"{e['message']!r} type {e['event_type']} domain {e['domain']!r}" for e in events))
    by_message = {}
    for e in events:
        by_message.setdefault(e["message"], []).append(e)
    wanted = ("gpuprof_outer", "gpuprof_inner", "gpuprof_mark", "gpuprof_cross_thread", "gpuprof_domain_range")
    for message in wanted:
        c.expect(len(by_message.get(message, [])) == 1,
                 f"MSTX_EVENTS has {len(by_message.get(message, []))} rows with message {message!r}, expected 1")
    c.expect(set(by_message) <= set(wanted), f"unexpected MSTX_EVENTS messages: {sorted(set(by_message) - set(wanted))}")
    get = {m: by_message[m][0] for m in wanted if len(by_message.get(m, [])) == 1}
    main_tid = global_tid(proc["pid"], proc["tid"]) if "pid" in proc and "tid" in proc else None

    for message in ("gpuprof_outer", "gpuprof_inner", "gpuprof_domain_range"):
        e = get.get(message)
        if e is None:
            continue
        c.expect(e["event_type"] in (MSTX_PUSH_POP, MSTX_START_END),
                 f"{message}: eventType {e['event_type']}, expected a range (1 push/pop or 2 start/end)")
        c.expect(e["start"] < e["end"], f"{message}: start {e['start']} is not before end {e['end']}")
        if main_tid is not None:
            c.expect(e["global_tid"] == main_tid and e["end_global_tid"] == main_tid,
                     f"{message}: globalTid {e['global_tid']} / endGlobalTid {e['end_global_tid']}, expected {main_tid}")
        c.expect(e["connection"] == INVALID_ID, f"{message}: connectionId {e['connection']}, expected {INVALID_ID} (host-only)")
        c.expect(e["domain"] == ("gpuprof_domain" if message == "gpuprof_domain_range" else "default"),
                 f"{message}: domain {e['domain']!r}")
    outer, inner = get.get("gpuprof_outer"), get.get("gpuprof_inner")
    if outer and inner:
        c.expect(contains(outer, inner["start"], inner["end"], 0), "gpuprof_inner is not nested in gpuprof_outer")
    kernels = db.kernels()
    for message, base in (("gpuprof_outer", "nvtx_outer_kernel"), ("gpuprof_inner", "nvtx_inner_kernel")):
        rows = [k for k in kernels if kernel_matches(k["name"], base)]
        if c.expect(len(rows) == 1, f"expected one {base}, found {len(rows)}") and get.get(message):
            c.expect(contains(get[message], rows[0]["start"], rows[0]["end"], RANGE_SKEW_NS),
                     f"{base} ran at [{rows[0]['start']}, {rows[0]['end']}], outside its range {message} "
                     f"[{get[message]['start']}, {get[message]['end']}] (the range wraps launch and synchronize)")
    mark = get.get("gpuprof_mark")
    if mark:
        c.expect(mark["event_type"] in (MSTX_MARKER, MSTX_MARKER_EX), f"gpuprof_mark: eventType {mark['event_type']}")
        c.expect(mark["start"] == mark["end"], "gpuprof_mark: a marker has startNs == endNs")
        if outer:
            c.expect(mark["start"] >= outer["end"], "gpuprof_mark comes after gpuprof_outer ended")
    cross = get.get("gpuprof_cross_thread")
    fields = next((f for what, f in parse_program_output(program_output)
                   if what == "range" and f.get("message") == "gpuprof_cross_thread"), {})
    if cross:
        c.expect(cross["event_type"] == MSTX_START_END, f"gpuprof_cross_thread: eventType {cross['event_type']}, expected 2")
        c.expect(cross["start"] <= cross["end"], "gpuprof_cross_thread: start after end")
        if "pid" in proc and "start_tid" in fields and "end_tid" in fields:
            c.expect(cross["global_tid"] == global_tid(proc["pid"], int(fields["start_tid"])),
                     f"gpuprof_cross_thread: globalTid {cross['global_tid']} is not the starting thread's")
            c.expect(cross["end_global_tid"] == global_tid(proc["pid"], int(fields["end_tid"])),
                     f"gpuprof_cross_thread: endGlobalTid {cross['end_global_tid']} is not the ending thread's "
                     f"({fields['end_tid']})")


def fork_db_checks(c, db, pid, base, count, absent):
    check_common(c, db, pid)
    kernels = db.kernels()
    names = sorted({k["name"] for k in kernels})
    mine = [k for k in kernels if kernel_matches(k["name"], base)]
    c.expect(len(mine) == count, f"{db.path}: {len(mine)} {base} launches, expected {count} (kernels: {names})")
    c.expect(not [k for k in kernels if kernel_matches(k["name"], absent)],
             f"{db.path}: holds {absent}, which another process launched (a child never writes into its parent's DB)")
    c.expect(len(kernels) == count, f"{db.path}: {len(kernels)} kernels, expected {count}: {names}")
    pids = {r[0] >> 32 for r in db.query("SELECT globalTid FROM CANN_API")}
    c.expect(pids == {pid}, f"{db.path}: CANN_API rows of pids {sorted(pids)}, expected only {pid}")
    run_dir = os.path.basename(os.path.dirname(os.path.dirname(db.path)))
    if not os.environ.get("GPUPROF_WORKER_NAME"):
        c.expect(f"_{pid}_" in run_dir, f"{db.path}: run directory {run_dir!r} does not carry the pid {pid}")


def expect_fork(c, dbs, program_output, follow):
    procs = processes(program_output)
    parent, child = procs.get("parent"), procs.get("child")
    c.expect(parent is not None and child is not None,
             "the fork program printed no process line for the parent or the child")
    if parent is None or child is None:
        return
    by_pid = {}
    for path in dbs:
        db = ProfileDb(path)
        pids = {r[0] for r in db.query("SELECT DISTINCT globalPid FROM TASK")}
        by_pid.setdefault(next(iter(pids)) if len(pids) == 1 else tuple(sorted(pids)), []).append(db)
    expected = 2 if follow else 1
    c.expect(len(dbs) == expected, f"expected {expected} DB(s) ({'parent and child' if follow else 'the parent only'}), "
                                   f"found {len(dbs)}: {dbs}")
    parent_dbs = by_pid.get(parent["pid"], [])
    if c.expect(len(parent_dbs) == 1, f"expected one DB of the parent (pid {parent['pid']}), found {len(parent_dbs)}"):
        fork_db_checks(c, parent_dbs[0], parent["pid"], "fork_parent_kernel", 2, "fork_child_kernel")
    child_dbs = by_pid.get(child["pid"], [])
    if follow:
        if c.expect(len(child_dbs) == 1, f"expected one DB of the child (pid {child['pid']}), found {len(child_dbs)}"):
            fork_db_checks(c, child_dbs[0], child["pid"], "fork_child_kernel", 3, "fork_parent_kernel")
    else:
        c.expect(not child_dbs, f"without --follow-children the child (pid {child['pid']}) wrote a DB")


def expect_fork_follow(c, dbs, program_output):
    expect_fork(c, dbs, program_output, follow=True)


def expect_fork_parent_only(c, dbs, program_output):
    expect_fork(c, dbs, program_output, follow=False)


def check_train_plain(c, dbs, program_output):
    """train_plain.py under `gpuprof run` on the GPU, whatever the cuda_trace: every kernel joins its
    launch rows, each launched by a launch call, and the model's host-to-device copy is there."""
    c.expect(re.search(r"^step (\d+)/\1 loss ", program_output or "", re.M) is not None,
             "train_plain.py did not print its last step")
    c.expect("device: cuda" in (program_output or ""), "train_plain.py did not train on cuda")
    db = one_db(c, dbs, "train_plain")
    if db is None:
        return None
    joins = check_common(c, db)
    kernels = db.kernels()
    c.expect(len(kernels) > 0, "no kernels in the DB of a training run on the GPU")
    unjoined = [k for k in kernels if k["connection"] not in joins]
    c.expect(not unjoined, f"{len(unjoined)} of {len(kernels)} kernels do not join their launch rows, e.g. "
                           f"{[k['name'] for k in unjoined[:3]]}")
    launchers = {}
    for k in kernels:
        if k["connection"] in joins:
            name = joins[k["connection"]][1]["name"] or ""
            launchers[name] = launchers.get(name, 0) + 1
    c.note(f"{len(kernels)} kernels of {len({k['name'] for k in kernels})} names, launched by {launchers}")
    c.expect(all("Launch" in name for name in launchers), f"kernels launched by calls that are not launches: {launchers}")
    copies = db.memcpys()
    c.expect(any(m["operation"] == MEMCPY_HTOD for m in copies), "no host-to-device copy (model.to(device))")
    return db


# Runtime calls a PyTorch step makes many times without launching anything. With the default
# cuda_trace (launches,nvtx) none of them may be in CANN_API: that is what the mode saves; with
# runtime,driver,nvtx they must be (every call is recorded).
QUERY_CALLS = ("cudaGetDevice", "cudaSetDevice", "cudaGetLastError", "cudaPeekAtLastError", "cudaStreamIsCapturing",
               "cudaStreamGetCaptureInfo", "cudaEventQuery", "cudaGetDeviceCount", "cudaDeviceGetAttribute",
               "cudaPointerGetAttributes", "cudaFuncGetAttributes")


def runtime_rows_by_name(c, db):
    names = db.query("""SELECT s.value, COUNT(*) FROM CANN_API a JOIN STRING_IDS s ON s.id = a.name
                        WHERE a.type = 5000 GROUP BY s.value ORDER BY 2 DESC""")
    c.note(f"runtime/driver rows by name: {names[:8]}")
    return names


def expect_launch_calls_only(c, db):
    """The default cuda_trace, launches: CANN_API's runtime rows (type 5000) hold launching,
    copying, allocating and waiting calls only."""
    names = runtime_rows_by_name(c, db)
    queries = [(name, n) for name, n in names if name.startswith(QUERY_CALLS)]
    c.expect(not queries, f"{db.path}: the launches trace (the default) recorded query calls {queries[:4]}; "
                          "expected only the launching, copying, allocating and waiting calls")
    c.expect(any("Launch" in name for name, _ in names), f"{db.path}: no launch call among CANN_API's rows {names}")


def expect_every_call(c, db):
    """`--cuda-trace runtime,driver,nvtx`: every runtime call is recorded, the query calls too."""
    names = runtime_rows_by_name(c, db)
    c.expect(any(name.startswith(QUERY_CALLS) for name, _ in names),
             f"{db.path}: --cuda-trace runtime,driver,nvtx recorded no query call such as cudaGetDevice: {names[:8]}")


def expect_train_plain(c, dbs, program_output):
    """train_plain.py under `gpuprof run` (cuda_trace launches,nvtx, the default): every kernel joins
    its launch rows, and CANN_API holds no query calls."""
    db = check_train_plain(c, dbs, program_output)
    if db is not None:
        expect_launch_calls_only(c, db)


def expect_train_plain_every_call(c, dbs, program_output):
    """train_plain.py under `gpuprof run --cuda-trace runtime,driver,nvtx`: the same joins, from
    CUPTI's activity records of every call."""
    db = check_train_plain(c, dbs, program_output)
    if db is not None:
        expect_every_call(c, db)


def expect_train_profiled(c, dbs, program_output):
    """train_profiled.py under `gpuprof run` (the default cuda_trace): its ops reach their kernels
    (the op ids travel with gpuprof's launch callbacks, not CUPTI's external correlation)."""
    db = check_train_profiled(c, dbs, program_output)
    if db is not None:
        expect_launch_calls_only(c, db)


def expect_train_profiled_every_call(c, dbs, program_output):
    """train_profiled.py under `gpuprof run --cuda-trace runtime,driver,nvtx`: its ops reach their
    kernels through CUPTI's external correlation records."""
    db = check_train_profiled(c, dbs, program_output)
    if db is not None:
        expect_every_call(c, db)


def check_train_profiled(c, dbs, program_output):
    """examples/train_profiled.py under `gpuprof run` on the GPU: its gpuprof.profile joins the run's
    session, so one DB holds the torch ops, steps and memory (issue 6) with the kernels, and the
    kernels are linked to the ops that launched them (CONNECTION_IDS)."""
    c.expect("device: cuda" in (program_output or ""), "train_profiled.py did not train on cuda")
    db = one_db(c, dbs, "train_profiled")
    if db is None:
        return None
    check_common(c, db)
    ops = {name for (name,) in db.query("SELECT s.value FROM PYTORCH_API p JOIN STRING_IDS s ON s.id = p.name")}
    c.expect("aten::addmm" in ops, f"no aten::addmm among {len(ops)} op names")
    steps = [r[0] for r in db.query("SELECT id FROM STEP_TIME ORDER BY id")]
    c.expect(len(steps) >= 3, f"STEP_TIME rows {steps}: expected the script's 3 active steps (or more)")
    linked = db.query("""
        SELECT s.value, COUNT(*) FROM TASK t JOIN CONNECTION_IDS c ON c.connectionId = t.connectionId
        JOIN PYTORCH_API p ON p.connectionId = c.id JOIN STRING_IDS s ON s.id = p.name
        GROUP BY s.value ORDER BY 2 DESC""")
    c.note(f"kernels linked to torch ops: {linked[:6]}")
    c.expect(any(name in ("aten::addmm", "aten::mm") for name, _ in linked),
             "no kernel linked to aten::addmm / aten::mm through CONNECTION_IDS")
    gpu_memory = db.query("SELECT COUNT(*), MAX(totalAllocated) FROM MEMORY_RECORD WHERE deviceId = 0")[0]
    c.expect(gpu_memory[0] > 0 and (gpu_memory[1] or 0) > 0,
             f"no CUDA allocator records on device 0 in MEMORY_RECORD: {gpu_memory}")
    return db


def expect_train_profiled_replay(c, dbs, program_output):
    """train_profiled.py --replay-kernel regex:gemm under `gpuprof replay --from-script`: the GEMM
    kernels launched while the profile records (its 3 active steps) are replayed 3 times each, and
    none launched before or after it."""
    db = check_train_profiled(c, dbs, program_output)
    recording = re.findall(r"^step \d+/\d+ loss \S+ \(replaying kernels\)$", program_output or "", re.M)
    c.expect(len(recording) == 3, f"{len(recording)} steps printed '(replaying kernels)', expected the 3 active ones")
    if db is None:
        return
    rows = db.replay_kernels()
    c.expect(len(rows) > 0, "no GPUPROF_REPLAY_KERNEL rows: nothing was replayed")
    c.expect(all(re.search("gemm", r["name"]) for r in rows), f"a replayed kernel not matching gemm: "
                                                             f"{sorted({r['name'] for r in rows})[:4]}")
    replayed = [r for r in rows if r["replayed"] == 1]
    c.note(f"{len(replayed)} of {len(rows)} selected launches replayed: {sorted({r['name'] for r in rows})[:3]}; "
           f"declined: {sorted({r['decline'] for r in rows if r['replayed'] != 1})}")
    c.expect(len(replayed) > 0, "no launch replayed")
    c.expect(all(len(r["pass_rows"]) == 3 for r in replayed), "a replayed launch without 3 pass rows")
    window = db.query("SELECT MIN(startNs), MAX(endNs) FROM STEP_TIME")[0]
    times = [t for (t,) in db.query("SELECT timestampNs FROM GPUPROF_REPLAY_KERNEL")]
    outside = [t for t in times if window[0] is None or not window[0] <= t <= window[1]]
    c.expect(not outside, f"{len(outside)} replay rows outside the recorded steps {window}")
    gemms = [k for k in db.kernels() if "gemm" in (k["name"] or "")]
    c.note(f"GEMM kernel rows in TASK over the whole run (replay passes are gpuprof's own, not among them): "
           f"{len(gemms)}")
    c.expect(len(gemms) > len(rows), "no GEMM launched outside the recording: the window test proves nothing")


def expect_two_ranks_nccl(c, dbs, program_output):
    """examples/train_ddp.py (NCCL on two GPUs) under `gpuprof run --with-modules -- torchrun --nproc_per_node=2`
    (issue 7): one DB per rank with its rank and device, DDP's NCCL collectives in COMMUNICATION_OP
    (CANN_API `communication` rows on the same connectionId), NCCL kernels in TASK linked to a
    torch op through CONNECTION_IDS, and Module ranges."""
    out = program_output or ""
    multicast_off = "NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1"
    for rank in (0, 1):
        c.expect(f"rank {rank} backend nccl, {multicast_off}" in out,
                 f"rank {rank} did not print 'backend nccl, {multicast_off}' (NVLink multicast must be off in "
                 f"every rank's environment)")
        c.expect(f"rank {rank} done on cuda:{rank}, replicas identical: True" in out,
                 f"rank {rank} did not finish with identical replicas")
    c.expect(len(dbs) == 2, f"{len(dbs)} DBs, expected one per rank: {dbs}")
    for path in dbs:
        db = ProfileDb(path)
        check_common(c, db)
        rank_map = db.query("SELECT rankId, deviceId FROM RANK_DEVICE_MAP")
        c.note(f"{os.path.basename(db.path)}: RANK_DEVICE_MAP {rank_map}")
        c.expect(len(rank_map) == 1 and rank_map[0][0] == rank_map[0][1] and rank_map[0][0] in (0, 1),
                 f"RANK_DEVICE_MAP {rank_map}: expected (rank, device) = (LOCAL_RANK, LOCAL_RANK)")
        c.expect(db.path.endswith(f"ascend_pytorch_profiler_{rank_map[0][0]}.db") if rank_map else False,
                 f"{db.path}: file name without its rank")
        comm = db.query("""SELECT t.value, c.count, c.rankSize, c.deviceId, c.startNs, c.endNs, a.type
                           FROM COMMUNICATION_OP c JOIN STRING_IDS t ON t.id = c.opType
                           JOIN CANN_API a ON a.connectionId = c.connectionId ORDER BY c.opId""")
        c.note(f"COMMUNICATION_OP: {len(comm)} rows, types {sorted({r[0] for r in comm})}, first {comm[:2]}")
        c.expect(any(r[0] == "hcom_allReduce_" for r in comm), "no hcom_allReduce_ in COMMUNICATION_OP (DDP's gradients)")
        c.expect(all(r[2] == 2 and r[6] == 5500 for r in comm), "a COMMUNICATION_OP row without rankSize 2 "
                                                                 "or its CANN_API communication row")
        nccl = [k for k in db.kernels() if "nccl" in (k["name"] or "").lower()]
        c.expect(len(nccl) > 0, "no NCCL kernel in TASK")
        linked = db.query("""SELECT s.value, COUNT(*) FROM TASK t JOIN COMPUTE_TASK_INFO k ON k.globalTaskId = t.globalTaskId
                             JOIN STRING_IDS kn ON kn.id = k.name
                             JOIN CONNECTION_IDS ci ON ci.connectionId = t.connectionId
                             JOIN PYTORCH_API p ON p.connectionId = ci.id JOIN STRING_IDS s ON s.id = p.name
                             WHERE lower(kn.value) LIKE '%nccl%' GROUP BY s.value ORDER BY 2 DESC""")
        c.note(f"NCCL kernels: {len(nccl)}, linked to ops {linked}")
        c.expect(sum(n for _, n in linked) > 0, "no NCCL kernel linked to a torch op through CONNECTION_IDS")
        # The collectives' device side: NCCL kernels in COMMUNICATION_TASK_INFO, and each such op's
        # times are its tasks' device times.
        task_info = db.query("""SELECT i.opId, MIN(t.startNs), MAX(t.endNs), c.startNs, c.endNs
                                FROM COMMUNICATION_TASK_INFO i JOIN TASK t ON t.globalTaskId = i.globalTaskId
                                JOIN COMMUNICATION_OP c ON c.opId = i.opId GROUP BY i.opId""")
        c.note(f"COMMUNICATION_TASK_INFO: {len(task_info)} of {len(comm)} ops with device tasks")
        c.expect(any(True for _ in task_info), "no COMMUNICATION_TASK_INFO row: NCCL kernels not tied to their op")
        # On NCCL every collective runs a kernel: no op without its device tasks.
        c.expect(len(task_info) == len(comm), f"{len(comm) - len(task_info)} COMMUNICATION_OP rows without "
                                              f"COMMUNICATION_TASK_INFO (NCCL kernels) rows")
        c.expect(all(r[1] == r[3] and r[2] == r[4] for r in task_info),
                 f"COMMUNICATION_OP times are not their tasks' device times: {task_info[:3]}")
        modules = db.query("""SELECT m.value, COUNT(*) FROM MSTX_EVENTS e JOIN STRING_IDS d ON d.id = e.domainId
                              JOIN STRING_IDS m ON m.id = e.message WHERE d.value = 'Module' GROUP BY m.value""")
        c.note(f"Module ranges: {modules}")
        c.expect(dict(modules).get("Linear", 0) >= 10, f"Module ranges {modules}: expected 2 Linear per step")


# ---- Replay (`gpuprof replay`, issue 5) ---------------------------------------------------------

def expect_user_profilers(c, dbs, program_output):
    """tests/gpu/user_profilers.py under `gpuprof run` (issue 39, items 1 and 2): the script ran to
    its end; torch.profiler kept its CPU ops; the script's gpuprof.profile had its ops, 2 steps and
    its kernels' device time at once, and its trace has kernels; the run's DB has the kernels."""
    out = program_output or ""
    c.expect("user_profilers: ok" in out, "user_profilers.py did not run to its end")

    def figure(pattern):
        m = re.search(pattern, out, re.M)
        return float(m.group(1)) if m else None

    cpu_ops = figure(r"^torch_profiler_cpu_ops (\d+)")
    c.expect(cpu_ops is not None and cpu_ops > 0, f"torch.profiler's own CPU ops: {cpu_ops}")
    torch_kernels = figure(r"^torch_profiler_kernels (\d+)")
    c.note(f"torch.profiler saw {torch_kernels} kernels (CUPTI is gpuprof's)")
    m = re.search(r"^gpuprof_profile_ops (\d+) steps (\d+) device_us (\S+)", out, re.M)
    if c.expect(m is not None, "no gpuprof_profile_ops line"):
        ops, steps, device_us = int(m.group(1)), int(m.group(2)), float(m.group(3))
        c.note(f"gpuprof.profile at once: {ops} ops, {steps} steps, {device_us} us of kernels")
        c.expect(ops > 0 and steps == 2, f"gpuprof.profile's figures: {ops} ops, {steps} steps (expected 2)")
        c.expect(device_us > 0, "gpuprof.profile's key_averages has no device time")
    kernels = figure(r"^gpuprof_trace_kernels (\d+)")
    c.expect(kernels is not None and kernels > 0, f"gpuprof.profile's trace has {kernels} kernels")
    db = one_db(c, dbs, "user_profilers")
    if db is not None:
        c.expect(len(db.kernels()) > 0, "no kernels in the run's DB")


EXPECTATIONS = {
    "findings_empty_cache": expect_findings_empty_cache,
    "findings_kernels": expect_findings_kernels,
    "findings_kernels_no_counters": expect_findings_kernels_no_counters,
    "findings_launch": expect_findings_launch,
    "findings_launch_fused": expect_findings_launch_fused,
    "findings_pageable": expect_findings_pageable,
    "findings_pinned": expect_findings_pinned,
    "findings_own_kernels": expect_findings_own_kernels,
    "findings_launch_delay": expect_findings_launch_delay,
    "findings_host_wait": expect_findings_host_wait,
    "findings_sync": expect_findings_sync,
    "replay_counters": expect_replay_counters,
    "replay_speed_of_light": expect_replay_speed_of_light,
    "train_transformer_replay": expect_train_transformer_replay,
    "train_transformer_range": expect_train_transformer_range,
    "replay_two_gpu": expect_replay_two_gpu,
    "replay_array": expect_replay_array,
    "replay_vmm": expect_replay_vmm,
    "replay_ptx": expect_replay_ptx,
    "replay_cross_module": expect_replay_cross_module,
    "replay_cross_library": expect_replay_cross_library,
    "replay_cublas": expect_replay_cublas,
    "replay_inplace": expect_replay_inplace,
    "replay_range": expect_replay_range,
    "replay_range_nvtx": expect_replay_range,
    "replay_arena_many_regions": expect_replay_arena_many_regions,
    "replay_arena_between": expect_replay_arena_between,
    "replay_arena_realloc": expect_replay_arena_realloc,
    "replay_arena_spill": expect_replay_arena_spill,
    "replay_arena_fill_after": expect_replay_arena_fill_after,
    "replay_counter": expect_replay_counter,
    "replay_constant": expect_replay_constant,
    "replay_async": expect_replay_async,
    "replay_graph": expect_replay_graph,
    "replay_graph_whole": expect_replay_graph_whole,
    "infer_compiled_nodes": expect_infer_compiled_nodes,
    "replay_graph_nodes": expect_replay_graph_nodes,
    "replay_graph_alloc": expect_replay_graph_alloc,
    "replay_graph_host": expect_replay_graph_host,
    "replay_timer": expect_replay_timer,
    "replay_printf": expect_replay_printf,
    "replay_printf_off": expect_replay_printf_off,
    "replay_free_thread": expect_replay_free_thread,
    "kernels": expect_kernels,
    "memcpy": expect_memcpy,
    "nvtx": expect_nvtx,
    "fork_follow": expect_fork_follow,
    "fork_parent_only": expect_fork_parent_only,
    "train_plain": expect_train_plain,
    "train_profiled": expect_train_profiled,
    "train_plain_every_call": expect_train_plain_every_call,
    "train_profiled_every_call": expect_train_profiled_every_call,
    "train_profiled_replay": expect_train_profiled_replay,
    "two_ranks_nccl": expect_two_ranks_nccl,
    "user_profilers": expect_user_profilers,
}


def check(expectation, path, program_output="", peer=None):
    """Runs the checks; returns the list of failures (empty: all passed). `peer`, for the counter
    expectations: ncu's launches (run_case.parse_ncu_csv), or a string saying why there are none."""
    c = Checker()
    dbs = find_dbs(path)
    partial = find_partial_dbs(path)
    c.expect(not partial, f"unfinished DBs left behind: {partial}")
    c.expect(bool(dbs), f"no DB under {path}")
    if peer is not None:
        EXPECTATIONS[expectation](c, dbs, program_output, peer=peer)
    else:
        EXPECTATIONS[expectation](c, dbs, program_output)
    return c.failures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("expectation", choices=sorted(EXPECTATIONS))
    parser.add_argument("path", help="a .db file or the directory `gpuprof run -o` wrote into")
    parser.add_argument("--program-output", help="the program's stdout (its gpuprof-test: lines)")
    args = parser.parse_args(argv)
    program_output = ""
    if args.program_output:
        with open(args.program_output, encoding="utf-8", errors="replace") as f:
            program_output = f.read()
    failures = check(args.expectation, args.path, program_output)
    print(f"{args.expectation}: {'ok' if not failures else f'{len(failures)} check(s) failed'}")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
