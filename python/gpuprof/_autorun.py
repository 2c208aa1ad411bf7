"""The profile that `gpuprof run -- python3 script.py` gives an unmodified script.

_autoload/sitecustomize.py calls install() at interpreter start-up. Nothing happens until the
script imports torch; then one gpuprof.profile covering the rest of the run starts (it joins the
session `gpuprof run` configured: output folder and result file come from the environment) and
stops at exit. Its options come from what `gpuprof run` sets: GPUPROF_TORCH_RECORD_SHAPES,
GPUPROF_TORCH_PROFILE_MEMORY, GPUPROF_TORCH_WITH_STACK, GPUPROF_TORCH_WITH_MODULES and
GPUPROF_TORCH_GC_THRESHOLD_MS, read through the
settings declaration (their defaults and the boolean dialect are its). Each optimizer.step() closes a step (a
ProfilerStep#N op from the previous step's end, so STEP_TIME is filled) unless the script calls
gpuprof.profile.step() itself.
"""

import atexit
import importlib.abc
import importlib.util
import os
import sys
import threading
import time

_installed = False
_profile = None
_after_stop = []  # run once the run's DB is written (after_run_db)


class _TorchWatcher(importlib.abc.MetaPathFinder):
    """Starts the profile right after `import torch` has finished."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_profile(module):
            exec_module(module)
            _start()

        spec.loader.exec_module = exec_then_profile
        return spec


def install():
    global _installed
    if _installed:
        return
    _installed = True
    # Registered first, so it runs after every other exit handler (they run last-in, first-out).
    atexit.register(_keep_the_exit_status_of_a_keyboard_interrupt)
    if "torch" in sys.modules:
        _start()
    else:
        sys.meta_path.insert(0, _TorchWatcher())


def _is_launcher():
    """torchrun / python -m torch.distributed.run (or .launch): the launcher of the ranks does no
    training of its own; each rank it starts is profiled into its own DB, the launcher into none."""
    launchers = ("torch.distributed.run", "torch.distributed.launch")
    # sys.orig_argv (3.10+) as the interpreter got it: `-m torch.distributed.run` is still there while
    # runpy imports the package (sys.argv[0] is "-m" until the module itself runs).
    argv = list(getattr(sys, "orig_argv", []) or sys.argv)
    for i, arg in enumerate(argv[:-1]):
        if arg == "-m" and argv[i + 1] in launchers:
            return True
    scripts = [a.replace(os.sep, "/") for a in argv[:2] + sys.argv[:1]]
    return any(os.path.basename(a) == "torchrun" or a.endswith(("torch/distributed/run.py", "torch/distributed/launch.py"))
               for a in scripts)


def _repair_launcher_std():
    """torch 1.13's launcher (Debian 12's) on Python 3.11+: Std.from_str("0"), the default of its
    --redirects and --tee, is None, because 3.11's Flag iteration skips the zero member that
    from_str's loop looks for, and the launcher then fails in Std.to_map ("'NoneType' object has no
    attribute 'get'") before it starts a rank. Only where that is so, from_str looks the member up by
    value, as its docstring says it should (from_str("0") -> Std.NONE); every other launcher is left
    as it is."""
    try:
        import re
        from torch.distributed.elastic.multiprocessing import api
        std = api.Std
        if std.from_str("0") is not None:
            return
        broken = std.from_str

        def from_str(vm):
            if re.fullmatch(r"\d", vm):
                return std(int(vm))
            if re.fullmatch(r"\d:\d(,\d:\d)*", vm):
                return {int(k): std(int(v)) for k, v in (pair.split(":") for pair in vm.split(","))}
            return broken(vm)  # anything else raises, as before

        std.from_str = staticmethod(from_str)
    except Exception as e:  # noqa: BLE001  (the launcher runs as it is)
        print(f"gpuprof: torch.distributed.run's --redirects/--tee default left as it is: "
              f"{type(e).__name__}: {e}", file=sys.stderr)


def _start():
    global _profile
    from . import profiler

    if _is_launcher():
        # Nor does gpuprof's CUDA injection profile it (it may query the GPUs); its ranks inherit
        # the variable but have other pids.
        os.environ["GPUPROF_SKIP_PID"] = str(os.getpid())
        _repair_launcher_std()
        return

    try:
        # The settings' variables, parsed by the declaration (src/base/settings.h), defaults included.
        from . import _settings
        gc_threshold = _settings.from_environment("gc_threshold_ms")
        prof = profiler.profile(record_shapes=_settings.from_environment("record_shapes"),
                                profile_memory=_settings.from_environment("profile_memory"),
                                with_stack=_settings.from_environment("with_stack"),
                                with_modules=_settings.from_environment("with_modules"),
                                gc_detect_threshold=gc_threshold if gc_threshold >= 0 else None, _whole_run=True)
        prof.start()
    except Exception as e:  # noqa: BLE001  (the script runs on, unprofiled)
        print(f"gpuprof: the PyTorch profile is off: {type(e).__name__}: {e}", file=sys.stderr)
        if _replays_by_step():
            print("gpuprof: --range step sees no training step without the PyTorch profile, so no range is "
                  "replayed; fix the cause above, or delimit ranges with --range profiler or nvtx", file=sys.stderr)
        return
    _profile = prof
    atexit.register(_stop)
    _drop_sigint_in_the_exit_path()
    _hold_off_sigint_once_the_program_ends()
    try:
        _hook_optimizer_steps(prof)
    except Exception as e:  # noqa: BLE001  (profiled on, without steps)
        print(f"gpuprof: optimizer steps are not recorded as steps: {type(e).__name__}: {e}", file=sys.stderr)


def after_run_db(fn):
    """Runs fn() at the program's exit, after this profile's stop wrote the run's DB (a script's
    gpuprof.profile exporting what it recorded into that DB); False when there is no such profile."""
    if _profile is None:
        return False
    _after_stop.append(fn)
    return True


def _ignore_sigint():
    import signal

    if threading.current_thread() is threading.main_thread():
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        except (ValueError, OSError):
            pass


def _replays_by_step():
    """True under `gpuprof replay --range step` (the optimizer steps delimit the ranges)."""
    try:
        from . import _settings
        return _settings.from_environment("replay_range") == "step"
    except Exception:  # noqa: BLE001  (only the message depends on it)
        return False


def _drop_sigint_in_the_exit_path():
    """Both holds below start with a line of Python, and a repeated SIGINT can land before it runs
    (seen on Python 3.12: on the excepthook wrapper's first instruction, where its KeyboardInterrupt
    replaced the program's and the exit status became 1, not 128+2). While Python's own
    KeyboardInterrupt handler is in place, SIGINT goes through one that drops the signal when it
    lands inside those functions and raises KeyboardInterrupt as before anywhere else. A handler the
    program installs itself is left alone."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return
    exit_path = {_ignore_sigint_then_report.__code__, _ignore_sigint.__code__, _stop.__code__}

    def interrupt_unless_exiting(signum, frame):
        caller = frame
        while caller is not None:
            if caller.f_code in exit_path:
                return
            caller = caller.f_back
        signal.default_int_handler(signum, frame)

    signal.signal(signal.SIGINT, interrupt_unless_exiting)


def _hold_off_sigint_once_the_program_ends():
    """A second Ctrl-C (or a SIGINT a launcher or `timeout -s INT` repeats to the group) after the
    first one ended the program would raise KeyboardInterrupt in the exit path, before or inside the
    DB's finalize, and leave only the .partial file (seen on Python 3.12): once an uncaught
    exception ends the program (sys.excepthook), SIGINT is ignored. Python's own exit by SIGINT
    sets the default handler again itself, so the exit status stays 128+2."""
    global _excepthook_before_gpuprof
    _excepthook_before_gpuprof = sys.excepthook
    sys.excepthook = _ignore_sigint_then_report


_excepthook_before_gpuprof = None
_ended_by_keyboard_interrupt = False


def _ignore_sigint_then_report(kind, value, tb):
    global _ended_by_keyboard_interrupt
    _ignore_sigint()
    _ended_by_keyboard_interrupt = issubclass(kind, KeyboardInterrupt)
    _excepthook_before_gpuprof(kind, value, tb)


def _keep_the_exit_status_of_a_keyboard_interrupt():
    """A program ended by Ctrl-C exits by SIGINT (status 128+2): CPython re-raises the signal at
    exit when a flag says the program's code ended with KeyboardInterrupt. Every string exec()
    clears that flag when it starts (CPython's run_eval_code_obj), so one anywhere in the exit
    path (a dataclass or namedtuple made late) turns the status into 1, as seen on the H100
    machine's Python 3.12. The flag is set again the way CPython sets it: a string exec() that
    ends with KeyboardInterrupt."""
    if not _ended_by_keyboard_interrupt:
        return
    # CPython then ends the process by SIGINT, past the library's own exit handler (seen on the
    # H100 machine: the CUDA injection's session was left .partial): every start still held is
    # released here, so the DB is finalized first.
    from . import _native

    loaded = _native.loaded()
    for _ in range(64):
        if loaded is None or loaded.core.gpuprof_stop() != 0:
            break
    try:
        exec("raise KeyboardInterrupt", {})  # noqa: S102  (sets CPython's flag; nothing else runs)
    except KeyboardInterrupt:
        pass


def _stop():
    if _profile is None:
        return
    # The program has ended (atexit): SIGINT stays ignored until the process is gone, so a repeat
    # cannot interrupt the DB's finalize (see _hold_off_sigint_once_the_program_ends).
    _ignore_sigint()
    try:
        _profile.stop()
    except Exception as e:  # noqa: BLE001
        print(f"gpuprof: stopping the PyTorch profile failed: {e}", file=sys.stderr)
    while _after_stop:
        try:
            _after_stop.pop(0)()
        except Exception as e:  # noqa: BLE001  (the program has ended: said, not raised)
            print(f"gpuprof: {e}", file=sys.stderr)


def _hook_optimizer_steps(prof):
    import torch
    import torch.optim.optimizer as optimizer_module

    from . import _native, profiler

    state = {"steps": 0, "since": time.time_ns()}
    lock = threading.Lock()

    def step_done(*_):
        if profiler.user_steps_seen():
            return  # the script's profile.step() delimits steps, and ends replay's step ranges
        _native.replay_step_boundary()  # --replay-mode range --range step: this step's range ends
        if not prof.recording:
            return
        now = time.time_ns()
        with lock:
            state["steps"] += 1
            n, since, state["since"] = state["steps"], state["since"], now
        _native.record_op(f"ProfilerStep#{n}", threading.get_native_id(), since, now)

    if hasattr(optimizer_module, "register_optimizer_step_post_hook"):  # torch >= 2.0
        optimizer_module.register_optimizer_step_post_hook(step_done)
    else:  # torch 1.13: every hooked Optimizer.step calls _optimizer_step_code() after the step
        original = torch.optim.Optimizer._optimizer_step_code

        def optimizer_step_code(self):
            original(self)
            step_done()

        torch.optim.Optimizer._optimizer_step_code = optimizer_step_code
