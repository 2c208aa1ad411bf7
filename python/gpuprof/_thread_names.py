"""Python's thread names ("MainThread", "Thread-1 (worker)") for the profile's threads.

The native session knows threads by OS id only; `gpuprof export` names a thread as Python does when
the DB carries the name (META_DATA gpuprof_thread_names, through gpuprof_name_thread_v1). A
recording's stop hands over the names of the threads alive then and of those that ended since the
first recording started: a worker joined before the stop still did its ops in the profile. Only
threads `threading` started are named; torch's own threads (autograd's) keep their number.
"""

import threading

_lock = threading.Lock()
_ended = {}  # native_id -> name, of threads that ended since install()
_installed = False


def install():
    """From now on, notes each thread's name as it ends (idempotent)."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
        original = getattr(threading.Thread, "_bootstrap_inner", None)
        if original is None:  # another Python's threading: only live threads get named
            return

        def bootstrap_inner(self):
            try:
                return original(self)
            finally:
                native_id = getattr(self, "native_id", None)
                if native_id:
                    with _lock:
                        _ended[native_id] = self.name

        threading.Thread._bootstrap_inner = bootstrap_inner


def hand_over(core):
    """Names every known thread through `core` (libgpuprof.so); a failure leaves threads numbered,
    with one warning: the names are for reading the trace, never worth stopping the program."""
    with _lock:
        names = dict(_ended)
        _ended.clear()
    name_thread = getattr(core, "gpuprof_name_thread_v1", None)
    if name_thread is None:
        return
    try:
        for thread in threading.enumerate():
            if isinstance(thread, threading._DummyThread):  # not started by threading: no Python name
                continue
            if thread.native_id:
                names[thread.native_id] = thread.name
        for native_id, name in names.items():
            text = str(name).encode("utf-8", "replace")[:1024] or b"?"
            name_thread(native_id, text)
    except Exception as e:  # noqa: BLE001
        from . import _messages

        _messages.warn_once(("thread names",), f"gpuprof.profile: thread names are not recorded (the trace "
                                               f"numbers the threads): {type(e).__name__}: {e}")
