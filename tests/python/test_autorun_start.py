"""What `gpuprof run`/`replay` tells a script's user when the PyTorch profile cannot start (issue 40):
under --range step the optimizer steps are what delimit the ranges, so a profile that is off means
no range is replayed, and the message says so and names the other delimiters. No torch needed: the
profile's start is made to fail."""

import contextlib
import io
import os
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

from gpuprof import _autorun, profiler  # noqa: E402


class ProfileOffTest(unittest.TestCase):
    def start_with_a_failing_profile(self, environment):
        stderr = io.StringIO()
        failing = mock.Mock(side_effect=RuntimeError("native libraries not found"))
        with mock.patch.dict(os.environ, environment), mock.patch.object(profiler, "profile", failing), \
                mock.patch.object(_autorun, "_is_launcher", return_value=False), contextlib.redirect_stderr(stderr):
            _autorun._start()
        return stderr.getvalue()

    def test_range_replay_by_step_says_no_range_is_replayed(self):
        said = self.start_with_a_failing_profile({"GPUPROF_REPLAY_RANGE": "step"})
        self.assertIn("the PyTorch profile is off: RuntimeError: native libraries not found", said)
        self.assertIn("--range step sees no training step", said)
        self.assertIn("--range profiler or nvtx", said)

    def test_other_runs_get_the_profile_message_alone(self):
        said = self.start_with_a_failing_profile({"GPUPROF_REPLAY_RANGE": "profiler"})
        self.assertIn("the PyTorch profile is off", said)
        self.assertNotIn("--range step", said)


if __name__ == "__main__":
    unittest.main()
