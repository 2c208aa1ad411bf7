"""torch's own profiler (a script's torch.profiler / torch.autograd.profiler) beside gpuprof's.

torch keeps one profiler state per thread and refuses to start ("Profiler is already enabled on
this thread") while anything holds it, and gpuprof's memory reporter (libgpuprof_torch.so, with
profile_memory) holds it. So every way torch's profiler starts and stops (the functions
torch.autograd.profiler, profiler_legacy and torch.autograd call: profile, emit_nvtx, emit_itt,
torch.profiler.profile through them) is wrapped once: before the start, the reporter steps aside
on that thread; after the stop (or a start that failed), it comes back. What gpuprof then misses
and what torch then misses is said once (the first time torch's profiler starts while gpuprof
records): gpuprof records no memory events on that thread while torch's profiler runs, and CUPTI
takes one subscriber per process, gpuprof's, so torch's profiler sees no GPU kernels. gpuprof's
ops (RecordFunction callbacks: torch's and gpuprof's coexist) are recorded throughout.
"""

import functools
import threading

from . import _native

_lock = threading.Lock()
_installed = False
_recording = 0  # gpuprof profiles recording in this process (their hooks enabled)
_said = False  # the one warning (_say_once)

# (module, name, kind) of torch's profiler entry points: kind "start" or "stop".
_ENTRY_POINTS = (
    ("torch.autograd.profiler", "_enable_profiler", "start"),
    ("torch.autograd.profiler", "_disable_profiler", "stop"),
    ("torch.autograd.profiler_legacy", "_enable_profiler_legacy", "start"),
    ("torch.autograd.profiler_legacy", "_disable_profiler_legacy", "stop"),
    ("torch.autograd", "_enable_profiler", "start"),
    ("torch.autograd", "_disable_profiler", "stop"),
    ("torch.autograd", "_enable_profiler_legacy", "start"),
    ("torch.autograd", "_disable_profiler_legacy", "stop"),
)


def recording_began():
    """A gpuprof profile enabled its hooks: torch's profiler entry points are wrapped (once)."""
    global _recording
    with _lock:
        _recording += 1
    _install()


def recording_ended():
    global _recording
    with _lock:
        _recording = max(_recording - 1, 0)


def _install():
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    import importlib

    for module_name, name, kind in _ENTRY_POINTS:
        try:
            module = importlib.import_module(module_name)
            original = getattr(module, name)
        except (ImportError, AttributeError):
            continue  # another torch: what it lacks cannot collide
        if getattr(original, "_gpuprof_wrapped", False):
            continue
        setattr(module, name, _wrap_start(original) if kind == "start" else _wrap_stop(original))


def _wrap_start(original):
    @functools.wraps(original)
    def start(*args, **kwargs):
        n = _native.loaded()  # loaded by any gpuprof profile that ever recorded
        stepped = n is not None and n.hooks.gpuprof_torch_memory_step_aside_v1() == 1
        if _recording:
            _say_once()
        try:
            return original(*args, **kwargs)
        except BaseException:
            if stepped:
                n.hooks.gpuprof_torch_memory_resume_v1()
            raise

    start._gpuprof_wrapped = True
    return start


def _wrap_stop(original):
    @functools.wraps(original)
    def stop(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        finally:
            n = _native.loaded()
            if n is not None:
                n.hooks.gpuprof_torch_memory_resume_v1()

    stop._gpuprof_wrapped = True
    return stop


def _say_once():
    global _said
    with _lock:
        if _said:
            return
        _said = True
    # At the script's line that started torch's profiler: out of gpuprof's frames and torch's.
    import os
    import sys
    import warnings

    import torch

    skip = (os.path.dirname(os.path.abspath(__file__)) + os.sep, os.path.dirname(torch.__file__) + os.sep)
    level, frame = 2, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(skip):
        frame = frame.f_back
        level += 1
    warnings.warn("gpuprof records while torch.profiler runs too: both profiles are kept, but CUPTI "
                  "takes one subscriber per process (gpuprof's), so torch.profiler sees no GPU kernels, and "
                  "gpuprof records no memory events on a thread while torch.profiler runs there. For "
                  "torch.profiler's GPU view, run the script without gpuprof. (Said once.)", RuntimeWarning,
                  stacklevel=level)
