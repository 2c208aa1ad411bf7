"""A profile DB as torch's own profiler objects: prof.events() and prof.key_averages().

    events = prof.events()                      # torch.autograd.profiler_util.EventList
    print(prof.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_memory_usage"))

load(db, ...) reads the DB with sqlite3 (read-only) and builds torch's FunctionEvent for each row
the way torch 1.13's profiler builds them from Kineto's events (torch/autograd/profiler.py
_parse_kineto_results), then torch's EventList over them with its tree built. So table(),
key_averages(group_by_input_shapes, group_by_stack_n), total_average(), export_stacks(), the
memory columns and every sort key are torch's code on the DB's figures:

- each PYTORCH_API op (type 50001) is a CPU event: its name (ProfilerStep#N as ProfilerStep*, as
  torch names it in the table; trace_name keeps N), its span in microseconds from the session's
  start, the thread (the OS thread id: the DB's globalTid & 0xffffffff), sequence number, input
  shapes (record_shapes: the DB's "d0,d1;\\r\\nd0" as [[d0, d1], [d0]]), its Python stack
  (with_stack: PYTORCH_CALLCHAINS, innermost frame first as torch's) and FLOPs (with_flops:
  _flops.py). Ops of autograd's backward functions (fwdThreadId set) have torch's backward scope,
  so torch gives them the stack of their forward op;
- each TASK row (a kernel, copy or set on the GPU) is a CUDA event, and is appended as a kernel to
  the innermost op it is linked to through CONNECTION_IDS, as Kineto's correlation does;
- with profile_memory, each allocation of OP_MEMORY is +size at its allocation time and -size at its
  release: an op's cpu_memory_usage (cuda_memory_usage for a GPU allocation) sums the events
  within its span, and events within no op become torch's "[memory]" events. An allocation made
  before the recording and freed during it is not in OP_MEMORY, so its free is not counted.

torch's own names are filtered as torch filters them (profiler::_record_function_enter_new, ...).
"""

import os
import sqlite3
import urllib.request

from . import _flops, _messages

__all__ = ["load", "empty", "GPUPROF_TORCH_OP"]

GPUPROF_TORCH_OP = 50001
_SHAPE_SEPARATOR = ";\r\n"
_BACKWARD_FUNCTION = 1  # at::RecordScope::BACKWARD_FUNCTION


def _connect(db):
    # Read-only and by file name whatever characters it holds (a name with '?' or '#' is a file).
    uri = "file:" + urllib.request.pathname2url(os.path.abspath(db)) + "?mode=ro"
    return sqlite3.connect(uri, uri=True)


def _shapes(text):
    """The DB's shape string (DB_SPEC 3.3) as torch's input_shapes: a list of lists of ints."""
    if not text:
        return []
    shapes = []
    for item in text.split(_SHAPE_SEPARATOR):
        try:
            shapes.append([int(d) for d in item.split(",")] if item else [])
        except ValueError:
            shapes.append([])
    return shapes


def _read(conn, tables):
    ops = conn.execute("""
        SELECT p.rowid, p.startNs, p.endNs, p.globalTid, COALESCE(s.value, '#' || p.name), p.sequenceNumber,
               p.fwdThreadId, sh.value, p.callchainId
        FROM PYTORCH_API p LEFT JOIN STRING_IDS s ON s.id = p.name LEFT JOIN STRING_IDS sh ON sh.id = p.inputShapes
        WHERE p.type = ? AND p.startNs IS NOT NULL AND p.endNs IS NOT NULL""", (GPUPROF_TORCH_OP,)).fetchall()
    stacks = {}
    if "PYTORCH_CALLCHAINS" in tables:
        for chain, frame in conn.execute("""
                SELECT c.id, s.value FROM PYTORCH_CALLCHAINS c JOIN STRING_IDS s ON s.id = c.stack
                ORDER BY c.id, c.stackDepth"""):
            stacks.setdefault(chain, []).append(frame)
    tasks, links = [], []
    if "TASK" in tables:
        kernel_name = "NULL"
        join = ""
        if "COMPUTE_TASK_INFO" in tables:
            kernel_name, join = "kn.value", (" LEFT JOIN COMPUTE_TASK_INFO ci ON ci.globalTaskId = t.globalTaskId"
                                             " LEFT JOIN STRING_IDS kn ON kn.id = ci.name")
        tasks = conn.execute(f"""
            SELECT t.rowid, t.startNs, t.endNs, COALESCE(t.deviceId, 0), COALESCE({kernel_name}, tt.value, 'GPU task')
            FROM TASK t LEFT JOIN STRING_IDS tt ON tt.id = t.taskType{join}
            WHERE t.startNs IS NOT NULL AND t.endNs >= t.startNs""").fetchall()
        if "CONNECTION_IDS" in tables:
            links = conn.execute("""
                SELECT t.rowid, p.rowid, p.startNs, p.endNs FROM TASK t
                JOIN CONNECTION_IDS c ON c.connectionId = t.connectionId
                JOIN PYTORCH_API p ON p.connectionId = c.id
                WHERE p.type = ? AND p.startNs IS NOT NULL AND p.endNs IS NOT NULL""",
                                 (GPUPROF_TORCH_OP,)).fetchall()
    start = None
    if "SESSION_TIME_INFO" in tables:
        row = conn.execute("SELECT MIN(startTimeNs) FROM SESSION_TIME_INFO").fetchone()
        start = row[0] if row else None
    return ops, stacks, tasks, links, start


def _memory(conn, tables):
    """(time ns, bytes, on a GPU) of each allocation and release in OP_MEMORY, in time order."""
    if "OP_MEMORY" not in tables:
        return []
    events = []
    for size, allocated, released, device in conn.execute(
            "SELECT size, allocationTime, releaseTime, deviceId FROM OP_MEMORY WHERE allocationTime IS NOT NULL"):
        on_gpu = device is not None and device >= 0
        events.append((allocated, size or 0, on_gpu))
        if released is not None:
            events.append((released, -(size or 0), on_gpu))
    events.sort(key=lambda e: e[0])
    return events


def load(db, *, use_cuda=True, profile_memory=False, record_shapes=False, with_flops=False):
    """torch's EventList (tree built) of the finalized profile DB `db`. RuntimeError when `db` is no
    profile DB, ImportError without torch."""
    import bisect

    from torch.autograd import DeviceType
    from torch.autograd import profiler_util as pu

    if not os.path.isfile(db):
        raise RuntimeError(f"gpuprof events: no profile DB at {db}")
    with _connect(db) as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {"PYTORCH_API", "STRING_IDS"} <= tables:
            raise RuntimeError(f"gpuprof events: {db} has no PYTORCH_API and STRING_IDS tables: it is no profile DB")
        ops, stacks, tasks, links, start_ns = _read(conn, tables)
        memory = _memory(conn, tables) if profile_memory else []

    ops = [op for op in ops if not pu._filter_name(op[4])]
    # torch 2.x calls a GPU's memory device_memory_usage; 1.13 cuda_memory_usage.
    parameters = _parameters(pu.FunctionEvent.__init__)
    memory_name = "device_memory_usage" if "device_memory_usage" in parameters else "cuda_memory_usage"
    # torch 2.x counts an event's device time only when it names the device (use_device); 1.13 always.
    device = {"use_device": "cuda" if use_cuda else None} if "use_device" in parameters else {}

    def gpu_memory(nbytes):
        return {memory_name: nbytes, **device}

    if start_ns is None:
        start_ns = min([op[1] for op in ops] + [t[1] for t in tasks], default=0)

    def us(ns):
        return (ns - start_ns) / 1e3

    # The forward op of each autograd sequence number: its thread is a backward function's fwd_thread
    # (the DB's fwdThreadId is torch's own thread numbering, not an OS thread id).
    forward_thread = {}
    for _, _, _, tid, _, seq, fwd, _, _ in ops:
        if seq is not None and seq >= 0 and not fwd:
            forward_thread.setdefault(seq, tid & 0xFFFFFFFF)

    mem_times = [m[0] for m in memory]
    mem_used = [False] * len(memory)
    events, by_row = [], {}
    for rowid, begin, end, tid, name, seq, fwd, shape_text, chain in ops:
        backward = bool(fwd)
        cpu_mem = cuda_mem = 0
        if memory:
            for i in range(bisect.bisect_left(mem_times, begin), bisect.bisect_right(mem_times, end)):
                if memory[i][2]:
                    cuda_mem += memory[i][1]
                else:
                    cpu_mem += memory[i][1]
                mem_used[i] = True
        fe = pu.FunctionEvent(
            id=rowid, name=pu._rewrite_name(name, with_wildcard=True), trace_name=name,
            thread=tid & 0xFFFFFFFF, start_us=us(begin), end_us=us(end),
            fwd_thread=forward_thread.get(seq, 0) if backward else 0,
            input_shapes=_shapes(shape_text),
            stack=[f for f in stacks.get(chain, []) if pu._filter_stack_entry(f)] if chain is not None else [],
            scope=_BACKWARD_FUNCTION if backward else 0, cpu_memory_usage=cpu_mem, **gpu_memory(cuda_mem),
            sequence_nr=seq if seq is not None else -1, device_type=DeviceType.CPU, flops=0)
        fe._gpuprof_ns = (begin, end)
        events.append(fe)
        by_row[rowid] = fe

    # Each task goes to the innermost op it is linked to: the latest start, then the earliest end.
    task_op = {}
    for task, op, begin, end in links:
        best = task_op.get(task)
        if op in by_row and (best is None or (begin, -end) > (best[1], -best[2])):
            task_op[task] = (op, begin, end)
    next_id = max([op[0] for op in ops], default=0) + 1
    for rowid, begin, end, device_index, name in tasks:
        fe = pu.FunctionEvent(id=next_id, name=name, trace_name=name, thread=0, start_us=us(begin), end_us=us(end),
                              fwd_thread=0, input_shapes=[], stack=[], device_type=DeviceType.CUDA,
                              device_index=device_index, flops=0, **device)
        next_id += 1
        events.append(fe)
        if rowid in task_op:
            by_row[task_op[rowid][0]].append_kernel(name, device_index, (end - begin) / 1e3)

    for i, (at, nbytes, on_gpu) in enumerate(memory):
        if not mem_used[i]:
            events.append(pu.FunctionEvent(
                id=next_id, name=pu.MEMORY_EVENT_NAME, trace_name=None, thread=0, start_us=us(at), end_us=us(at),
                fwd_thread=0, input_shapes=[], stack=[], cpu_memory_usage=0 if on_gpu else nbytes,
                device_type=DeviceType.CPU, **gpu_memory(nbytes if on_gpu else 0)))
            next_id += 1

    events.sort(key=lambda e: [e.time_range.start, -e.time_range.end])
    result = _event_list(events, use_cuda, profile_memory, with_flops)
    if with_flops:
        _set_flops(result)
    if not record_shapes:
        for fe in result:  # with_flops alone records shapes; torch then shows none
            fe.input_shapes = []
    return result


def empty(*, use_cuda=True, profile_memory=False, with_flops=False):
    """torch's EventList with no event (a profile whose DB is not written yet: `gpuprof run`'s)."""
    return _event_list([], use_cuda, profile_memory, with_flops)


def _event_list(events, use_cuda, profile_memory, with_flops):
    """torch's EventList of `events`, its tree built (as torch's profile does before handing it out)."""
    from torch.autograd import profiler_util as pu

    try:
        result = pu.EventList(events, use_cuda=use_cuda, profile_memory=profile_memory, with_flops=with_flops)
    except TypeError:  # torch 2.x names it use_device
        result = pu.EventList(events, use_device="cuda" if use_cuda else None, profile_memory=profile_memory,
                              with_flops=with_flops)
    result._build_tree()
    return result


def _parameters(fn):
    import inspect

    return set(inspect.signature(fn).parameters)


def _descendants(fe):
    todo = list(fe.cpu_children)
    while todo:
        child = todo.pop(0)
        yield child.name, child.input_shapes
        todo.extend(child.cpu_children)


def _set_flops(events):
    unknown = 0
    for fe in events:
        if fe.name in _flops.COUNTED_OPS:
            flops = _flops.flops_of(fe.name, fe.input_shapes, _descendants(fe))
            if flops is None:
                unknown += 1
                flops = 0
            fe.flops = flops
        else:
            fe.flops = 0
    if unknown:
        _messages.warn_once(("flops", "conv2d output"),
                            f"gpuprof with_flops: {unknown} aten::conv2d call(s) are counted as 0 FLOPs: the profile "
                            "records input shapes, not stride and padding, and no op inside these calls shows "
                            "their output shape (the CPU's slow convolution path); torch's own profiler counts them",
                            UserWarning)
