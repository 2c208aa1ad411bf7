"""The native libraries, through ctypes: libgpuprof.so (the session's C API, gpuprof_c.h) and
libgpuprof_torch.so (PyTorch's op and memory hooks, include/gpuprof/gpuprof_torch.h).

They are looked up in $GPUPROF_LIB_DIR, then, for an installed package, where `cmake --install`
put them (_install_layout.py, written by the install: <prefix>/lib), else in the build folders of
this checkout (build/default/lib, build/ci/lib, build/gpu/lib). Loading torch first matters:
libgpuprof_torch.so links the libtorch that `import torch` brought in.
"""

import ctypes
import os

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_REPO_ROOT = os.path.dirname(os.path.dirname(_PACKAGE_DIR))
_BUILD_DIRS = ("build/default/lib", "build/ci/lib", "build/gpu/lib")

GPUPROF_OK = 0
GPUPROF_ERROR_INVALID_CONFIG = 2
GPUPROF_ERROR_NOT_STARTED = 3
GPUPROF_ERROR_OUTPUT = 5


class NativeLibraryError(RuntimeError):
    """The native libraries could not be found or loaded."""


def _candidate_dirs():
    env = os.environ.get("GPUPROF_LIB_DIR")
    if env:
        yield env
    try:
        from . import _install_layout
    except ImportError:  # a checkout: its build folders
        for rel in _BUILD_DIRS:
            yield os.path.join(_REPO_ROOT, rel)
    else:
        yield os.path.normpath(os.path.join(_PACKAGE_DIR, _install_layout.LIB_DIR))


def lib_dir():
    """The folder that holds libgpuprof.so and libgpuprof_torch.so."""
    tried = []
    for folder in _candidate_dirs():
        tried.append(folder)
        if all(os.path.isfile(os.path.join(folder, n)) for n in ("libgpuprof.so", "libgpuprof_torch.so")):
            return folder
    raise NativeLibraryError(
        "gpuprof's native libraries (libgpuprof.so, libgpuprof_torch.so) were not found in "
        + ", ".join(tried)
        + "; build them (bash tools/setup.sh), reinstall gpuprof, or set GPUPROF_LIB_DIR to the folder that has them")


def cli_path():
    """The gpuprof command: the one built beside the native libraries (<build>/bin/gpuprof), else
    `gpuprof` on PATH."""
    import shutil

    try:
        beside = os.path.join(os.path.dirname(lib_dir()), "bin", "gpuprof")
        if os.path.isfile(beside) and os.access(beside, os.X_OK):
            return beside
    except NativeLibraryError:
        pass
    found = shutil.which("gpuprof")
    if found:
        return found
    raise NativeLibraryError("the gpuprof command was found neither beside gpuprof's native libraries "
                             "(<build>/bin/gpuprof) nor on PATH; build it (bash tools/setup.sh) or put it on PATH")


class _Native:
    def __init__(self):
        import torch  # noqa: F401  (libgpuprof_torch.so needs the process's libtorch)

        folder = lib_dir()
        try:
            self.core = ctypes.CDLL(os.path.join(folder, "libgpuprof.so"), mode=ctypes.RTLD_GLOBAL)
            self.hooks = ctypes.CDLL(os.path.join(folder, "libgpuprof_torch.so"))
            # Its Python stacks call the interpreter's C API: the GIL is taken inside (PyDLL would
            # hold it across the call and deadlock against torch's threads).
        except OSError as e:
            raise NativeLibraryError(f"cannot load gpuprof's native libraries from {folder}: {e}") from e
        c = self.core
        c.gpuprof_start.argtypes = [ctypes.c_char_p]
        c.gpuprof_stop.argtypes = []
        c.gpuprof_flush.argtypes = []
        c.gpuprof_mark.argtypes = [ctypes.c_char_p]
        c.gpuprof_range_start.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64)]
        c.gpuprof_range_end.argtypes = [ctypes.c_uint64]
        c.gpuprof_last_error.restype = ctypes.c_char_p
        c.gpuprof_record_gc_event_v1.argtypes = [ctypes.c_void_p]
        c.gpuprof_record_torch_op_v1.argtypes = [ctypes.c_void_p]
        c.gpuprof_configure_replay_settings_v1.argtypes = [ctypes.POINTER(ctypes.c_char_p),
                                                           ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t]
        c.gpuprof_record_range_v1.argtypes = [ctypes.c_void_p]
        c.gpuprof_window_begin_v1.argtypes = [ctypes.c_char_p]
        c.gpuprof_window_end_v1.argtypes = []
        c.gpuprof_window_db_v1.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        if hasattr(c, "gpuprof_mark_v1"):  # an older library: marks and ranges in domain "default" only
            c.gpuprof_mark_v1.argtypes = [ctypes.c_void_p]
            c.gpuprof_range_start_v1.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64)]
        if hasattr(c, "gpuprof_name_thread_v1"):  # an older library: threads keep their numbers
            c.gpuprof_name_thread_v1.argtypes = [ctypes.c_uint64, ctypes.c_char_p]
        h = self.hooks
        h.gpuprof_torch_enable_v1.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        h.gpuprof_torch_disable_v1.argtypes = []
        h.gpuprof_torch_ops_dropped_v1.restype = ctypes.c_uint64
        h.gpuprof_torch_memory_step_aside_v1.argtypes = []
        h.gpuprof_torch_memory_resume_v1.argtypes = []

    def configure_replay_settings(self, settings):
        """gpuprof_configure_replay_settings_v1 with {json key: text}; {"replay_passes": "1"} pauses.
        Returns the status (last_error() says why)."""
        keys = (ctypes.c_char_p * len(settings))(*[k.encode("utf-8") for k in settings])
        values = (ctypes.c_char_p * len(settings))(*[str(v).encode("utf-8") for v in settings.values()])
        return self.core.gpuprof_configure_replay_settings_v1(keys, values, len(settings))

    def last_error(self):
        text = self.core.gpuprof_last_error()
        return text.decode("utf-8", "replace") if text else "unknown error"


class _Range(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("tid", ctypes.c_uint32), ("start_ns", ctypes.c_int64),
                ("end_ns", ctypes.c_int64), ("domain", ctypes.c_char_p), ("message", ctypes.c_char_p)]


# gpuprof_mstx_v1.flags
GPUPROF_MSTX_DEVICE = 1
GPUPROF_MSTX_STREAM = 2


class Mstx(ctypes.Structure):
    """gpuprof_mstx_v1: a marker or range with a domain and, for a range, a device link."""
    _fields_ = [("size", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("message", ctypes.c_char_p),
                ("domain", ctypes.c_char_p), ("stream", ctypes.c_uint64)]


class _GcEvent(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("start_ns", ctypes.c_int64), ("end_ns", ctypes.c_int64)]


class _TorchOp(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("tid", ctypes.c_uint32), ("start_ns", ctypes.c_int64),
                ("end_ns", ctypes.c_int64), ("name", ctypes.c_char_p), ("sequence_number", ctypes.c_int64),
                ("fwd_thread_id", ctypes.c_uint64), ("input_dtypes", ctypes.c_char_p),
                ("input_shapes", ctypes.c_char_p), ("call_stack", ctypes.c_void_p),
                ("call_stack_depth", ctypes.c_uint32), ("type", ctypes.c_uint32),
                ("correlation_ids", ctypes.c_void_p), ("correlation_count", ctypes.c_uint32)]


GPUPROF_TORCH_OP = 50001

_native = None


def native():
    """The loaded libraries (loaded at the first call)."""
    global _native
    if _native is None:
        _native = _Native()
    return _native


def loaded():
    """The libraries when a call loaded them already, else None (never loads them)."""
    return _native


def record_op(name, tid, start_ns, end_ns):
    """A host op with explicit times (e.g. a ProfilerStep#N closed by optimizer.step()); True when kept."""
    op = _TorchOp(ctypes.sizeof(_TorchOp), tid, int(start_ns), int(max(end_ns, start_ns)), name.encode("utf-8"),
                  -1, 0, None, None, None, 0, GPUPROF_TORCH_OP, None, 0)
    return native().core.gpuprof_record_torch_op_v1(ctypes.byref(op)) == GPUPROF_OK


_replaying = None  # whether `gpuprof replay` started this process (GPUPROF_REPLAY), read once


def replay_step_boundary():
    """One training step ended: with `gpuprof replay --replay-mode range --range step` the step's range
    ends and the next begins (gpuprof_replay_step_boundary_v1). Without replay no native call is made,
    so an unreplayed training step pays one dict lookup; an older library without the call is skipped."""
    global _replaying
    if _replaying is None:
        from . import _settings
        try:
            _replaying = bool(_settings.from_environment("replay"))
        except ValueError:  # a bad GPUPROF_REPLAY: the session says so, and replays nothing
            _replaying = False
    if not _replaying:
        return False
    boundary = getattr(native().core, "gpuprof_replay_step_boundary_v1", None)
    return boundary is not None and boundary() == GPUPROF_OK


def record_gc(start_ns, end_ns):
    event = _GcEvent(ctypes.sizeof(_GcEvent), int(start_ns), int(max(end_ns, start_ns)))
    return native().core.gpuprof_record_gc_event_v1(ctypes.byref(event))


def record_range(domain, message, start_ns, end_ns):
    """A finished MSTX range of `domain` on the calling thread; True when kept."""
    r = _Range(ctypes.sizeof(_Range), 0, int(start_ns), int(max(end_ns, start_ns)), domain.encode("utf-8"),
               message.encode("utf-8"))
    return native().core.gpuprof_record_range_v1(ctypes.byref(r)) == GPUPROF_OK
