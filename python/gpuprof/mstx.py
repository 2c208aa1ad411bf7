"""Markers and ranges in the profile's MSTX_EVENTS table (torch_npu's mstx, on gpuprof).

    gpuprof.mstx.mark("loaded checkpoint")
    rid = gpuprof.mstx.range_start("eval")
    ...
    gpuprof.mstx.range_end(rid)

Without a running session (no gpuprof.profile recording, not under `gpuprof run`) they record
nothing: mark returns False and range_start returns 0, as torch_npu's mstx does without its
profiler; the first such mark or range made outside every gpuprof.profile says so in one
RuntimeWarning (later ones are silent; inside a profile, in a step its schedule does not record,
none is said).
When gpuprof's native libraries cannot be loaded: one warning on stderr, and the program runs on.
Messages must be non-empty strings.
"""

import ctypes
import sys

from . import _messages, _native

__all__ = ["mark", "range_start", "range_end"]


def _message(msg):
    if not isinstance(msg, str) or not msg:
        raise ValueError(f"gpuprof.mstx: message must be a non-empty str, got {msg!r}")
    return msg.encode("utf-8")


_off = None  # why the marks are off (the libraries could not be loaded), once known


def _core():
    """libgpuprof.so, or None when it cannot be loaded (said once)."""
    global _off
    if _off is not None:
        return None
    try:
        return _native.native().core
    except (_native.NativeLibraryError, ImportError) as e:
        _off = f"{type(e).__name__}: {e}"
        print(f"gpuprof: mstx marks and ranges are off (nothing is recorded): {_off}", file=sys.stderr)
        return None


def _not_recorded(what, msg, status):
    # Outside every profile: the mark is lost, and a program that expects it in the DB is told once.
    # Inside one, a step its schedule does not record is the schedule's choice: no word.
    if status != _native.GPUPROF_ERROR_NOT_STARTED:
        return
    from . import profiler

    if not profiler.inside_a_profile():
        _messages.warn_once(("mstx", "not started"),
                            f"gpuprof.mstx: {what} {msg!r} was not recorded: no profile is recording in this "
                            "process; make marks and ranges inside `with gpuprof.profile(...)` (or run the program "
                            "under `gpuprof run`). Said once: later ones outside a profile are not reported.")


def mark(msg):
    """An instant marker; True when recorded."""
    message = _message(msg)
    core = _core()
    if core is None:
        return False
    status = core.gpuprof_mark(message)
    _not_recorded("mark", msg, status)
    return status == _native.GPUPROF_OK


def range_start(msg):
    """Opens a range; returns its id (0: nothing recorded)."""
    message = _message(msg)
    core = _core()
    if core is None:
        return 0
    rid = ctypes.c_uint64(0)
    status = core.gpuprof_range_start(message, ctypes.byref(rid))
    _not_recorded("range", msg, status)
    if status != _native.GPUPROF_OK:
        return 0
    return rid.value


def range_end(range_id):
    """Ends a range range_start opened; True when recorded. An id of 0 is ignored."""
    if isinstance(range_id, bool) or not isinstance(range_id, int) or range_id < 0:
        raise ValueError(f"gpuprof.mstx.range_end: range_id must be an id from range_start, got {range_id!r}")
    if range_id == 0:
        return False
    core = _core()
    return core is not None and core.gpuprof_range_end(range_id) == _native.GPUPROF_OK
