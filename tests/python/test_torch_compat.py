"""What torch.profiler users bring to gpuprof.profile: torch.profiler's schedule and ProfilerActivity as
arguments, and key_averages().table() / export_chrome_trace() after a run (the rest of torch's API,
tensorboard_trace_handler included: test_torch_api.py). Needs torch; the runs need the native
libraries and the CLI (GPUPROF_LIB_DIR, GPUPROF_CLI, set by CTest as for test_profile).
"""

import json
import os
import re
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import test_profile  # noqa: E402  (its script runner and DB helpers)
from test_profile import HAVE_TORCH, op_names, rows  # noqa: E402

if HAVE_TORCH:
    import torch.profiler as torch_profiler


@unittest.skipUnless(HAVE_TORCH, "torch is not importable by this Python")
class TorchArgumentsTest(unittest.TestCase):
    def test_torch_profiler_activities_are_gpuprofs(self):
        import gpuprof
        cpu, cuda = gpuprof.ProfilerActivity.CPU, gpuprof.ProfilerActivity.CUDA
        self.assertEqual(gpuprof.profile(activities=[torch_profiler.ProfilerActivity.CPU]).activities, {cpu})
        self.assertEqual(gpuprof.profile(activities=[torch_profiler.ProfilerActivity.CPU,
                                                     torch_profiler.ProfilerActivity.CUDA]).activities, {cpu, cuda})
        self.assertEqual(gpuprof.profile(activities={torch_profiler.ProfilerActivity.CUDA, cpu}).activities,
                         {cpu, cuda})

    def test_a_torch_schedules_actions_are_gpuprofs(self):
        import warnings

        import gpuprof
        from gpuprof import ProfilerAction as A
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns about a schedule without warmup
            theirs = torch_profiler.schedule(wait=1, warmup=1, active=2, repeat=1)
        prof = gpuprof.profile(schedule=theirs)
        got = [prof._action_at(step) for step in range(6)]
        self.assertTrue(all(isinstance(a, A) for a in got),
                        f"not gpuprof.ProfilerAction: {[f'{type(a).__module__}.{a}' for a in got]}")
        self.assertEqual(got, [A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE, A.NONE, A.NONE])

    def test_a_schedule_returning_something_else_is_refused(self):
        import gpuprof
        prof = gpuprof.profile(schedule=lambda step: "record")
        with self.assertRaisesRegex(TypeError, "schedule returned 'record' for step 0.*ProfilerAction"):
            prof.start()
        self.assertFalse(prof.recording)


@unittest.skipUnless(HAVE_TORCH, "torch is not importable by this Python")
@unittest.skipUnless(os.environ.get("GPUPROF_LIB_DIR") and os.environ.get("GPUPROF_CLI"),
                     "GPUPROF_LIB_DIR and GPUPROF_CLI are set by CTest")
class TorchHabitsTest(test_profile.ScriptRunner, unittest.TestCase):
    def test_a_torch_schedule_records_the_steps_gpuprofs_would(self):
        _, dbs = self.run_script("""
            import warnings
            warnings.simplefilter("ignore")
            with gpuprof.profile(schedule=torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1),
                                 on_trace_ready=gpuprof.db_handler(OUT)) as prof:
                for _ in range(6):
                    torch.relu(torch.randn(4))
                    prof.step()
            print("db", prof.db_path)
        """)
        self.assertEqual(len(dbs), 1, "one recorded cycle, one DB")
        self.assertIn(f"db {dbs[0]}", self.script_output)
        self.assertEqual([r[0] for r in rows(dbs[0], "SELECT id FROM STEP_TIME ORDER BY id")], [2, 3])

    def test_key_averages_table_summarizes_the_dbs_ops(self):
        _, dbs = self.run_script("""
            x = torch.randn(64, 64)
            with gpuprof.profile(on_trace_ready=gpuprof.db_handler(OUT)) as prof:
                for _ in range(5):
                    torch.mm(x, x)
                for _ in range(3):
                    torch.relu(x)
            averages = prof.key_averages()
            print(averages.table(sort_by="count", row_limit=2))
            print("total", "|".join(f"{e.key}={e.count}:{e.cpu_time_total:.3f}" for e in averages))
            print("sorted", [e.key for e in sorted(averages, key=lambda e: -e.self_cpu_time_total)][:3])
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=3))
        """)
        db = dbs[0]
        lines = self.script_output.splitlines()
        header = next(ln for ln in lines if ln.lstrip().startswith("Name"))
        for column in ("Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"):
            self.assertIn(column, header)
        # sort_by="count", row_limit=2: the two most called ops, in order.
        first_table = lines[:next(i for i, ln in enumerate(lines) if ln.startswith("total "))]
        body = [ln for ln in first_table if ln.strip() and not ln.strip().startswith(("-", "Name", "Self CPU time total"))]
        self.assertEqual(len(body), 2, first_table)
        counts = [int(ln.split()[-1]) for ln in body]
        self.assertEqual(counts, sorted(counts, reverse=True))
        self.assertIn("Self CPU time total:", "\n".join(first_table))
        # Each op's figures are the DB's: calls and total time (us) per name.
        expected = {name: (n, total / 1e3) for name, n, total in rows(db, """
            SELECT s.value, COUNT(*), SUM(p.endNs - p.startNs) FROM PYTORCH_API p JOIN STRING_IDS s ON s.id = p.name
            WHERE p.type = 50001 GROUP BY s.value""")}
        got = {}
        for item in next(ln for ln in lines if ln.startswith("total ")).split(" ", 1)[1].split("|"):
            key, figures = item.rsplit("=", 1)
            n, total = figures.split(":")
            got[key] = (int(n), float(total))
        self.assertEqual(set(got), set(expected))
        for name, (n, total) in expected.items():
            self.assertEqual(got[name][0], n, name)
            self.assertAlmostEqual(got[name][1], total, places=2, msg=name)
        self.assertEqual(got["aten::mm"][0], 5)
        self.assertEqual(got["aten::relu"][0], 3)

    def test_key_averages_without_a_db_says_why(self):
        import gpuprof
        with self.assertRaisesRegex(RuntimeError, "key_averages: this profile has no DB"):
            gpuprof.profile().key_averages()
        with self.assertRaisesRegex(RuntimeError, "export_chrome_trace: this profile has no DB"):
            gpuprof.profile().export_chrome_trace(os.path.join(tempfile.mkdtemp(), "t.json"))

    def test_export_chrome_trace_writes_the_dbs_trace(self):
        out, dbs = self.run_script("""
            with gpuprof.profile(on_trace_ready=gpuprof.db_handler(OUT)) as prof:
                torch.relu(torch.randn(4))
            prof.export_chrome_trace(os.path.join(OUT, "trace.json"))
            print("exported")
        """)
        self.assertIn("exported", self.script_output)
        self.assertNotIn("wrote", self.script_output, "the CLI's report is not the program's output")
        with open(os.path.join(out, "trace.json"), encoding="utf-8") as f:
            trace = json.load(f)
        names = {e.get("name") for e in trace["traceEvents"]}
        self.assertIn("aten::relu", names)
        self.assertTrue(op_names(dbs[0]) <= names | {None}, "every op of the DB is in the trace")

    # Threads as Python names them (issue 39): the worker's ops sit on a track named as threading
    # named it, also when the worker ended before the recording stopped.
    WORKER_SCRIPT = """
        import threading
        def worker():
            torch.relu(torch.randn(4))
        def run():
            torch.relu(torch.randn(4))
            t = threading.Thread(target=worker)
            t.start()
            t.join()
            print(f"threads main={threading.get_native_id()} worker={t.native_id} name={t.name}")
    """

    def thread_names(self, trace_path):
        with open(trace_path, encoding="utf-8") as f:
            trace = json.load(f)
        ops = {e["tid"] for e in trace["traceEvents"] if e.get("name") == "aten::relu"}
        names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
                 if e.get("ph") == "M" and e.get("name") == "thread_name"}
        main, worker, worker_name = re.search(r"threads main=(\d+) worker=(\d+) name=(.*)",
                                              self.script_output).groups()
        self.assertIn(int(worker), ops, "the worker's op is on its own track")
        self.assertEqual(worker_name, "Thread-1 (worker)")
        self.assertEqual(names.get(int(worker)), worker_name, names)
        self.assertEqual(names.get(int(main)), "MainThread", names)

    def test_the_trace_names_threads_as_python_does(self):
        out, _ = self.run_script(textwrap.dedent(self.WORKER_SCRIPT) + textwrap.dedent("""
            with gpuprof.profile(on_trace_ready=gpuprof.db_handler(OUT)) as prof:
                run()
            prof.export_chrome_trace(os.path.join(OUT, "trace.json"))
        """))
        self.thread_names(os.path.join(out, "trace.json"))

    def test_under_gpuprof_run_the_trace_names_threads_as_python_does(self):
        import subprocess
        out = tempfile.mkdtemp(prefix="gpuprof_pyrun_")
        script = os.path.join(out, "script.py")
        with open(script, "w") as f:
            f.write("import torch\n" + textwrap.dedent(self.WORKER_SCRIPT) + "run()\n")
        done = subprocess.run([os.environ["GPUPROF_CLI"], "run", "-o", out, "--", sys.executable, script],
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(done.returncode, 0, f"gpuprof run failed:\n{done.stdout}\n{done.stderr}")
        self.script_output = done.stdout
        dbs = self.checked_dbs(out)
        self.assertEqual(len(dbs), 1, done.stderr)
        trace = os.path.join(out, "trace.json")
        export = subprocess.run([os.environ["GPUPROF_CLI"], "export", dbs[0], "-o", trace], capture_output=True,
                                text=True, timeout=120)
        self.assertEqual(export.returncode, 0, export.stderr)
        self.thread_names(trace)

    def test_a_torch_handler_that_exports_a_chrome_trace_works(self):
        # What torch.profiler users write as on_trace_ready.
        out, dbs = self.run_script("""
            os.environ["GPUPROF_OUTPUT_DIR"] = OUT  # no db_handler: the session's output folder
            def trace_handler(p):
                print(p.key_averages().table(sort_by="cpu_time_total", row_limit=-1))
                p.export_chrome_trace(os.path.join(OUT, f"trace_{p.step_num}.json"))
            with gpuprof.profile(schedule=gpuprof.schedule(wait=0, warmup=0, active=1, repeat=2),
                                 on_trace_ready=trace_handler) as prof:
                for _ in range(3):
                    torch.relu(torch.randn(4))
                    prof.step()
        """)
        self.assertEqual(sorted(f for f in os.listdir(out) if f.endswith(".json")), ["trace_1.json", "trace_2.json"])
        self.assertEqual(self.script_output.count("aten::relu"), 2)
        self.assertEqual(len(dbs), 2)


if __name__ == "__main__":
    unittest.main()
