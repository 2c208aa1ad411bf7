"""torch.cuda.empty_cache() calls recorded as ops while gpuprof.profile records (issue 41: torch
records none, and the empty-cache finding reads them): the original runs inside the range, comes
back when the last recording ends, and a call is never broken by the wrapper. On the CPU
(empty_cache does nothing there). `gpuprof run` records them too: test_findings.py's empty_cache
run. Needs torch and the PyTorch hooks (GPUPROF_LIB_DIR, GPUPROF_CLI)."""

import os
import sys
import textwrap
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_profile  # noqa: E402  (its script runner and DB helpers)
from test_profile import HAVE_TORCH, rows  # noqa: E402



def counted(body):
    """`body` after a stand-in for the original that counts its calls, so that a script can tell it ran."""
    return textwrap.dedent("""
        calls = []
        torch.cuda.empty_cache = torch.cuda.memory.empty_cache = lambda: calls.append(1)
        original = torch.cuda.empty_cache
    """) + textwrap.dedent(body)


def empty_cache_ops(db):
    return rows(db, """SELECT COUNT(*) FROM PYTORCH_API p JOIN STRING_IDS s ON s.id = p.name
                       WHERE s.value = 'torch.cuda.empty_cache'""")[0][0]


@unittest.skipUnless(HAVE_TORCH, "torch is not importable by this Python")
@unittest.skipUnless(os.environ.get("GPUPROF_LIB_DIR") and os.environ.get("GPUPROF_CLI"),
                     "GPUPROF_LIB_DIR and GPUPROF_CLI are set by CTest")
class EmptyCacheTest(test_profile.ScriptRunner, unittest.TestCase):
    def test_calls_inside_recordings_are_ops_and_the_original_comes_back_after_the_last(self):
        _, dbs = self.run_script(counted("""
            with gpuprof.profile(on_trace_ready=gpuprof.db_handler(OUT)):
                torch.cuda.empty_cache()
                with gpuprof.profile():
                    torch.cuda.memory.empty_cache()
                print("inner stopped, still wrapped:", torch.cuda.empty_cache is not original,
                      torch.cuda.memory.empty_cache is torch.cuda.empty_cache)
                torch.cuda.empty_cache()
            print("outer stopped, original back:", torch.cuda.empty_cache is original,
                  torch.cuda.memory.empty_cache is original)
            torch.cuda.empty_cache()
            print("calls", len(calls))
        """))
        self.assertIn("inner stopped, still wrapped: True True", self.script_output)
        self.assertIn("outer stopped, original back: True True", self.script_output)
        self.assertIn("calls 4", self.script_output, "every call ran the original")
        self.assertEqual(len(dbs), 1)
        self.assertEqual(empty_cache_ops(dbs[0]), 3, "the calls inside the recording, not the one after")

    def test_a_program_that_replaces_it_while_recording_keeps_its_own(self):
        self.run_script(counted("""
            with gpuprof.profile(on_trace_ready=gpuprof.db_handler(OUT)):
                print("wrapped:", torch.cuda.empty_cache is not original)
                mine = torch.cuda.empty_cache = lambda: None
            print("kept:", torch.cuda.empty_cache is mine, torch.cuda.memory.empty_cache is original)
        """))
        self.assertIn("wrapped: True", self.script_output)
        self.assertIn("kept: True True", self.script_output, "its own kept, the other name's original back")

    def test_a_fork_child_calls_it_and_keeps_its_exit_status(self):
        _, dbs = self.run_script("""
            with gpuprof.profile(on_trace_ready=gpuprof.db_handler(OUT)):
                pid = os.fork()
                if pid == 0:
                    torch.cuda.empty_cache()
                    os._exit(5)
                status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
                torch.cuda.empty_cache()
            print("child exited", status)
        """)
        self.assertIn("child exited 5", self.script_output, self.script_errors)
        self.assertNotIn("Traceback", self.script_errors)
        self.assertEqual(len(dbs), 1, "the parent's DB only")
        self.assertEqual(empty_cache_ops(dbs[0]), 1, "the parent's call")

    def test_a_wrapper_that_cannot_be_put_in_place_is_said_once_and_the_program_runs_on(self):
        _, dbs = self.run_script(counted("""
            sys.modules["torch.cuda.memory"] = None  # importing it fails: the second name cannot be wrapped
            for _ in range(2):
                with gpuprof.profile(on_trace_ready=gpuprof.db_handler(OUT)):
                    torch.relu(torch.ones(2))
                    torch.cuda.empty_cache()
            print("original left:", torch.cuda.empty_cache is original, "calls", len(calls))
        """))
        self.assertIn("original left: True calls 2", self.script_output)
        self.assertEqual(self.script_errors.count("torch.cuda.empty_cache() calls are not recorded"), 1,
                         self.script_errors)
        self.assertEqual(len(dbs), 2)
        for db in dbs:
            self.assertEqual(empty_cache_ops(db), 0)
            self.assertIn("aten::relu", test_profile.op_names(db), "the profile records on")

    def test_a_range_that_cannot_open_is_said_once_and_the_call_runs(self):
        _, dbs = self.run_script(counted("""
            def refuse(*args, **kwargs):
                raise RuntimeError("no range today")
            with gpuprof.profile(on_trace_ready=gpuprof.db_handler(OUT)):
                torch.autograd.profiler.record_function = refuse
                torch.cuda.empty_cache()
                torch.cuda.empty_cache()
            print("calls", len(calls))
        """))
        self.assertIn("calls 2", self.script_output, self.script_errors)
        self.assertEqual(self.script_errors.count("RuntimeError: no range today"), 1, self.script_errors)
        self.assertEqual(len(dbs), 1)


if __name__ == "__main__":
    unittest.main()
