"""gpuprof.KernelReplay's options are replay settings by name (issue 40): every replay setting of the
settings table (src/base/settings.h) is a keyword, checked by the table and handed to the session by
its JSON key (gpuprof_configure_replay_settings_v1), which parses it with the same table. Graph replay
and the counter range, which the first C API's struct had no field for, reach the session; a bad name
or value gets the table's message. Needs libgpuprof.so (GPUPROF_LIB_DIR), no GPU and no session."""

import ctypes
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

GPUPROF_ERROR_INVALID_ARGUMENT = 1  # gpuprof_c.h
GPUPROF_ERROR_NOT_STARTED = 3


@unittest.skipUnless(os.environ.get("GPUPROF_LIB_DIR"), "needs GPUPROF_LIB_DIR (the build's lib/; set by CTest)")
class KernelReplaySettingsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from gpuprof import _settings
        cls.core = _settings._library()
        cls.core.gpuprof_configure_replay_settings_v1.argtypes = [
            ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t]

    def configure(self, settings):
        """gpuprof_configure_replay_settings_v1 as the profile calls it; (status, last error)."""
        keys = (ctypes.c_char_p * len(settings))(*[k.encode() for k in settings])
        values = (ctypes.c_char_p * len(settings))(*[v.encode() for v in settings.values()])
        status = self.core.gpuprof_configure_replay_settings_v1(keys, values, len(settings))
        return status, self.core.gpuprof_last_error().decode()

    def test_graph_replay_and_the_counter_range_are_settings_the_session_takes(self):
        import gpuprof
        replay = gpuprof.KernelReplay(passes=3, graph_replay="graph", counter_range="USER", metrics=["x__y.sum"])
        self.assertEqual(replay.settings["replay_graph"], "graph")
        self.assertEqual(replay.settings["replay_counter_range"], "user", "the table's canonical form")
        self.assertEqual((replay.graph_replay, replay.counter_range), ("graph", "user"))
        self.assertIn("graph_replay='graph', counter_range='user'", repr(replay))
        # Each name is the setting's key, the key without replay_, or its `gpuprof replay` option.
        self.assertEqual(gpuprof.KernelReplay(graph="node").settings["replay_graph"], "node")
        self.assertEqual(gpuprof.KernelReplay(replay_graph="node").settings["replay_graph"], "node")
        self.assertEqual(gpuprof.KernelReplay(storage="pinned").settings["replay_storage"], "pinned")
        # The session parses them all with the table: with no session running, NOT_STARTED comes
        # only after every setting was accepted.
        status, error = self.configure(replay.settings)
        self.assertEqual(status, GPUPROF_ERROR_NOT_STARTED, error)

    def test_a_bad_name_or_value_gets_the_settings_tables_message(self):
        import gpuprof
        with self.assertRaisesRegex(ValueError, 'grpah: no setting has the key "replay_grpah"; did you mean replay_graph'):
            gpuprof.KernelReplay(grpah="graph")
        with self.assertRaisesRegex(ValueError, 'graph_replay: replay_graph="graphs": expected one of off, graph, node'):
            gpuprof.KernelReplay(graph_replay="graphs")
        with self.assertRaisesRegex(ValueError, "counter_range: .*expected one of auto, user"):
            gpuprof.KernelReplay(counter_range="kernel")
        with self.assertRaisesRegex(ValueError, "sets replay_graph, which another argument sets too"):
            gpuprof.KernelReplay(graph="node", graph_replay="graph")
        # The session's parse gives the same messages to any caller of the C API.
        status, error = self.configure({"replay_graph": "graphs"})
        self.assertEqual(status, GPUPROF_ERROR_INVALID_ARGUMENT)
        self.assertIn('replay_graph="graphs": expected one of off, graph, node', error)
        status, error = self.configure({"replay_device_reserve_mib": "64"})
        self.assertEqual(status, GPUPROF_ERROR_INVALID_ARGUMENT)
        self.assertIn("replay_device_reserve_mib is fixed when the process starts", error)

    def test_every_replay_setting_walks_from_a_keyword_to_the_session(self):
        # The Python route of the settings walk (tests/unit/cli/setting_walk_test.cc): each replay row
        # of the table, at a value other than its default, is a KernelReplay keyword whose canonical
        # text the session accepts; the ones read only at the process's start are refused saying so.
        import gpuprof
        from gpuprof import _settings
        fixed = {"replay_from_script", "replay_device_reserve_mib"}
        walked = 0
        for key, row in _settings.table().items():
            if not key.startswith("replay_"):
                continue
            if row["type"] == "bool":
                value = row["default"] != "1"
            elif row["type"] == "int":
                value = int(row["default"]) + 2 if int(row["default"]) + 2 <= row["max"] else row["min"]
            elif row["choices"]:
                value = next(c for c in row["choices"] if c != row["default"])
            else:
                value = {"replay_kernel": "regex:walk.*", "replay_metrics": "walk__er.sum",
                         "replay_nvtx_include": "walker"}[key]
            replay = gpuprof.KernelReplay(**{key[len("replay_"):]: value})
            named = {key: replay.settings[key]}
            if key == "replay_range" and value == "nvtx":
                named["replay_nvtx_include"] = "walker"  # --range nvtx needs the NVTX range's name
            status, error = self.configure(named)
            if key in fixed:
                self.assertEqual(status, GPUPROF_ERROR_INVALID_ARGUMENT, key)
                self.assertIn("fixed when the process starts", error)
                continue
            self.assertEqual(status, GPUPROF_ERROR_NOT_STARTED, f"{key}: {error}")
            walked += 1
        self.assertGreaterEqual(walked, 22)

    def test_range_replay_by_training_step_is_accepted_and_a_typo_gets_did_you_mean(self):
        # Issue 40: range replay from the program, by the settings' names (REPLAY_SPEC.md W1).
        import gpuprof
        replay = gpuprof.KernelReplay(replay_mode="range", range="step")
        self.assertEqual((replay.settings["replay_mode"], replay.settings["replay_range"]), ("range", "step"))
        self.assertEqual((replay.replay_mode, replay.range), ("range", "step"))
        status, error = self.configure(replay.settings)
        self.assertEqual(status, GPUPROF_ERROR_NOT_STARTED, error)  # accepted; no session runs here
        # range="step" alone asks for range replay (it implies replay_mode="range").
        status, error = self.configure(gpuprof.KernelReplay(range="step").settings)
        self.assertEqual(status, GPUPROF_ERROR_NOT_STARTED, error)
        nvtx = gpuprof.KernelReplay(nvtx_include="train_step", max_range_operations=5000)
        self.assertEqual(nvtx.settings["replay_nvtx_include"], "train_step")
        self.assertEqual(nvtx.settings["replay_max_range_operations"], "5000")
        with self.assertRaisesRegex(ValueError, 'rnage: no setting has the key "replay_rnage"; did you mean replay_range'):
            gpuprof.KernelReplay(rnage="step")
        with self.assertRaisesRegex(ValueError, 'range: replay_range="steps": expected one of profiler, nvtx, step'):
            gpuprof.KernelReplay(range="steps")
        with self.assertRaisesRegex(ValueError, 'replay_mode: replay_mode="ranges": expected one of kernel, range'):
            gpuprof.KernelReplay(replay_mode="ranges")
        # Settings that do not go together: the session refuses them, naming both.
        status, error = self.configure({"replay_range": "step", "replay_nvtx_include": "fwd"})
        self.assertEqual(status, GPUPROF_ERROR_INVALID_ARGUMENT)
        self.assertIn("but --range (replay_range) step delimits them by training step: give one of them", error)
        status, error = self.configure({"replay_mode": "kernel", "replay_range": "step"})
        self.assertEqual(status, GPUPROF_ERROR_INVALID_ARGUMENT)
        self.assertIn("--replay-mode (replay_mode) is kernel: drop one of them", error)

    def test_the_step_boundary_is_one_native_call_only_while_replay_is_on(self):
        # Issue 40 (--range step): every optimizer step (or profile.step()) calls
        # gpuprof_replay_step_boundary_v1 when `gpuprof replay` started the process, and makes no
        # native call otherwise.
        from gpuprof import _native
        self.assertEqual(self.core.gpuprof_replay_step_boundary_v1(), GPUPROF_ERROR_NOT_STARTED)
        saved, saved_env = _native._replaying, os.environ.pop("GPUPROF_REPLAY", None)
        calls = []
        saved_native = _native.native
        try:
            _native._replaying = None
            _native.native = lambda: calls.append("native") or saved_native()
            self.assertFalse(_native.replay_step_boundary())
            self.assertEqual(calls, [], "replay off: no native call")
            _native._replaying = None
            os.environ["GPUPROF_REPLAY"] = "1"
            self.assertFalse(_native.replay_step_boundary(), "no session here: NOT_STARTED")
            self.assertEqual(calls, ["native"])
        finally:
            _native._replaying, _native.native = saved, saved_native
            os.environ.pop("GPUPROF_REPLAY", None)
            if saved_env is not None:
                os.environ["GPUPROF_REPLAY"] = saved_env


if __name__ == "__main__":
    unittest.main()
