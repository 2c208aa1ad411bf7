"""The process's native session as gpuprof.profile's profiles share it (profiler.py): session()
is the one of this process."""

import json
import os
import threading

from . import _native, _run_db


class SharedSession:
    """The process's native session as this package's profiles share it.

    libgpuprof.so runs one session per process and counts starts (gpuprof_c.h): a profile started
    while another records (another thread's, a nested one) joins that session and its DB, and the
    configuration it brings is not applied. So the first profile starts the session with a result
    file of its own, reads the DB's name from the "partial <path>" line the session writes there at
    once, and every profile that joins is told that name; the last one to stop reads the "db <path>"
    line of the finalized DB, sets it on every profile of the session and removes the file. A
    session this package did not start (`gpuprof run`'s, C code's) writes to no file of ours: its
    profiles' db_path stays None.
    """

    def __init__(self):
        self.lock = threading.Lock()
        self.members = []   # profiles recording into the session
        self.joined = []    # every profile of the session, stopped ones too
        self.result_file = None  # ours; None: the session is not ours (its DB unknown)
        self.db_path = None

    def begin(self, prof, n):
        """Starts or joins the session for `prof`; the native status."""
        with self.lock:
            ours = self.result_file is not None
            if self.members:
                # Ours: nothing to configure. Not ours (`gpuprof run`'s): nothing would be applied,
                # and the profile says itself what it cannot honour (_run_db.py).
                status = n.core.gpuprof_start(None)
                if status == _native.GPUPROF_OK:
                    self.members.append(prof)
                    self.joined.append(prof)
                    prof.db_path = self.db_path
                    prof._in_run_db = not ours
                return status
            config = None if prof._whole_run else json.dumps(prof._config()).encode()
            result_file, prof._result_file = prof._result_file, None
            status = n.core.gpuprof_start(config)
            if status != _native.GPUPROF_OK:
                _remove(result_file)
                return status
            partial = _result_line(result_file, "partial")
            if partial is not None:
                self.result_file = result_file
                self.db_path = partial[:-len(".partial")] if partial.endswith(".partial") else partial
            else:
                _remove(result_file)  # joined a session not ours: the file was not taken
                self.result_file, self.db_path = None, _run_db.running_db_path()
            self.joined = []
            self.members.append(prof)
            self.joined.append(prof)
            prof.db_path = self.db_path
            prof._in_run_db = self.result_file is None
            return _native.GPUPROF_OK

    def end(self, prof, n):
        """Releases `prof`'s start; the native status. The last profile's stop finalizes the DB."""
        with self.lock:
            if prof in self.members:
                self.members.remove(prof)
            status = n.core.gpuprof_stop()
            if self.members:
                return status
            result_file, self.result_file = self.result_file, None
            joined, self.joined = self.joined, []
            if result_file is not None:
                self.db_path = None
                final = _result_line(result_file, "db") if status == _native.GPUPROF_OK else None
                _remove(result_file)
                for member in joined:
                    member.db_path = final
            return status


def _result_line(path, kind):
    """The text of the last "<kind> <text>" line of the result file, or None."""
    if not path:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [ln.rstrip("\n") for ln in f if ln.startswith(kind + " ")]
    except OSError:
        return None
    return lines[-1][len(kind) + 1:] if lines else None


def _remove(path):
    if path:
        try:
            os.unlink(path)
        except OSError:
            pass


_session = SharedSession()


def session():
    """This process's SharedSession (a fork child has a fresh one)."""
    return _session


def _forget_in_fork_child():
    # The child has none of its parent's recording profiles (their session is the parent's), and a
    # parent's thread may have held the lock at fork().
    global _session
    _session = SharedSession()


os.register_at_fork(after_in_child=_forget_in_fork_child)
