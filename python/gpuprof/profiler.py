"""gpuprof.profile: a profiler for PyTorch programs, shaped like torch.profiler.profile.

    with gpuprof.profile(activities=[gpuprof.ProfilerActivity.CPU],
                         schedule=gpuprof.schedule(wait=1, warmup=1, active=2),
                         on_trace_ready=gpuprof.db_handler("./prof"),
                         record_shapes=True, profile_memory=True) as prof:
        for batch in data:
            train_step(batch)
            prof.step()

Ops are collected in C++ (libgpuprof_torch.so: RecordFunction callbacks and torch's memory
reports), garbage-collection pauses from gc.callbacks, and everything is written by libgpuprof.so
into ascend_pytorch_profiler[_<rank>].db (docs/architecture.md, "Output layout"). Each recorded cycle of
the schedule (its active steps) is one DB; the last active step hands the profile to
on_trace_ready, and `prof.db_path` names the DB. Warm-up steps run unrecorded: gpuprof needs no
warm-up, and what a warm-up would record is discarded anyway.

Under `gpuprof run` the process's session is already running: the profile joins it (one DB for
the whole run, written when the program exits) and db_path stays None.
"""

import enum
import gc
import json
import math
import os
import tempfile
import threading
import time
import warnings

from . import _native
from .schedule import ProfilerAction

__all__ = ["profile", "db_handler", "ProfilerActivity", "KernelReplay"]

_user_steps = False  # some profile's step() was called in this process


def user_steps_seen():
    """True once a script called profile.step(): its steps, not optimizer.step(), delimit steps."""
    return _user_steps




class ProfilerActivity(enum.Enum):
    CPU = "cpu"
    CUDA = "cuda"


class KernelReplay:
    """Kernel replay for a profile (gpuprof's `replay` flags, chosen by the program).

    While the profile records, each CUDA kernel launch the selector picks runs `passes` times on
    identical inputs (device memory snapshotted before the first pass and restored before each
    later one); the passes' times go to GPUPROF_REPLAY_KERNEL / GPUPROF_REPLAY_PASS. `kernel` is a
    function name, "regex:PATTERN" or None (every kernel); `skip` matching launches run unreplayed
    first; at most `count` launches are replayed per recording (0: no limit); `cache_control`
    "all" flushes L2 before each pass, "none" does not; `restore` "auto" writes back only what a
    pass changed (by chunk hash), "exact" what differs byte for byte, "full" everything; `strict`
    declines launches while kernel-writable untracked memory is live. Side effects replay would
    repeat (rule C2): `printf_kernels` replays kernels that use device printf (the default; what
    they print repeats once per pass, and one warning says so), `malloc_kernels` kernels that use
    device malloc/free, and `with_live_arrays` launches while CUDA arrays exist (writes to arrays
    are not undone); each declined otherwise.

    Hardware counters (Nsight Compute's names, docs/metrics.md): `metrics` (a list of metric names
    or one comma-separated str, e.g. ["dram__bytes_read.sum"]), `section` (section names, e.g.
    "SpeedOfLight" or ["SpeedOfLight", "Occupancy"]) and `set` ("none", "basic" or "full") are
    collected over extra counter passes of each replayed launch; none by default. `clock_control`
    "base" locks the SM and memory clocks at base for the passes and restores them after (NVML lets
    only root do it; otherwise one warning and the clocks stay as they are); "none", the default,
    never touches them.

    Replay needs device memory tracked from the start of the process: run the program with
    `gpuprof replay --from-script -- python3 script.py`. Otherwise the profile records without
    replay and a RuntimeWarning says why.
    """

    # Each argument is a declared setting (src/base/settings.h): its default and its check come from
    # the table, so the program is held to what `gpuprof replay` accepts.
    _SETTINGS = (("passes", "replay_passes"), ("kernel", "replay_kernel"), ("skip", "replay_skip"),
                 ("count", "replay_count"), ("cache_control", "replay_cache_control"),
                 ("restore", "replay_restore"), ("strict", "replay_strict"),
                 ("printf_kernels", "replay_printf_kernels"), ("malloc_kernels", "replay_malloc_kernels"),
                 ("with_live_arrays", "replay_with_live_arrays"), ("metrics", "replay_metrics"),
                 ("section", "replay_section"), ("set", "replay_set"), ("clock_control", "replay_clock_control"))

    def __init__(self, passes=None, kernel=None, skip=None, count=None, cache_control=None, restore=None,
                 strict=None, printf_kernels=None, malloc_kernels=None, with_live_arrays=None, metrics=None,
                 section=None, set=None, clock_control=None):  # noqa: A002  (ncu's --set)
        from . import _settings

        def comma_list(name, value):
            # A list of names or one comma-separated str, as the command line takes it.
            if isinstance(value, (list, tuple)):
                if not all(isinstance(v, str) for v in value):
                    raise ValueError(f"gpuprof.KernelReplay: {name} must be a str or a list of str, got {value!r}")
                return ",".join(value)
            return value

        given = {"passes": passes, "kernel": kernel, "skip": skip, "count": count,
                 "cache_control": cache_control, "restore": restore, "strict": strict,
                 "printf_kernels": printf_kernels, "malloc_kernels": malloc_kernels,
                 "with_live_arrays": with_live_arrays, "metrics": comma_list("metrics", metrics),
                 "section": comma_list("section", section), "set": set, "clock_control": clock_control}
        for name, key in self._SETTINGS:
            value = given[name]
            if value is None:
                value = _settings.default(key)
            kind = _settings.table()[key]["type"]
            if kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"gpuprof.KernelReplay: {name} must be an int, got {value!r}")
            if kind in ("string", "choice", "list") and not isinstance(value, str):
                raise ValueError(f"gpuprof.KernelReplay: {name} must be a str, got {value!r}")
            if name == "kernel" and ("\0" in value or (kernel is not None and not value)):
                raise ValueError("gpuprof.KernelReplay: kernel must be a function name, 'regex:PATTERN' or None "
                                 f"(every kernel), got {kernel!r}")
            canonical = _settings.check(key, value, f"gpuprof.KernelReplay: {name}")
            if kind == "int":
                value = int(canonical)
            elif kind == "bool":
                value = canonical == "1"
            else:
                value = canonical
            setattr(self, name, value)
        self.kernel = self.kernel or None

    def __repr__(self):
        return (f"KernelReplay(passes={self.passes}, kernel={self.kernel!r}, skip={self.skip}, count={self.count}, "
                f"cache_control={self.cache_control!r}, restore={self.restore!r}, strict={self.strict}, "
                f"printf_kernels={self.printf_kernels}, malloc_kernels={self.malloc_kernels}, "
                f"with_live_arrays={self.with_live_arrays}, metrics={self.metrics!r}, section={self.section!r}, "
                f"set={self.set!r}, clock_control={self.clock_control!r})")


class db_handler:  # noqa: N801  (named like torch.profiler.tensorboard_trace_handler)
    """on_trace_ready handler: the profile's DBs go under `dir_name` (created if missing), in a run
    folder named `<worker_name>_<YYYYmmddHHMMSSfff>_ascend_pt` (worker_name: `<hostname>_<pid>`)."""

    def __init__(self, dir_name, worker_name=None):
        if not isinstance(dir_name, (str, os.PathLike)) or not str(dir_name):
            raise ValueError(f"gpuprof.db_handler: dir_name must be a non-empty path, got {dir_name!r}")
        # The session's rule for worker_name (CheckWorkerName, src/base/settings.cc), checked here so
        # that a bad name fails at this call, not when the profile starts: one directory-name
        # component. Empty (the session's default) is None here, and a NUL cannot be in a path.
        if worker_name is not None and (not isinstance(worker_name, str) or not worker_name or "/" in worker_name
                                        or worker_name in (".", "..") or "\0" in worker_name):
            raise ValueError(f"gpuprof.db_handler: worker_name {worker_name!r}: a worker name is one directory-name "
                             "component (no '/', not . or ..; not empty, no NUL), or None for <hostname>_<pid>")
        self.dir_name = os.path.abspath(str(dir_name))
        self.worker_name = worker_name
        self.db_paths = []

    def __call__(self, prof):
        if prof.db_path:
            self.db_paths.append(prof.db_path)


def _distributed_rank():
    """torch.distributed's rank when a process group is up, else None (the session then takes
    GPUPROF_RANK, else RANK, from the environment)."""
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    except Exception:  # noqa: BLE001  (no rank is no error)
        pass
    return None


def _distributed_world_size():
    """torch.distributed's world size when a process group is up, else None (the session then
    takes GPUPROF_WORLD_SIZE, else WORLD_SIZE)."""
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            return int(dist.get_world_size())
    except Exception:  # noqa: BLE001
        pass
    return None


def _cuda_device():
    """The current CUDA device of a process that already uses CUDA, else None (the session then
    takes GPUPROF_DEVICE_ID, else LOCAL_RANK)."""
    try:
        import torch
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            return int(torch.cuda.current_device())
    except Exception:  # noqa: BLE001
        pass
    return None


def _check_activities(activities):
    if activities is None:  # as torch.profiler: everything there is (no GPU: CUDA collects nothing)
        return {ProfilerActivity.CPU, ProfilerActivity.CUDA}
    try:
        chosen = set(activities)
    except TypeError:
        raise TypeError(f"gpuprof.profile: activities must be a list of gpuprof.ProfilerActivity, got {activities!r}")
    for a in chosen:
        if not isinstance(a, ProfilerActivity):
            raise TypeError(f"gpuprof.profile: activities holds {a!r}; use gpuprof.ProfilerActivity.CPU or .CUDA")
    if not chosen:
        raise ValueError("gpuprof.profile: activities is empty; give at least gpuprof.ProfilerActivity.CPU")
    return chosen


class _ModuleRanges:
    """One pair of global nn.Module forward hooks for the process, however many profiles ask for
    module ranges (a script's own profile inside `gpuprof run --with-modules`): each forward is one
    range."""

    _lock = threading.Lock()
    _users = 0
    _handles = []
    _frames = threading.local()

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
    def _enter(cls, module, inputs):
        frames = getattr(cls._frames, "stack", None)
        if frames is None:
            frames = cls._frames.stack = []
        frames.append((module, time.time_ns()))

    @classmethod
    def _exit(cls, module, inputs, output):
        frames = getattr(cls._frames, "stack", None)
        while frames:  # a forward that raised left its frame: skip to this module's
            entered, start_ns = frames.pop()
            if entered is module:
                _native.record_range("Module", type(module).__name__, start_ns, time.time_ns())
                break


class profile:  # noqa: N801  (named like torch.profiler.profile)
    """See the module docstring. Arguments as torch.profiler.profile's (activities: default CPU and
    CUDA; without ProfilerActivity.CUDA no GPU activity is collected, CUPTI is not started), plus gc_detect_threshold
    (ms; 0: every collection; None: off), kernel_replay (gpuprof.KernelReplay) and with_modules
    (each nn.Module forward as an MSTX_EVENTS range in domain "Module", named by its class)."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, gc_detect_threshold=None, kernel_replay=None,
                 with_modules=False, _whole_run=False):
        self.activities = _check_activities(activities)
        if schedule is not None and not callable(schedule):
            raise TypeError("gpuprof.profile: schedule must be gpuprof.schedule(...) or a step -> ProfilerAction function")
        if on_trace_ready is not None and not callable(on_trace_ready):
            raise TypeError("gpuprof.profile: on_trace_ready must be callable, e.g. gpuprof.db_handler(dir)")
        if gc_detect_threshold is not None:
            # nan compares false with every pause (nothing recorded, nothing said), infinity too.
            if isinstance(gc_detect_threshold, bool) or not isinstance(gc_detect_threshold, (int, float)) \
                    or not math.isfinite(gc_detect_threshold) or gc_detect_threshold < 0:
                raise ValueError("gpuprof.profile: gc_detect_threshold must be a finite number of ms >= 0, or None "
                                 f"(off), got {gc_detect_threshold!r}")
        if kernel_replay is not None and not isinstance(kernel_replay, KernelReplay):
            raise TypeError("gpuprof.profile: kernel_replay must be gpuprof.KernelReplay(...)")
        self.kernel_replay = kernel_replay
        self.replaying = False  # True while the recording replays kernels
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.record_shapes = bool(record_shapes)
        self.profile_memory = bool(profile_memory)
        self.with_stack = bool(with_stack)
        self.with_modules = bool(with_modules)
        self._module_ranges = False  # this profile holds _ModuleRanges
        self.gc_detect_threshold = gc_detect_threshold
        self.step_num = 0
        self.db_path = None
        self._action = ProfilerAction.NONE
        self._recording = False
        self._step_range = None
        self._result_file = None
        self._gc_start = None
        self._started = False
        # `gpuprof run`'s own profile (_autorun.py): the session's configuration is the environment's.
        self._whole_run = _whole_run

    @property
    def recording(self):
        """True while ops are being recorded."""
        return self._recording

    # ---- torch.profiler-like control -----------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.stop()
        return False

    def start(self):
        if self._started:
            raise RuntimeError("gpuprof.profile: start() called twice; call stop() first")
        self._started = True
        self.step_num = 0
        self._enter(self._action_at(0))

    def step(self):
        """Ends the current step and begins the next (as torch.profiler.profile.step)."""
        if not self._started:
            raise RuntimeError("gpuprof.profile: step() before start(); use it inside `with gpuprof.profile(...)`")
        global _user_steps
        _user_steps = True
        self._end_step_range()
        previous = self._action
        self.step_num += 1
        current = self._action_at(self.step_num)
        if previous == ProfilerAction.RECORD_AND_SAVE or (self._recording and current not in
                                                          (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)):
            self._save()
        self._enter(current)

    def stop(self):
        if not self._started:
            return
        self._end_step_range()
        if self._recording:
            self._save()
        self._started = False
        self._action = ProfilerAction.NONE

    # ---- internals -----------------------------------------------------------------------------
    def _action_at(self, step):
        if self.schedule is None:
            return ProfilerAction.RECORD
        return self.schedule(step)

    def _enter(self, action):
        self._action = action
        if action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            if not self._recording:
                self._begin_recording()
            if self.schedule is not None:
                self._begin_step_range()

    def _begin_step_range(self):
        import torch

        self._step_range = torch.autograd.profiler.record_function(f"ProfilerStep#{self.step_num}")
        self._step_range.__enter__()

    def _end_step_range(self):
        if self._step_range is not None:
            rng, self._step_range = self._step_range, None
            rng.__exit__(None, None, None)

    def _config(self):
        config = {}
        if ProfilerActivity.CUDA not in self.activities:
            config["device"] = False  # no CUPTI: no kernels, copies or CUDA API rows
        handler = self.on_trace_ready
        if isinstance(handler, db_handler):
            config["output_dir"] = handler.dir_name
            if handler.worker_name:
                config["worker_name"] = handler.worker_name
        rank = _distributed_rank()
        if rank is not None:
            config["rank"] = rank
            world_size = _distributed_world_size()
            if world_size is not None:
                config["world_size"] = world_size
            device = _cuda_device()
            if device is not None:
                config["device_id"] = device
        fd, self._result_file = tempfile.mkstemp(prefix="gpuprof_result_", suffix=".txt")
        os.close(fd)
        config["result_file"] = self._result_file
        return config

    def _begin_recording(self):
        n = _native.native()
        config = None if self._whole_run else json.dumps(self._config()).encode()
        n.check(n.core.gpuprof_start(config), "gpuprof_start")
        enabled = n.hooks.gpuprof_torch_enable_v1(int(self.record_shapes), int(self.profile_memory),
                                                  int(self.with_stack))
        if enabled != 0:
            n.core.gpuprof_stop()
            raise RuntimeError("gpuprof.profile: " + ("torch refused gpuprof's RecordFunction callback" if enabled == 1
                                                      else "with_stack: the Python C API is not in this process"))
        if self.gc_detect_threshold is not None:
            gc.callbacks.append(self._on_gc)
        self._recording = True
        if self.with_modules:
            self._begin_modules()
        if self.kernel_replay is not None:
            self._begin_replay(n)

    # nn.Module forwards as ranges in domain "Module" (the format's module_statistic reads them).
    def _begin_modules(self):
        if not self._module_ranges:
            _ModuleRanges.acquire()
            self._module_ranges = True

    def _end_modules(self):
        if self._module_ranges:
            _ModuleRanges.release()
            self._module_ranges = False

    def _begin_replay(self, n):
        # Declined with the reason, and the profile records as usual: a profiler option must not
        # stop the program it profiles.
        r = self.kernel_replay
        status = n.configure_replay(r.passes, r.kernel, r.skip, r.count, r.cache_control == "all",
                                    {"full": 1, "exact": 2}.get(r.restore, 0), r.strict, r.printf_kernels,
                                    r.malloc_kernels, r.with_live_arrays, r.metrics, r.section, r.set,
                                    r.clock_control)
        if status == _native.GPUPROF_OK:
            self.replaying = True
            return
        warnings.warn(f"gpuprof.profile: kernel replay declined: {n.last_error()}", RuntimeWarning, stacklevel=4)

    def _save(self):
        n = _native.native()
        self._recording = False
        self._end_modules()
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        if self.replaying:
            self.replaying = False
            if n.configure_replay(1) != _native.GPUPROF_OK:  # pause: launches after the recording run once
                warnings.warn(f"gpuprof.profile: pausing kernel replay failed: {n.last_error()}", RuntimeWarning,
                              stacklevel=3)
        n.hooks.gpuprof_torch_disable_v1()
        status = n.core.gpuprof_stop()
        self.db_path = self._read_result()
        n.check(status, "gpuprof_stop")
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _read_result(self):
        path, self._result_file = self._result_file, None
        if not path:
            return None
        try:
            with open(path, encoding="utf-8") as f:
                lines = [ln.strip() for ln in f if ln.startswith("db ")]
            return lines[-1][3:] if lines else None
        except OSError:
            return None
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass

    def _on_gc(self, phase, info):
        if phase == "start":
            self._gc_start = (time.monotonic_ns(), time.time_ns())
        elif phase == "stop" and self._gc_start is not None:
            mono_start, epoch_start = self._gc_start
            self._gc_start = None
            elapsed = time.monotonic_ns() - mono_start
            if elapsed >= self.gc_detect_threshold * 1e6:
                _native.record_gc(epoch_start, epoch_start + elapsed)
