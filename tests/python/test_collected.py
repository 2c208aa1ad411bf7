"""What `gpuprof stats` shows of what was collected beside the ops (issue 41, item 4), on a tiny
model run under `gpuprof run --with-modules --with-stack` (planted/modules.py): each nn.Module by
its path in the model, so the two Linear layers are two rows with their own times, and the top
ops' call stack naming the program's line. Needs torch and the PyTorch hooks (GPUPROF_LIB_DIR,
GPUPROF_CLI)."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "planted", "modules.py")

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


def section(text, title):
    """The lines of the block of `text` whose first line starts with `title`, up to a blank line."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(title):
            block = [line]
            for rest in lines[i + 1:]:
                if not rest.strip():
                    break
                block.append(rest)
            return block
    return []


@unittest.skipUnless(HAVE_TORCH, "torch is not importable")
class ModulesAndStacksTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="gpuprof_collected_")
        cls.out = os.path.join(cls.dir, "run")
        env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "GPUPROF_WORKER_NAME")}
        run = subprocess.run([os.environ["GPUPROF_CLI"], "run", "-o", cls.out, "--with-modules", "--with-stack",
                              "--", sys.executable, PROGRAM], capture_output=True, text=True, timeout=300, env=env)
        assert run.returncode == 0, run.stderr
        stats = subprocess.run([os.environ["GPUPROF_CLI"], "stats", cls.out], capture_output=True, text=True,
                               timeout=300)
        assert stats.returncode == 0, stats.stderr
        cls.text = stats.stdout
        js = subprocess.run([os.environ["GPUPROF_CLI"], "stats", "--format", "json", cls.out], capture_output=True,
                            text=True, timeout=300)
        assert js.returncode == 0, js.stderr
        cls.json = json.loads(js.stdout)["profiles"][0]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def modules(self):
        """{module: (calls, host ms)} from the text's module table."""
        rows = {}
        for line in section(self.text, "Modules by host time")[2:]:
            m = re.match(r"\s*(\d+)\s+([\d.]+)\s+(\S+)\s+(\S+)\s+(.+)$", line)
            self.assertIsNotNone(m, line)
            rows[m.group(5)] = (int(m.group(1)), float(m.group(2)))
        return rows

    def test_each_module_is_its_own_row_named_by_its_path(self):
        rows = self.modules()
        self.assertEqual(set(rows), {"Net", "net (Sequential)", "net.0 (Linear)", "net.1 (ReLU)", "net.2 (Linear)"},
                         self.text)
        for name, (calls, host_ms) in rows.items():
            self.assertEqual(calls, 20, name)
            self.assertGreater(host_ms, 0, name)
        # The layers nest: the Sequential holds both Linear layers and the ReLU, the Net the Sequential.
        inner = rows["net.0 (Linear)"][1] + rows["net.1 (ReLU)"][1] + rows["net.2 (Linear)"][1]
        self.assertLessEqual(inner, rows["net (Sequential)"][1] + 0.01)
        self.assertLessEqual(rows["net (Sequential)"][1], rows["Net"][1] + 0.001)
        # The 256x256 layer does 16 times the work of the 256x16 one.
        self.assertGreater(rows["net.0 (Linear)"][1], rows["net.2 (Linear)"][1])

    def test_json_has_the_same_modules(self):
        by_name = {m["name"]: m for m in self.json["modules"]}
        for name, (calls, host_ms) in self.modules().items():
            self.assertEqual(by_name[name]["calls"], calls)
            self.assertAlmostEqual(by_name[name]["host_ms"], host_ms, delta=0.0011)
        self.assertEqual(self.json["lost_records"], [])

    def test_top_ops_stacks_name_the_programs_line(self):
        with open(PROGRAM) as f:
            line = next(i for i, text in enumerate(f, 1) if "# FORWARD" in text)
        stacks = section(self.text, "Call stacks of the top ops")
        self.assertGreater(len(stacks), 2, self.text)
        self.assertTrue(any(f"modules.py:{line} forward < modules.py:" in row for row in stacks[2:]), stacks)
        first = self.json["op_stacks"][0]
        self.assertEqual(first["frames"][0], f"modules.py:{line} forward")
        self.assertEqual(first["frames"][1], f"modules.py:{line + 4} step")

    def test_nothing_lost_shows_no_lost_table(self):
        self.assertNotIn("Records lost", self.text)


if __name__ == "__main__":
    unittest.main()
