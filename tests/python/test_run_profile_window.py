"""A script's gpuprof.profile under `gpuprof run` has its figures at once (issue 39, item 2): right
after the `with` block, key_averages() holds the ops of the profile's active steps, the same ops the
run's DB (written at exit) holds for that window, and export_chrome_trace(path) has written the file
before the program ends. Runs `gpuprof run -- python3 <script>` (this test's Python) on the CPU. Needs torch and
the PyTorch hooks."""

import collections
import glob
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

SCRIPT = textwrap.dedent("""
    import json, os, sys, torch, gpuprof
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(8, 16)
    with gpuprof.profile(activities=[gpuprof.ProfilerActivity.CPU],
                         schedule=gpuprof.schedule(wait=1, warmup=1, active=2, repeat=1)) as prof:
        for _ in range(6):
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
            prof.step()
    counts = {e.key: e.count for e in prof.key_averages()}
    spans = [e._gpuprof_ns for e in prof.events()]  # the recording's first and last op
    prof.export_chrome_trace(sys.argv[1])
    with open(sys.argv[1]) as f:
        written = json.load(f)  # written now, valid JSON
    print("trace events", len(written["traceEvents"] if isinstance(written, dict) else written), flush=True)
    print("counts", json.dumps(counts), flush=True)
    print("window", json.dumps([min(s[0] for s in spans), max(s[1] for s in spans)]), flush=True)
    print("db_path", prof.db_path, flush=True)
    print("folder", prof._window[0], flush=True)
    torch.ones(3).mul(2)  # after the profile: in the run's DB only
    print("script done", flush=True)
    """)


def run_env():
    return {k: v for k, v in os.environ.items()
            if k not in ("RANK", "WORLD_SIZE", "GPUPROF_WORKER_NAME", "GPUPROF_OUTPUT_DIR")}


@unittest.skipUnless(os.environ.get("GPUPROF_LIB_DIR") and os.environ.get("GPUPROF_CLI"),
                     "GPUPROF_LIB_DIR and GPUPROF_CLI are set by CTest")
@unittest.skipUnless(importlib.util.find_spec("torch"), "needs torch in this Python")
class ProfileWindowInsideRunTest(unittest.TestCase):
    maxDiff = None

    def test_key_averages_and_the_trace_come_at_once_from_the_profiles_steps(self):
        out = tempfile.mkdtemp(prefix="gpuprof_run_window_")
        script, trace = os.path.join(out, "script.py"), os.path.join(out, "trace.json")
        with open(script, "w") as f:
            f.write(SCRIPT)
        done = subprocess.run([os.environ["GPUPROF_CLI"], "run", "-o", os.path.join(out, "prof"), "--",
                               sys.executable, script, trace], capture_output=True, text=True, env=run_env(),
                              timeout=300)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("script done", done.stdout)
        lines = dict(ln.split(" ", 1) for ln in done.stdout.splitlines()
                     if ln.startswith(("counts ", "window ", "db_path ", "trace ", "folder ")))
        counts = json.loads(lines["counts"])
        # Figures right after the recording, not the empty list of a DB written at exit.
        for op in ("ProfilerStep*", "aten::linear", "aten::addmm", "aten::relu"):
            self.assertIn(op, counts)
        self.assertEqual(counts["ProfilerStep*"], 2, "the two active steps, not the wait or warm-up step")
        self.assertNotIn("aten::mul", counts, "an op after the profile is not in its figures")
        self.assertGreater(int(lines["trace"].split()[1]), 0)
        self.assertNotIn("key_averages", done.stderr)
        self.assertNotIn("export_chrome_trace", done.stderr)

        # The same ops as the run's DB holds for the profile's window.
        (db,) = sorted(glob.glob(os.path.join(out, "prof", "**", "ascend_pytorch_profiler*.db"), recursive=True))
        self.assertEqual(os.path.realpath(lines["db_path"]), os.path.realpath(db))
        from gpuprof import _events

        begin, end = json.loads(lines["window"])
        in_window = collections.Counter(e.name for e in _events.load(db, use_cuda=False)
                                        if begin <= e._gpuprof_ns[0] and e._gpuprof_ns[1] <= end)
        self.assertEqual(counts, dict(in_window))
        # The window DB's folder is gone with the program.
        self.assertFalse(os.path.exists(lines["folder"]), lines["folder"])


if __name__ == "__main__":
    sys.exit(unittest.main())
