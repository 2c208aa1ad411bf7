"""The shared part of check_db.py: the checker, the DB reader (ProfileDb), the program-output
parser and the checks every case makes (check_common). Only the standard library."""

import glob
import os
import re
import sqlite3


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
