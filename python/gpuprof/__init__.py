"""gpuprof for PyTorch (issue 6, in progress).

What exists: `schedule` and `ProfilerAction` (which steps a profile records) and
`ProfilerActivity`. What does not yet: `profile`, `db_handler` and `mstx` need gpuprof's C++
extension (RecordFunction and allocator hooks, linked to libgpuprof.so), which is not built yet;
`profile` says so instead of profiling nothing.
"""

import enum

from .schedule import ProfilerAction, schedule

__all__ = ["ProfilerActivity", "ProfilerAction", "schedule", "profile"]


class ProfilerActivity(enum.Enum):
    CPU = "cpu"
    CUDA = "cuda"


def profile(*args, **kwargs):
    """Not available yet: the C++ extension that collects the ops is the next step of issue 6."""
    raise RuntimeError(
        "gpuprof.profile needs gpuprof's PyTorch extension (gpuprof._C), which this build does not "
        "have yet; to profile a CUDA program meanwhile, use `gpuprof run -- python3 script.py`")
