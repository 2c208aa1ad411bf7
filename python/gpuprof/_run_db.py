"""A gpuprof.profile inside `gpuprof run` (or inside a session C code started): the process's
session is not the profile's, so the profile records into that session's DB, which is written
when the program exits. This module finds that DB's name, and gives the profile its figures at
once through a window DB: while the profile records, the session copies what it collects into a
second DB in a temporary folder (gpuprof_window_begin_v1 / _end_v1), finalized the first time the
profile's results are asked for (gpuprof_window_db_v1: a profile nobody reads costs no finalize),
so key_averages(), events(), export_chrome_trace(path) (written when called) and the other
exports read the profile's own recording (its active steps). The session keeps one ended window:
the next recording's replaces it unread. The folders go at exit. What cannot have a window (a
second profile recording at once, a failure, a window replaced unread) says so once and falls
back to the run's DB, written at exit.

The name: every profiled process of the run notes "partial <path>" in the run's result file
(GPUPROF_RESULT_FILE) when its session starts; this process's line is the one whose file this
process has open (its session's SQLite connection), so ranks and children writing the same result
file are told apart without guessing from folder names.
"""

import atexit
import ctypes
import os
import shutil
import tempfile

from . import _messages

_PARTIAL_SUFFIX = ".partial"


def running_db_path():
    """The final name of the DB this process's running session writes, or None when it cannot be
    told (no result file: not under `gpuprof run`)."""
    try:
        from . import _settings

        result_file = os.environ.get(_settings.table()["result_file"]["env"], "")
    except Exception:  # noqa: BLE001  (no settings table: no name)
        return None
    if not result_file:
        return None
    try:
        with open(result_file, encoding="utf-8", errors="replace") as f:
            partials = [ln[len("partial "):].rstrip("\n") for ln in f if ln.startswith("partial ")]
    except OSError:
        return None
    held = _open_files()
    for partial in reversed(partials):
        try:
            st = os.stat(partial)
        except OSError:
            continue  # finalized already, or another run's
        if (st.st_dev, st.st_ino) in held:
            return partial[:-len(_PARTIAL_SUFFIX)] if partial.endswith(_PARTIAL_SUFFIX) else partial
    return None


def _open_files():
    held = set()
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return held
    for fd in fds:
        try:
            st = os.stat(os.path.join("/proc/self/fd", fd))
        except OSError:
            continue
        held.add((st.st_dev, st.st_ino))
    return held


def where(db_path):
    return db_path if db_path else "the run's output folder (gpuprof run -o)"


def warn_handler_not_used(handler_dir, db_path):
    _messages.warn_once(("run owns the DB", handler_dir),
                        f"gpuprof.profile: db_handler({handler_dir!r}) is not used: under `gpuprof run` the run owns "
                        f"the profile DB, and this profile records into it: {where(db_path)} (written when the "
                        "program exits; prof.db_path names it). Run the script without `gpuprof run` for a DB "
                        "of its own.")


def warn_not_written_yet(what, db_path):
    _messages.warn_once(("run DB not written yet", what),
                        f"gpuprof.profile.{what}: this profile records into the DB of `gpuprof run`, "
                        f"{where(db_path)}, which is written when the program exits: "
                        + ("no figures before then (this list is empty); after the run, `gpuprof stats "
                           f"{db_path or '<db>'}` has them" if what == "key_averages" else
                           "the trace is written then, right after the DB"))


def recording_began(prof, n):
    """`prof` joined the run's session and records: its window DB opens (its earlier one goes).
    `gpuprof run`'s own profile (_autorun.py) is the run: it has none."""
    global _last
    if prof._whole_run:
        return
    from .profiler import db_handler

    if isinstance(prof.on_trace_ready, db_handler):
        warn_handler_not_used(prof.on_trace_ready.dir_name, prof.db_path)
    _discard(prof)
    _last = None  # the session's ended window, unread, goes with this begin
    folder = tempfile.mkdtemp(prefix="gpuprof_window_")
    if n.core.gpuprof_window_begin_v1(folder.encode()) != 0:
        shutil.rmtree(folder, ignore_errors=True)
        _no_window(n)
        return
    prof._window = [folder, None]
    _folders.add(folder)


def recording_ended(prof, n):
    """`prof`'s recording stopped: its window DB is complete, finalized when first read."""
    global _last
    window = getattr(prof, "_window", None)
    if window is None or window[1] is not None:
        return
    if n.core.gpuprof_window_end_v1() != 0:
        _no_window(n)
        _discard(prof)
        return
    window[1] = ""  # ended, not finalized yet
    _last = prof


def results_db(prof):
    """The DB `prof`'s results are read from now: the window DB of its last recording (finalized
    now if it is not yet), else the run's DB once written; None while neither exists."""
    window = getattr(prof, "_window", None)
    if window is not None and window[1] == "" and _last is prof:
        from . import _native

        n = _native.native()
        path = ctypes.create_string_buffer(4096)
        if n.core.gpuprof_window_db_v1(path, len(path)) == 0:
            window[1] = path.value.decode("utf-8", "surrogateescape")
        else:
            _no_window(n)
            _discard(prof)
    if window is not None and window[1] and os.path.isfile(window[1]):
        return window[1]
    return prof.db_path if prof.db_path and os.path.isfile(prof.db_path) else None


def _no_window(n):
    _messages.warn_once(("run DB window", n.last_error()),
                        "gpuprof.profile under `gpuprof run`: this profile's figures come from the run's DB, "
                        f"written when the program exits, not at once: {n.last_error()}")


def _discard(prof):
    window, prof._window = getattr(prof, "_window", None), None
    if window is not None:
        _folders.discard(window[0])
        shutil.rmtree(window[0], ignore_errors=True)


_folders = set()  # the window DBs' folders of this process, removed at exit
_last = None  # the profile whose window the session holds ended (one at a time)


_owner = os.getpid()  # a fork child leaves its parent's folders alone


@atexit.register
def _remove_folders():
    if os.getpid() != _owner:
        return
    for folder in list(_folders):
        shutil.rmtree(folder, ignore_errors=True)
