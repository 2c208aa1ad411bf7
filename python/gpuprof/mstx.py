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

As torch_npu's mstx, each takes a `domain` (default "default"): msprof-analyze reads ranges per
domain (module_statistic the "Module" ranges, operator_mfu the "mfu_flops" ones). A range started
with a CUDA `stream` (a torch.cuda.Stream or a cudaStream_t as an int), or with device=True, is
device-linked: its device time is that of the kernels, copies and memsets the calling thread
launches until it ends (on that stream only, when one is given), from the first one's start to the
last one's end, derived when the profile is written; no device work is added. A range whose thread
launched nothing in it keeps host times only.

    rid = gpuprof.mstx.range_start("matmul", torch.cuda.current_stream())
    y = a @ b
    gpuprof.mstx.range_end(rid)
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


def _domain(domain):
    if not isinstance(domain, str) or not domain:
        raise ValueError(f"gpuprof.mstx: domain must be a non-empty str, got {domain!r}")
    return domain.encode("utf-8")


def _stream_handle(stream):
    """The cudaStream_t of a torch.cuda.Stream (or an int handle), or None."""
    if stream is None:
        return None
    if isinstance(stream, bool):
        raise TypeError(f"gpuprof.mstx: stream must be a torch.cuda.Stream or a cudaStream_t int, got {stream!r}")
    if isinstance(stream, int):
        if stream < 0:
            raise ValueError(f"gpuprof.mstx: stream must be a cudaStream_t (>= 0), got {stream!r}")
        return stream
    handle = getattr(stream, "cuda_stream", None)
    if isinstance(handle, int):
        return handle
    raise TypeError(f"gpuprof.mstx: stream must be a torch.cuda.Stream or a cudaStream_t int, got {stream!r}")


def _older_library(what):
    _messages.warn_once(("mstx", "older library"),
                        f"gpuprof.mstx: {what} was recorded in domain \"default\", host-only: the loaded "
                        "libgpuprof.so predates mstx domains and device-linked ranges")


def mark(msg, stream=None, domain="default"):
    """An instant marker in `domain`; True when recorded. A device-side marker (stream) is not
    supported: use a range with a stream."""
    message = _message(msg)
    dom = _domain(domain)
    if stream is not None:
        raise ValueError("gpuprof.mstx.mark: a marker on a stream is not supported; "
                         "use range_start(message, stream) / range_end for a device-linked range")
    core = _core()
    if core is None:
        return False
    if hasattr(core, "gpuprof_mark_v1"):
        m = _native.Mstx(ctypes.sizeof(_native.Mstx), 0, message, dom, 0)
        status = core.gpuprof_mark_v1(ctypes.byref(m))
    else:
        if domain != "default":
            _older_library(f"mark {msg!r}")
        status = core.gpuprof_mark(message)
    _not_recorded("mark", msg, status)
    return status == _native.GPUPROF_OK


def range_start(msg, stream=None, domain="default", device=False):
    """Opens a range in `domain`; returns its id (0: nothing recorded). With a CUDA `stream` or
    device=True the range is device-linked (see the module's doc)."""
    message = _message(msg)
    dom = _domain(domain)
    handle = _stream_handle(stream)
    flags = (_native.GPUPROF_MSTX_STREAM if handle is not None else 0) | \
        (_native.GPUPROF_MSTX_DEVICE if device else 0)
    core = _core()
    if core is None:
        return 0
    rid = ctypes.c_uint64(0)
    if hasattr(core, "gpuprof_range_start_v1"):
        r = _native.Mstx(ctypes.sizeof(_native.Mstx), flags, message, dom, handle or 0)
        status = core.gpuprof_range_start_v1(ctypes.byref(r), ctypes.byref(rid))
    else:
        if domain != "default" or flags:
            _older_library(f"range {msg!r}")
        status = core.gpuprof_range_start(message, ctypes.byref(rid))
    _not_recorded("range", msg, status)
    if status != _native.GPUPROF_OK:
        return 0
    return rid.value


def range_end(range_id, domain="default"):
    """Ends a range range_start opened; True when recorded. An id of 0 is ignored. `domain` is
    accepted as torch_npu's mstx takes it; the id alone names the range."""
    if isinstance(range_id, bool) or not isinstance(range_id, int) or range_id < 0:
        raise ValueError(f"gpuprof.mstx.range_end: range_id must be an id from range_start, got {range_id!r}")
    _domain(domain)
    if range_id == 0:
        return False
    core = _core()
    return core is not None and core.gpuprof_range_end(range_id) == _native.GPUPROF_OK
