"""nn.Module forwards as ranges in domain "Module" while a profile with with_modules records
(profiler.py); the format's module_statistic reads them."""

import os
import threading
import time
import weakref

from . import _native


class ModuleRanges:
    """One pair of global nn.Module forward hooks for the process, however many profiles ask for
    module ranges (a script's own profile inside `gpuprof run --with-modules`): each forward is one
    range, named by the module's path in the model and its class, "layers.3.mlp.fc1 (Linear)" (the
    outermost module by its class alone), so that two Linear layers are two rows. The paths are
    model.named_modules()'s, learnt once per outermost module from the first forward that enters it."""

    _lock = threading.Lock()
    _users = 0
    _handles = []
    _frames = threading.local()
    _names_lock = threading.Lock()
    _names = weakref.WeakKeyDictionary()  # module -> (path, range name)

    @classmethod
    def acquire(cls):
        with cls._lock:
            if cls._users == 0:
                import torch.nn.modules.module as nn_module

                cls._handles = [nn_module.register_module_forward_pre_hook(cls._enter),
                                nn_module.register_module_forward_hook(cls._exit)]
            cls._users += 1

    @classmethod
    def release(cls):
        with cls._lock:
            cls._users -= 1
            if cls._users == 0:
                for handle in cls._handles:
                    handle.remove()
                cls._handles = []

    @classmethod
    def _learn(cls, root):
        """Names every module under `root` by its path from it; a module known only as an outermost
        one ("" path) takes the longer path when a model around it is learnt."""
        for path, sub in root.named_modules():
            known = cls._names.get(sub)
            if known is None or (not known[0] and path):
                cls._names[sub] = (path, f"{path} ({type(sub).__name__})" if path else type(sub).__name__)

    @classmethod
    def _name(cls, module, outermost):
        try:
            with cls._names_lock:
                known = cls._names.get(module)
                if known is None:
                    cls._learn(outermost)
                    known = cls._names.get(module)
                    if known is None:  # not under the outermost module: an outermost one of its own
                        cls._learn(module)
                        known = cls._names.get(module)
            return known[1] if known is not None else type(module).__name__
        except Exception:  # noqa: BLE001  (unhashable, or a named_modules() that raises: the class will do)
            return type(module).__name__

    @classmethod
    def _enter(cls, module, inputs):
        frames = getattr(cls._frames, "stack", None)
        if frames is None:
            frames = cls._frames.stack = []
        name = cls._name(module, frames[0][0] if frames else module)
        frames.append((module, name, time.time_ns()))

    @classmethod
    def _exit(cls, module, inputs, output):
        frames = getattr(cls._frames, "stack", None)
        while frames:  # a forward that raised left its frame: skip to this module's
            entered, name, start_ns = frames.pop()
            if entered is module:
                _native.record_range("Module", name, start_ns, time.time_ns())
                break


def _forget_in_fork_child():
    # A parent's thread may have held the lock at fork().
    ModuleRanges._lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_in_fork_child)
