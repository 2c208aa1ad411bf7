"""A device-linked mstx range on a CUDA GPU: three ranges on a side stream, each around a matmul,
one device=True range on the default stream around two, and one host-only range. Prints each
range's host and device times as msprof-analyze's mstx_sum reads them (MSTX_EVENTS joined to its
device task through connectionId) beside the kernels launched inside it, and exits 1 when a
device-linked range has no device time or its device time is not its kernels' span.

    build/venv/bin/python examples/mstx_device_range.py [--out DIR]
"""

import argparse
import glob
import os
import sqlite3
import sys

import torch

import gpuprof


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="mstx_device_out")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 1
    a = torch.randn(2048, 2048, device="cuda")
    b = torch.randn(2048, 2048, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    torch.cuda.synchronize()
    with gpuprof.profile(on_trace_ready=gpuprof.db_handler(args.out)):
        with torch.cuda.stream(side):
            for _ in range(3):
                rid = gpuprof.mstx.range_start("matmul on side stream", side, domain="example")
                side_out = a @ b
                gpuprof.mstx.range_end(rid)
        rid = gpuprof.mstx.range_start("two matmuls", device=True)
        c = (a @ b) @ b
        gpuprof.mstx.range_end(rid)
        rid = gpuprof.mstx.range_start("host only")
        d = a @ b
        gpuprof.mstx.range_end(rid)
        torch.cuda.synchronize()
    del side_out, c, d
    (db,) = glob.glob(os.path.join(args.out, "*", "ASCEND_PROFILER_OUTPUT", "ascend_pytorch_profiler*.db"))
    print("profile:", db)
    con = sqlite3.connect(db)
    ranges = con.execute("""
        SELECT s.value, dom.value, m.startNs, m.endNs, t.startNs, t.endNs, t.streamId, m.globalTid
        FROM MSTX_EVENTS m JOIN STRING_IDS s ON s.id = m.message JOIN STRING_IDS dom ON dom.id = m.domainId
        LEFT JOIN TASK t ON t.connectionId = m.connectionId
        WHERE m.eventType = 2 ORDER BY m.startNs""").fetchall()
    failures = 0
    for msg, domain, host_start, host_end, dev_start, dev_end, stream, gtid in ranges:
        # The kernels launched inside the range on its thread (and stream, for the side-stream ranges).
        kernels = con.execute("""
            SELECT MIN(t.startNs), MAX(t.endNs), COUNT(*) FROM CANN_API a JOIN TASK t ON t.connectionId = a.connectionId
            JOIN STRING_IDS tt ON tt.id = t.taskType
            WHERE a.globalTid = ? AND a.startNs BETWEEN ? AND ? AND tt.value != 'MSTX_RANGE'
              AND (? IS NULL OR t.streamId = ?)""",
                              (gtid, host_start, host_end, stream if "side" in msg else None,
                               stream if "side" in msg else None)).fetchone()
        device = f"{(dev_end - dev_start) / 1e3:.1f} us on stream {stream}" if dev_start is not None else "none"
        print(f"{msg!r} [{domain}]: host {(host_end - host_start) / 1e3:.1f} us, device {device}; "
              f"{kernels[2]} tasks launched inside span {kernels[0]}..{kernels[1]}")
        if msg == "host only":
            failures += dev_start is not None
        elif dev_start is None or (dev_start, dev_end) != (kernels[0], kernels[1]) or dev_end <= dev_start:
            print("  FAIL: the device time is not the span of the kernels launched inside the range")
            failures += 1
    print("FAIL" if failures else "OK: every device-linked range has its kernels' device time")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
