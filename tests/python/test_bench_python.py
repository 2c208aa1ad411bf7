"""bench/torch_overhead.py's default --python (python_with_torch): the first candidate interpreter
that can import torch, else an exit that names the interpreters tried and --python. Stand-in
interpreters are shell scripts whose exit status answers `import torch`, so no torch is needed."""

import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))

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


if __name__ == "__main__":
    unittest.main()
