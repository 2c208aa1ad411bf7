"""profile.key_averages(): a profile DB's ops summed by name, shaped like torch.profiler's.

    averages = prof.key_averages()
    print(averages.table(sort_by="self_cpu_time_total", row_limit=10))
    for e in averages: e.key, e.count, e.cpu_time_total, e.self_cpu_time_total, e.cpu_time, ...

Read from the DB with sqlite3 (read-only): the PYTORCH_API rows of type op (50001; the mstx,
queue and Python-trace rows are not ops), ProfilerStep#N included as torch includes it. Times are
microseconds, as torch's. How they are counted:

- total (cpu_time_total): the op's own span, endNs - startNs, summed over its calls;
- self (self_cpu_time_total): the span less the spans of the ops directly inside it on the same
  thread (globalTid), as torch's self time;
- device (self_device_time_total, alias self_cuda_time_total): the kernels (TASK rows) linked to
  the op through CONNECTION_IDS, each counted for the innermost op it is linked to; the total
  (device_time_total, cuda_time_total) adds the ops inside it. Without a linked kernel (a CPU run)
  the table has no device columns and those figures are 0.

No memory or shape columns: sort_by takes the keys listed in SORT_KEYS only.
"""

import os
import sqlite3
import urllib.request

__all__ = ["FunctionEventAvg", "EventList", "key_averages", "SORT_KEYS"]

GPUPROF_TORCH_OP = 50001

# torch.profiler's sort_by keys gpuprof can order by (cuda_* and device_* are the same figures).
SORT_KEYS = ("cpu_time", "cpu_time_total", "self_cpu_time_total", "cuda_time", "cuda_time_total",
             "self_cuda_time_total", "device_time", "device_time_total", "self_device_time_total", "count")


class FunctionEventAvg:
    """One op name's calls (torch.autograd.profiler_util.FunctionEventAvg's fields gpuprof has)."""

    def __init__(self, key):
        self.key = key
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.device_time_total = 0.0
        self.self_device_time_total = 0.0

    @property
    def cpu_time(self):
        """Average per call."""
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def device_time(self):
        return self.device_time_total / self.count if self.count else 0.0

    # torch.profiler's names for the device figures.
    cuda_time = device_time

    @property
    def cuda_time_total(self):
        return self.device_time_total

    @property
    def self_cuda_time_total(self):
        return self.self_device_time_total

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} count={self.count} cpu_time_total={self.cpu_time_total:.3f}us "
                f"self_cpu_time_total={self.self_cpu_time_total:.3f}us "
                f"device_time_total={self.device_time_total:.3f}us>")


class EventList(list):
    """The averages, in the order their ops first started; table() prints them."""

    def __init__(self, items, has_device):
        super().__init__(items)
        self.has_device = has_device  # some kernel of the DB is linked to an op

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False):
        """The averages as torch.profiler's table: sorted by `sort_by` (a key of SORT_KEYS, largest
        first, ties by name; None: the order ops first started), at most `row_limit` rows (<= 0:
        all). max_src_column_width and max_shapes_column_width are taken and unused (there are no
        source or shape columns); top_level_events_only is not supported."""
        if top_level_events_only:
            raise ValueError("gpuprof key_averages().table: top_level_events_only is not supported")
        rows = list(self)
        note = None
        if sort_by is not None:
            if sort_by not in SORT_KEYS:
                raise ValueError(f"gpuprof key_averages().table: sort_by={sort_by!r} is not one of the figures "
                                 f"gpuprof has: {', '.join(SORT_KEYS)}")
            rows.sort(key=lambda e: e.key)
            rows.sort(key=lambda e: getattr(e, sort_by), reverse=True)
            if not self.has_device and sort_by.startswith(("cuda", "self_cuda", "device", "self_device")):
                note = f"no kernel of this profile is linked to an op: every {sort_by} is 0"
        if row_limit is not None and row_limit > 0:
            rows = rows[:row_limit]
        return _format(self, rows, max_name_column_width, header, note)


def _format_time(us):
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _percent(part, whole):
    return f"{100.0 * part / whole:.2f}%" if whole > 0 else "0.00%"


def _format(averages, rows, name_width, header, note):
    self_cpu = sum(e.self_cpu_time_total for e in averages)
    self_device = sum(e.self_device_time_total for e in averages)
    columns = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if averages.has_device:
        columns += ["Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"]
    columns.append("# of Calls")
    cells = []
    for e in rows:
        name = e.key if len(e.key) <= name_width else e.key[:max(name_width - 3, 0)] + "..."
        row = [name, _percent(e.self_cpu_time_total, self_cpu), _format_time(e.self_cpu_time_total),
               _percent(e.cpu_time_total, self_cpu), _format_time(e.cpu_time_total), _format_time(e.cpu_time)]
        if averages.has_device:
            row += [_format_time(e.self_device_time_total), _percent(e.self_device_time_total, self_device),
                    _format_time(e.device_time_total), _format_time(e.device_time)]
        row.append(str(e.count))
        cells.append(row)
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]

    def line(values):
        first = values[0].ljust(widths[0])
        return "  ".join([first] + [v.rjust(w) for v, w in zip(values[1:], widths[1:])])

    rule = "  ".join("-" * w for w in widths)
    out = []
    if header:
        out += ["=" * len(rule), header]
    out += [rule, line(columns), rule]
    out += [line(r) for r in cells]
    out += [rule, f"Self CPU time total: {_format_time(self_cpu)}"]
    if averages.has_device:
        out.append(f"Self CUDA time total: {_format_time(self_device)}")
    if note:
        out.append(note)
    return "\n".join(out) + "\n"


def _connect(db):
    # Read-only and by file name whatever characters it holds (a name with '?' or '#' is a file).
    uri = "file:" + urllib.request.pathname2url(os.path.abspath(db)) + "?mode=ro"
    return sqlite3.connect(uri, uri=True)


def key_averages(db):
    """The EventList of `db` (a finalized profile DB)."""
    if not os.path.isfile(db):
        raise RuntimeError(f"gpuprof key_averages: no profile DB at {db}")
    with _connect(db) as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {"PYTORCH_API", "STRING_IDS"} <= tables:
            raise RuntimeError(f"gpuprof key_averages: {db} has no PYTORCH_API and STRING_IDS tables")
        ops = conn.execute("""
            SELECT p.rowid, p.startNs, p.endNs, p.globalTid, COALESCE(s.value, '#' || p.name)
            FROM PYTORCH_API p LEFT JOIN STRING_IDS s ON s.id = p.name
            WHERE p.type = ? AND p.startNs IS NOT NULL AND p.endNs IS NOT NULL
            ORDER BY p.globalTid, p.startNs, p.endNs DESC""", (GPUPROF_TORCH_OP,)).fetchall()
        links = []
        if {"TASK", "CONNECTION_IDS"} <= tables:
            links = conn.execute("""
                SELECT t.rowid, t.endNs - t.startNs, p.rowid, p.startNs, p.endNs FROM TASK t
                JOIN CONNECTION_IDS c ON c.connectionId = t.connectionId
                JOIN PYTORCH_API p ON p.connectionId = c.id
                WHERE p.type = ? AND t.startNs IS NOT NULL AND t.endNs >= t.startNs""",
                                 (GPUPROF_TORCH_OP,)).fetchall()
    return _summarize(ops, links)


def _summarize(ops, links):
    # Each kernel goes to the innermost op it is linked to: the latest start, then the earliest end.
    kernel_op = {}
    for task, duration, op, start, end in links:
        best = kernel_op.get(task)
        if best is None or (start, -end) > (best[1], -best[2]):
            kernel_op[task] = (op, start, end, duration)
    device_self = {}
    for op, _, _, duration in kernel_op.values():
        device_self[op] = device_self.get(op, 0) + duration

    # Parents on each thread: ops come sorted by thread, start, and longest first.
    index = {}
    spans = []  # [rowid, start, end, name, parent index, children ns, device total ns]
    stack = []
    thread = None
    for rowid, start, end, tid, name in ops:
        if tid != thread:
            thread, stack = tid, []
        while stack and not (start >= spans[stack[-1]][1] and end <= spans[stack[-1]][2]):
            stack.pop()
        parent = stack[-1] if stack else None
        index[rowid] = len(spans)
        spans.append([rowid, start, end, name, parent, 0, device_self.get(rowid, 0)])
        if parent is not None:
            spans[parent][5] += end - start
        stack.append(len(spans) - 1)
    for span in reversed(spans):  # children come after their parents
        if span[4] is not None:
            spans[span[4]][6] += span[6]

    averages = {}
    for span in sorted(spans, key=lambda sp: (sp[1], sp[0])):
        rowid, start, end, name, _, children, device_total = span
        e = averages.get(name)
        if e is None:
            e = averages[name] = FunctionEventAvg(name)
        e.count += 1
        e.cpu_time_total += (end - start) / 1e3
        e.self_cpu_time_total += max(end - start - children, 0) / 1e3
        e.device_time_total += device_total / 1e3
        e.self_device_time_total += device_self.get(rowid, 0) / 1e3
    return EventList(averages.values(), has_device=bool(kernel_op))
