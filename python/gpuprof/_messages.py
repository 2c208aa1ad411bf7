"""One warning per problem: what a profiler that cannot record says instead of stopping the program.

warn_once(key, message) issues a RuntimeWarning the first time `key` is seen in this process and
nothing after (a profile started in a loop, a mark made at every step, says it once). The warning
points at the program's line, not at gpuprof's. Thread-safe; a fork child starts with what its
parent had said.
"""

import os
import sys
import threading
import warnings

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_lock = threading.Lock()
_said = set()


def _reset_lock_in_child():
    # A thread of the parent may have held the lock at fork(); the child has no such thread.
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_reset_lock_in_child)


def warn_once(key, message, category=RuntimeWarning):
    """Warns `message` unless a warning of `key` was issued already; True when it was issued now."""
    with _lock:
        if key in _said:
            return False
        _said.add(key)
    # stacklevel 2 is warn_once's caller; step out of the package to the program's frame.
    level, frame = 2, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
    return True
