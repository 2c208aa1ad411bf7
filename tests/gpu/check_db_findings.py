"""check_db.py's expectations for the findings cases (issue 41): a planted program under `gpuprof run`
or `gpuprof replay`, then `gpuprof stats --format json` on its DB ($GPUPROF_CLI). Only the standard
library."""

import json
import os
import re
import subprocess

from check_db_common import one_db  # noqa: E402


def expect_findings_sync(c, dbs, program_output):
    """tests/python/planted/slow_step.py sync under `gpuprof run` (issue 41): `gpuprof stats --format
    json` has the sync-in-step finding, cudaDeviceSynchronize its longest evidence, and its time at
    stake per considered step within 20 % of the waits the program measured in those steps (the wait
    of iteration k falls in step k + 2: steps are optimizer step to optimizer step)."""
    m = re.search(r"^planted (.*)$", program_output or "", re.M)
    if not c.expect(m is not None, "the program printed no planted line"):
        return
    planted = [row["sync_ms"] for row in json.loads(m.group(1))]
    db = one_db(c, dbs, "findings_sync")
    if db is None:
        return
    run = subprocess.run([os.environ["GPUPROF_CLI"], "stats", "--format", "json", db.path], capture_output=True,
                         text=True)
    if not c.expect(run.returncode == 0, f"gpuprof stats --format json exited {run.returncode}: {run.stderr}"):
        return
    findings = json.loads(run.stdout)["profiles"][0]["findings"]
    found = {f["id"]: f for f in findings["findings"]}
    if not c.expect("sync-in-step" in found, f"no sync-in-step finding: {sorted(found)}"):
        return
    f = found["sync-in-step"]
    steps = findings["steps_considered"]
    expected = sum(planted[:steps]) / steps
    c.note(f"sync-in-step: {f['at_stake_ms_per_step']} ms per step ({f['at_stake_percent']} %), planted "
           f"{expected:.1f} ms per step; longest {f['evidence'][0]}")
    c.expect(abs(f["at_stake_ms_per_step"] - expected) <= 0.2 * expected,
             f"time at stake {f['at_stake_ms_per_step']} ms per step, planted {expected:.1f}")
    c.expect(f["evidence"][0]["name"] == "cudaDeviceSynchronize", f"longest evidence {f['evidence'][0]}")


def planted_and_findings(c, dbs, program_output, case, key):
    """(per-iteration planted figures under `key`, stats' findings JSON) of a slow_step.py run, or None."""
    m = re.search(r"^planted (.*)$", program_output or "", re.M)
    if not c.expect(m is not None, "the program printed no planted line"):
        return None
    db = one_db(c, dbs, case)
    if db is None:
        return None
    run = subprocess.run([os.environ["GPUPROF_CLI"], "stats", "--format", "json", db.path], capture_output=True,
                         text=True)
    if not c.expect(run.returncode == 0, f"gpuprof stats --format json exited {run.returncode}: {run.stderr}"):
        return None
    return [row[key] for row in json.loads(m.group(1))], json.loads(run.stdout)["profiles"][0]["findings"]


def expect_findings_launch(c, dbs, program_output):
    """slow_step.py launch (issue 41): the launch-bound finding, its stretches of 400 kernels, its time
    at stake per step within 20 % of the launch loop the program timed (the device idles for nearly
    all of it: one-element kernels, 50 us of host work between launches); device idle's breakdown
    puts most of the idle on the host."""
    got = planted_and_findings(c, dbs, program_output, "findings_launch", "launch_ms")
    if got is None:
        return
    planted, findings = got
    found = {f["id"]: f for f in findings["findings"]}
    c.note(f"findings: {sorted(found)}")
    if not c.expect("launch-bound" in found, f"no launch-bound finding: {sorted(found)}"):
        return
    f = found["launch-bound"]
    expected = sum(planted[1:]) / len(planted[1:])
    c.note(f"launch-bound: {f['at_stake_ms_per_step']} ms per step ({f['at_stake_percent']} %), planted "
           f"{expected:.1f} ms per step; longest {f['evidence'][0]}")
    c.expect(abs(f["at_stake_ms_per_step"] - expected) <= 0.2 * expected,
             f"time at stake {f['at_stake_ms_per_step']} ms per step, planted {expected:.1f}")
    c.expect(f["evidence"][0]["name"].startswith("400 kernels"), f"longest evidence {f['evidence'][0]}")
    idle = found.get("device-idle")
    if c.expect(idle is not None, "no device-idle finding"):
        parts = {p["cause"]: p["ms"] for p in idle["breakdown"]}
        c.note(f"device-idle: {idle['at_stake_ms_per_step']} ms per step, breakdown {parts}")
        c.expect(parts and max(parts, key=parts.get) == "waiting on the host", f"idle breakdown {parts}")


def expect_findings_launch_fused(c, dbs, program_output):
    """slow_step.py launch_fused, the twin: the same host work around one kernel: no launch-bound finding."""
    got = planted_and_findings(c, dbs, program_output, "findings_launch_fused", "launch_ms")
    if got is None:
        return
    found = {f["id"] for f in got[1]["findings"]}
    c.note(f"findings: {sorted(found)}")
    c.expect("launch-bound" not in found, "launch-bound fired on the twin with one kernel per step")
