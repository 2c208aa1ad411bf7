"""`gpuprof report` pages in headless Chromium (issue 22), driven through Selenium and read through
Chromium's DevTools protocol: a CPU profile of an example, two gloo ranks of train_ddp.py and the
demo's replay DB each give a page that loads without console errors and without any network
request, has every section, and shows in its rendered DOM the figures `gpuprof stats` prints for the
same DB. A screenshot of each page goes to $GPUPROF_SCREENSHOT_DIR (.ci/run: build/ci-logs/
screenshots) so a person can look at it.

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
        return page

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
        # The top ops by total time: the page's first names are stats' first names.
        stats_ops = re.findall(r"^\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+(\S.*)$",
                               stats.split("Top ops by total time")[1].split("\n\n")[0], re.M)
        self.assertEqual(self.figures("op-name")[:5], stats_ops[:5])
        self.assertGreater(len(self.driver.find_elements(By.CSS_SELECTOR, "svg[aria-label='step breakdown'] rect")), 0)
        # The timeline shows the median step; choosing the slowest shows that one instead.
        shown = [d for d in self.driver.find_elements(By.CSS_SELECTOR, "div.timeline") if d.is_displayed()]
        self.assertEqual(len(shown), 1)
        self.assertGreater(len(shown[0].find_elements(By.CSS_SELECTOR, "rect")), 0)
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
