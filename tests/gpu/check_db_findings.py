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


def planted_finding(c, dbs, program_output, case, key, finding_id):
    """(the finding `finding_id`, all findings by id) of a slow_step.py run whose time at stake per
    step is within 20 % of the mean planted `key` (the first iteration, in the warm-up step, left
    out); None when the run or the finding is missing."""
    got = planted_and_findings(c, dbs, program_output, case, key)
    if got is None:
        return None
    planted, findings = got
    found = {f["id"]: f for f in findings["findings"]}
    c.note(f"findings: {sorted(found)}")
    if not c.expect(finding_id in found, f"no {finding_id} finding: {sorted(found)}"):
        return None
    f = found[finding_id]
    expected = sum(planted[1:]) / len(planted[1:])
    c.note(f"{finding_id}: {f['at_stake_ms_per_step']} ms per step ({f['at_stake_percent']} %), planted "
           f"{expected:.1f} ms per step; longest {f['evidence'][0]}")
    c.expect(abs(f["at_stake_ms_per_step"] - expected) <= 0.2 * expected,
             f"time at stake {f['at_stake_ms_per_step']} ms per step, planted {expected:.1f}")
    return f, found


def expect_findings_launch(c, dbs, program_output):
    """slow_step.py launch (issue 41): the launch-bound finding, its stretches of 400 kernels, its time
    at stake per step within 20 % of the launch loop the program timed (the device idles for nearly
    all of it: one-element kernels, 50 us of host work between launches); device idle's breakdown
    puts most of the idle on the host."""
    got = planted_finding(c, dbs, program_output, "findings_launch", "launch_ms", "launch-bound")
    if got is None:
        return
    f, found = got
    m = re.match(r"(\d+) kernels shorter than their launch calls", f["evidence"][0]["name"])
    c.expect(m is not None and int(m.group(1)) >= 400, f"longest evidence {f['evidence'][0]}")
    idle = found.get("device-idle")
    if c.expect(idle is not None, "no device-idle finding"):
        parts = {p["cause"]: p["ms"] for p in idle["breakdown"]}
        c.note(f"device-idle: {idle['at_stake_ms_per_step']} ms per step, breakdown {parts}")
        c.expect(parts and max(parts, key=parts.get) == "waiting on the host", f"idle breakdown {parts}")


def twin_is_silent(c, dbs, program_output, case, key, finding_id, why):
    """The clean twin of a slow_step.py mode: `finding_id` is not among its findings."""
    got = planted_and_findings(c, dbs, program_output, case, key)
    if got is None:
        return
    found = {f["id"] for f in got[1]["findings"]}
    c.note(f"findings: {sorted(found)}")
    c.expect(finding_id not in found, f"{finding_id} fired on {why}")


def expect_findings_launch_fused(c, dbs, program_output):
    """slow_step.py launch_fused, the twin: the same host work around one kernel: no launch-bound finding."""
    twin_is_silent(c, dbs, program_output, "findings_launch_fused", "launch_ms", "launch-bound",
                   "the twin with one kernel per step")


def expect_findings_pageable(c, dbs, program_output):
    """slow_step.py pageable (issue 41): a 64 MiB copy from pageable host memory each step; the
    pageable-copies finding, its time at stake per step within 20 % of the copy call the program
    timed (the host blocks in the CUDA call while the driver stages the bytes), made in an aten op."""
    got = planted_finding(c, dbs, program_output, "findings_pageable", "copy_ms", "pageable-copies")
    if got is None:
        return
    f = got[0]
    c.expect("aten::" in f["evidence"][0].get("context", ""), f"no op named: {f['evidence'][0]}")


def expect_findings_pinned(c, dbs, program_output):
    """slow_step.py pinned, the twin: the same copies from pinned memory: no pageable-copies finding."""
    twin_is_silent(c, dbs, program_output, "findings_pinned", "copy_ms", "pageable-copies",
                   "copies from pinned memory")


def expect_findings_empty_cache(c, dbs, program_output):
    """slow_step.py empty_cache (issue 41): 2 GiB allocated and freed, then torch.cuda.empty_cache()
    every step; the empty-cache finding, each evidence row the call (the op gpuprof records around
    it), its time at stake per considered step within 20 % of the calls the program timed in those
    steps (the call of iteration k falls in the step after its opt.step(): steps are optimizer step
    to optimizer step),
    and allocator-churn beside it (the cudaFree in the call, the next step's cudaMalloc)."""
    got = planted_and_findings(c, dbs, program_output, "findings_empty_cache", "empty_cache_ms")
    if got is None:
        return
    planted, findings = got
    found = {f["id"]: f for f in findings["findings"]}
    c.note(f"findings: {sorted(found)}")
    if not c.expect("empty-cache" in found, f"no empty-cache finding: {sorted(found)}"):
        return
    f = found["empty-cache"]
    steps = findings["steps_considered"]
    db = one_db(c, dbs, "findings_empty_cache")
    # The i-th step (from 0) holds iteration i - 1's call; the first CUDA use (iteration 0's, in
    # step 2) can make that step warm-up too.
    left_out = set(findings["warmup_steps"]) | set(findings["replay_steps"])
    order = [step for (step,) in db.query("SELECT id FROM STEP_TIME ORDER BY startNs")]
    calls = [planted[i - 1] for i, step in enumerate(order) if step not in left_out and 1 <= i <= len(planted)]
    if not c.expect(len(calls) == steps, f"{len(calls)} planted calls in {steps} considered steps"):
        return
    expected = sum(calls) / steps
    c.note(f"empty-cache: {f['at_stake_ms_per_step']} ms per step ({f['at_stake_percent']} %), planted "
           f"{expected:.2f} ms per step; longest {f['evidence'][0]}")
    c.expect(abs(f["at_stake_ms_per_step"] - expected) <= 0.2 * expected,
             f"time at stake {f['at_stake_ms_per_step']} ms per step, planted {expected:.2f}")
    c.expect(f["occurrences"] == steps, f"{f['occurrences']} calls in {steps} considered steps")
    c.expect(all(e["name"] == "torch.cuda.empty_cache" for e in f["evidence"]), f"evidence {f['evidence']}")
    c.expect("allocator-churn" in found, f"no allocator-churn finding beside it: {sorted(found)}")


def stats_findings(c, db):
    """`gpuprof stats --format json`'s findings of `db`, or None."""
    run = subprocess.run([os.environ["GPUPROF_CLI"], "stats", "--format", "json", db.path], capture_output=True,
                         text=True)
    if not c.expect(run.returncode == 0, f"gpuprof stats --format json exited {run.returncode}: {run.stderr}"):
        return None
    return json.loads(run.stdout)["profiles"][0]["findings"]


def considered_steps(db, findings):
    """(start, end) of the steps the findings considered: STEP_TIME's, less warm-up and replay steps."""
    left_out = set(findings["warmup_steps"]) | set(findings["replay_steps"])
    return [(start, end) for step, start, end in db.query("SELECT id, startNs, endNs FROM STEP_TIME ORDER BY startNs")
            if step not in left_out]


def tiny_reductions_at_stake_ms(db, steps, sms):
    """Per considered step: the device time of reduce_kernel launches with fewer blocks than `sms` SMs,
    times the share of SMs their grid leaves idle (ms), read from the DB's own rows."""
    ns = 0.0
    for start, end, blocks, name in db.query(
            "SELECT t.startNs, t.endNs, c.blockNum, s.value FROM TASK t JOIN COMPUTE_TASK_INFO c ON "
            "c.globalTaskId = t.globalTaskId JOIN STRING_IDS s ON s.id = c.name WHERE c.blockNum < ?", sms):
        if "reduce_kernel" not in name:
            continue
        inside = sum(max(0, min(end, e) - max(start, s)) for s, e in steps)
        ns += inside * (1 - blocks / sms)
    return ns / 1e6 / max(1, len(steps))


def expect_tiny_reductions(c, db, findings, planted):
    """The tiny-grids finding holds the 500 one-block reductions per step: its longest evidence is a
    reduce_kernel on the device's SM count, and its time at stake per step is within 20 % of what
    their rows in the DB give (the model's few small kernels are the rest)."""
    found = {f["id"]: f for f in findings["findings"]}
    c.note(f"findings: {sorted(found)}; note: {findings.get('note', '')}")
    if not c.expect("tiny-grids" in found, f"no tiny-grids finding: {sorted(found)}"):
        return found
    f = found["tiny-grids"]
    sms = planted["sms"]
    expected = tiny_reductions_at_stake_ms(db, considered_steps(db, findings), sms)
    c.note(f"tiny-grids: {f['at_stake_ms_per_step']} ms per step ({f['at_stake_percent']} %), the reductions' "
           f"{expected:.3f} ms per step on {planted['device']} ({sms} SMs); longest {f['evidence'][0]}")
    c.expect(expected > 0 and abs(f["at_stake_ms_per_step"] - expected) <= 0.2 * expected,
             f"time at stake {f['at_stake_ms_per_step']} ms per step, the reductions' {expected:.3f}")
    top = f["evidence"][0]
    c.expect("reduce_kernel" in top["name"], f"longest evidence {top}")
    c.expect(f"on {sms} SMs" in top.get("context", ""),
             f"the evidence's SM count differs from the device's {sms} (gpuprof's table of devices): {top}")
    return found


def planted_line(c, program_output):
    m = re.search(r"^planted (.*)$", program_output or "", re.M)
    if not c.expect(m is not None, "the program printed no planted line"):
        return None
    return json.loads(m.group(1))


def expect_findings_kernels(c, dbs, program_output):
    """tests/python/planted/kernels.py under `gpuprof replay --set basic`, its first 4 elementwise
    launches and first reduction replayed (iteration 0: a step left out). Tiny grids as above; the
    elementwise op streams DRAM near its peak (the premise, checked on its counters: DRAM throughput
    at 60 % of peak or more), so neither memory-bound-kernels nor low-occupancy names it; the
    one-block reductions are the tiny-grid rule's, not the counter rules'; the note does not say
    that counters are missing."""
    planted = planted_line(c, program_output)
    db = one_db(c, dbs, "findings_kernels")
    if planted is None or db is None:
        return
    findings = stats_findings(c, db)
    if findings is None:
        return
    dram = [value for (value,) in db.query(
        "SELECT m.value FROM GPUPROF_REPLAY_METRIC m JOIN GPUPROF_REPLAY_KERNEL k ON k.id = m.kernelId "
        "JOIN STRING_IDS s ON s.id = k.name JOIN STRING_IDS n ON n.id = m.name WHERE k.replayed = 1 AND "
        "s.value LIKE '%MulFunctor%' AND n.value = 'gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed'")]
    c.note(f"the elementwise op's DRAM throughput over its replayed launches: {dram} % of peak")
    c.expect(dram and min(dram) >= 60, f"the elementwise op's DRAM throughput {dram}: expected 60 % of peak or "
                                       f"more (a streaming kernel on a large tensor)")
    found = expect_tiny_reductions(c, db, findings, planted)
    for rule in ("memory-bound-kernels", "low-occupancy"):
        named = [e["name"] for e in found.get(rule, {}).get("evidence", [])
                 if "MulFunctor" in e["name"] or "reduce_kernel" in e["name"]]
        c.expect(not named, f"{rule} names {named}")
    c.expect("no hardware counters" not in findings.get("note", ""), f"note: {findings.get('note')}")


def expect_findings_kernels_no_counters(c, dbs, program_output):
    """kernels.py under plain `gpuprof run`, the twin without counters: tiny grids as above (they need
    none); no memory-bound-kernels or low-occupancy finding, and the note says counters are missing."""
    planted = planted_line(c, program_output)
    db = one_db(c, dbs, "findings_kernels_no_counters")
    if planted is None or db is None:
        return
    findings = stats_findings(c, db)
    if findings is None:
        return
    found = expect_tiny_reductions(c, db, findings, planted)
    for rule in ("memory-bound-kernels", "low-occupancy"):
        c.expect(rule not in found, f"{rule} fired without counters")
    c.expect("no hardware counters" in findings.get("note", ""), f"note: {findings.get('note')}")


def own_kernels_run(c, dbs, program_output, case):
    """(planted line, DB, stats' findings, findings by id) of an own_kernels.py run, or None."""
    planted = planted_line(c, program_output)
    db = one_db(c, dbs, case)
    if planted is None or db is None:
        return None
    findings = stats_findings(c, db)
    if findings is None:
        return None
    found = {f["id"]: f for f in findings["findings"]}
    c.note(f"findings: {sorted(found)}")
    return planted, db, findings, found


def kernel_in_steps(db, steps, kernel):
    """(device ms per considered step, launches in them) of the kernels whose name has `kernel`."""
    ns, launches = 0, 0
    for start, end, name in db.query(
            "SELECT t.startNs, t.endNs, s.value FROM TASK t JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = "
            "t.globalTaskId JOIN STRING_IDS s ON s.id = c.name"):
        if kernel in name and any(s <= start < e for s, e in steps):
            ns += end - start
            launches += 1
    return ns / 1e6 / max(1, len(steps)), launches


def replayed_metric(db, kernel, metric):
    """The mean of `metric` over the replayed launches of the kernels whose name has `kernel`."""
    values = [value for (value,) in db.query(
        "SELECT m.value FROM GPUPROF_REPLAY_METRIC m JOIN GPUPROF_REPLAY_KERNEL k ON k.id = m.kernelId "
        "JOIN STRING_IDS s ON s.id = k.name JOIN STRING_IDS n ON n.id = m.name WHERE k.replayed = 1 AND "
        "instr(s.value, ?) > 0 AND n.value = ?", kernel, metric)]
    return sum(values) / len(values) if values else None


def names_in(found, rule, kernel):
    return [e["name"] for e in found.get(rule, {}).get("evidence", []) if kernel in e["name"]]


def expect_findings_own_kernels(c, dbs, program_output):
    """own_kernels.py counters under `gpuprof replay --set basic` (issue 41). The pointer chase is
    memory-bound-kernels' (and not low-occupancy's): the DRAM bandwidth the finding gives is within
    20 % of the bytes the chase planted (a 128-byte line per warp and hop, over its device time), and
    its time at stake per step within 20 % of its device time times the DRAM share left unused. The
    one-busy-block grid is low-occupancy's (and not memory-bound-kernels'): its time at stake within
    20 % of its device time times the share of an SM's warps the busy block leaves empty."""
    got = own_kernels_run(c, dbs, program_output, "findings_own_kernels")
    if got is None:
        return
    planted, db, findings, found = got
    steps = considered_steps(db, findings)
    c.expect(len(steps) >= 5, f"{len(steps)} steps considered, expected 5 or more")

    chase_ms, chase_launches = kernel_in_steps(db, steps, "planted_pointer_chase")
    dram = replayed_metric(db, "planted_pointer_chase", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed")
    if c.expect("memory-bound-kernels" in found, f"no memory-bound-kernels finding: {sorted(found)}") and \
            c.expect(dram is not None and chase_launches > 0, "the pointer chase has no counters or launches"):
        f = found["memory-bound-kernels"]
        expected = chase_ms * (1 - dram / 100)
        c.note(f"memory-bound-kernels: {f['at_stake_ms_per_step']} ms per step ({f['at_stake_percent']} %), the "
               f"chase's {chase_ms:.3f} ms per step at {dram:.1f} % of DRAM peak gives {expected:.3f}; "
               f"longest {f['evidence'][0]}")
        c.expect(abs(f["at_stake_ms_per_step"] - expected) <= 0.2 * expected,
                 f"time at stake {f['at_stake_ms_per_step']} ms per step, expected {expected:.3f}")
        top = f["evidence"][0]
        c.expect("planted_pointer_chase" in top["name"], f"longest evidence {top}")
        m = re.search(r"\((\d+) GB/s", top.get("context", ""))
        launch_s = chase_ms * len(steps) / chase_launches / 1e3
        planted_gbps = planted["chase_warps"] * planted["chase_hops"] * 128 / launch_s / 1e9
        c.note(f"the chase planted {planted_gbps:.0f} GB/s ({planted['chase_warps']} warps x "
               f"{planted['chase_hops']} hops x 128 B in {launch_s * 1e3:.3f} ms)")
        c.expect(m is not None and abs(int(m.group(1)) - planted_gbps) <= 0.2 * planted_gbps,
                 f"the finding's DRAM bandwidth {m.group(1) if m else None} GB/s, planted {planted_gbps:.0f}")
    c.expect(not names_in(found, "low-occupancy", "planted_pointer_chase"),
             "low-occupancy names the pointer chase (its achieved occupancy is its theoretical)")

    busy_ms, busy_launches = kernel_in_steps(db, steps, "planted_one_busy_block")
    if c.expect("low-occupancy" in found, f"no low-occupancy finding: {sorted(found)}") and \
            c.expect(busy_launches > 0, "the busy-block grid has no launches in the considered steps"):
        f = found["low-occupancy"]
        expected = busy_ms * (1 - planted["busy_block_warps"] / planted["max_warps_per_sm"])
        c.note(f"low-occupancy: {f['at_stake_ms_per_step']} ms per step ({f['at_stake_percent']} %), the busy "
               f"block's {busy_ms:.3f} ms per step with {planted['busy_block_warps']} of "
               f"{planted['max_warps_per_sm']} warps gives {expected:.3f}; longest {f['evidence'][0]}")
        c.expect(abs(f["at_stake_ms_per_step"] - expected) <= 0.2 * expected,
                 f"time at stake {f['at_stake_ms_per_step']} ms per step, expected {expected:.3f}")
        c.expect("planted_one_busy_block" in f["evidence"][0]["name"], f"longest evidence {f['evidence'][0]}")
    c.expect(not names_in(found, "memory-bound-kernels", "planted_one_busy_block"),
             "memory-bound-kernels names the busy-block grid")


def planted_host_wait_ms(planted, findings):
    """The mean planted host wait of the considered steps (iteration k's falls in step k, the first
    of which is warm-up)."""
    rows = planted["iterations"][1:1 + findings["steps_considered"]]
    return sum(row["host_wait_ms"] for row in rows) / max(1, len(rows))


def expect_findings_launch_delay(c, dbs, program_output):
    """own_kernels.py launch_delay (issue 41): the launch-delay finding, 4 delayed kernels per step,
    its time at stake per step within 20 % of the sleeps the host functions measured; device idle's
    breakdown puts most of the idle on a dependency."""
    got = own_kernels_run(c, dbs, program_output, "findings_launch_delay")
    if got is None:
        return
    planted, db, findings, found = got
    if not c.expect("launch-delay" in found, f"no launch-delay finding: {sorted(found)}"):
        return
    f = found["launch-delay"]
    expected = planted_host_wait_ms(planted, findings)
    c.note(f"launch-delay: {f['at_stake_ms_per_step']} ms per step ({f['at_stake_percent']} %), planted "
           f"{expected:.3f} ms per step, {f['occurrences']} occurrences in {findings['steps_considered']} steps; "
           f"longest {f['evidence'][0]}")
    c.expect(abs(f["at_stake_ms_per_step"] - expected) <= 0.2 * expected,
             f"time at stake {f['at_stake_ms_per_step']} ms per step, planted {expected:.3f}")
    c.expect(f["occurrences"] == 4 * findings["steps_considered"],
             f"{f['occurrences']} delayed kernels, planted 4 per step in {findings['steps_considered']} steps")
    idle = found.get("device-idle")
    if c.expect(idle is not None, "no device-idle finding"):
        parts = {p["cause"]: p["ms"] for p in idle["breakdown"]}
        c.note(f"device-idle breakdown {parts}")
        c.expect(max(parts, key=parts.get) == "waiting on a dependency or sync", f"idle breakdown {parts}")


def expect_findings_host_wait(c, dbs, program_output):
    """own_kernels.py host_wait, the twin: the same 5 ms slept by Python between the launches: no
    launch-delay finding, and device idle's breakdown puts most of the idle on the host."""
    got = own_kernels_run(c, dbs, program_output, "findings_host_wait")
    if got is None:
        return
    found = got[3]
    c.expect("launch-delay" not in found, "launch-delay fired on the twin that sleeps in Python")
    idle = found.get("device-idle")
    if c.expect(idle is not None, "no device-idle finding"):
        parts = {p["cause"]: p["ms"] for p in idle["breakdown"]}
        c.note(f"device-idle breakdown {parts}")
        c.expect(max(parts, key=parts.get) == "waiting on the host", f"idle breakdown {parts}")
