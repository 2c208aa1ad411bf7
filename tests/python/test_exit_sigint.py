"""A repeated SIGINT that lands in gpuprof's own exit path (its sys.excepthook wrapper, the atexit
stop, before either has set SIGINT to be ignored) is dropped: on Python 3.12 one landed on the
wrapper's first instruction, raised KeyboardInterrupt inside the excepthook and turned the run's
exit status from 128+2 into 1 (issue 39). SIGINT elsewhere still raises KeyboardInterrupt. No torch
needed: the signal is delivered from a trace function, inside the frame it names."""

import os
import signal
import subprocess
import sys
import textwrap
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

from gpuprof import _autorun  # noqa: E402


class ExitPathSigintTest(unittest.TestCase):
    def setUp(self):
        handler, hook = signal.getsignal(signal.SIGINT), sys.excepthook
        self.addCleanup(signal.signal, signal.SIGINT, handler)
        self.addCleanup(setattr, sys, "excepthook", hook)
        self.addCleanup(sys.settrace, None)
        self.seen = []
        sys.excepthook = lambda *args: self.seen.append(args)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _autorun._drop_sigint_in_the_exit_path()
        _autorun._hold_off_sigint_once_the_program_ends()

    def interrupt_on_entering(self, function):
        """SIGINT on entering function, before its first line runs."""
        def tracer(frame, event, arg):
            if event == "call" and frame.f_code is function.__code__:
                sys.settrace(None)
                signal.raise_signal(signal.SIGINT)
            return None
        sys.settrace(tracer)

    def test_sigint_on_the_excepthook_wrappers_first_instruction_is_dropped(self):
        error = KeyboardInterrupt()
        self.interrupt_on_entering(sys.excepthook)
        try:
            sys.excepthook(KeyboardInterrupt, error, None)
        except KeyboardInterrupt:
            self.fail("the SIGINT raised KeyboardInterrupt inside gpuprof's excepthook")
        self.assertEqual(self.seen, [(KeyboardInterrupt, error, None)])
        self.assertIs(signal.getsignal(signal.SIGINT), signal.SIG_IGN)

    def test_sigint_on_entering_the_atexit_stop_is_dropped(self):
        self.interrupt_on_entering(_autorun._stop)
        try:
            _autorun._stop()  # no profile: it returns at once
        except KeyboardInterrupt:
            self.fail("the SIGINT raised KeyboardInterrupt inside gpuprof's atexit stop")

    def test_sigint_anywhere_else_still_raises_keyboard_interrupt(self):
        def the_users_code():
            return 1
        self.interrupt_on_entering(the_users_code)
        with self.assertRaises(KeyboardInterrupt):
            the_users_code()


class ExitStatusTest(unittest.TestCase):
    def test_a_program_ended_by_keyboard_interrupt_exits_by_sigint_whatever_its_exit_path_execs(self):
        # An exit handler that runs a string exec() (a dataclass made while the DB is finalized)
        # cleared CPython's "ended by KeyboardInterrupt" flag: the program exited 1, not by SIGINT.
        python_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
        script = textwrap.dedent(f"""
            import atexit, sys
            sys.path.insert(0, {python_dir!r})
            from gpuprof import _autorun
            _autorun.install()  # as sitecustomize does at start-up
            _autorun._hold_off_sigint_once_the_program_ends()  # as the profile's start does
            atexit.register(lambda: exec("pass"))
            raise KeyboardInterrupt
            """)
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             env={**os.environ, "GPUPROF_SKIP_PID": "0"})
        self.assertEqual(run.returncode, -signal.SIGINT, run.stderr)


if __name__ == "__main__":
    unittest.main()
