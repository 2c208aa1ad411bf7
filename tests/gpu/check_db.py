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

Exit status 0 when every check passed, 1 otherwise (each failure printed as "FAIL: ...").
Only the standard library (sqlite3) is used: it runs on the GPU machine as it is.
"""

import argparse
import glob
import os
import re
import sqlite3
import statistics
import sys

INVALID_ID = 4294967295  # DB_INVALID_VALUE
RUNTIME_CONNECTION_OFFSET = 1 << 32
API_TYPE_RUNTIME = 5000
API_TYPE_NODE = 10000
MEMCPY_HTOD, MEMCPY_DTOH, MEMCPY_DTOD = 1, 2, 3
MSTX_MARKER, MSTX_PUSH_POP, MSTX_START_END, MSTX_MARKER_EX = 0, 1, 2, 3

# A device task starts after the API call that launched it began; CUPTI's CPU and GPU timestamps
# are converted separately, so allow this much skew (ns).
LAUNCH_SKEW_NS = 100_000
# How far device tasks may lie outside SESSION_TIME_INFO (ns): catches a wrong time base
# (GPU ticks since boot, microseconds), not clock noise.
SESSION_SLACK_NS = 50_000_000
# Kernel execution inside an NVTX range that wraps launch + synchronize (ns).
RANGE_SKEW_NS = 50_000
EPOCH_2017_NS = 1_483_228_800 * 10**9


class Checker:
    def __init__(self):
        self.failures = []

    def expect(self, condition, message):
        if not condition:
            self.failures.append(message)
            print(f"FAIL: {message}")
        return bool(condition)

    def note(self, message):
        print(f"  {message}")


def find_dbs(path):
    if os.path.isfile(path):
        return [path]
    pattern = os.path.join(path, "*_ascend_pt", "ASCEND_PROFILER_OUTPUT", "ascend_pytorch_profiler*.db")
    return sorted(glob.glob(pattern))


def find_partial_dbs(path):
    if os.path.isfile(path):
        path = os.path.dirname(path)
    return sorted(glob.glob(os.path.join(path, "**", "*.partial"), recursive=True))


def parse_program_output(text):
    """'gpuprof-test: <what> k=v k=v' lines -> list of (what, {k: v})."""
    records = []
    for line in (text or "").splitlines():
        if not line.startswith("gpuprof-test: "):
            continue
        words = line[len("gpuprof-test: "):].split()
        if not words:
            continue
        fields = dict(w.split("=", 1) for w in words[1:] if "=" in w)
        records.append((words[0], fields))
    return records


def processes(program_output):
    """role -> {'pid': int, 'tid': int, 'device': int} from the 'process' lines."""
    out = {}
    for what, fields in parse_program_output(program_output):
        if what == "process" and "role" in fields:
            out[fields["role"]] = {k: int(fields[k]) for k in ("pid", "tid", "device") if k in fields}
    return out


def global_tid(pid, tid):
    return (pid << 32) | tid


class ProfileDb:
    """Read-only view of one DB with the joins the checks need."""

    def __init__(self, path):
        self.path = path
        self.conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        self.strings = dict(self.conn.execute("SELECT id, value FROM STRING_IDS"))
        self.tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def text(self, string_id):
        return self.strings.get(string_id)

    def query(self, sql, *args):
        return self.conn.execute(sql, args).fetchall()

    def tasks(self):
        rows = self.query("SELECT startNs, endNs, deviceId, connectionId, globalTaskId, globalPid, taskType, "
                          "streamId FROM TASK ORDER BY startNs, globalTaskId")
        keys = ("start", "end", "device", "connection", "task_id", "pid", "type_id", "stream")
        tasks = [dict(zip(keys, r)) for r in rows]
        for t in tasks:
            t["type"] = self.text(t["type_id"])
        return tasks

    def kernels(self):
        rows = self.query(
            "SELECT t.startNs, t.endNs, t.deviceId, t.connectionId, t.globalTaskId, t.globalPid, t.taskType, "
            "t.streamId, c.name, c.opType, c.blockNum, c.gridDim, c.blockDim, c.taskType "
            "FROM TASK t JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId ORDER BY t.startNs")
        keys = ("start", "end", "device", "connection", "task_id", "pid", "type_id", "stream", "name_id",
                "op_type_id", "block_num", "grid_id", "block_id", "info_type_id")
        kernels = [dict(zip(keys, r)) for r in rows]
        for k in kernels:
            k["name"] = self.text(k["name_id"])
            k["op_type"] = self.text(k["op_type_id"])
            k["grid"] = self.text(k["grid_id"])
            k["block"] = self.text(k["block_id"])
            k["type"] = self.text(k["type_id"])
        return kernels

    def api_row(self, connection_id):
        row = self.query("SELECT startNs, endNs, type, globalTid, connectionId, name FROM CANN_API "
                         "WHERE connectionId = ?", connection_id)
        if not row:
            return None
        r = dict(zip(("start", "end", "type", "global_tid", "connection", "name_id"), row[0]))
        r["name"] = self.text(r["name_id"])
        return r

    def memcpys(self):
        rows = self.query("SELECT m.globalTaskId, m.size, m.memcpyOperation, t.taskType, t.streamId, t.startNs, "
                          "t.connectionId FROM MEMCPY_INFO m LEFT JOIN TASK t ON t.globalTaskId = m.globalTaskId "
                          "ORDER BY t.startNs")
        keys = ("task_id", "size", "operation", "type_id", "stream", "start", "connection")
        out = [dict(zip(keys, r)) for r in rows]
        for m in out:
            m["type"] = self.text(m["type_id"])
        return out

    def replay_kernels(self):
        """GPUPROF_REPLAY_KERNEL rows (docs/db_gpuprof_tables.md) with their passes."""
        if "GPUPROF_REPLAY_KERNEL" not in self.tables:
            return []
        rows = self.query("SELECT id, deviceId, name, launchIndex, replayed, declineReason, declineDetail, passes, "
                          "deterministic, snapshotRegions, snapshotBytes, snapshotDeviceBytes, snapshotNs, replayNs "
                          "FROM GPUPROF_REPLAY_KERNEL "
                          "ORDER BY id")
        keys = ("id", "device", "name_id", "launch_index", "replayed", "decline", "detail", "passes", "deterministic",
                "regions", "bytes", "device_bytes", "snapshot_ns", "replay_ns")
        out = [dict(zip(keys, r)) for r in rows]
        graph_columns = {"replayMode", "graphId", "graphNodeId", "graphFallback"} <= set(
            c[1] for c in self.query("PRAGMA table_info(GPUPROF_REPLAY_KERNEL)"))
        for k in out:
            k["name"] = self.text(k["name_id"])
            k["mode"], k["graph_id"], k["graph_node_id"], k["graph_fallback"] = (
                self.query("SELECT replayMode, graphId, graphNodeId, graphFallback FROM GPUPROF_REPLAY_KERNEL "
                           "WHERE id = ?", k["id"])[0] if graph_columns else ("kernel", None, None, None))
            k["graph_nodes"] = [dict(zip(("pass", "node", "name", "duration"), (g[0], g[1], self.text(g[2]), g[3])))
                                for g in self.query("SELECT pass, graphNodeId, name, durationNs FROM "
                                                    "GPUPROF_REPLAY_GRAPH_NODE WHERE kernelId = ? ORDER BY pass, rowid",
                                                    k["id"])] if "GPUPROF_REPLAY_GRAPH_NODE" in self.tables else []
            k["pass_rows"] = [dict(zip(("pass", "duration", "bytes_restored", "hash", "matches", "clock_before",
                                        "clock_after"), p)) for p in self.query(
                "SELECT pass, durationNs, bytesRestored, outputHash, matchesPass1, smClockBeforeKhz, smClockAfterKhz "
                "FROM GPUPROF_REPLAY_PASS WHERE kernelId = ? ORDER BY pass", k["id"])]
        range_columns = "rangeId" in set(c[1] for c in self.query("PRAGMA table_info(GPUPROF_REPLAY_KERNEL)"))
        for k in out:
            k["range_id"] = (self.query("SELECT rangeId FROM GPUPROF_REPLAY_KERNEL WHERE id = ?", k["id"])[0][0]
                             if range_columns else None)
        return out

    def mstx(self):
        rows = self.query("SELECT startNs, endNs, eventType, rangeId, message, globalTid, endGlobalTid, domainId, "
                          "connectionId FROM MSTX_EVENTS ORDER BY startNs")
        keys = ("start", "end", "event_type", "range_id", "message_id", "global_tid", "end_global_tid",
                "domain_id", "connection")
        out = [dict(zip(keys, r)) for r in rows]
        for e in out:
            e["message"] = self.text(e["message_id"])
            e["domain"] = self.text(e["domain_id"])
        return out


def check_common(c, db, pid=None):
    """Checks every DB gets: integrity, tables, time base, and the task -> launch -> API joins.
    Returns {connectionId: (launch row, runtime row)} for the tasks."""
    print(f"checking {db.path}")
    integrity = db.query("PRAGMA integrity_check")
    c.expect(integrity == [("ok",)], f"{db.path}: PRAGMA integrity_check says {integrity}")
    for table in ("STRING_IDS", "META_DATA", "SESSION_TIME_INFO", "TASK", "COMPUTE_TASK_INFO", "CANN_API",
                  "MEMCPY_INFO", "MSTX_EVENTS", "ENUM_API_TYPE", "ENUM_MEMCPY_OPERATION"):
        c.expect(table in db.tables, f"{db.path}: table {table} is missing")
    session = db.query("SELECT startTimeNs, endTimeNs FROM SESSION_TIME_INFO")
    if c.expect(len(session) == 1, f"SESSION_TIME_INFO has {len(session)} rows, expected 1"):
        s_start, s_end = session[0]
        c.expect(s_start is not None and s_end is not None and EPOCH_2017_NS < s_start <= s_end,
                 f"SESSION_TIME_INFO ({s_start}, {s_end}) is not an epoch-ns interval")
    else:
        s_start = s_end = None
    launch_id = next((i for i, v in db.strings.items() if v == "launch"), None)

    joins = {}
    bad_time = bad_join = bad_pid = 0
    tasks = db.tasks()
    for t in tasks:
        where = f"task {t['task_id']} ({t['type']}, connectionId {t['connection']})"
        c.expect(t["type"] in ("KERNEL", "MEMCPY_ASYNC", "MEMSET"), f"{where}: unknown taskType string {t['type']!r}")
        if not (t["start"] is not None and EPOCH_2017_NS < t["start"] <= t["end"]):
            bad_time += 1
            c.expect(False, f"{where}: times ({t['start']}, {t['end']}) are not epoch ns with start <= end")
        elif s_start is not None and not (s_start - SESSION_SLACK_NS <= t["start"] and t["end"] <= s_end + SESSION_SLACK_NS):
            bad_time += 1
            c.expect(False, f"{where}: [{t['start']}, {t['end']}] lies outside SESSION_TIME_INFO [{s_start}, {s_end}]")
        launch = db.api_row(t["connection"])
        runtime = db.api_row(t["connection"] + RUNTIME_CONNECTION_OFFSET) if t["connection"] is not None else None
        ok = c.expect(launch is not None and launch["type"] == API_TYPE_NODE and launch["name_id"] == launch_id,
                      f"{where}: no CANN_API row (type 10000, name 'launch') with connectionId {t['connection']}; "
                      f"found {launch}")
        ok &= c.expect(runtime is not None and runtime["type"] == API_TYPE_RUNTIME,
                       f"{where}: no runtime CANN_API row (type 5000) with connectionId {t['connection']} + 2**32; "
                       f"found {runtime}")
        if not ok:
            bad_join += 1
            continue
        c.expect(launch["start"] == runtime["start"] and launch["global_tid"] == runtime["global_tid"],
                 f"{where}: the launch row and the runtime row describe different calls ({launch} / {runtime})")
        c.expect(launch["start"] <= t["start"] + LAUNCH_SKEW_NS,
                 f"{where}: starts at {t['start']}, before its launching call {runtime['name']} at {launch['start']}")
        if (launch["global_tid"] >> 32) != t["pid"] or (pid is not None and t["pid"] != pid):
            bad_pid += 1
            c.expect(False, f"{where}: globalPid {t['pid']} vs launching globalTid pid {launch['global_tid'] >> 32}"
                            f"{'' if pid is None else f' vs the program pid {pid}'}")
        joins[t["connection"]] = (launch, runtime)
    c.note(f"{len(tasks)} tasks; {len(joins)} join their launch and runtime rows; "
           f"{bad_join} without, {bad_time} with bad times, {bad_pid} with the wrong pid")
    return joins


def kernel_matches(name, base):
    """True for the demangled name of `base` (e.g. 'vector_add' or 'scale_kernel<float>')."""
    return name is not None and re.match(r"^(void )?" + re.escape(base) + r"\(", name) is not None


def one_db(c, dbs, what):
    c.expect(len(dbs) == 1, f"{what}: expected exactly one DB, found {len(dbs)}: {dbs}")
    return ProfileDb(dbs[0]) if dbs else None


def replaying_db(c, dbs, what):
    """The DB with replay rows, where a program also starts helper processes that get DBs of their
    own (torch.compile's compile workers): exactly one may have any."""
    with_rows = []
    for path in dbs:
        db = ProfileDb(path)
        if db.replay_kernels():
            with_rows.append(db)
    c.expect(len(with_rows) == 1, f"{what}: expected one DB with replay rows among {len(dbs)}, found {len(with_rows)}")
    if len(dbs) > 1:
        c.note(f"{len(dbs)} DBs (helper processes); the one with replay rows is checked")
    return with_rows[0] if with_rows else None


def main_process(c, program_output, role="main"):
    procs = processes(program_output)
    c.expect(role in procs, f"the program printed no 'gpuprof-test: process role={role}' line")
    return procs.get(role, {})


# ---- Expectations ------------------------------------------------------------------------------

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
