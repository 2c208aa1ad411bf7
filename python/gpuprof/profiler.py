"""gpuprof.profile: a profiler for PyTorch programs, shaped like torch.profiler.profile.

    with gpuprof.profile(activities=[gpuprof.ProfilerActivity.CPU],
                         schedule=gpuprof.schedule(wait=1, warmup=1, active=2),
                         on_trace_ready=gpuprof.db_handler("./prof"),
                         record_shapes=True, profile_memory=True) as prof:
        for batch in data:
            train_step(batch)
            prof.step()

Ops are collected in C++ (libgpuprof_torch.so: RecordFunction callbacks and torch's memory
reports), garbage-collection pauses from gc.callbacks, torch.cuda.empty_cache() calls as ops of their
own (torch records none: _empty_cache.py), and everything is written by libgpuprof.so
into ascend_pytorch_profiler[_<rank>].db (docs/architecture.md, "Output layout"). Each recorded cycle of
the schedule (its active steps) is one DB; the last active step hands the profile to
on_trace_ready, and `prof.db_path` names the DB. Warm-up steps run unrecorded: gpuprof needs no
warm-up, and what a warm-up would record is discarded anyway.

Profiles that record at once in one process (in threads, or nested) share one session and one
DB: each one's db_path names it, and it is complete when the last of them stops. Under `gpuprof
run` the process's session is already running: the profile joins it (one DB for the whole run,
written when the program exits, _run_db.py) and db_path names that DB; a db_handler's folder is
not used (one warning says where the DB is). Its results come at once from a window DB of its own
recording (its active steps) that the session writes beside the run's: key_averages(), events(),
export_chrome_trace(path) and the other exports read it when called.

A profile that cannot record (an output folder it cannot create, a setting the session refuses,
native libraries that do not load) says so in one RuntimeWarning, naming the problem and the fix,
and the program runs on unprofiled. In a fork() child the profile records nothing and leaves
without a word (the child's exit status is its own).

As torch.profiler users write it: torch.profiler.schedule(...) and torch.profiler.ProfilerActivity
are taken as gpuprof's, activities may come first without its name, with_flops and
experimental_config are taken (the latter ignored, said once); torch.profiler.tensorboard_trace_handler
(or gpuprof.tensorboard_trace_handler) writes the Chrome trace where TensorBoard reads it. After a
recording, prof.events() and prof.key_averages(group_by_input_shape, group_by_stack_n) are torch's
own EventList built from the DB (_events.py), prof.export_chrome_trace(path) writes the DB as Chrome
trace JSON, prof.export_stacks(path, metric) the flame-graph stacks and
prof.export_memory_timeline(path, device) the allocations over time (_memory_timeline.py).
"""

import enum
import gc
import math
import os
import tempfile
import threading
import time
import warnings

from . import _empty_cache, _module_ranges, _native, _run_db, _shared_session, _thread_names, _torch_profiler_coexist
from ._kernel_replay import KernelReplay
from .schedule import ProfilerAction

__all__ = ["profile", "db_handler", "ProfilerActivity", "KernelReplay", "supported_activities"]

_user_steps = False  # some profile's step() was called in this process
_open_profiles = 0  # profiles started and not stopped in this process (recording or not)
_open_lock = threading.Lock()


def user_steps_seen():
    """True once a script called profile.step(): its steps, not optimizer.step(), delimit steps."""
    return _user_steps


def inside_a_profile():
    """True while some gpuprof.profile of this process is started (its schedule may be in a step
    it does not record)."""
    return _open_profiles > 0




class ProfilerActivity(enum.Enum):
    CPU = "cpu"
    CUDA = "cuda"


def supported_activities():
    """The activities gpuprof can record here, as torch.profiler.supported_activities(): CPU, and CUDA
    where torch sees a GPU."""
    try:
        import torch
        has_gpu = torch.cuda.is_available()
    except ImportError:
        has_gpu = False
    return {ProfilerActivity.CPU, ProfilerActivity.CUDA} if has_gpu else {ProfilerActivity.CPU}


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


def _activity(a):
    """gpuprof's ProfilerActivity for `a`, which may be torch.profiler.ProfilerActivity's of the same name."""
    if isinstance(a, ProfilerActivity):
        return a
    name = getattr(a, "name", None)
    if type(a).__name__ == "ProfilerActivity" and type(a).__module__.startswith("torch") and \
            name in ProfilerActivity.__members__:
        return ProfilerActivity[name]
    raise TypeError(f"gpuprof.profile: activities holds {a!r}; use gpuprof.ProfilerActivity.CPU or .CUDA "
                    "(torch.profiler.ProfilerActivity.CPU and .CUDA are taken as those)")


def _schedule_action(schedule, step):
    """schedule(step) as a gpuprof ProfilerAction: torch.profiler.schedule(...)'s actions are taken by
    name (its ProfilerAction has the same four members)."""
    action = schedule(step)
    if isinstance(action, ProfilerAction):
        return action
    name = getattr(action, "name", None)
    if type(action).__name__ == "ProfilerAction" and isinstance(name, str) and name in ProfilerAction.__members__:
        return ProfilerAction[name]
    raise TypeError(f"gpuprof.profile: schedule returned {action!r} for step {step}; a schedule returns a "
                    "gpuprof.ProfilerAction (or torch.profiler.ProfilerAction): use gpuprof.schedule(...) or "
                    "torch.profiler.schedule(...)")


def _check_on_trace_ready(handler):
    if handler is None:
        return None
    if not callable(handler):
        raise TypeError("gpuprof.profile: on_trace_ready must be callable, e.g. gpuprof.db_handler(dir)")
    return handler


def _check_activities(activities):
    if isinstance(activities, ProfilerActivity) or type(activities).__name__ == "ProfilerActivity":
        raise TypeError(f"gpuprof.profile: activities must be a list of gpuprof.ProfilerActivity, got {activities!r}: "
                        f"write [{activities!r}]")
    try:
        chosen = set(activities) if activities is not None else set()
    except TypeError:
        raise TypeError(f"gpuprof.profile: activities must be a list of gpuprof.ProfilerActivity, got {activities!r}")
    if not chosen:  # None or empty, as torch.profiler: everything there is (no GPU: CUDA collects nothing)
        return {ProfilerActivity.CPU, ProfilerActivity.CUDA}
    return {_activity(a) for a in chosen}


class profile:  # noqa: N801  (named like torch.profiler.profile)
    """See the module docstring. Arguments as torch.profiler.profile's (activities, which may come first
    unnamed: default CPU and CUDA; without ProfilerActivity.CUDA no GPU activity is collected, CUPTI is
    not started; with_flops: _flops.py, it records input shapes; experimental_config: ignored, said
    once), plus gc_detect_threshold (ms; 0: every collection; None: off), kernel_replay
    (gpuprof.KernelReplay) and with_modules (each nn.Module forward as an MSTX_EVENTS range in domain
    "Module", named by its path in the model and its class: "net.0 (Linear)")."""

    def __init__(self, activities=None, *, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, experimental_config=None,
                 gc_detect_threshold=None, kernel_replay=None, with_modules=False, _whole_run=False):
        self.activities = _check_activities(activities)
        self.with_flops = bool(with_flops)
        self.experimental_config = experimental_config
        if experimental_config is not None:
            from . import _messages

            _messages.warn_once(("profile", "experimental_config"),
                                "gpuprof.profile: experimental_config is ignored (Kineto's options: profiler_metrics, "
                                "profiler_measure_per_kernel, verbose; gpuprof does not run Kineto). For hardware "
                                "counters per kernel use kernel_replay=gpuprof.KernelReplay(metrics=[...]). "
                                "(Said once.)", UserWarning)
        if schedule is not None and not callable(schedule):
            raise TypeError("gpuprof.profile: schedule must be gpuprof.schedule(...), torch.profiler.schedule(...) "
                            "or a step -> ProfilerAction function")
        on_trace_ready = _check_on_trace_ready(on_trace_ready)
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
        self._module_ranges = False  # this profile holds ModuleRanges
        self._wraps_empty_cache = False  # this profile holds _empty_cache's wrapper
        self.gc_detect_threshold = gc_detect_threshold
        self.step_num = 0
        self.db_path = None
        self._action = ProfilerAction.NONE
        self._recording = False
        self._step_range = None
        self._result_file = None
        self._gc_start = None
        self._started = False
        self._pid = None  # the process that started the profile (a fork child is not it)
        self._off = False  # this profile cannot record: it said why once and tries no more
        # `gpuprof run`'s own profile (_autorun.py): the session's configuration is the environment's.
        self._whole_run = _whole_run
        self._in_run_db = False  # recorded into a session it did not start (`gpuprof run`'s): _run_db.py

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
        first = self._action_at(0)  # a schedule that returns no action fails here, before anything starts
        global _open_profiles
        with _open_lock:
            _open_profiles += 1
        self._started = True
        self._pid = os.getpid()
        self._off = False
        self.step_num = 0
        self._enter(first)

    def step(self):
        """Ends the current step and begins the next (as torch.profiler.profile.step)."""
        if not self._started:
            raise RuntimeError("gpuprof.profile: step() before start(); use it inside `with gpuprof.profile(...)`")
        global _user_steps
        _user_steps = True
        if self._in_fork_child():
            self._leave_in_fork_child()
            self.step_num += 1
            return
        # The script's steps replace optimizer.step()'s as the training step (`gpuprof run` counts one
        # or the other), and so delimit range replay's steps too (--range step).
        _native.replay_step_boundary()
        self._end_step_range()
        previous = self._action
        self.step_num += 1
        current = self._action_at(self.step_num)
        if self._recording and (previous == ProfilerAction.RECORD_AND_SAVE or
                                current not in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)):
            self._save()
        self._enter(current)

    def stop(self):
        if not self._started:
            return
        if self._in_fork_child():
            self._leave_in_fork_child()
        else:
            self._end_step_range()
            if self._recording:
                self._save()
        global _open_profiles
        with _open_lock:
            _open_profiles = max(_open_profiles - 1, 0)
        self._started = False
        self._action = ProfilerAction.NONE

    # ---- after a recording, as torch.profiler users call them ----------------------------------
    def events(self):
        """The ops and GPU tasks of this profile's DB (db_path) as torch's own EventList of
        FunctionEvent, built as torch.profiler builds it (_events.py says from what). RuntimeError
        while there is no complete DB."""
        return self._events_for("events")

    def _events_for(self, what):
        db = self._complete_db(what)  # its error names the method the user called
        cached = getattr(self, "_events_of", None)
        if cached is None or cached[0] != db:
            from . import _events

            cached = self._events_of = (db, _events.load(
                db, use_cuda=ProfilerActivity.CUDA in self.activities, profile_memory=self.profile_memory,
                record_shapes=self.record_shapes, with_flops=self.with_flops))
        return cached[1]

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        """events() averaged by op name (and input shapes, and the top group_by_stack_n stack
        frames), as torch.profiler's key_averages(): torch's EventList of FunctionEventAvg, whose
        table(sort_by=..., row_limit=...) and total_average() are torch's."""
        if self._in_run_db and not _run_db.results_db(self):
            from . import _events

            _run_db.warn_not_written_yet("key_averages", self.db_path)
            return _events.empty(use_cuda=ProfilerActivity.CUDA in self.activities,
                                 profile_memory=self.profile_memory, with_flops=self.with_flops)
        return self._events_for("key_averages").key_averages(group_by_input_shape, group_by_stack_n)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """The ops' Python stacks (with_stack=True: PYTORCH_CALLCHAINS) in the flame-graph text format,
        as torch.profiler's export_stacks: one "outer;...;inner value" line per op with a stack, the
        value its `metric` ("self_cpu_time_total" or "self_cuda_time_total", microseconds)."""
        return self._events_for("export_stacks").export_stacks(os.fspath(path), metric)

    def export_memory_timeline(self, path, device=None):
        """The DB's allocations over time on `device`, as torch 2.x's export_memory_timeline
        (_memory_timeline.py: .json, .json.gz, .raw.json.gz or .html by the path's suffix)."""
        from . import _memory_timeline

        _memory_timeline.export_memory_timeline(self._complete_db("export_memory_timeline"), path, device)

    def export_chrome_trace(self, path):
        """Writes this profile's DB (db_path) as Chrome trace-event JSON to `path`, through
        `gpuprof export DB -o path` (the CLI beside the native libraries, else `gpuprof` on PATH).
        RuntimeError while there is no complete DB, or when the export fails (its message). Under
        `gpuprof run`, its window DB (its own recording); without one, at exit from the run's DB."""
        if self._in_run_db and self.db_path and not _run_db.results_db(self):
            from . import _autorun

            db, target = self.db_path, os.path.abspath(os.fspath(path))
            if _autorun.after_run_db(lambda: self._export(db, target)):
                _run_db.warn_not_written_yet("export_chrome_trace", db)
                return
        self._export(self._complete_db("export_chrome_trace"), path)

    @staticmethod
    def _export(db, path):
        import subprocess

        from . import _handlers

        cli = _native.cli_path()
        target = os.fspath(path)
        out = _handlers.plain_name(target)  # a .gz path is written plain first, then gzipped (as torch's)
        done = subprocess.run([cli, "export", db, "-o", out], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, errors="replace")
        if done.returncode == 0 and out != target:
            _handlers.gzip_into(out, target)
        if done.returncode != 0:
            raise RuntimeError(f"gpuprof.profile.export_chrome_trace: `{cli} export {db} -o {os.fspath(path)}` "
                               f"failed (exit status {done.returncode}): {done.stderr.strip()}")

    def _complete_db(self, what):
        if self._in_run_db and _run_db.results_db(self):  # its window DB, else the run's (_run_db.py)
            return _run_db.results_db(self)
        if self.db_path is None:
            raise RuntimeError(f"gpuprof.profile.{what}: this profile has no DB: it has one once a recording "
                               "stopped (the `with` block ended, or a cycle of its schedule was saved), "
                               "unless it could not record (a warning said why) or it joined the session of "
                               "`gpuprof run`, whose DB is written when the program exits")
        if not os.path.isfile(self.db_path):
            raise RuntimeError(f"gpuprof.profile.{what}: {self.db_path} is not complete yet: it is written when "
                               "its recording stops, and when every other profile of this process recording into "
                               "it has stopped too")
        return self.db_path

    # ---- internals -----------------------------------------------------------------------------
    def _action_at(self, step):
        if self.schedule is None:
            return ProfilerAction.RECORD
        return _schedule_action(self.schedule, step)

    def _enter(self, action):
        self._action = action
        if action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            if not self._recording and not self._off:
                self._begin_recording()
            if self.schedule is not None and self._recording:
                self._begin_step_range()

    def _begin_step_range(self):
        import torch

        self._step_range = torch.autograd.profiler.record_function(f"ProfilerStep#{self.step_num}")
        self._step_range.__enter__()

    def _end_step_range(self):
        if self._step_range is not None:
            rng, self._step_range = self._step_range, None
            rng.__exit__(None, None, None)

    def _in_fork_child(self):
        return self._pid is not None and os.getpid() != self._pid

    def _leave_in_fork_child(self):
        # A fork child never writes its parent's DB and its copy of the session refuses every call
        # (gpuprof_c.h, fork()): it leaves without a word, and without a native call (a lock a
        # parent's thread held at the fork would never be released here). The step's
        # record_function ends: the hooks take no lock in a fork child.
        self._end_step_range()
        if self._recording:
            self._recording = False
            self.replaying = False
            if self._on_gc in gc.callbacks:
                gc.callbacks.remove(self._on_gc)
            self._end_modules()
            self._end_empty_cache()
        self._pid = os.getpid()
        self._off = True

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

    def _cannot_record(self, kind, problem, fix):
        """This profile records nothing: said once per kind of problem in the process, and the
        program runs on (a profiler must not stop what it profiles)."""
        from . import _messages

        self._off = True
        where = self.on_trace_ready.dir_name if isinstance(self.on_trace_ready, db_handler) else None
        _messages.warn_once(("profile", kind, where),
                            f"gpuprof.profile records nothing (the program runs on): {problem}. Fix: {fix}. "
                            "(Said once: later profiles failing so are not reported again.)")

    def _begin_recording(self):
        try:
            n = _native.native()
        except (_native.NativeLibraryError, ImportError) as e:
            self._cannot_record("libraries", f"{type(e).__name__}: {e}",
                                "build them (bash tools/setup.sh) or set GPUPROF_LIB_DIR to their folder")
            return
        try:
            status = _shared_session.session().begin(self, n)
        except OSError as e:  # the result file the session reports the DB's name in
            self._cannot_record("result file", f"cannot make a result file: {e}",
                                "set TMPDIR to a directory this process can write")
            return
        if status != _native.GPUPROF_OK:
            self._cannot_record(status, n.last_error(), self._start_fix(status))
            return
        enabled = n.hooks.gpuprof_torch_enable_v1(int(self.record_shapes or self.with_flops), int(self.profile_memory),
                                                  int(self.with_stack))
        if enabled != 0:
            _shared_session.session().end(self, n)
            self.db_path = None
            if enabled == 1:
                self._cannot_record("hooks", "torch refused gpuprof's RecordFunction callback",
                                    "check that libgpuprof_torch.so was built against this torch "
                                    "(tools/build_torch_hooks.sh)")
            else:
                self._cannot_record("with_stack", "with_stack: the Python C API is not in this process",
                                    "profile without with_stack=True")
            return
        if self._in_run_db:  # its figures at once, from a window DB beside the run's (_run_db.py)
            _run_db.recording_began(self, n)
        if self.gc_detect_threshold is not None:
            gc.callbacks.append(self._on_gc)
        _thread_names.install()
        self._recording = True
        _torch_profiler_coexist.recording_began()  # a script's torch.profiler may start beside it
        self._wraps_empty_cache = _empty_cache.acquire()  # its calls as ops (torch records none)
        if self.with_modules:
            self._begin_modules()
        if self.kernel_replay is not None:
            self._begin_replay(n)

    def _start_fix(self, status):
        if status == _native.GPUPROF_ERROR_OUTPUT:
            if isinstance(self.on_trace_ready, db_handler):
                return "give gpuprof.db_handler(dir_name) a directory this process can create and write"
            return "set GPUPROF_OUTPUT_DIR (or use gpuprof.db_handler(dir_name)) to a directory this process can write"
        if status == _native.GPUPROF_ERROR_INVALID_CONFIG:
            return "correct the setting the message names (a GPUPROF_* variable, GPUPROF_CONFIG or a profile argument)"
        return "see the reason above; GPUPROF_LOG_LEVEL=debug says more"

    # nn.Module forwards as ranges in domain "Module" (the format's module_statistic reads them).
    def _begin_modules(self):
        if not self._module_ranges:
            _module_ranges.ModuleRanges.acquire()
            self._module_ranges = True

    def _end_modules(self):
        if self._module_ranges:
            _module_ranges.ModuleRanges.release()
            self._module_ranges = False

    def _end_empty_cache(self):
        if self._wraps_empty_cache:
            _empty_cache.release()
            self._wraps_empty_cache = False

    def _begin_replay(self, n):
        # Declined with the reason, and the profile records as usual: a profiler option must not
        # stop the program it profiles.
        # Every argument by its setting's name: the session parses them with the settings table.
        status = n.configure_replay_settings(self.kernel_replay.settings)
        if status == _native.GPUPROF_OK:
            self.replaying = True
            return
        warnings.warn(f"gpuprof.profile: kernel replay declined: {n.last_error()}", RuntimeWarning, stacklevel=4)

    def _save(self):
        n = _native.native()
        self._recording = False
        self._end_modules()
        self._end_empty_cache()
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        if self.replaying:
            self.replaying = False
            # pause: launches after the recording run once
            if n.configure_replay_settings({"replay_passes": "1"}) != _native.GPUPROF_OK:
                warnings.warn(f"gpuprof.profile: pausing kernel replay failed: {n.last_error()}", RuntimeWarning,
                              stacklevel=3)
        n.hooks.gpuprof_torch_disable_v1()
        _torch_profiler_coexist.recording_ended()
        _thread_names.hand_over(n.core)  # before the window ends, so its DB has the names too
        if self._in_run_db:
            _run_db.recording_ended(self, n)
        status = _shared_session.session().end(self, n)
        if status != _native.GPUPROF_OK:
            # The recording is lost (its DB could not be finalized): said, and the program runs on.
            from . import _messages

            _messages.warn_once(("stop", status), f"gpuprof.profile: the profile could not be written (the program "
                                                  f"runs on): {n.last_error()}")
            return
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _on_gc(self, phase, info):
        if phase == "start":
            self._gc_start = (time.monotonic_ns(), time.time_ns())
        elif phase == "stop" and self._gc_start is not None:
            mono_start, epoch_start = self._gc_start
            self._gc_start = None
            elapsed = time.monotonic_ns() - mono_start
            if elapsed >= self.gc_detect_threshold * 1e6:
                _native.record_gc(epoch_start, epoch_start + elapsed)


def _forget_in_fork_child():
    # A parent's thread may have held the lock at fork().
    global _open_lock
    _open_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_in_fork_child)
