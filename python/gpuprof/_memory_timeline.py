"""prof.export_memory_timeline(path, device=None): the profile's allocations over time, in the
format of torch 2.x's torch.profiler.profile.export_memory_timeline (torch 1.13 has none), chosen
by the path's suffix as torch chooses it:

- `.json` (or `.json.gz`, gzipped): `[times, sizes]`: times in microseconds (epoch, integer), and
  for each time the bytes live on the device by category, 9 numbers as torch 2.x's
  _memory_profiler writes them: [0, PARAMETER, OPTIMIZER_STATE, INPUT, TEMPORARY, ACTIVATION,
  GRADIENT, AUTOGRAD_DETAIL, unknown];
- `.raw.json.gz`: the raw events `[timestamp ns, action, bytes, category index]`, action 1
  (PREEXISTING, timestamp -1), 2 (CREATE) or 4 (DESTROY), as torch's export_memory_timeline_raw;
- `.html`: a page with the stacked plot (an inline SVG: no matplotlib needed).

The events come from OP_MEMORY: an allocation is CREATE at allocationTime, DESTROY at releaseTime
(none while it is still live at the end); what the allocator held before the first of them (its
allocationTotalAllocated, the MEMORY_RECORD total, less its size) is PREEXISTING, as torch shows
memory allocated before the profile. A pre-existing block freed during the recording is in no
OP_MEMORY row: the timeline keeps counting it. The DB does not know what a tensor was for (torch 2.x
infers parameters, gradients, activations ... from its own op graph): every byte is in the
`unknown` category. `device`: "cpu", "cuda" or "cuda:N" (default: "cuda:0" when torch sees a GPU,
else "cpu", as torch); OP_MEMORY's deviceId -1 is the CPU.
"""

import gzip
import html
import json
import os

from . import _events

__all__ = ["export_memory_timeline"]

_ACTION_PREEXISTING = 1  # torch.profiler._memory_profiler.Action.PREEXISTING.value
_ACTION_CREATE = 2  # torch.profiler._memory_profiler.Action.CREATE.value
_ACTION_DESTROY = 4  # Action.DESTROY.value
_CATEGORIES = 8  # len(_CATEGORY_TO_INDEX): seven categories and None
_UNKNOWN = 7  # _CATEGORY_TO_INDEX[None]


def _device_id(device):
    if device is None:
        try:
            import torch
            device = "cuda:0" if torch.cuda.is_available() else "cpu"
        except ImportError:
            device = "cpu"
    text = str(device)
    if text == "cpu":
        return -1
    if text == "cuda":
        return 0
    if text.startswith("cuda:") and text[5:].isdigit():
        return int(text[5:])
    raise ValueError(f"gpuprof export_memory_timeline: device {device!r} is not 'cpu', 'cuda' or 'cuda:N'")


def _raw_events(db, device_id):
    """(time ns, action, bytes) of `device_id`'s allocations and releases, in time order."""
    with _events._connect(db) as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "OP_MEMORY" not in tables:
            return []
        rows = conn.execute("SELECT size, allocationTime, releaseTime, allocationTotalAllocated FROM OP_MEMORY "
                            "WHERE allocationTime IS NOT NULL AND COALESCE(deviceId, -1) = ? ORDER BY allocationTime",
                            (device_id,)).fetchall()
    raw = []
    if rows and rows[0][3] is not None and rows[0][3] > (rows[0][0] or 0):
        raw.append((-1, _ACTION_PREEXISTING, rows[0][3] - (rows[0][0] or 0)))
    for size, allocated, released, _ in rows:
        raw.append((allocated, _ACTION_CREATE, size or 0))
        if released is not None:
            raw.append((released, _ACTION_DESTROY, -(size or 0)))
    raw.sort(key=lambda e: (e[0], -e[1]))  # a release before an allocation at the same time
    return raw


def _coalesce(raw):
    """torch's _coalesce_timeline: one point per microsecond with a change, sizes carried over; the
    pre-existing bytes (time -1) at the first time."""
    times, sizes = [], []
    t_min = -1
    for t_ns, _, nbytes in raw:
        t = int(t_ns / 1000) if t_ns != -1 else -1
        if t_min == -1 or 0 < t < t_min:
            t_min = t
        if not times:
            times.append(t)
            sizes.append([0] * (_CATEGORIES + 1))
        elif t != times[-1]:
            times.append(t)
            sizes.append(sizes[-1].copy())
        sizes[-1][_UNKNOWN + 1] += int(nbytes)
    return [t_min if t < 0 else t for t in times], sizes


def _svg(times, sizes):
    width, height, pad = 960, 400, 50
    totals = [sum(s) for s in sizes]
    if not times:
        return "<p>No allocation on this device in the profile.</p>"
    t0, t1 = times[0], max(times[-1], times[0] + 1)
    top = max(max(totals), 1)
    points = []
    for t, total in zip(times, totals):
        x = pad + (t - t0) * (width - 2 * pad) / (t1 - t0)
        y = height - pad - total * (height - 2 * pad) / top
        if points:
            points.append(f"{x:.1f},{points[-1].split(',')[1]}")
        points.append(f"{x:.1f},{y:.1f}")
    base = height - pad
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">'
            f'<polygon fill="grey" fill-opacity="0.7" points="{pad},{base} {" ".join(points)} '
            f'{width - pad},{points[-1].split(",")[1]} {width - pad},{base}"/>'
            f'<text x="{pad}" y="{pad - 10}">peak {top / 2 ** 30:.3f} GB (category: unknown)</text>'
            f'<text x="{pad}" y="{height - 15}">0 .. {(t1 - t0) / 1000.0:.3f} ms</text></svg>')


def export_memory_timeline(db, path, device=None):
    path = os.fspath(path)
    raw = _raw_events(db, _device_id(device))
    if path.endswith(".html"):
        times, sizes = _coalesce(raw)
        page = ('<html>\n<head><meta charset="utf-8" /><title>GPU Memory Timeline HTML</title></head>\n<body>\n'
                f"<h3>{html.escape(os.path.basename(db))}</h3>\n{_svg(times, sizes)}\n</body>\n</html>")
        with open(path, "w", encoding="utf-8") as f:
            f.write(page)
        return
    data = [list(e) + [_UNKNOWN] for e in raw] if path.endswith("raw.json.gz") else list(_coalesce(raw))
    if path.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as f:
            json.dump(data, f)
    else:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f)
