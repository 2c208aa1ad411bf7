"""gpuprof.schedule: the step -> action sequence torch.profiler.schedule users expect, and clear
errors for bad arguments. Pure Python: runs anywhere (label python)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import gpuprof  # noqa: E402
from gpuprof import ProfilerAction as A  # noqa: E402

N, W, R, S = A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE


def actions(sched, steps):
    return [sched(step) for step in range(steps)]


class ScheduleTest(unittest.TestCase):
    def test_one_cycle_then_nothing(self):
        sched = gpuprof.schedule(wait=1, warmup=1, active=2, repeat=1)
        self.assertEqual(actions(sched, 7), [N, W, R, S, N, N, N])

    def test_cycles_repeat_without_end_when_repeat_is_zero(self):
        sched = gpuprof.schedule(wait=1, warmup=0, active=1)
        self.assertEqual(actions(sched, 6), [N, S, N, S, N, S])

    def test_skip_first_delays_the_first_cycle(self):
        sched = gpuprof.schedule(wait=0, warmup=1, active=2, repeat=2, skip_first=3)
        self.assertEqual(actions(sched, 11), [N, N, N, W, R, S, W, R, S, N, N])

    def test_skip_first_wait_leaves_out_the_first_cycles_wait(self):
        # As torch 2.x's schedule(skip_first_wait=1): the first cycle starts right after skip_first,
        # later ones wait; repeat still counts whole cycles.
        sched = gpuprof.schedule(wait=2, warmup=1, active=1, repeat=2, skip_first=1, skip_first_wait=1)
        self.assertEqual(actions(sched, 9), [N, W, S, N, N, W, S, N, N])
        self.assertEqual(actions(gpuprof.schedule(wait=1, warmup=0, active=1, skip_first_wait=True), 4), [S, N, S, N])
        self.assertEqual(actions(gpuprof.schedule(wait=1, warmup=0, active=1, skip_first_wait=0), 4), [N, S, N, S])
        self.assertEqual(sched.skip_first_wait, 1)
        with self.assertRaisesRegex(TypeError, "skip_first_wait must be an int"):
            gpuprof.schedule(wait=1, warmup=0, active=1, skip_first_wait="yes")
        with self.assertRaisesRegex(ValueError, "skip_first_wait must be >= 0"):
            gpuprof.schedule(wait=1, warmup=0, active=1, skip_first_wait=-1)

    def test_single_active_step_is_saved_every_cycle(self):
        sched = gpuprof.schedule(wait=0, warmup=0, active=1, repeat=3)
        self.assertEqual(actions(sched, 5), [S, S, S, N, N])

    def test_arguments_are_kept_for_the_profile(self):
        sched = gpuprof.schedule(wait=2, warmup=1, active=3, repeat=4, skip_first=5)
        self.assertEqual((sched.wait, sched.warmup, sched.active, sched.repeat, sched.skip_first), (2, 1, 3, 4, 5))

    def test_bad_arguments_name_themselves(self):
        with self.assertRaisesRegex(ValueError, "active must be >= 1, got 0"):
            gpuprof.schedule(wait=1, warmup=1, active=0)
        with self.assertRaisesRegex(ValueError, "wait must be >= 0, got -1"):
            gpuprof.schedule(wait=-1, warmup=0, active=1)
        with self.assertRaisesRegex(TypeError, "warmup must be an int, got float 1.5"):
            gpuprof.schedule(wait=0, warmup=1.5, active=1)
        with self.assertRaisesRegex(TypeError, "repeat must be an int, got bool"):
            gpuprof.schedule(wait=0, warmup=0, active=1, repeat=True)
        with self.assertRaisesRegex(ValueError, "step must be >= 0"):
            gpuprof.schedule(wait=0, warmup=0, active=1)(-1)

    def test_arguments_are_keyword_only(self):
        with self.assertRaises(TypeError):
            gpuprof.schedule(1, 1, 1)  # pylint: disable=too-many-function-args


try:
    import torch.profiler as torch_profiler  # the reference, where this Python has torch
except Exception:  # noqa: BLE001 (any import failure means: no reference here)
    torch_profiler = None


@unittest.skipIf(torch_profiler is None, "torch is not importable by this Python")
class MatchesTorchProfilerScheduleTest(unittest.TestCase):
    def test_every_small_schedule_gives_torchs_actions(self):
        import itertools
        import warnings
        warnings.simplefilter("ignore")  # torch warns about schedules without warmup
        for wait, warmup, active, repeat, skip in itertools.product(range(3), range(3), range(1, 4), range(3),
                                                                     range(3)):
            ours = gpuprof.schedule(wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip)
            theirs = torch_profiler.schedule(wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip)
            for step in range(40):
                self.assertEqual(ours(step).name, theirs(step).name,
                                 f"wait={wait} warmup={warmup} active={active} repeat={repeat} skip_first={skip} "
                                 f"step={step}")

    def test_skip_first_wait_gives_torchs_actions_where_torch_has_it(self):
        import inspect
        import itertools
        import warnings
        if "skip_first_wait" not in inspect.signature(torch_profiler.schedule).parameters:
            self.skipTest("this torch's schedule has no skip_first_wait (torch 2.x's has)")
        warnings.simplefilter("ignore")
        for wait, warmup, active, repeat, skip in itertools.product(range(3), range(2), range(1, 3), range(3),
                                                                     range(2)):
            ours = gpuprof.schedule(wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip,
                                    skip_first_wait=1)
            theirs = torch_profiler.schedule(wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip,
                                             skip_first_wait=1)
            for step in range(30):
                self.assertEqual(ours(step).name, theirs(step).name)


class NativeLibrariesTest(unittest.TestCase):
    def test_missing_native_libraries_are_named_with_the_fix(self):
        import tempfile
        from unittest import mock

        from gpuprof import _native

        empty = tempfile.mkdtemp(prefix="gpuprof_nolib_")
        with mock.patch.dict(os.environ, {"GPUPROF_LIB_DIR": empty}), mock.patch.object(_native, "_BUILD_DIRS", ()):
            with self.assertRaisesRegex(_native.NativeLibraryError, "libgpuprof_torch.so.*GPUPROF_LIB_DIR"):
                _native.lib_dir()


if __name__ == "__main__":
    unittest.main()
