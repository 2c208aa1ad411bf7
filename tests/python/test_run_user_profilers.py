"""A script's own profilers under `gpuprof run` (issue 39, items 1 and 2): a script that uses
torch.profiler itself runs to its end with its own results intact, the one thing the two cannot
share said once, and gpuprof's profile of the run still written; a script's gpuprof.profile records
into the run's DB, and its db_path, key_averages() and export_chrome_trace() work. Runs
`gpuprof run -- python3 <script>` (this test's Python) on the CPU. Needs torch and the PyTorch hooks."""

import glob
import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import unittest

# torch.profiler (kineto) and the legacy autograd profiler, each with memory, inside a run that
# records memory (gpuprof run's default): both used to fail at their start.
TORCH_PROFILER = textwrap.dedent("""
    import json, sys, torch
    from torch.profiler import ProfilerActivity, profile
    x = torch.randn(64, 64)
    before = torch.empty(111111, dtype=torch.uint8)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as p:
        for _ in range(3):
            y = x.mm(x).relu()
    table = p.key_averages().table(sort_by="cpu_time_total", row_limit=5)
    assert "aten::mm" in table, table
    p.export_chrome_trace(sys.argv[1])
    with torch.autograd.profiler.profile(profile_memory=True) as q:
        x.add(1)
    assert any(e.name == "aten::add" for e in q.function_events), q.function_events
    with torch.autograd.profiler_legacy.profile() as r:
        x.sub(1)
    assert any(e.name == "aten::sub" for e in r.function_events), r.function_events
    after = torch.empty(222222, dtype=torch.uint8)  # gpuprof's memory records again
    x.mul(2)
    print("script done", flush=True)
    """)

# A gpuprof.profile script that works standalone, with a schedule and a db_handler of its own.
GPUPROF_PROFILE = textwrap.dedent("""
    import json, os, sys, torch, warnings
    import gpuprof
    warnings.simplefilter("always")
    x = torch.randn(32, 32)
    x.sub(1)
    handler = gpuprof.db_handler(sys.argv[2])
    with warnings.catch_warnings(record=True) as said:
        with gpuprof.profile(activities=[gpuprof.ProfilerActivity.CPU], on_trace_ready=handler,
                             schedule=gpuprof.schedule(wait=1, warmup=0, active=2, repeat=1)) as prof:
            for step in range(5):
                x.mm(x)
                prof.step()
        print("db_path", prof.db_path, flush=True)
        averages = prof.key_averages()
        print(averages.table(sort_by="cpu_time_total", row_limit=5))
        prof.export_chrome_trace(sys.argv[1])
        prof.export_chrome_trace(sys.argv[1] + ".again")
    print("warnings", json.dumps([str(w.message) for w in said]), flush=True)
    print("handler", json.dumps(handler.db_paths), flush=True)
    x.mul(2)
    print("script done", flush=True)
    """)


def run_env():
    return {k: v for k, v in os.environ.items()
            if k not in ("RANK", "WORLD_SIZE", "GPUPROF_WORKER_NAME", "GPUPROF_OUTPUT_DIR")}


def run(script, out, *args):
    path = os.path.join(out, "script.py")
    with open(path, "w") as f:
        f.write(script)
    return subprocess.run([os.environ["GPUPROF_CLI"], "run", "-o", os.path.join(out, "prof"), "--", sys.executable,
                           path, *args], capture_output=True, text=True, env=run_env(), timeout=300)


def run_db(out):
    dbs = sorted(glob.glob(os.path.join(out, "prof", "**", "ascend_pytorch_profiler*.db"), recursive=True))
    return dbs


def op_names(db):
    with sqlite3.connect(db) as c:
        return [r[0] for r in c.execute("SELECT s.value FROM PYTORCH_API p JOIN STRING_IDS s ON s.id = p.name "
                                        "WHERE p.type = 50001")]


def trace_names(path):
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    return {e.get("name") for e in events}


@unittest.skipUnless(os.environ.get("GPUPROF_LIB_DIR") and os.environ.get("GPUPROF_CLI"),
                     "GPUPROF_LIB_DIR and GPUPROF_CLI are set by CTest")
@unittest.skipUnless(importlib.util.find_spec("torch"), "needs torch in this Python")
class TorchProfilerInsideRunTest(unittest.TestCase):
    def test_the_scripts_torch_profiler_runs_to_its_end(self):
        out = tempfile.mkdtemp(prefix="gpuprof_user_profilers_")
        trace = os.path.join(out, "torch_trace.json")
        done = run(TORCH_PROFILER, out, trace)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("script done", done.stdout)
        # The script's own results: torch's trace has its ops.
        self.assertIn("aten::mm", trace_names(trace))
        # What the two cannot share is said once, for three profiler starts.
        said = [ln for ln in done.stderr.splitlines() if "torch.profiler" in ln and "gpuprof" in ln]
        self.assertEqual(len(said), 1, done.stderr)
        self.assertIn("CUPTI", said[0])
        # gpuprof's own profile of the run: every op, those inside torch's profiler too.
        (db,) = run_db(out)
        names = op_names(db)
        for op in ("aten::mm", "aten::add", "aten::sub", "aten::mul"):
            self.assertIn(op, names)
        with sqlite3.connect(db) as c:
            sizes = {r[0] for r in c.execute("SELECT size FROM OP_MEMORY")}
        # Memory recorded before torch's profiler and again after it.
        self.assertTrue({111111, 222222} <= sizes, sorted(sizes)[:20])


@unittest.skipUnless(os.environ.get("GPUPROF_LIB_DIR") and os.environ.get("GPUPROF_CLI"),
                     "GPUPROF_LIB_DIR and GPUPROF_CLI are set by CTest")
@unittest.skipUnless(importlib.util.find_spec("torch"), "needs torch in this Python")
class GpuprofProfileInsideRunTest(unittest.TestCase):
    def test_the_scripts_profile_records_into_the_runs_db(self):
        out = tempfile.mkdtemp(prefix="gpuprof_user_profilers_")
        trace = os.path.join(out, "trace.json")
        handler_dir = os.path.join(out, "handler")
        done = run(GPUPROF_PROFILE, out, trace, handler_dir)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("script done", done.stdout)
        lines = dict(ln.split(" ", 1) for ln in done.stdout.splitlines() if ln.startswith(("db_path ", "warnings ",
                                                                                           "handler ")))
        (db,) = run_db(out)
        # db_path names the run's DB, which is complete once the program has exited.
        self.assertEqual(os.path.realpath(lines["db_path"]), os.path.realpath(db))
        self.assertEqual(json.loads(lines["handler"]), [lines["db_path"]])
        self.assertFalse(os.path.exists(handler_dir) and os.listdir(handler_dir))
        said = json.loads(lines["warnings"])
        # The handler's folder is not used (the run owns the DB): said once, naming where it is.
        handler_said = [w for w in said if handler_dir in w]
        self.assertEqual(len(handler_said), 1, said)
        self.assertIn("gpuprof run", handler_said[0])
        self.assertIn(lines["db_path"], handler_said[0])
        # key_averages() and export_chrome_trace() work at once, from the profile's window DB
        # (test_run_profile_window.py checks its figures): nothing to say.
        self.assertEqual([w for w in said if "key_averages" in w or "export_chrome_trace" in w], [], said)
        self.assertIn("aten::mm", done.stdout)
        for path in (trace, trace + ".again"):
            self.assertIn("aten::mm", trace_names(path))
        names = op_names(db)
        for op in ("aten::sub", "aten::mm", "aten::mul"):
            self.assertIn(op, names)
        # No native "configuration not applied" line: the profile said what it could not honour.
        self.assertNotIn("not applied", done.stderr)


if __name__ == "__main__":
    sys.exit(unittest.main())
