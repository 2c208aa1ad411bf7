"""Which steps a profile records: the schedule of gpuprof.profile, shaped like torch.profiler's.

    sched = gpuprof.schedule(wait=1, warmup=1, active=2, repeat=1, skip_first=0, skip_first_wait=0)
    sched(step) -> ProfilerAction.NONE | WARMUP | RECORD | RECORD_AND_SAVE

Steps count from 0 (each profile.step() advances one). After `skip_first` steps, cycles of
`wait` idle steps, `warmup` steps collected but discarded, and `active` recorded steps repeat
`repeat` times (0: without end). With `skip_first_wait` non-zero (as torch 2.x's schedule) the
first cycle has no wait: it starts right after skip_first, and `repeat` counts that shortened cycle
as one. The last active step of a cycle is RECORD_AND_SAVE: the profile then hands what it
recorded to its on_trace_ready handler.

gpuprof.profile also takes torch.profiler.schedule(...) itself (its actions are mapped by name).
"""

import enum

__all__ = ["ProfilerAction", "schedule"]


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def _count(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"gpuprof.schedule: {name} must be an int, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"gpuprof.schedule: {name} must be >= {minimum}, got {value}")
    return value


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """The step -> ProfilerAction function described in the module docstring.

    Raises TypeError for a non-int argument and ValueError for a negative one, or for active < 1
    (a cycle must record something); the message names the argument. skip_first_wait may also be
    a bool."""
    wait = _count("wait", wait, 0)
    warmup = _count("warmup", warmup, 0)
    active = _count("active", active, 1)
    repeat = _count("repeat", repeat, 0)
    skip_first = _count("skip_first", skip_first, 0)
    skip_first_wait = _count("skip_first_wait", int(skip_first_wait) if isinstance(skip_first_wait, bool)
                             else skip_first_wait, 0)
    cycle = wait + warmup + active

    def action(step):
        step = _count("step", step, 0)
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait  # the first cycle's wait is behind us already
        if repeat > 0 and step >= repeat * cycle:
            return ProfilerAction.NONE
        position = step % cycle
        if position < wait:
            return ProfilerAction.NONE
        if position < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if position < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    action.wait, action.warmup, action.active = wait, warmup, active
    action.repeat, action.skip_first, action.skip_first_wait = repeat, skip_first, skip_first_wait
    return action
