"""`gpuprof report` pages in headless Chromium (issue 22), driven through Selenium and read through
Chromium's DevTools protocol: a CPU profile of an example, two gloo ranks of train_ddp.py and the
demo's replay DB each give a page that loads without console errors and without any network
request, has every section, and shows in its rendered DOM the figures `gpuprof stats` prints for the
same DB and the findings `gpuprof stats --format json` gives. Its charts read on their own (issue
41): each has axes with ticks and a unit, a legend (the heat map: a colour scale) and no text cut at
its edge; the step bars of every rank share one time scale; no schema word shows. A screenshot of
each page goes to $GPUPROF_SCREENSHOT_DIR (.ci/run: build/ci-logs/screenshots) so a person can look
at it.

Needs Debian's chromium, chromium-driver and python3-selenium (tools/packages-test.txt); skipped without
them. The example and the two ranks also need torch and the PyTorch hooks (skipped without)."""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
except ImportError:  # python3-selenium absent
    webdriver = None

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
SECTIONS = ("overview", "steps", "timeline", "ops", "memory", "replay")
# Table names of the DB format: words for the DB, never for the page's reader.
SCHEMA_WORDS = re.compile(r"\b(TASK|PYTORCH_API|CANN_API|CONNECTION_IDS|STRING_IDS|COMMUNICATION_OP|STEP_TIME|"
                          r"OP_MEMORY|MEMORY_RECORD|GC_RECORD|COMPUTE_TASK_INFO)\b")
# An axis title names its unit in parentheses: "step time (ms)", "memory (MiB)", "tasks (count)".
UNIT = re.compile(r"\((ns|µs|ms|s|B|KiB|MiB|GiB|count)\b")
# Each chart of the page (every SVG chart and step timeline, shown or not) as the browser lays it
# out: its axes (title, tick labels; in the colour scale or not), its legend's items, and the texts
# that reach past its right edge.
CHARTS_JS = """
function texts(root, sel) {
  return Array.prototype.map.call(root.querySelectorAll(sel), function(e) { return e.textContent.trim(); });
}
return Array.prototype.map.call(document.querySelectorAll('svg.chart, div.timeline'), function(chart) {
  var hidden = chart.hidden;
  chart.hidden = false;
  var axes = Array.prototype.map.call(chart.querySelectorAll('g.axis'), function(a) {
    return {title: texts(a, ':scope > text.axis-title').join(''), ticks: texts(a, ':scope > g.tick text'),
            scale: a.closest('g.colour-scale') !== null};
  });
  var cut = [];
  var svgs = chart.matches('svg') ? [chart] : chart.querySelectorAll('svg.lanes, svg.timeline-axis');
  Array.prototype.forEach.call(svgs, function(svg) {
    var edge = svg.getBoundingClientRect();
    svg.querySelectorAll('text').forEach(function(t) {
      var box = t.getBoundingClientRect();
      if (box.width > 0 && (box.left < edge.left - 1 || box.right > edge.right + 1)) cut.push(t.textContent);
    });
  });
  chart.hidden = hidden;
  return {name: chart.getAttribute('aria-label') || chart.id, heat: chart.matches('.heat-map'), axes: axes,
          legend: texts(chart, 'g.legend-item text'), cut: cut};
});
"""
# The shown timeline's time axis (tick labels, title) before and after ten turns of the wheel in.
ZOOM_JS = """
var svg = document.querySelector('div.timeline:not([hidden]) svg.zoomable'), r = svg.getBoundingClientRect();
function axis() {
  var a = svg.parentNode.querySelector('svg.timeline-axis');
  return {ticks: Array.prototype.map.call(a.querySelectorAll('g.tick text'), function(t) { return t.textContent; }),
          title: a.querySelector('text.axis-title').textContent};
}
var before = axis();
for (var i = 0; i < 10; i++) {
  svg.dispatchEvent(new WheelEvent('wheel', {deltaY: -100, clientX: r.left + r.width / 3, clientY: r.top + 5,
                                             bubbles: true, cancelable: true}));
}
return [before, axis()];
"""
# The step bars of every rank: duration (ms), drawn width (px), and whether it was cut at the axis's end.
STEP_BARS_JS = """
return Array.prototype.map.call(document.querySelectorAll('g.step-bar'), function(g) {
  return {chart: Array.prototype.indexOf.call(document.querySelectorAll('svg.step-bars'), g.closest('svg')),
          ms: parseFloat(g.getAttribute('data-ms')), width: g.getBoundingClientRect().width,
          cut: g.hasAttribute('data-cut')};
});
"""


def browser_missing():
    if webdriver is None:
        return "python3-selenium is not installed"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            return path + " is not installed (Debian's chromium and chromium-driver)"
    return None


def torch_missing():
    try:
        import torch  # noqa: F401
    except ImportError:
        return "torch is not importable"
    if not os.path.exists(os.path.join(os.environ.get("GPUPROF_LIB_DIR", ""), "libgpuprof_torch.so")):
        return "the PyTorch hooks (libgpuprof_torch.so) are not built"
    return None


def cli(*args, **kwargs):
    return subprocess.run([os.environ["GPUPROF_CLI"], *args], capture_output=True, text=True, timeout=600, **kwargs)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_env():
    return {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}


@unittest.skipIf(browser_missing(), browser_missing() or "")
class ReportInBrowserTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,2400"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
        cls.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gpuprof_report_browser_")
        self.addCleanup(shutil.rmtree, self.dir, True)

    # ---- helpers --------------------------------------------------------------------------------

    def load(self, page, name):
        """Loads `page`; returns the URLs it requested besides itself and its console errors."""
        self.driver.get_log("performance")  # drop what earlier pages left
        self.driver.get_log("browser")
        url = "file://" + os.path.abspath(page)
        self.driver.get(url)
        self.driver.execute_script("return document.readyState")
        requests = []
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method") == "Network.requestWillBeSent":
                requested = message["params"]["request"]["url"]
                if requested != url:
                    requests.append(requested)
        errors = [e["message"] for e in self.driver.get_log("browser") if e["level"] == "SEVERE"]
        shots = os.environ.get("GPUPROF_SCREENSHOT_DIR")
        if shots:
            os.makedirs(shots, exist_ok=True)
            height = self.driver.execute_script("return document.body.scrollHeight")
            self.driver.set_window_size(1280, min(max(height, 800), 12000))
            self.driver.save_screenshot(os.path.join(shots, f"report_{name}.png"))
        return requests, errors

    def figures(self, name):
        return [e.text for e in self.driver.find_elements(By.CSS_SELECTOR, f'[data-figure="{name}"]')]

    def report(self, path, name):
        page = os.path.join(self.dir, name + ".html")
        made = cli("report", path, "-o", page)
        self.assertEqual(made.returncode, 0, made.stderr)
        requests, errors = self.load(page, name)
        self.assertEqual(requests, [], "the page fetched something")
        self.assertEqual(errors, [], "console errors")
        for section in SECTIONS:
            self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, f"section#{section}")), 1, section)
        self.check_charts_read_on_their_own()
        words = SCHEMA_WORDS.findall(self.driver.find_element(By.TAG_NAME, "body").text)
        self.assertEqual(words, [], "schema words in the page's text")
        return page

    def check_charts_read_on_their_own(self):
        """Every chart: an axis with two ticks or more and its unit, a legend; the heat map a colour
        scale with its unit and ticks; no text cut at a chart's edge."""
        charts = self.driver.execute_script(CHARTS_JS)
        self.assertGreater(len(charts), 0)
        for chart in charts:
            name = chart["name"]
            self.assertEqual(chart["cut"], [], f"{name}: text cut at the chart's edge")
            scaled = [a for a in chart["axes"] if UNIT.search(a["title"]) and len(a["ticks"]) >= 2]
            self.assertTrue(scaled, f"{name}: no axis with ticks and a unit: {chart['axes']}")
            for axis in chart["axes"]:
                self.assertNotIn("", axis["ticks"], f"{name}: a tick without its label")
            if chart["heat"]:
                self.assertTrue([a for a in scaled if a["scale"]], f"{name}: no colour scale with its unit")
            else:
                self.assertGreater(len(chart["legend"]), 0, f"{name}: no legend")
            if name.startswith("memory"):
                self.assertEqual(len(scaled), 2, f"{name}: time and bytes axes, each with ticks and a unit")
                self.assertTrue(all(len(a["ticks"]) >= 3 for a in scaled), chart["axes"])

    def check_findings_equal_stats_json(self, path, some=True):
        """Each finding on the page (in order, every DB's, then those across the ranks) has the figures of stats' JSON: ms per step
        and % of the step time, to the page's decimals. `some`: the run has findings."""
        run = cli("stats", path, "--format", "json")
        self.assertEqual(run.returncode, 0, run.stderr)
        document = json.loads(run.stdout)
        expected = [f for profile in document["profiles"] for f in profile["findings"]["findings"]]
        expected += document.get("across_ranks", {}).get("findings", [])
        shown = self.driver.find_elements(By.CSS_SELECTOR, "section#overview li.finding")
        self.assertEqual([e.get_attribute("data-finding") for e in shown], [f["id"] for f in expected])
        if some:
            self.assertTrue(expected, "the run has findings to compare")
        for element, finding in zip(shown, expected):
            figures = re.search(r"([\d.]+) ms per step \(([\d.]+) % of step time\)", element.text)
            self.assertIsNotNone(figures, element.text)
            self.assertAlmostEqual(float(figures[1]), finding["at_stake_ms_per_step"], delta=0.0051)
            self.assertAlmostEqual(float(figures[2]), finding["at_stake_percent"], delta=0.051)

    def stats(self, path):
        run = cli("stats", path, "--top", "25")
        self.assertEqual(run.returncode, 0, run.stderr)
        return run.stdout

    def check_steps_kernels_memory(self, stats):
        """The page's step count and average, kernel launches and peak memory equal stats'."""
        steps = re.findall(r"^Steps \((\d+): avg ([\d.]+) ms", stats, re.M)
        self.assertEqual(self.figures("step-count"), [n for n, _ in steps] or self.figures("step-count"))
        self.assertEqual([a for a in self.figures("step-avg-ms") if a != "-"], [a for _, a in steps])
        launches = re.findall(r"^Top kernels by total time \(.* (\d+) launches, ([\d.]+) ms\)", stats, re.M)
        if launches:
            self.assertEqual(self.figures("kernel-launches"), [n for n, _ in launches])
            self.assertEqual(self.figures("kernel-ms"), [ms for _, ms in launches])
        peaks = re.findall(r"\bPTA\s+(\d[\d.]* \S+)", stats)
        self.assertEqual(self.figures("memory-peak-allocated"), peaks)
        # Each step's duration (stats' step tables, DB by DB, in the order of the page's).
        durations = []
        for section in stats.split("\nSteps (")[1:]:
            rows = section.split("\n\n")[0].splitlines()[3:]
            durations += [row.split()[2] for row in rows if re.match(r"^\s+\d+\s+[\d.]+\s+[\d.]+$", row)]
        if durations:
            self.assertEqual(self.figures("step-ms"), durations)
        # The top kernels by total time, in stats' order.
        kernels = []
        for section in stats.split("Top kernels by total time (")[1:]:
            rows = section.split("\n\n")[0].splitlines()[2:]
            kernels += [row.split(None, 5)[5] for row in rows if len(row.split(None, 5)) == 6]
        self.assertEqual(self.figures("kernel-name"), kernels)

    # ---- the three pages -------------------------------------------------------------------------

    def test_a_cpu_profile_of_an_example(self):
        missing = torch_missing()
        if missing:
            self.skipTest(missing)
        out = os.path.join(self.dir, "cpu")
        run = cli("run", "-o", out, "--", sys.executable, os.path.join(REPO, "examples", "train_profiled.py"),
                  "--device", "cpu", "--steps", "8", env=run_env())
        self.assertEqual(run.returncode, 0, run.stderr)
        self.report(out, "cpu_example")
        stats = self.stats(out)
        self.check_steps_kernels_memory(stats)
        self.check_findings_equal_stats_json(out, some=False)
        # The top ops by total time: the page's first names are stats' first names.
        stats_ops = re.findall(r"^\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+(\S.*)$",
                               stats.split("Top ops by total time")[1].split("\n\n")[0], re.M)
        self.assertEqual(self.figures("op-name")[:5], stats_ops[:5])
        self.assertGreater(len(self.driver.find_elements(By.CSS_SELECTOR, "svg[aria-label='step breakdown'] rect")), 0)
        # The timeline shows the median step; choosing the slowest shows that one instead.
        shown = [d for d in self.driver.find_elements(By.CSS_SELECTOR, "div.timeline") if d.is_displayed()]
        self.assertEqual(len(shown), 1)
        self.assertGreater(len(shown[0].find_elements(By.CSS_SELECTOR, "rect")), 0)
        # Zoomed in, the time axis shows the part zoomed into: other ticks, still with their unit.
        before, after = self.driver.execute_script(ZOOM_JS)
        self.assertNotEqual(after["ticks"], before["ticks"])
        self.assertGreaterEqual(len(after["ticks"]), 2, after)
        self.assertRegex(after["title"], UNIT)
        choice = self.driver.find_element(By.CSS_SELECTOR, "select.step-choice")
        options = choice.find_elements(By.TAG_NAME, "option")
        self.assertTrue(options[0].text.startswith("median: step "), options[0].text)
        if len(options) > 1:
            options[1].click()
            now = [d for d in self.driver.find_elements(By.CSS_SELECTOR, "div.timeline") if d.is_displayed()]
            self.assertEqual([d.get_attribute("id") for d in now], ["tl-0-1"])

    def test_two_gloo_ranks(self):
        missing = torch_missing()
        if missing:
            self.skipTest(missing)
        out = os.path.join(self.dir, "ddp")
        run = cli("run", "-o", out, "--", sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                  "--master_addr=127.0.0.1", f"--master_port={free_port()}",
                  os.path.join(REPO, "examples", "train_ddp.py"), "--backend", "gloo", env=run_env())
        self.assertEqual(run.returncode, 0, run.stderr)
        self.report(out, "two_ranks")
        self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "section#cluster")), 1)
        self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "svg[aria-label='step time per rank']")), 1)
        self.check_steps_kernels_memory(self.stats(out))
        self.check_findings_equal_stats_json(out)  # communication not overlapped, at least
        # Several ranks: the cluster comes right after the overview.
        sections = [e.get_attribute("id") for e in self.driver.find_elements(By.CSS_SELECTOR, "body > section")]
        self.assertEqual(sections[:2], ["overview", "cluster"])
        # One time scale for both ranks' step bars: the same pixels per ms in each (a bar longer than
        # the axis, a warm-up step, is drawn cut and left out).
        bars = [b for b in self.driver.execute_script(STEP_BARS_JS) if not b["cut"] and b["ms"] > 0]
        self.assertEqual({b["chart"] for b in bars}, {0, 1}, "bars of both ranks")
        longest = max(bars, key=lambda b: b["ms"])
        px_per_ms = longest["width"] / longest["ms"]
        for bar in bars:
            self.assertAlmostEqual(bar["width"], bar["ms"] * px_per_ms, delta=1.0, msg=bars)

    def test_the_demos_replay_db(self):
        out = os.path.join(self.dir, "demo")
        demo = cli("demo", "-o", out)
        self.assertEqual(demo.returncode, 0, demo.stderr)
        self.report(out, "demo_replay")
        stats = self.stats(out)
        self.check_steps_kernels_memory(stats)
        replay = stats.split("Kernel replay (")[1].split("\n\n")[0].splitlines()[2:]
        rows = {line.split()[-1]: line.split()[2] for line in replay}  # kernel -> passes
        page = dict(zip(self.figures("replay-kernel"), self.figures("replay-passes")))
        self.assertEqual(page, rows)
        self.assertTrue(rows, "the demo replays kernels")


if __name__ == "__main__":
    unittest.main()
