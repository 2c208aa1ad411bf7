"""torch.cuda.empty_cache() calls as ops while gpuprof records.

torch records no op for torch.cuda.empty_cache(), so nothing in a profile would show a call made
inside the training loop (each one hands the allocator's cached blocks back to the driver with
cudaFree, which waits for the device, and the next steps allocate them again with cudaMalloc).
While any profile of this process records (gpuprof.profile, and the whole-run profile of
`gpuprof run`, which is one), torch.cuda.empty_cache and torch.cuda.memory.empty_cache (one
function, under two names) call the original inside
torch.autograd.profiler.record_function("torch.cuda.empty_cache"): an op that gpuprof's
RecordFunction hooks record, and that the empty-cache finding reads. The first recording to begin
puts the wrapper in place, the last to end puts the original back (unless the program replaced it
in the meantime: then its own stays).

A name bound before the recording began (`from torch.cuda import empty_cache`, or
`ec = torch.cuda.empty_cache`) still calls the original: its calls are not seen. A wrapper that
cannot be put in place is said once and the program runs on unwrapped; a range that cannot be
opened around a call is said once and the call runs all the same.
"""

import functools
import importlib
import os
import threading

from . import _messages

OP_NAME = "torch.cuda.empty_cache"
_MODULES = ("torch.cuda", "torch.cuda.memory")

_lock = threading.Lock()
_users = 0  # recordings holding the wrapper
_wrapped = []  # (module, original, wrapper) of each module whose empty_cache is wrapped


def acquire():
    """A recording began: the wrapper is in place while any holds it. True when this call holds it
    (release() it when the recording ends); False when it cannot be put in place (said once)."""
    global _users
    with _lock:
        if _users == 0:
            try:
                _install()
            except Exception as e:  # noqa: BLE001  (the program runs on, its calls unrecorded)
                _restore()
                _messages.warn_once(("empty_cache", "wrap"),
                                    f"gpuprof: torch.cuda.empty_cache() calls are not recorded (the program runs "
                                    f"on): wrapping it failed: {type(e).__name__}: {e}. (Said once.)")
                return False
        _users += 1
        return True


def release():
    """A recording that holds the wrapper ended: the last one puts the originals back."""
    global _users
    with _lock:
        _users = max(_users - 1, 0)
        if _users == 0:
            _restore()


def _install():
    wrappers = {}  # id(original) -> its wrapper: one per function, however many names it has
    for name in _MODULES:
        module = importlib.import_module(name)
        original = getattr(module, "empty_cache")
        wrapper = wrappers.get(id(original))
        if wrapper is None:
            wrapper = wrappers[id(original)] = _wrap(original)
        setattr(module, "empty_cache", wrapper)
        _wrapped.append((module, original, wrapper))


def _restore():
    while _wrapped:
        module, original, wrapper = _wrapped.pop()
        if getattr(module, "empty_cache", None) is wrapper:
            setattr(module, "empty_cache", original)


def _wrap(original):
    @functools.wraps(original)
    def empty_cache(*args, **kwargs):
        try:
            from torch.autograd import profiler

            rng = profiler.record_function(OP_NAME)
            rng.__enter__()
        except Exception as e:  # noqa: BLE001  (the user's call runs all the same)
            _messages.warn_once(("empty_cache", "range"),
                                f"gpuprof: a torch.cuda.empty_cache() call is not recorded (it runs all the same): "
                                f"{type(e).__name__}: {e}. (Said once.)")
            return original(*args, **kwargs)
        try:
            return original(*args, **kwargs)
        finally:
            rng.__exit__(None, None, None)

    return empty_cache


def _forget_in_fork_child():
    # A parent's thread may have held the lock at fork(); the child's profiles release what they
    # hold as they leave (profiler.py).
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_in_fork_child)
