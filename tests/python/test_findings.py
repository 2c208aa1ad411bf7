"""The findings of `gpuprof stats` on CPU programs that plant one cause of slow steps, and on their
clean twin (issue 41): the finding fires with its evidence (names and steps) and a time at stake
within 20 % of what the program measured, stays silent on the twin, and `--format json` carries the
same figures as the text. Needs torch and the PyTorch hooks (GPUPROF_LIB_DIR, GPUPROF_CLI)."""

import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "planted"))
from runs import run_planted  # noqa: E402
SCHEMA = os.path.join(HERE, "..", "..", "docs", "stats.schema.json")
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def schema_errors(value, schema, where="$"):
    """What in `value` breaks `schema` (the subset docs/stats.schema.json uses: type, const, enum,
    required, properties, items); [] when nothing does."""
    errors = []
    types = schema.get("type")
    if types is not None:
        types = types if isinstance(types, list) else [types]

        def is_a(kind):
            if kind == "integer":
                return isinstance(value, int) and not isinstance(value, bool)
            if kind == "number":
                return isinstance(value, (int, float)) and not isinstance(value, bool)
            return isinstance(value, TYPES[kind])
        if not any(is_a(kind) for kind in types):
            return [f"{where}: {value!r} is not {types}"]
    if "const" in schema and value != schema["const"]:
        errors.append(f"{where}: {value!r} is not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, dict):
        errors += [f"{where}: no {key}" for key in schema.get("required", []) if key not in value]
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                errors += schema_errors(value[key], sub, f"{where}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors += schema_errors(item, schema["items"], f"{where}[{i}]")
    return errors

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


@unittest.skipUnless(HAVE_TORCH, "torch is not importable")
class PlantedFindingsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="gpuprof_findings_")
        cls.runs = {}
        cls.summaries = {}  # mode: (gpuprof run's last lines, the report page)
        for mode in ("gc", "dataloader", "empty_cache", "clean"):
            out = os.path.join(cls.dir, mode)
            run_stderr, planted = run_planted(out, mode)
            text = subprocess.run([os.environ["GPUPROF_CLI"], "stats", out], capture_output=True, text=True,
                                  timeout=120)
            doc = subprocess.run([os.environ["GPUPROF_CLI"], "stats", out, "--format", "json"], capture_output=True,
                                 text=True, timeout=120)
            assert text.returncode == 0 and doc.returncode == 0, text.stderr + doc.stderr
            page = os.path.join(cls.dir, mode + ".html")
            report = subprocess.run([os.environ["GPUPROF_CLI"], "report", out, "-o", page], capture_output=True,
                                    text=True, timeout=120)
            assert report.returncode == 0, report.stderr
            with open(page) as f:
                html = f.read()
            cls.runs[mode] = (json.loads(doc.stdout), text.stdout, planted)
            cls.summaries[mode] = (run_stderr, html)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def findings(self, mode):
        doc = self.runs[mode][0]
        self.assertEqual((doc["schema"], doc["version"]), ("gpuprof.stats", 1))
        self.assertEqual(len(doc["profiles"]), 1)
        return {f["id"]: f for f in doc["profiles"][0]["findings"]["findings"]}

    def check_planted(self, mode, finding_id, planted_key, evidence_name):
        found = self.findings(mode)
        self.assertIn(finding_id, found, self.runs[mode][1])
        finding = found[finding_id]
        steps = self.runs[mode][0]["profiles"][0]["findings"]["steps_considered"]
        # The mean over the iterations inside the considered steps (a step ends at an optimizer
        # step: what an iteration plants after its opt.step() falls in the next step, its loader
        # wait before it in its own): on a busy machine one pause can take several times the
        # others, in both figures.
        rows = self.runs[mode][2]
        rows = rows[1:1 + steps] if planted_key == "wait_ms" else rows[:steps]
        planted = statistics.mean(row[planted_key] for row in rows)
        self.assertAlmostEqual(finding["at_stake_ms_per_step"], planted, delta=0.2 * planted)
        self.assertEqual(finding["occurrences"], steps, "one planted occurrence per considered step")
        for row in finding["evidence"]:
            self.assertTrue(row["name"].startswith(evidence_name), row)
            self.assertGreaterEqual(row["step"], 2, "the warm-up step is left out")
        # The text shows the same figures.
        text = self.runs[mode][1]
        line = next(line for line in text.splitlines() if finding["title"] in line)
        per_step, percent = re.search(r": ([0-9.]+) ms per step \(([0-9.]+) % of step time\)", line).groups()
        self.assertAlmostEqual(float(per_step), finding["at_stake_ms_per_step"], delta=0.006)
        self.assertAlmostEqual(float(percent), finding["at_stake_percent"], delta=0.06)
        self.assertIn(finding["fix"], text)
        self.assertIn("left out as warm-up", text)

    def test_gc_pauses(self):
        self.check_planted("gc", "gc-pause", "gc_ms", "gc")
        self.assertNotIn("dataloader-wait", self.findings("gc"))

    def test_starved_dataloader(self):
        self.check_planted("dataloader", "dataloader-wait", "wait_ms", "enumerate(DataLoader)")
        self.assertNotIn("gc-pause", self.findings("dataloader"))

    def test_empty_cache_calls(self):
        # Where torch has no GPU the call does nothing: the op's microseconds are the time at stake,
        # so the figures compared are the calls, one per considered step, and the ops' own time.
        found = self.findings("empty_cache")
        self.assertIn("empty-cache", found, self.runs["empty_cache"][1])
        finding = found["empty-cache"]
        profile = self.runs["empty_cache"][0]["profiles"][0]
        steps = profile["findings"]["steps_considered"]
        self.assertEqual(finding["occurrences"], steps, "one call per considered step")
        evidence_steps = [row["step"] for row in finding["evidence"]]
        self.assertTrue(evidence_steps)
        self.assertEqual(len(set(evidence_steps)), len(evidence_steps), "a call per step")
        for row in finding["evidence"]:
            self.assertEqual(row["name"], "torch.cuda.empty_cache", row)
            self.assertGreaterEqual(row["step"], 2, "the warm-up step is left out")
        # The time at stake is the recorded calls' inside the considered steps (each call falls in
        # the step after its iteration's opt.step(): iterations 0 .. steps - 1) ...
        with sqlite3.connect(f"file:{profile['path']}?mode=ro", uri=True) as conn:
            ops = conn.execute("""SELECT p.endNs - p.startNs FROM PYTORCH_API p JOIN STRING_IDS s ON s.id = p.name
                                  WHERE s.value = 'torch.cuda.empty_cache' ORDER BY p.startNs""").fetchall()
        planted = self.runs["empty_cache"][2]
        self.assertEqual(len(ops), len(planted), "every call of the program is an op")
        recorded_ms = statistics.mean(ns for (ns,) in ops[:steps]) / 1e6
        self.assertAlmostEqual(finding["at_stake_ms_per_step"], recorded_ms, delta=0.2 * recorded_ms)
        # ... and no more than the program measured around each call (the op lies inside it).
        measured_ms = statistics.mean(row["empty_cache_ms"] for row in planted[:steps])
        self.assertLessEqual(finding["at_stake_ms_per_step"], 1.2 * measured_ms)
        self.assertIn(finding["fix"], self.runs["empty_cache"][1])
        self.assertNotIn("gc-pause", found)

    def test_every_document_follows_the_documented_schema(self):
        with open(SCHEMA) as f:
            schema = json.load(f)
        for mode, (doc, _, _) in self.runs.items():
            self.assertEqual(schema_errors(doc, schema), [], mode)
        broken = dict(self.runs["gc"][0], version="1")
        self.assertNotEqual(schema_errors(broken, schema), [], "the check itself can fail")

    def test_run_ends_with_the_steps_the_top_finding_and_the_report_command(self):
        summary = self.summaries["gc"][0]
        self.assertRegex(summary, r"Steps: 8, [0-9.]+ ms each on average \(step 1, [0-9.]+ ms, left out as warm-up\)")
        self.assertIn("[high] Python garbage collection pauses inside steps", summary)
        self.assertIn("Report: gpuprof report '", summary)
        self.assertIn("Kernels: none ran on a GPU; top PyTorch ops by self time", summary)
        for schema_word in ("TASK", "PYTORCH_API", "CONNECTION_IDS"):
            self.assertNotIn(schema_word, summary)
        self.assertNotIn("[high]", self.summaries["clean"][0])

    def test_report_shows_the_findings_with_the_figures_of_the_json(self):
        for mode in ("gc", "dataloader", "empty_cache", "clean"):
            html = self.summaries[mode][1]
            shown = dict(re.findall(r'data-finding="([a-z-]+)" data-at-stake-ms-per-step="([0-9.]+)"', html))
            expected = {k: f["at_stake_ms_per_step"] for k, f in self.findings(mode).items()}
            self.assertEqual(set(shown), set(expected), mode)
            for key, value in shown.items():
                self.assertAlmostEqual(float(value), expected[key], delta=0.0015, msg=key)
            self.assertLess(html.index("<h3>Findings</h3>"), html.index("Top ops"), "findings come first")

    def test_clean_twin_has_no_finding(self):
        self.assertEqual(self.findings("clean"), {}, self.runs["clean"][1])
        self.assertIn("nothing above its threshold", self.runs["clean"][1])


if __name__ == "__main__":
    unittest.main()
