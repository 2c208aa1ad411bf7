"""torch.profiler's user-facing API on gpuprof.profile (issue 39, item 3): events(), key_averages()
with group_by_input_shape / group_by_stack_n, memory columns and sort keys, total_average(),
export_stacks(), export_memory_timeline(), gpuprof.record_function, supported_activities(),
with_flops, experimental_config, positional activities and tensorboard_trace_handler.

TorchApiTest runs one small CPU model under torch.profiler and then under gpuprof.profile in the
same script, with the same arguments, and compares what the two give. Needs torch; the run needs
the native libraries and the CLI (GPUPROF_LIB_DIR, GPUPROF_CLI, set by CTest as for test_profile).
"""

import gzip
import json
import os
import re
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import test_profile  # noqa: E402  (its script runner)
from test_profile import HAVE_TORCH  # noqa: E402

SCRIPT = """
    import json, re, warnings
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity as TorchActivity

    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    x, a, b = torch.randn(8, 16), torch.randn(8, 16), torch.randn(16, 32)
    bias, ba, bb = torch.randn(32), torch.randn(3, 8, 16), torch.randn(3, 16, 4)
    img, weight = torch.randn(2, 3, 10, 12), torch.randn(5, 3, 3, 3)

    @gpuprof.record_function("decorated")
    def decorated():
        return torch.relu(a)

    def work():
        with gpuprof.record_function("my_block"):
            model(x)
        torch.mm(a, b)
        torch.addmm(bias, a, b)
        torch.bmm(ba, bb)
        F.conv2d(img, weight, stride=2, padding=1)
        decorated()
        decorated()

    ARGS = dict(record_shapes=True, profile_memory=True, with_stack=True, with_flops=True)
    work()  # warm: first calls allocate what later ones reuse
    with torch.profiler.profile(activities=[TorchActivity.CPU], **ARGS) as tp:
        work()
    os.environ["GPUPROF_OUTPUT_DIR"] = OUT  # the DBs of the profiles without db_handler
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = torch._C._profiler._ExperimentalConfig()
        with gpuprof.profile([gpuprof.ProfilerActivity.CPU], experimental_config=config,
                             on_trace_ready=gpuprof.tensorboard_trace_handler(os.path.join(OUT, "tb")), **ARGS) as gp:
            work()
        with gpuprof.profile([TorchActivity.CPU], experimental_config=config,
                             on_trace_ready=torch.profiler.tensorboard_trace_handler(os.path.join(OUT, "tb_torch"),
                                                                                     worker_name="w0")):
            torch.relu(a)
        with gpuprof.profile(on_trace_ready=gpuprof.tensorboard_trace_handler(os.path.join(OUT, "tb_gz"),
                                                                               use_gzip=True)):
            torch.relu(a)

    def summary(prof):
        def header(averages):
            return re.split(r"\\s{2,}", next(ln for ln in averages.table(sort_by="self_cpu_memory_usage", row_limit=5)
                                              .splitlines() if ln.strip().startswith("Name")).strip())
        ka = prof.key_averages()
        shapes = prof.key_averages(group_by_input_shape=True)
        stacks = prof.key_averages(group_by_stack_n=2)
        total = ka.total_average()
        prof.export_stacks(os.path.join(OUT, f"{type(prof).__module__}.stacks"), "self_cpu_time_total")
        return {
            "events_type": [type(prof.events()).__module__, type(prof.events()).__name__],
            "event_type": sorted({type(e).__module__ + "." + type(e).__name__ for e in prof.events()}),
            "avg_type": sorted({type(e).__module__ + "." + type(e).__name__ for e in ka}),
            "counts": {e.key: e.count for e in ka},
            "flops": {e.key: e.flops for e in ka},
            "memory": {e.key: e.cpu_memory_usage for e in ka},
            "header": header(ka),
            "header_shapes_stacks": header(prof.key_averages(group_by_input_shape=True, group_by_stack_n=5)),
            "shape_keys": sorted([e.key, str(e.input_shapes)] for e in shapes),
            "stack_mm": [e.stack for e in stacks if e.key == "aten::mm"],
            "total": [total.key, total.count, type(total).__name__],
            "sorted_ok": all(ka.table(sort_by=k, row_limit=3) for k in (
                "self_cpu_memory_usage", "cpu_memory_usage", "cpu_time_total", "self_cpu_time_total", "count")),
        }

    gp.export_memory_timeline(os.path.join(OUT, "memory.json"), device="cpu")
    gp.export_memory_timeline(os.path.join(OUT, "memory.raw.json.gz"), device="cpu")
    gp.export_memory_timeline(os.path.join(OUT, "memory.html"), device="cpu")
    print("RESULT", json.dumps({
        "torch": summary(tp), "gpuprof": summary(gp),
        "supported": [sorted(a.name for a in gpuprof.supported_activities()),
                      sorted(a.name for a in torch.profiler.supported_activities())],
        "notes": [str(w.message) for w in caught if "experimental_config" in str(w.message)],
    }))
"""


def device_figure(event, name):
    """torch 1.13's cuda_* figure of an event, under torch 2.x's device_* name where that is its name."""
    return getattr(event, name) if hasattr(event, name) else getattr(event, name.replace("cuda", "device"))


@unittest.skipUnless(HAVE_TORCH, "torch is not importable by this Python")
@unittest.skipUnless(os.environ.get("GPUPROF_LIB_DIR") and os.environ.get("GPUPROF_CLI"),
                     "GPUPROF_LIB_DIR and GPUPROF_CLI are set by CTest")
class TorchApiTest(test_profile.ScriptRunner, unittest.TestCase):
    """One run of SCRIPT, shared by the tests (each reads what it needs)."""

    _run = None

    def result(self):
        if TorchApiTest._run is None:
            out, dbs = self.run_script(SCRIPT)
            line = next(ln for ln in self.script_output.splitlines() if ln.startswith("RESULT "))
            TorchApiTest._run = (out, dbs, json.loads(line[len("RESULT "):]))
        return TorchApiTest._run

    def test_events_and_key_averages_are_torchs_own_objects(self):
        _, _, r = self.result()
        for what in ("events_type", "event_type", "avg_type"):
            self.assertEqual(r["gpuprof"][what], r["torch"][what], what)
        self.assertEqual(r["gpuprof"]["events_type"], ["torch.autograd.profiler_util", "EventList"])

    def test_key_averages_counts_the_ops_torch_counts(self):
        _, _, r = self.result()
        ops = ("aten::linear", "aten::addmm", "aten::relu", "aten::mm", "aten::bmm", "aten::conv2d", "my_block",
               "decorated")
        self.assertEqual({k: r["gpuprof"]["counts"].get(k) for k in ops}, {k: r["torch"]["counts"].get(k) for k in ops})
        self.assertEqual(r["gpuprof"]["counts"]["decorated"], 2, "the decorator opens one range per call")

    def test_table_has_torchs_columns_with_memory_shapes_stacks_and_flops(self):
        _, _, r = self.result()
        self.assertEqual(r["gpuprof"]["header"], r["torch"]["header"])
        torch_header, gpuprof_header = r["torch"]["header_shapes_stacks"], r["gpuprof"]["header_shapes_stacks"]
        if "Source Location" not in torch_header:  # torch 2.x keeps stacks only with experimental_config(verbose=True)
            gpuprof_header = [c for c in gpuprof_header if c != "Source Location"]
        self.assertEqual(gpuprof_header, torch_header)
        for column in ("CPU Mem", "Self CPU Mem", "Total KFLOPs"):
            self.assertIn(column, r["gpuprof"]["header"])
        for column in ("Input Shapes", "Source Location"):
            self.assertIn(column, r["gpuprof"]["header_shapes_stacks"])
        self.assertTrue(r["gpuprof"]["sorted_ok"])

    def test_with_flops_gives_torchs_figures(self):
        _, _, r = self.result()
        ops = ("aten::mm", "aten::addmm", "aten::bmm", "aten::conv2d", "aten::linear", "aten::relu")
        self.assertEqual({k: r["gpuprof"]["flops"][k] for k in ops}, {k: r["torch"]["flops"][k] for k in ops})
        self.assertGreater(r["gpuprof"]["flops"]["aten::conv2d"], 0)

    def test_memory_usage_per_op_is_torchs(self):
        ops = ("aten::mm", "aten::addmm", "aten::bmm", "aten::conv2d", "aten::linear", "my_block")
        # torch.profiler's own run sometimes misses an op's allocation on a loaded machine (seen with
        # torch 1.13 on 2 busy cores: aten::bmm 0 in one run of three, gpuprof 384 as in the others;
        # once aten::mm and aten::bmm both, in a CI run beside a build): the ops torch saw allocate are
        # compared, and a run in which torch missed more than one is run again (three runs at most).
        # The two profiles time two calls of the workload, and one call's aten::addmm sometimes
        # allocates 1024 B more than another's (2176 against 1152, seen under torch.profiler and
        # under gpuprof alike in CI runs): a run whose figures differ is run again too.
        for attempt in range(3):
            _, _, r = self.result()
            mine, torchs = r["gpuprof"]["memory"], r["torch"]["memory"]
            seen = [k for k in ops if torchs[k] != 0]
            if len(seen) >= len(ops) - 1 and all(mine[k] == torchs[k] for k in seen):
                break
            TorchApiTest._run = None
        self.assertGreaterEqual(len(seen), len(ops) - 1, torchs)
        self.assertEqual({k: mine[k] for k in seen}, {k: torchs[k] for k in seen})
        self.assertGreater(mine["aten::mm"], 0)

    def test_group_by_input_shape_keys_are_torchs(self):
        _, _, r = self.result()
        ops = {"aten::mm", "aten::addmm", "aten::bmm", "aten::conv2d", "aten::linear", "aten::relu"}
        mine = [k for k in r["gpuprof"]["shape_keys"] if k[0] in ops]
        self.assertEqual(mine, [k for k in r["torch"]["shape_keys"] if k[0] in ops])
        self.assertIn(["aten::mm", "[[8, 16], [16, 32]]"], mine)

    def test_group_by_stack_n_and_total_average(self):
        _, _, r = self.result()
        stacks = r["gpuprof"]["stack_mm"]
        self.assertEqual(len(stacks), 1, stacks)
        self.assertEqual(len(stacks[0]), 2)
        self.assertRegex(stacks[0][0], r"script\.py\(\d+\): work$")
        total = r["gpuprof"]["total"]
        self.assertEqual(total, ["Total", sum(r["gpuprof"]["counts"].values()), "FunctionEventAvg"])

    def test_export_stacks_writes_flame_graph_lines(self):
        out, _, _ = self.result()
        with open(os.path.join(out, "gpuprof.profiler.stacks"), encoding="utf-8") as f:
            lines = f.read().splitlines()
        self.assertTrue(lines)
        for line in lines:
            self.assertRegex(line, r"^\S+ \d+$")  # "outer;...;inner value", no blanks in frames
        self.assertTrue(any(re.search(r"script\.py\(\d+\):_<module>;\S*script\.py\(\d+\):_work \d+$", ln)
                            for ln in lines), lines[:5])

    def test_export_memory_timeline_in_torchs_format(self):
        out, _, _ = self.result()
        with open(os.path.join(out, "memory.json"), encoding="utf-8") as f:
            times, sizes = json.load(f)
        self.assertEqual(len(times), len(sizes))
        self.assertTrue(times)
        self.assertTrue(all(len(s) == 9 for s in sizes), "torch 2.x: [0, 7 categories, unknown]")
        self.assertEqual(times, sorted(times))
        self.assertGreater(max(s[8] for s in sizes), 0)
        with gzip.open(os.path.join(out, "memory.raw.json.gz"), "rt") as f:
            raw = json.load(f)
        self.assertTrue(all(len(e) == 4 and e[1] in (1, 2, 4) and e[3] == 7 for e in raw))
        with open(os.path.join(out, "memory.html"), encoding="utf-8") as f:
            self.assertIn("<svg", f.read())

    def test_supported_activities_and_experimental_config_note(self):
        _, _, r = self.result()
        self.assertEqual(r["supported"][0], r["supported"][1])
        self.assertEqual(len(r["notes"]), 1, "said once for two profiles")
        self.assertIn("experimental_config is ignored", r["notes"][0])

    def test_tensorboard_trace_handlers_write_where_tensorboard_reads(self):
        out, _, _ = self.result()
        for folder, pattern in (("tb", r"^.+_\d+\.\d+\.pt\.trace\.json$"), ("tb_torch", r"^w0\.\d+\.pt\.trace\.json$"),
                                ("tb_gz", r"^.+_\d+\.\d+\.pt\.trace\.json\.gz$")):
            names = os.listdir(os.path.join(out, folder))
            self.assertEqual(len(names), 1, names)
            self.assertRegex(names[0], pattern)
            path = os.path.join(out, folder, names[0])
            with (gzip.open(path, "rt") if path.endswith(".gz") else open(path, encoding="utf-8")) as f:
                trace = json.load(f)
            self.assertIn("aten::relu", {e.get("name") for e in trace["traceEvents"]})


@unittest.skipUnless(HAVE_TORCH, "torch is not importable by this Python")
class ArgumentsTest(unittest.TestCase):
    def test_activities_may_come_first_unnamed_as_a_list(self):
        import gpuprof
        cpu = gpuprof.ProfilerActivity.CPU
        self.assertEqual(gpuprof.profile([cpu]).activities, {cpu})
        self.assertEqual(gpuprof.profile((cpu,), with_flops=True).activities, {cpu})
        with self.assertRaisesRegex(TypeError, r"write \["):
            gpuprof.profile(cpu)

    def test_empty_activities_are_every_activity_as_torchs(self):
        import gpuprof
        self.assertEqual(gpuprof.profile(activities=[]).activities, gpuprof.profile().activities)

    def test_torch_tensorboard_trace_handler_is_taken(self):
        import torch.profiler
        import gpuprof
        handler = torch.profiler.tensorboard_trace_handler(tempfile.mkdtemp())
        self.assertIs(gpuprof.profile(on_trace_ready=handler).on_trace_ready, handler)


@unittest.skipUnless(HAVE_TORCH, "torch is not importable by this Python")
class EventsFromDbTest(unittest.TestCase):
    """torch's objects over a hand-made DB: self times subtract the direct children on the same
    thread, each kernel is the innermost linked op's, memory is counted in the ops whose span holds
    it, and frames, shapes and FLOPs come from the DB."""

    def make_db(self):
        import sqlite3
        db = os.path.join(tempfile.mkdtemp(prefix="gpuprof_events_"), "ascend_pytorch_profiler.db")
        with sqlite3.connect(db) as conn:
            conn.executescript("""
                CREATE TABLE STRING_IDS (id INTEGER PRIMARY KEY, value TEXT);
                CREATE TABLE PYTORCH_API (startNs INTEGER, endNs INTEGER, globalTid INTEGER, connectionId INTEGER,
                    name INTEGER, sequenceNumber INTEGER, fwdThreadId INTEGER, inputDtypes INTEGER,
                    inputShapes INTEGER, callchainId INTEGER, type INTEGER);
                CREATE TABLE PYTORCH_CALLCHAINS (id INTEGER, stack INTEGER, stackDepth INTEGER);
                CREATE TABLE CONNECTION_IDS (id INTEGER, connectionId INTEGER);
                CREATE TABLE TASK (startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER,
                    globalTaskId INTEGER, globalPid INTEGER, taskType INTEGER, contextId INTEGER, streamId INTEGER,
                    taskId INTEGER, modelId INTEGER);
                CREATE TABLE COMPUTE_TASK_INFO (name INTEGER, globalTaskId INTEGER PRIMARY KEY);
                CREATE TABLE OP_MEMORY (name INTEGER, size INTEGER, allocationTime INTEGER, releaseTime INTEGER,
                    activeReleaseTime INTEGER, duration INTEGER, activeDuration INTEGER,
                    allocationTotalAllocated INTEGER, allocationTotalReserved INTEGER, allocationTotalActive INTEGER,
                    releaseTotalAllocated INTEGER, releaseTotalReserved INTEGER, releaseTotalActive INTEGER,
                    streamPtr INTEGER, deviceId INTEGER);
                INSERT INTO STRING_IDS VALUES (1, 'aten::linear'), (2, 'aten::addmm'), (3, 'aten::relu'),
                    (4, 'mark'), (5, 'gemm_a'), (6, 'gemm_b'), (7, '32;' || char(13, 10) || '8,16;' || char(13, 10)
                    || '16,32'), (8, 'a.py(3): inner'), (9, 'a.py(9): <module>');
                -- thread 7: linear [0, 10000) holding addmm [1000, 7000); relu [20000, 23000) alone
                -- thread 8: addmm [0, 4000); an mstx row (type 50004) that is not an op
                INSERT INTO PYTORCH_API VALUES
                    (0, 10000, 7, 100, 1, -1, 0, NULL, NULL, 1, 50001),
                    (1000, 7000, 7, 101, 2, -1, 0, NULL, 7, NULL, 50001),
                    (20000, 23000, 7, NULL, 3, -1, 0, NULL, NULL, NULL, 50001),
                    (0, 4000, 8, 102, 2, -1, 0, NULL, NULL, NULL, 50001),
                    (0, 50000, 8, 103, 4, -1, 0, NULL, NULL, NULL, 50004);
                INSERT INTO PYTORCH_CALLCHAINS VALUES (1, 8, 0), (1, 9, 1);
                -- kernel 55 is linked to linear and to the addmm inside it: it is addmm's
                INSERT INTO CONNECTION_IDS VALUES (100, 55), (101, 55), (102, 56);
                INSERT INTO TASK (startNs, endNs, deviceId, connectionId, globalTaskId)
                    VALUES (30000, 32500, 0, 55, 1), (40000, 41000, 0, 56, 2);
                INSERT INTO COMPUTE_TASK_INFO VALUES (5, 1), (6, 2);
                -- 4096 B on the CPU allocated in thread 7's addmm (in linear), freed in relu; 512 B on GPU 0
                -- in linear; 100 B in no op (torch matches by time alone: thread 8's addmm holds none).
                -- 1000 B on the CPU were allocated before the first of them (5096 - 4096).
                INSERT INTO OP_MEMORY (name, size, allocationTime, releaseTime, allocationTotalAllocated, deviceId)
                    VALUES (2, 4096, 5000, 21000, 5096, -1), (1, 512, 8000, NULL, 512, 0),
                           (4, 100, 30000, NULL, 1100, -1);
            """)
        return db

    def load(self, **kwargs):
        from gpuprof import _events
        return _events.load(self.make_db(), **kwargs)

    def test_self_total_and_device_times(self):
        from torch.autograd import profiler_util
        events = self.load()
        self.assertIsInstance(events, profiler_util.EventList)
        averages = {e.key: e for e in events.key_averages()}
        self.assertEqual(sorted(averages), ["aten::addmm", "aten::linear", "aten::relu", "gemm_a", "gemm_b"])
        linear, addmm, relu = averages["aten::linear"], averages["aten::addmm"], averages["aten::relu"]
        self.assertEqual((linear.count, linear.cpu_time_total, linear.self_cpu_time_total), (1, 10.0, 4.0))
        self.assertEqual((addmm.count, addmm.cpu_time_total, addmm.self_cpu_time_total), (2, 10.0, 10.0))
        self.assertEqual(addmm.cpu_time, 5.0)
        self.assertEqual((relu.count, relu.cpu_time_total, relu.self_cpu_time_total), (1, 3.0, 3.0))
        self.assertEqual((device_figure(addmm, "self_cuda_time_total"), device_figure(addmm, "cuda_time_total")), (3.5, 3.5))
        self.assertEqual((device_figure(linear, "self_cuda_time_total"), device_figure(linear, "cuda_time_total")), (0.0, 2.5))
        self.assertEqual(device_figure(relu, "cuda_time_total"), 0.0)
        self.assertEqual(device_figure(averages["gemm_a"], "self_cuda_time_total"), 2.5, "the kernel is a CUDA event of its own")
        total = events.key_averages().total_average()
        self.assertEqual((total.key, total.count, total.self_cpu_time_total), ("Total", 6, 17.0))

    def test_table_sorts_limits_and_shows_device_columns(self):
        averages = self.load().key_averages()
        table = averages.table(sort_by="cuda_time_total", row_limit=2)
        lines = [ln.split()[0] for ln in table.splitlines() if "aten::" in ln or "gemm" in ln]
        self.assertEqual(lines, ["aten::addmm", "aten::linear"])
        self.assertIn("Self CUDA", table)
        self.assertIn("Self CPU time total: 17.000us", table)
        self.assertIn("Self CUDA time total: 3.500us", table)

    def test_memory_in_the_ops_that_hold_it(self):
        averages = {e.key: e for e in self.load(profile_memory=True).key_averages()}
        linear, addmm, relu = averages["aten::linear"], averages["aten::addmm"], averages["aten::relu"]
        self.assertEqual((linear.cpu_memory_usage, linear.self_cpu_memory_usage), (4096, 0))
        self.assertEqual((device_figure(linear, "cuda_memory_usage"), device_figure(linear, "self_cuda_memory_usage")), (512, 512))
        self.assertEqual((addmm.cpu_memory_usage, addmm.self_cpu_memory_usage), (4096, 4096))
        self.assertEqual(relu.cpu_memory_usage, -4096)
        self.assertEqual((averages["[memory]"].count, averages["[memory]"].cpu_memory_usage), (1, 100))
        table = self.load(profile_memory=True).key_averages().table(sort_by="self_cpu_memory_usage")
        header = next(ln for ln in table.splitlines() if ln.strip().startswith("Name"))
        for column in ("CPU Mem", "Self CPU Mem", "CUDA Mem", "Self CUDA Mem"):
            self.assertIn(column, header)
        first = next(ln for ln in table.splitlines() if ln.strip().startswith(("aten", "[memory]", "gemm")))
        self.assertEqual(first.split()[0], "aten::addmm")

    def test_shapes_stacks_and_flops_from_the_db(self):
        events = self.load(record_shapes=True, with_flops=True)
        keys = sorted((e.key, str(e.input_shapes)) for e in events.key_averages(group_by_input_shapes=True)
                      if e.key == "aten::addmm")
        self.assertEqual(keys, [("aten::addmm", "[[32], [8, 16], [16, 32]]"), ("aten::addmm", "[]")])
        flops = {e.key: e.flops for e in events.key_averages()}
        self.assertEqual((flops["aten::addmm"], flops["aten::linear"]), (2 * 8 * 16 * 32, 0))
        linear = next(e for e in events if e.name == "aten::linear")
        self.assertEqual(linear.stack, ["a.py(3): inner", "a.py(9): <module>"])
        path = os.path.join(tempfile.mkdtemp(), "stacks.txt")
        events.export_stacks(path, "self_cpu_time_total")
        with open(path, encoding="utf-8") as f:
            self.assertEqual(f.read(), "a.py(9):_<module>;a.py(3):_inner 4\n")

    def test_memory_timeline_formats(self):
        from gpuprof import _memory_timeline
        db = self.make_db()
        out = tempfile.mkdtemp()
        _memory_timeline.export_memory_timeline(db, os.path.join(out, "m.json"), device="cpu")
        with open(os.path.join(out, "m.json"), encoding="utf-8") as f:
            times, sizes = json.load(f)
        # torch's coalescing: the pre-existing bytes at the first time, then each change (us)
        self.assertEqual(times, [5, 5, 21, 30])
        self.assertEqual([s[8] for s in sizes], [1000, 5096, 1000, 1100])
        self.assertEqual(sizes[0], [0] * 8 + [1000])
        _memory_timeline.export_memory_timeline(db, os.path.join(out, "c.raw.json.gz"), device="cpu")
        with gzip.open(os.path.join(out, "c.raw.json.gz"), "rt") as f:
            self.assertEqual(json.load(f)[:2], [[-1, 1, 1000, 7], [5000, 2, 4096, 7]])
        _memory_timeline.export_memory_timeline(db, os.path.join(out, "m.raw.json.gz"), device="cuda:0")
        with gzip.open(os.path.join(out, "m.raw.json.gz"), "rt") as f:
            self.assertEqual(json.load(f), [[8000, 2, 512, 7]])
        with self.assertRaisesRegex(ValueError, "device 'tpu'"):
            _memory_timeline.export_memory_timeline(db, os.path.join(out, "x.json"), device="tpu")


if __name__ == "__main__":
    unittest.main()
