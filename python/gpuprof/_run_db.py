"""A gpuprof.profile inside `gpuprof run` (or inside a session C code started): the process's
session is not the profile's, so the profile records into that session's DB, which is written
when the program exits. This module finds that DB's name and says what the profile cannot do
before it exists.

The name: every profiled process of the run notes "partial <path>" in the run's result file
(GPUPROF_RESULT_FILE) when its session starts; this process's line is the one whose file this
process has open (its session's SQLite connection), so ranks and children writing the same result
file are told apart without guessing from folder names.
"""

import os

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
