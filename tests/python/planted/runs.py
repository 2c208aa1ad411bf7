"""Runs the planted programs of this folder under `gpuprof run` (GPUPROF_CLI) for the tests."""

import json
import os
import subprocess
import sys

PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "slow_step.py")


def run_planted(out, mode):
    """`gpuprof run -o OUT -- python slow_step.py MODE OUT.json`: (gpuprof's stderr, what the program
    planted per iteration). Raises AssertionError with gpuprof's stderr when the run fails."""
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "GPUPROF_WORKER_NAME")}
    planted = out + ".json"
    run = subprocess.run([os.environ["GPUPROF_CLI"], "run", "-o", out, "--", sys.executable, PROGRAM, mode, planted],
                         capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr
    with open(planted) as f:
        return run.stderr, json.load(f)
