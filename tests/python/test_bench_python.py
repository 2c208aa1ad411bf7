"""The benchmark scripts' logic that runs without a GPU.

bench/torch_overhead.py's default --python (python_with_torch): the first candidate interpreter
that can import torch, else an exit that names the interpreters tried and --python. Stand-in
interpreters are shell scripts whose exit status answers `import torch`, so no torch is needed.

bench/replay_overhead.py: its --self-test (the cost arithmetic, the markdown table with issue 18's
targets, the DB and ncu parsing), its flags (--quick, --counts, --pass-pair, --out, ...) and that
without torch it skips; examples/train_transformer.py's size estimate, which its header documents,
and its flags, without torch or a GPU.

bench/counter_overhead.py (issue 19): its --self-test (cost per kernel against ncu --set basic, the
table, the DB's counter columns) and that it needs --gpuprof.

bench/range_replay_overhead.py (issue 40): its --self-test (per-kernel costs of range replay against
ncu, the whole-run ratio, the floor lines the engine logs per range) and that it needs --gpuprof."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(REPO, "bench"))

import replay_overhead  # noqa: E402
from torch_overhead import python_with_torch  # noqa: E402


class DefaultPythonTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gpuprof_bench_python_")
        self.addCleanup(shutil.rmtree, self.dir)

    def interpreter(self, name, has_torch):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(f"#!/bin/sh\nexit {0 if has_torch else 1}\n")
        os.chmod(path, 0o755)
        return path

    def test_an_interpreter_without_torch_is_passed_over_for_the_next_that_has_it(self):
        without = self.interpreter("python_without_torch", False)
        with_torch = self.interpreter("python_with_torch", True)
        self.assertEqual(python_with_torch([None, without, with_torch]), with_torch)

    def test_the_first_interpreter_with_torch_wins(self):
        first = self.interpreter("first", True)
        second = self.interpreter("second", True)
        self.assertEqual(python_with_torch([first, second]), first)

    def test_without_any_torch_the_exit_names_what_was_tried_and_the_fix(self):
        without = self.interpreter("python_without_torch", False)
        missing = os.path.join(self.dir, "not_installed")
        with self.assertRaises(SystemExit) as raised:
            python_with_torch([missing, without, without])
        message = str(raised.exception.code)
        self.assertIn(without, message)
        self.assertNotIn(missing, message)
        self.assertIn("--python", message)


def run_script(*argv):
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=300, cwd=REPO)


class CounterOverheadTest(unittest.TestCase):
    SCRIPT = os.path.join(REPO, "bench", "counter_overhead.py")

    def test_self_test_passes(self):
        done = run_script(self.SCRIPT, "--self-test")
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("counter_overhead: self-test passed", done.stdout)
        self.assertIn(">= 20x faster", done.stdout)

    def test_needs_gpuprof_unless_self_testing(self):
        done = run_script(self.SCRIPT)
        self.assertEqual(done.returncode, 2, done.stdout + done.stderr)
        self.assertIn("--gpuprof is required", done.stderr)


class RangeReplayOverheadTest(unittest.TestCase):
    SCRIPT = os.path.join(REPO, "bench", "range_replay_overhead.py")

    def test_self_test_passes(self):
        done = run_script(self.SCRIPT, "--self-test")
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("range_replay_overhead: self-test passed", done.stdout)
        self.assertIn(">= 100x cheaper", done.stdout)

    def test_needs_gpuprof_unless_self_testing(self):
        done = run_script(self.SCRIPT)
        self.assertEqual(done.returncode, 2, done.stdout + done.stderr)
        self.assertIn("--gpuprof is required", done.stderr)


class InterleavedRunsTest(unittest.TestCase):
    """replay_overhead.run_interleaved and losses_match_plain, which counter_overhead.py and
    range_replay_overhead.py share: the order rotates per repeat, a script's inspect adds to each
    record and its status line, and a profiled run whose losses differ from the plain run's is named."""

    def test_runs_rotate_inspect_adds_and_differing_losses_are_named(self):
        import contextlib
        import io
        import types
        from pathlib import Path
        from unittest import mock

        plan = [(("plain",), "plain", [], False), (("gpuprof", 1), "one", ["x"], True),
                (("gpuprof", 3), "three", ["x"], True)]
        order = []

        def fake_run(args, work, key, label, prefix, wants_out, repeat):
            order.append((repeat, key))
            losses = ["1.0"] if key != ("gpuprof", 3) or repeat == 0 else ["2.0"]
            return {"repeat": repeat, "ok": True, "losses": losses, "wall_s": 1.0, "timed_s": 0.5}

        def inspect(key, record, log_path):
            record["log"] = log_path.name
            return ", inspected"

        out = io.StringIO()
        with mock.patch.object(replay_overhead, "transformer_run", fake_run), contextlib.redirect_stdout(out):
            records = replay_overhead.run_interleaved(types.SimpleNamespace(repeats=2), Path("/w"), plan, inspect)
            healthy = replay_overhead.losses_match_plain(records, plan, lambda _, wants_out: wants_out)
        self.assertEqual(order, [(0, ("plain",)), (0, ("gpuprof", 1)), (0, ("gpuprof", 3)),
                                 (1, ("gpuprof", 1)), (1, ("gpuprof", 3)), (1, ("plain",))])
        self.assertEqual(records[("gpuprof", 3)][1]["log"], "gpuprof_3_r1.log")
        self.assertIn("repeat 2 three", out.getvalue())
        self.assertIn(", inspected: ok", out.getvalue())
        self.assertFalse(healthy)
        self.assertIn("three (repeat 2): LOSSES DIFFER from plain", out.getvalue())
        self.assertTrue(replay_overhead.losses_match_plain(records, plan, lambda key, _: key == ("gpuprof", 1)))


class ReplayOverheadTest(unittest.TestCase):
    SCRIPT = os.path.join(REPO, "bench", "replay_overhead.py")

    def test_self_test_passes(self):
        done = run_script(self.SCRIPT, "--self-test")
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("replay_overhead: self-test passed", done.stdout)
        self.assertIn("| figure | gpuprof | peer | ratio | target | verdict |", done.stdout)

    def test_help_lists_the_transformer_flags(self):
        done = run_script(self.SCRIPT, "--help")
        self.assertEqual(done.returncode, 0, done.stderr)
        for flag in ("--quick", "--counts", "--pass-pair", "--transformer-steps", "--transformer-script",
                     "--skip-transformer", "--out", "--self-test", "--gpuprof"):
            self.assertIn(flag, done.stdout)

    def test_quick_shrinks_what_was_not_given_and_defaults_are_the_issues(self):
        args = replay_overhead.parse_args(["--gpuprof", "g"])
        self.assertEqual((args.counts, args.pass_pair, args.steps, args.repeats), ((20, 200), (2, 6), 200, 2))
        args = replay_overhead.parse_args(["--gpuprof", "g", "--quick", "--repeats", "3"])
        self.assertEqual((args.counts, args.transformer_steps, args.repeats), ((5, 25), 2, 3))

    def test_a_bad_pair_is_a_usage_error(self):
        done = run_script(self.SCRIPT, "--gpuprof", "g", "--counts", "200,20")
        self.assertEqual(done.returncode, 2)
        self.assertIn("--counts", done.stderr)
        done = run_script(self.SCRIPT, "--gpuprof", "g", "--pass-pair", "1,6")
        self.assertEqual(done.returncode, 2)

    def test_without_torch_it_skips(self):
        no_torch = os.path.join(tempfile.mkdtemp(prefix="gpuprof_bench_python_"), "python_without_torch")
        self.addCleanup(shutil.rmtree, os.path.dirname(no_torch))
        with open(no_torch, "w") as f:
            f.write("#!/bin/sh\nexit 1\n")
        os.chmod(no_torch, 0o755)
        done = run_script(self.SCRIPT, "--gpuprof", "g", "--python", no_torch)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("replay_overhead: skipped", done.stdout)

    def test_costs_are_differences_between_the_two_counts(self):
        self.assertAlmostEqual(replay_overhead.per_kernel(10.0, 10.36, 20, 200), 0.002)
        self.assertIsNone(replay_overhead.per_kernel(10.0, 10.36, 200, 200))
        self.assertAlmostEqual(replay_overhead.per_extra_pass(0.002, 0.0024, 2, 6), 0.0001)
        self.assertEqual(replay_overhead.verdict(0.0024, 0.0025), "met")
        self.assertEqual(replay_overhead.verdict(29.0, 30.0, at_most=False), "NOT met")
        self.assertEqual(replay_overhead.verdict(None, 1.0), "not measured")


class TrainTransformerTest(unittest.TestCase):
    SCRIPT = os.path.join(REPO, "examples", "train_transformer.py")

    def test_estimate_of_the_defaults_is_the_headers(self):
        done = run_script(self.SCRIPT, "--estimate-only")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("config: layers 6 d_model 256 heads 4 d_ff 1024 seq 128 batch 4 vocab 2048", done.stdout)
        self.assertIn("5,820,416 parameters in 77 tensors", done.stdout)
        self.assertIn("estimate 145.3 MiB", done.stdout)

    def test_sizes_are_flags_and_checked(self):
        done = run_script(self.SCRIPT, "--estimate-only", "--layers", "2", "--d-model", "128", "--heads", "2",
                          "--steps", "4")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("config: layers 2 d_model 128 heads 2", done.stdout)
        self.assertIn("steps 4", done.stdout)
        done = run_script(self.SCRIPT, "--d-model", "250", "--heads", "4")
        self.assertEqual(done.returncode, 2)
        self.assertIn("not a multiple of --heads", done.stderr)


if __name__ == "__main__":
    unittest.main()
