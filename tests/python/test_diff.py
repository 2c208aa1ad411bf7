"""`gpuprof diff A B` on two runs of one CPU program (nothing changed beyond the noise) and on a run
whose op "planted_op" was made 15 ms slower (that op reported, its delta within 20 % of what the
program measured), in text, JSON (validated against docs/diff.schema.json) and HTML (issue 41). Needs torch and the PyTorch hooks (GPUPROF_LIB_DIR,
GPUPROF_CLI)."""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "planted"))
sys.path.insert(0, HERE)
from runs import run_planted  # noqa: E402
from test_findings import schema_errors  # noqa: E402

SCHEMA = os.path.join(HERE, "..", "..", "docs", "diff.schema.json")


def resolved(node, root):
    """`node` with each {"$ref": "#/$defs/x"} replaced by x merged with the keys beside the $ref (the
    validator of test_findings knows no $ref)."""
    if isinstance(node, dict):
        out = resolved(root["$defs"][node["$ref"].rsplit("/", 1)[1]], root) if "$ref" in node else {}
        out.update({key: resolved(value, root) for key, value in node.items() if key != "$ref"})
        return out
    if isinstance(node, list):
        return [resolved(value, root) for value in node]
    return node

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


def cli(*args):
    return subprocess.run([os.environ["GPUPROF_CLI"], *args], capture_output=True, text=True, timeout=300)


@unittest.skipUnless(HAVE_TORCH, "torch is not importable")
class DiffTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="gpuprof_diff_")
        cls.planted = {}
        for name, mode in (("a", "clean"), ("a2", "clean"), ("slow", "slow_op")):
            cls.planted[name] = run_planted(os.path.join(cls.dir, name), mode)[1]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def diff(self, a, b):
        text = cli("diff", os.path.join(self.dir, a), os.path.join(self.dir, b))
        doc = cli("diff", os.path.join(self.dir, a), os.path.join(self.dir, b), "--format", "json")
        self.assertEqual((text.returncode, doc.returncode), (0, 0), text.stderr + doc.stderr)
        parsed = json.loads(doc.stdout)
        with open(SCHEMA) as f:
            schema = json.load(f)
        self.assertEqual(schema_errors(parsed, resolved(schema, schema)), [])
        self.assertEqual((parsed["schema"], parsed["version"]), ("gpuprof.diff", 1))
        self.assertEqual(len(parsed["pairs"]), 1)
        return text.stdout, parsed["pairs"][0]

    def test_two_runs_of_one_program_differ_only_by_noise(self):
        text, pair = self.diff("a", "a2")
        self.assertFalse(pair["step"]["changed"], text)
        self.assertEqual(pair["ops_changed"], 0, text)
        self.assertIn("within the noise", text)
        self.assertEqual((pair["a_steps"], pair["b_steps"]), (7, 7), "the warm-up step is left out")

    def test_the_op_made_slower_is_reported_with_its_delta(self):
        text, pair = self.diff("a", "slow")
        planted = (statistics.median(r["op_ms"] for r in self.planted["slow"]) -
                   statistics.median(r["op_ms"] for r in self.planted["a"]))
        first = pair["ops"][0]
        self.assertEqual(first["name"], "planted_op", text)
        self.assertTrue(first["changed"])
        self.assertAlmostEqual(first["delta"], planted, delta=0.2 * planted)
        self.assertTrue(pair["step"]["changed"], text)
        self.assertAlmostEqual(pair["step"]["delta"], planted, delta=0.2 * planted)
        # Only the planted op changed beyond the noise.
        self.assertEqual([op["name"] for op in pair["ops"] if op["changed"]], ["planted_op"], text)
        line = next(line for line in text.splitlines() if line.rstrip().endswith("planted_op"))
        self.assertTrue(line.lstrip().startswith("changed"), line)
        self.assertIn(f"+{first['delta']:.3f}", line)

    def test_the_page_marks_the_op_made_slower(self):
        page_path = os.path.join(self.dir, "diff.html")
        run = cli("diff", os.path.join(self.dir, "a"), os.path.join(self.dir, "slow"), "--format", "html",
                  "-o", page_path)
        self.assertEqual(run.returncode, 0, run.stderr)
        with open(page_path, encoding="utf-8") as f:
            page = f.read()
        at = page.index(">planted_op<")
        self.assertTrue(page[page.rindex("<tr", 0, at):at].startswith('<tr class="changed">'))
        for section in ("step", "ops", "kernels", "memory", "communication", "replay"):
            self.assertIn(f'<section id="{section}">', page)

    def test_unequal_paths_are_refused_with_the_fix(self):
        two = os.path.join(self.dir, "two")  # a directory holding two runs
        if not os.path.isdir(two):
            for name in ("a", "slow"):
                shutil.copytree(os.path.join(self.dir, name), two, dirs_exist_ok=True)
        run = cli("diff", os.path.join(self.dir, "a"), two)
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn("name one DB or one rank directory on each side", run.stderr)


if __name__ == "__main__":
    unittest.main()
