"""What `gpuprof run` says at the end about profiles that never started or never finished (issue 21,
defects 4 and 5): a start that fails is named in the last line, and another run's unfinished DB in
the same output directory is not claimed as this run's. Needs torch and the PyTorch hooks."""

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import unittest

LOOP = textwrap.dedent("""
    import torch
    for step in range(10000000):
        torch.ones(4).add_(1)
        if step == 20:
            print("ready", flush=True)
    """)
SHORT = "import torch; torch.ones(4).add_(1)"


def run_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "GPUPROF_WORKER_NAME")}
    env.update(extra)
    return env


class RunReportTest(unittest.TestCase):
    def test_a_start_that_fails_is_named_in_the_last_line(self):
        out = tempfile.mkdtemp(prefix="gpuprof_report_")
        run = subprocess.run([os.environ["GPUPROF_CLI"], "run", "-o", out, "--", sys.executable, "-c", SHORT],
                             capture_output=True, text=True, timeout=300, env=run_env(GPUPROF_WORKER_NAME=".."))
        self.assertEqual(run.returncode, 0, run.stderr)
        last = run.stderr.strip().splitlines()[-1]
        self.assertIn("gpuprof: no profile was recorded: profiling could not start in pid", last)
        self.assertIn('GPUPROF_WORKER_NAME="..": a worker name is one directory-name component', last)
        self.assertNotIn("did not initialize CUDA", run.stderr)

    def test_another_runs_live_db_in_the_same_output_is_not_claimed(self):
        out = tempfile.mkdtemp(prefix="gpuprof_report_")
        cli = os.environ["GPUPROF_CLI"]
        live = subprocess.Popen([cli, "run", "-o", out, "--", sys.executable, "-c", LOOP], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=run_env())
        try:
            self.assertEqual(live.stdout.readline().strip(), "ready")
            short = subprocess.run([cli, "run", "-o", out, "--", sys.executable, "-c", SHORT], capture_output=True,
                                   text=True, timeout=300, env=run_env())
            self.assertEqual(short.returncode, 0, short.stderr)
            self.assertNotIn(".partial", short.stderr, "the live run's DB was named as this run's")
            self.assertNotIn("unfinished", short.stderr)
        finally:
            live.send_signal(signal.SIGTERM)
            _, live_err = live.communicate(timeout=120)
        self.assertNotIn("unfinished", live_err)


if __name__ == "__main__":
    unittest.main()
