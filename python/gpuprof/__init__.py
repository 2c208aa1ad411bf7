"""gpuprof for PyTorch: a profiler shaped like torch.profiler whose output is the
ascend_pytorch_profiler DB (DB_SPEC.md) that msprof-analyze and MindStudio Insight read.

    import gpuprof
    with gpuprof.profile(schedule=gpuprof.schedule(wait=1, warmup=1, active=3),
                         on_trace_ready=gpuprof.db_handler("./prof"), record_shapes=True) as prof:
        for step in range(10):
            train_step()
            prof.step()

See profiler.py (profile, db_handler, supported_activities), schedule.py, mstx.py, _record_function.py
(record_function) and _handlers.py (tensorboard_trace_handler). The collection runs in gpuprof's
native libraries (libgpuprof.so, libgpuprof_torch.so), found in $GPUPROF_LIB_DIR, else where
`cmake --install` put them, else this checkout's build folder (_native.py).
"""

from . import mstx
from ._handlers import tensorboard_trace_handler
from ._record_function import record_function
from .profiler import KernelReplay, ProfilerActivity, db_handler, profile, supported_activities
from .schedule import ProfilerAction, schedule

__all__ = ["ProfilerActivity", "ProfilerAction", "KernelReplay", "schedule", "profile", "db_handler", "mstx",
           "record_function", "supported_activities", "tensorboard_trace_handler"]
