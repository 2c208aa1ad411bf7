"""gpuprof.profile on the CPU: each framework table holds what the profiled script did (issue 6).

Every case runs a small script in its own interpreter (a fresh process: one session, one set of
torch hooks), then reads the DB it wrote with sqlite3 and runs `gpuprof check` on it. Needs torch
and the native libraries: GPUPROF_LIB_DIR (libgpuprof.so, libgpuprof_torch.so) and GPUPROF_CLI
(the gpuprof executable) are set by CTest (tests/python/CMakeLists.txt).
"""

import glob
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
PYTHON_DIR = os.path.join(REPO_ROOT, "python")
sys.path.insert(0, PYTHON_DIR)

try:
    import torch
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

PRELUDE = textwrap.dedent(f"""
    import gc, os, sys
    sys.path.insert(0, {PYTHON_DIR!r})
    import torch
    import gpuprof
    torch.manual_seed(0)
    OUT = sys.argv[1]
""")


def rows(db, sql, *args):
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute(sql, args).fetchall()


def op_names(db):
    return {r[0] for r in rows(db, "SELECT s.value FROM PYTORCH_API p JOIN STRING_IDS s ON s.id = p.name")}


class ScriptRunner:
    """Runs a script in a fresh interpreter and checks the DBs it wrote (a mixin of TestCase)."""

    def checked_dbs(self, out):
        """The DBs under `out`, each accepted by `gpuprof check`."""
        dbs = sorted(glob.glob(os.path.join(out, "**", "ascend_pytorch_profiler*.db"), recursive=True))
        for db in dbs:
            check = subprocess.run([os.environ["GPUPROF_CLI"], "check", db], capture_output=True, text=True,
                                   timeout=120)
            self.assertEqual(check.returncode, 0, f"gpuprof check {db}:\n{check.stdout}\n{check.stderr}")
        return dbs

    def run_script(self, body, env=None):
        """Runs PRELUDE + body with OUT = a fresh folder; returns (OUT, the DBs under it)."""
        out = tempfile.mkdtemp(prefix="gpuprof_pytest_")
        script = os.path.join(out, "script.py")
        with open(script, "w") as f:
            f.write(PRELUDE + textwrap.dedent(body))
        run_env = dict(os.environ)
        run_env.update(env or {})
        done = subprocess.run([sys.executable, script, out], capture_output=True, text=True, timeout=300,
                              env=run_env)
        self.assertEqual(done.returncode, 0, f"script failed:\n{done.stdout}\n{done.stderr}")
        dbs = self.checked_dbs(out)
        partial = glob.glob(os.path.join(out, "**", "*.partial"), recursive=True)
        self.assertEqual(partial, [], "unfinished DBs left behind")
        self.script_output = done.stdout
        self.script_errors = done.stderr
        return out, dbs


@unittest.skipUnless(HAVE_TORCH, "torch is not importable by this Python")
@unittest.skipUnless(os.environ.get("GPUPROF_LIB_DIR") and os.environ.get("GPUPROF_CLI"),
                     "GPUPROF_LIB_DIR and GPUPROF_CLI are set by CTest")
class ProfileTest(ScriptRunner, unittest.TestCase):
    def test_ops_steps_and_forward_backward_pairs(self):
        _, dbs = self.run_script("""
            model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            with gpuprof.profile(schedule=gpuprof.schedule(wait=1, warmup=1, active=2, repeat=1),
                                 on_trace_ready=gpuprof.db_handler(OUT)) as prof:
                for _ in range(6):
                    loss = model(torch.randn(8, 16)).sum()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    prof.step()
            print("db", prof.db_path)
        """)
        self.assertEqual(len(dbs), 1, "one recorded cycle, one DB")
        db = dbs[0]
        self.assertIn(f"db {db}", self.script_output, "profile.db_path names the DB")
        names = op_names(db)
        for op in ("aten::addmm", "aten::relu", "ProfilerStep#2", "ProfilerStep#3"):
            self.assertIn(op, names)
        self.assertNotIn("ProfilerStep#1", names, "the warm-up step is not recorded")
        # One STEP_TIME row per active step, ids as integers.
        steps = rows(db, "SELECT id, startNs, endNs FROM STEP_TIME ORDER BY id")
        self.assertEqual([s[0] for s in steps], [2, 3])
        self.assertTrue(all(s[1] < s[2] for s in steps))
        # Forward/backward pairs share a connection id: the forward op with fwdThreadId 0, the
        # backward op with a non-zero one.
        pairs = rows(db, """
            SELECT c.connectionId, p.fwdThreadId, s.value FROM CONNECTION_IDS c
            JOIN PYTORCH_API p ON p.connectionId = c.id JOIN STRING_IDS s ON s.id = p.name
            WHERE c.connectionId IN (SELECT connectionId FROM CONNECTION_IDS GROUP BY connectionId HAVING COUNT(*) = 2)
            ORDER BY c.connectionId, p.fwdThreadId""")
        self.assertGreater(len(pairs), 0, "no forward/backward pair in CONNECTION_IDS")
        by_id = {}
        for cid, fwd_tid, name in pairs:
            by_id.setdefault(cid, []).append((fwd_tid, name))
        addmm_pair = [p for p in by_id.values() if p[0][1] == "aten::addmm"]
        self.assertTrue(addmm_pair, f"aten::addmm has no backward partner: {by_id}")
        self.assertEqual(addmm_pair[0][0][0], 0)
        self.assertNotEqual(addmm_pair[0][1][0], 0)
        self.assertEqual(addmm_pair[0][1][1], "AddmmBackward0")

    def test_input_shapes_and_dtypes_in_the_seed_format(self):
        _, dbs = self.run_script("""
            a, b, c = torch.randn(8, 16), torch.randn(16, 32), torch.randn(32)
            with gpuprof.profile(on_trace_ready=gpuprof.db_handler(OUT), record_shapes=True):
                torch.addmm(c, a, b)
            with gpuprof.profile(on_trace_ready=gpuprof.db_handler(OUT), record_shapes=False):
                torch.addmm(c, a, b)
        """)
        self.assertEqual(len(dbs), 2)
        got = {}
        for db in dbs:
            got[db] = rows(db, """
                SELECT sh.value, dt.value FROM PYTORCH_API p JOIN STRING_IDS s ON s.id = p.name
                LEFT JOIN STRING_IDS sh ON sh.id = p.inputShapes LEFT JOIN STRING_IDS dt ON dt.id = p.inputDtypes
                WHERE s.value = 'aten::addmm'""")
        with_shapes = [v for v in got.values() if v and v[0][0] is not None]
        without = [v for v in got.values() if v and v[0][0] is None]
        self.assertEqual(len(with_shapes), 1)
        self.assertEqual(len(without), 1)
        self.assertEqual(with_shapes[0][0], ("32;\r\n8,16;\r\n16,32;\r\n;\r\n", "float;\r\nfloat;\r\nfloat;\r\nScalar;\r\nScalar"))

    def test_hooks_built_by_the_gpu_machine_script_record_every_ops_shapes(self):
        # tools/build_torch_hooks.sh builds the hooks on the GPU machine. Built without NDEBUG
        # (torch's release libraries have it), at::RecordFunction's layout differs from libtorch's
        # and inputs() asserts on a byte torch never set (whether it fires depends on the stack's
        # contents: in many processes most ops threw and lost their shapes). The source refuses to
        # build without NDEBUG, so this fails when the script drops the flag.
        lib = tempfile.mkdtemp(prefix="gpuprof_hooks_")
        shutil.copy(os.path.join(os.environ["GPUPROF_LIB_DIR"], "libgpuprof.so"), lib)
        built = subprocess.run(["bash", os.path.join(REPO_ROOT, "tools", "build_torch_hooks.sh"), lib, sys.executable],
                               capture_output=True, text=True, timeout=600)
        self.assertEqual(built.returncode, 0, f"build_torch_hooks.sh failed:\n{built.stdout}\n{built.stderr}")
        _, dbs = self.run_script("""
            x = torch.randn(4)
            with gpuprof.profile(on_trace_ready=gpuprof.db_handler(OUT), record_shapes=True):
                for _ in range(2000):
                    torch.neg(x)
        """, env={"GPUPROF_LIB_DIR": lib})
        shapes = rows(dbs[0], """
            SELECT sh.value, COUNT(*) FROM PYTORCH_API p JOIN STRING_IDS s ON s.id = p.name
            LEFT JOIN STRING_IDS sh ON sh.id = p.inputShapes WHERE s.value = 'aten::neg' GROUP BY sh.value""")
        self.assertEqual(shapes, [("4", 2000)])

    def test_memory_records_follow_the_tensors_the_script_makes(self):
        _, dbs = self.run_script("""
            with gpuprof.profile(on_trace_ready=gpuprof.db_handler(OUT), profile_memory=True):
                w = torch.empty(16)                             # a first record to measure from
                x = torch.empty(1 << 20, dtype=torch.float32)   # 4 MiB
                y = torch.empty(3 << 18, dtype=torch.float64)   # 6 MiB
                del x
                del y
                # gpuprof's memory reporter holds torch's profiler slot, but torch sees no profiler.
                assert not torch.autograd._profiler_enabled()
        """)
        db = dbs[0]
        records = rows(db, """SELECT s.value, m.totalAllocated, m.totalReserved, m.totalActive, m.deviceId
                              FROM MEMORY_RECORD m JOIN STRING_IDS s ON s.id = m.component ORDER BY m.timestamp""")
        self.assertGreaterEqual(len(records), 4)
        self.assertTrue(all(r[0] == "PTA" for r in records))
        totals = [r[1] for r in records]
        steps = [b - a for a, b in zip(totals, totals[1:])]
        for size in (4 << 20, 6 << 20):
            self.assertIn(size, steps, f"no allocation of {size} bytes in {steps}")
            self.assertIn(-size, steps, f"no release of {size} bytes in {steps}")
        # torch 1.13's CPU allocator: reserved reported as 0, no active figure (DB_SPEC 3.7).
        if torch_version() < (2, 0):
            self.assertTrue(all(r[2] == 0 and r[3] is None for r in records))
        sizes = {r[0]: r for r in rows(db, "SELECT size, releaseTime, duration, allocationTotalActive, deviceId "
                                           "FROM OP_MEMORY")}
        for size in (4 << 20, 6 << 20):
            self.assertIn(size, sizes, f"OP_MEMORY lacks the {size}-byte tensor: {sorted(sizes)}")
            self.assertIsNotNone(sizes[size][1], "the tensor was freed inside the profile")
            self.assertGreaterEqual(sizes[size][2], 0)

    def test_gc_pauses_above_the_threshold_only(self):
        out, dbs = self.run_script("""
            for threshold in (0, 1e9):
                with gpuprof.profile(on_trace_ready=gpuprof.db_handler(os.path.join(OUT, str(int(threshold)))),
                                     gc_detect_threshold=threshold):
                    for _ in range(3):
                        gc.collect()
        """)
        self.assertEqual(len(dbs), 2)
        counts = {db.split(os.sep)[len(out.split(os.sep))]: rows(db, "SELECT COUNT(*), MIN(endNs - startNs) "
                                                                     "FROM GC_RECORD")[0] for db in dbs}
        self.assertGreaterEqual(counts["0"][0], 3, "threshold 0 keeps every forced collection")
        self.assertGreaterEqual(counts["0"][1], 0)
        self.assertEqual(counts["1000000000"][0], 0, "no collection lasts 1e9 ms")

    def test_with_stack_names_the_scripts_file_and_lines(self):
        out, dbs = self.run_script("""
            def forward(x):
                return torch.relu(x)                                  # line A

            with gpuprof.profile(on_trace_ready=gpuprof.db_handler(OUT), with_stack=True):
                x = torch.randn(8, requires_grad=True)
                forward(x).sum().backward()
        """)
        script = os.path.join(out, "script.py")
        with open(script) as f:
            line_a = next(i for i, text in enumerate(f, 1) if "# line A" in text)
        chains = rows(dbs[0], """
            SELECT c.id, c.stackDepth, f.value FROM PYTORCH_API p JOIN STRING_IDS s ON s.id = p.name
            JOIN PYTORCH_CALLCHAINS c ON c.id = p.callchainId JOIN STRING_IDS f ON f.id = c.stack
            WHERE s.value = 'aten::relu' ORDER BY c.stackDepth""")
        self.assertGreaterEqual(len(chains), 2, "aten::relu has no call stack")
        self.assertEqual(chains[0][2], f"{script}({line_a}): forward", "stackDepth 0 is the innermost frame")
        self.assertTrue(chains[1][2].startswith(f"{script}("), chains[1][2])
        self.assertTrue(chains[1][2].endswith("): <module>"), chains[1][2])
        # Backward ops run on autograd's threads: no Python stack there.
        backward = rows(dbs[0], """SELECT COUNT(*) FROM PYTORCH_API p JOIN STRING_IDS s ON s.id = p.name
                                   WHERE s.value = 'ReluBackward0' AND p.callchainId IS NOT NULL""")
        self.assertEqual(backward[0][0], 0)

    def test_mstx_marks_and_ranges(self):
        _, dbs = self.run_script("""
            with gpuprof.profile(on_trace_ready=gpuprof.db_handler(OUT)):
                assert gpuprof.mstx.mark("loaded")
                rid = gpuprof.mstx.range_start("eval")
                assert rid != 0
                assert gpuprof.mstx.range_end(rid)
            assert not gpuprof.mstx.mark("after the profile")
        """)
        events = rows(dbs[0], "SELECT s.value, m.eventType FROM MSTX_EVENTS m JOIN STRING_IDS s ON s.id = m.message "
                              "ORDER BY m.startNs")
        self.assertEqual(events, [("loaded", 3), ("eval", 2)])  # marks: msprof's eventType 3 (marker_ex)

    def test_mstx_domains_and_a_device_linked_range_that_launched_nothing(self):
        # The domain of each mark and range is kept (msprof-analyze reads "Module" and "mfu_flops"
        # ranges by it); a range on a stream whose thread launched no device work (a CPU run) keeps
        # host times only: no device link (4294967295), as a host-only range.
        _, dbs = self.run_script("""
            with gpuprof.profile(on_trace_ready=gpuprof.db_handler(OUT)):
                assert gpuprof.mstx.mark("loaded", domain="io")
                rid = gpuprof.mstx.range_start("1024-matmul", domain="mfu_flops")
                assert gpuprof.mstx.range_end(rid, domain="mfu_flops")
                rid = gpuprof.mstx.range_start("on a stream", 0)
                assert rid != 0 and gpuprof.mstx.range_end(rid)
                rid = gpuprof.mstx.range_start("plain")
                assert gpuprof.mstx.range_end(rid)
        """)
        events = rows(dbs[0], "SELECT s.value, d.value, m.eventType, m.connectionId = 4294967295 FROM MSTX_EVENTS m "
                              "JOIN STRING_IDS s ON s.id = m.message JOIN STRING_IDS d ON d.id = m.domainId "
                              "ORDER BY m.startNs")
        self.assertEqual(events, [("loaded", "io", 3, 0), ("1024-matmul", "mfu_flops", 2, 1),
                                  ("on a stream", "default", 2, 1), ("plain", "default", 2, 1)])
        self.assertEqual(rows(dbs[0], "SELECT COUNT(*) FROM TASK"), [(0,)])

    def test_mstx_bad_domain_or_stream_names_the_problem(self):
        import gpuprof
        with self.assertRaisesRegex(ValueError, "domain"):
            gpuprof.mstx.mark("a", domain="")
        with self.assertRaisesRegex(ValueError, "domain"):
            gpuprof.mstx.range_start("a", domain=None)
        with self.assertRaisesRegex(ValueError, "stream is not supported|on a stream"):
            gpuprof.mstx.mark("a", 0)
        with self.assertRaisesRegex(TypeError, "stream"):
            gpuprof.mstx.range_start("a", "stream 0")
        with self.assertRaisesRegex(ValueError, "stream"):
            gpuprof.mstx.range_start("a", -1)

    def test_a_mark_outside_every_profile_says_once_that_it_was_not_recorded(self):
        # Inside a profile, a step its schedule does not record is the schedule's choice: no word.
        _, dbs = self.run_script("""
            import warnings
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with gpuprof.profile(schedule=gpuprof.schedule(wait=1, warmup=0, active=1, repeat=1),
                                     on_trace_ready=gpuprof.db_handler(OUT)) as prof:
                    print("waiting:", gpuprof.mstx.mark("in a wait step"))
                    prof.step()
                    print("inside:", gpuprof.mstx.mark("recorded"))
                    prof.step()
                print("outside:", gpuprof.mstx.mark("after the profile"), gpuprof.mstx.mark("again"),
                      gpuprof.mstx.range_start("a range"))
            for w in caught:
                print("warning:", w.category.__name__, w.message)
        """)
        self.assertIn("waiting: False", self.script_output)
        self.assertIn("inside: True", self.script_output)
        self.assertIn("outside: False False 0", self.script_output)
        warned = [ln for ln in self.script_output.splitlines() if ln.startswith("warning:")]
        self.assertEqual(len(warned), 1, self.script_output)
        self.assertIn("RuntimeWarning", warned[0])
        self.assertIn("'after the profile' was not recorded", warned[0])
        self.assertIn("with gpuprof.profile", warned[0], "the warning names the fix")
        events = rows(dbs[0], "SELECT s.value FROM MSTX_EVENTS m JOIN STRING_IDS s ON s.id = m.message")
        self.assertEqual(events, [("recorded",)])

    def test_a_profile_that_cannot_start_warns_once_and_the_program_runs_on(self):
        # Issue 21 defect 6: a DB folder that cannot be made raised RuntimeError out of the `with`
        # and left an empty gpuprof_result_*.txt in TMPDIR per attempt.
        tmp = tempfile.mkdtemp(prefix="gpuprof_tmpdir_")
        _, dbs = self.run_script("""
            import warnings
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                for _ in range(3):
                    with gpuprof.profile(schedule=gpuprof.schedule(wait=0, warmup=0, active=2),
                                         on_trace_ready=gpuprof.db_handler("/proc/x")) as prof:
                        for _ in range(4):
                            torch.relu(torch.randn(4))
                            prof.step()
            print("ran on, db_path", prof.db_path, "recording", prof.recording)
            for w in caught:
                print("warning:", w.category.__name__, w.message)
        """, env={"TMPDIR": tmp})
        self.assertEqual(dbs, [])
        self.assertIn("ran on, db_path None recording False", self.script_output)
        warned = [ln for ln in self.script_output.splitlines() if ln.startswith("warning:")]
        self.assertEqual(len(warned), 1, self.script_output)
        self.assertIn("RuntimeWarning", warned[0])
        self.assertIn("records nothing", warned[0])
        self.assertIn("cannot create profile directory /proc/x/", warned[0], "the problem")
        self.assertIn("gpuprof.db_handler(dir_name) a directory", warned[0], "the fix")
        self.assertNotIn("Traceback", self.script_errors)
        # The native library adds no line of its own per failed start: the warning above is the one.
        self.assertNotIn("profiling is off", self.script_errors)
        self.assertEqual(os.listdir(tmp), [], "nothing left in TMPDIR")

    def test_a_fork_child_that_exits_inside_the_profile_keeps_its_exit_status(self):
        # Issue 21 defect 7: sys.exit(0) in a fork child inside the `with` exited 1 with a
        # RuntimeError about fork children.
        _, dbs = self.run_script("""
            statuses = []
            with gpuprof.profile(on_trace_ready=gpuprof.db_handler(OUT)) as prof:
                for code in (0, 3):
                    pid = os.fork()
                    if pid == 0:
                        torch.relu(torch.randn(4))
                        sys.exit(code)
                    statuses.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
                torch.relu(torch.randn(4))
            print("children exited", statuses)
        """)
        self.assertIn("children exited [0, 3]", self.script_output, self.script_errors)
        self.assertNotIn("RuntimeError", self.script_errors)
        self.assertNotIn("Traceback", self.script_errors)
        self.assertEqual(len(dbs), 1, "the parent's DB only")
        self.assertIn("aten::relu", op_names(dbs[0]))

    def test_profiles_in_threads_each_name_the_db_they_are_part_of(self):
        # Issue 21 defect 8: four threads' profiles share one session, so one DB; each profile's
        # db_path was None and the DB's path went to a temp file nobody removed.
        tmp = tempfile.mkdtemp(prefix="gpuprof_tmpdir_")
        _, dbs = self.run_script("""
            import threading
            barrier = threading.Barrier(4)
            paths, handled = {}, {}
            def work(i):
                handler = gpuprof.db_handler(OUT)
                with gpuprof.profile(on_trace_ready=handler) as prof:
                    barrier.wait()
                    torch.relu(torch.randn(4))
                    barrier.wait()
                paths[i] = prof.db_path
                handled[i] = handler.db_paths
            threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            print("paths", sorted(set(map(str, paths.values()))), len(paths))
            print("handled", sorted({str(p) for ps in handled.values() for p in ps}),
                  sorted(len(ps) for ps in handled.values()))
            with gpuprof.profile(on_trace_ready=gpuprof.db_handler(os.path.join(OUT, "nested"))) as outer:
                with gpuprof.profile() as inner:
                    torch.relu(torch.randn(4))
            print("nested", outer.db_path == inner.db_path, outer.db_path is not None)
        """, env={"TMPDIR": tmp})
        threaded = [db for db in dbs if os.sep + "nested" + os.sep not in db]
        self.assertEqual(len(threaded), 1, dbs)
        self.assertIn(f"paths [{threaded[0]!r}] 4", self.script_output)
        self.assertIn(f"handled [{threaded[0]!r}] [1, 1, 1, 1]", self.script_output)
        self.assertIn("nested True True", self.script_output)
        self.assertEqual(os.listdir(tmp), [], "nothing left in TMPDIR")

    def test_db_handler_refuses_the_worker_names_the_session_refuses(self):
        # Issue 21 defect 15c: worker_name=".." passed db_handler() and failed only at start. The
        # session's rule (src/base/settings.cc, CheckWorkerName: one directory-name component, no
        # '/', not . or ..) is checked here, against the declared setting itself.
        import gpuprof
        from gpuprof import _settings
        for name in ("..", ".", "a/b", "/abs"):
            with self.assertRaisesRegex(ValueError, "gpuprof.db_handler: worker_name .*one directory-name component"):
                gpuprof.db_handler("out", worker_name=name)
            with self.assertRaises(ValueError, msg=f"the session accepts {name!r}"):
                _settings.check("worker_name", name, "GPUPROF_WORKER_NAME")
        for name in ("", "a\0b", 3):
            with self.assertRaisesRegex(ValueError, "worker_name"):
                gpuprof.db_handler("out", worker_name=name)
        for name in ("rank0", "...", "a.b", "node 1_gpu-2"):
            self.assertEqual(gpuprof.db_handler("out", worker_name=name).worker_name, name)
            self.assertEqual(_settings.check("worker_name", name, "GPUPROF_WORKER_NAME"), name)

    def test_rank_and_device_from_the_environment_name_the_db_and_fill_rank_device_map(self):
        _, dbs = self.run_script("""
            with gpuprof.profile(on_trace_ready=gpuprof.db_handler(OUT)):
                torch.relu(torch.randn(4))
        """, env={"RANK": "3", "GPUPROF_RANK": "", "LOCAL_RANK": "1", "GPUPROF_DEVICE_ID": ""})
        self.assertEqual([os.path.basename(d) for d in dbs], ["ascend_pytorch_profiler_3.db"])
        self.assertEqual(rows(dbs[0], "SELECT rankId, deviceId FROM RANK_DEVICE_MAP"), [(3, 1)],
                         "the rank from RANK, its device from LOCAL_RANK")

    def test_rank_from_torch_distributed_wins_over_the_environment(self):
        _, dbs = self.run_script("""
            import socket
            import torch.distributed as dist
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
            with gpuprof.profile(on_trace_ready=gpuprof.db_handler(OUT)):
                torch.relu(torch.randn(4))
            dist.destroy_process_group()
        """, env={"RANK": "5", "GPUPROF_RANK": "", "LOCAL_RANK": "", "GPUPROF_DEVICE_ID": ""})
        self.assertEqual([os.path.basename(d) for d in dbs], ["ascend_pytorch_profiler_0.db"])
        self.assertEqual(rows(dbs[0], "SELECT rankId FROM RANK_DEVICE_MAP"), [(0,)])

    def test_dataloader_workers_leave_one_intact_db(self):
        _, dbs = self.run_script("""
            class Squares(torch.utils.data.Dataset):
                def __len__(self):
                    return 32
                def __getitem__(self, i):
                    return torch.full((4,), float(i)).relu()
            loader = torch.utils.data.DataLoader(Squares(), batch_size=4, num_workers=2)
            with gpuprof.profile(on_trace_ready=gpuprof.db_handler(OUT)):
                total = sum(batch.sum().item() for batch in loader)
            print("total", total)
        """)
        self.assertIn("total 1984.0", self.script_output)
        self.assertEqual(len(dbs), 1, f"expected the parent's DB only, found {dbs}")
        self.assertIn("aten::sum", op_names(dbs[0]))

    def gpuprof_run(self, *args):
        out = tempfile.mkdtemp(prefix="gpuprof_pyrun_")
        done = subprocess.run([os.environ["GPUPROF_CLI"], "run", "-o", out, "--", sys.executable, *args],
                              capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
        self.assertEqual(done.returncode, 0, f"gpuprof run failed:\n{done.stdout}\n{done.stderr}")
        return done, self.checked_dbs(out)

    def test_gpuprof_run_profiles_an_unmodified_training_script(self):
        done, dbs = self.gpuprof_run("examples/train_plain.py", "--steps", "3", "--device", "cpu")
        self.assertEqual(len(dbs), 1, done.stderr)
        self.assertIn(f"gpuprof: profile DB: {dbs[0]}", done.stdout + done.stderr)
        db = dbs[0]
        names = op_names(db)
        self.assertIn("aten::addmm", names)
        self.assertIn("aten::relu", names)
        # Each optimizer.step() closed one step.
        self.assertEqual([r[0] for r in rows(db, "SELECT id FROM STEP_TIME ORDER BY id")], [1, 2, 3])
        self.assertGreater(rows(db, "SELECT COUNT(*) FROM MEMORY_RECORD")[0][0], 0, "memory is on by default")
        self.assertGreater(rows(db, "SELECT COUNT(*) FROM OP_MEMORY")[0][0], 0)
        shapes = rows(db, "SELECT COUNT(*) FROM PYTORCH_API WHERE inputShapes IS NOT NULL")[0][0]
        self.assertGreater(shapes, 0, "shapes are on by default")
        pairs = rows(db, "SELECT COUNT(*) FROM (SELECT connectionId FROM CONNECTION_IDS GROUP BY connectionId "
                         "HAVING COUNT(*) = 2)")[0][0]
        self.assertGreater(pairs, 0, "forward/backward pairs")

    def test_gpuprof_run_flags_turn_shapes_and_memory_off(self):
        out = tempfile.mkdtemp(prefix="gpuprof_pyrun_")
        done = subprocess.run([os.environ["GPUPROF_CLI"], "run", "--no-record-shapes", "--no-profile-memory", "-o", out,
                               "--", sys.executable, "examples/train_plain.py", "--steps", "2", "--device", "cpu"],
                              capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
        self.assertEqual(done.returncode, 0, done.stderr)
        db = glob.glob(os.path.join(out, "**", "ascend_pytorch_profiler*.db"), recursive=True)[0]
        self.assertIn("aten::addmm", op_names(db))
        self.assertEqual(rows(db, "SELECT COUNT(*) FROM PYTORCH_API WHERE inputShapes IS NOT NULL")[0][0], 0)
        # no allocator event: only the writer's zero row at the start (for msprof-analyze's compare)
        self.assertEqual(rows(db, "SELECT COUNT(*), MAX(totalAllocated), MAX(totalReserved) FROM MEMORY_RECORD"),
                         [(1, 0, 0)])

    def test_a_scripts_own_profile_joins_the_runs_db(self):
        script = os.path.join(tempfile.mkdtemp(prefix="gpuprof_pyjoin_"), "own_profile.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(f"""
                import sys
                sys.path.insert(0, {PYTHON_DIR!r})
                import torch, gpuprof
                out = sys.argv[1]
                with gpuprof.profile(schedule=gpuprof.schedule(wait=0, warmup=0, active=2, repeat=1),
                                     on_trace_ready=gpuprof.db_handler(out)) as prof:
                    for _ in range(3):
                        torch.relu(torch.randn(4))
                        prof.step()
                print("own db", prof.db_path)
            """))
        side = tempfile.mkdtemp(prefix="gpuprof_pyjoin_side_")
        done, dbs = self.gpuprof_run(script, side)
        self.assertEqual(len(dbs), 1, f"one DB for the run: {dbs}")
        # It joined the run's session: its db_path names the run's DB (issue 39, item 2).
        self.assertIn(f"own db {dbs[0]}", done.stdout, "the script's profile joined the run's session")
        self.assertEqual(glob.glob(os.path.join(side, "**", "*.db"), recursive=True), [])
        # The script's steps delimit the steps (no optimizer here).
        self.assertEqual([r[0] for r in rows(dbs[0], "SELECT id FROM STEP_TIME ORDER BY id")], [0, 1])

    def test_module_forwards_are_ranges_once_even_in_nested_profiles(self):
        # with_modules in an outer and an inner profile: one pair of hooks, one range per forward,
        # and none once both stopped.
        _, dbs = self.run_script("""
            model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
            with gpuprof.profile(on_trace_ready=gpuprof.db_handler(OUT), with_modules=True):
                model(torch.randn(3, 4))
                with gpuprof.profile(with_modules=True):
                    model(torch.randn(3, 4))
                model(torch.randn(3, 4))
            hooks = torch.nn.modules.module._global_forward_pre_hooks
            print("hooks left:", len(hooks))
        """)
        self.assertEqual(len(dbs), 1)
        self.assertIn("hooks left: 0", self.script_output)
        ranges = rows(dbs[0], """SELECT m.value, COUNT(*) FROM MSTX_EVENTS e JOIN STRING_IDS d ON d.id = e.domainId
                                 JOIN STRING_IDS m ON m.id = e.message WHERE d.value = 'Module'
                                 GROUP BY m.value ORDER BY m.value""")
        # Named by their path in the model, the class beside it; the outermost by its class.
        self.assertEqual(ranges, [("0 (Linear)", 3), ("1 (ReLU)", 3), ("2 (Linear)", 3), ("Sequential", 3)])
        nested = rows(dbs[0], """SELECT COUNT(*) FROM MSTX_EVENTS l JOIN MSTX_EVENTS s ON l.startNs >= s.startNs
                                 AND l.endNs <= s.endNs JOIN STRING_IDS ln ON ln.id = l.message
                                 JOIN STRING_IDS sn ON sn.id = s.message
                                 WHERE ln.value LIKE '% (Linear)' AND sn.value = 'Sequential'""")
        self.assertEqual(nested, [(6,)], "each Linear range lies inside a Sequential range")

    @unittest.skipUnless(HAVE_TORCH and torch.cuda.is_available(), "needs a CUDA GPU (run by tools/gpu_check.sh)")
    def test_each_cycle_on_the_gpu_is_a_db_of_its_own_kernels_linked_to_its_ops(self):
        # Two recorded cycles in one process: the session (and CUPTI's subscription) ends after
        # the first and starts again for the second, as every schedule with repeat > 1 does.
        _, dbs = self.run_script("""
            model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).cuda()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            acts = [gpuprof.ProfilerActivity.CPU, gpuprof.ProfilerActivity.CUDA]
            with gpuprof.profile(activities=acts, schedule=gpuprof.schedule(wait=2, warmup=0, active=2, repeat=2),
                                 on_trace_ready=gpuprof.db_handler(OUT), record_shapes=True) as prof:
                for _ in range(8):  # 2 unprofiled, 2 recorded, 2 unprofiled, 2 recorded
                    loss = model(torch.randn(8, 16, device="cuda")).sum()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    loss.item()
                    prof.step()
        """)
        self.assertEqual(len(dbs), 2, "two recorded cycles, two DBs")
        tasks = []
        for db in dbs:
            first_op, last_op = rows(db, "SELECT MIN(startNs), MAX(endNs) FROM PYTORCH_API")[0]
            n_tasks, first_task, last_task = rows(db, "SELECT COUNT(*), MIN(startNs), MAX(endNs) FROM TASK")[0]
            self.assertGreater(n_tasks, 0, f"{db}: no kernels")
            # A cycle's DB holds its own kernels: none from before its first op (the other cycle's).
            self.assertGreaterEqual(first_task, first_op, f"{db}: a kernel started before the cycle's first op")
            linked = rows(db, """SELECT COUNT(DISTINCT t.rowid) FROM TASK t JOIN CONNECTION_IDS c
                                 ON c.connectionId = t.connectionId JOIN PYTORCH_API p ON p.connectionId = c.id""")[0][0]
            self.assertGreater(linked, 0, f"{db}: no kernel linked to the op that launched it")
            launches = rows(db, """SELECT COUNT(*) FROM CANN_API a JOIN STRING_IDS s ON s.id = a.name
                                   WHERE s.value LIKE 'cudaLaunchKernel%'""")[0][0]
            self.assertGreater(launches, 0, f"{db}: no cudaLaunchKernel row in CANN_API")
            self.assertEqual([r[0] for r in rows(db, "SELECT id FROM STEP_TIME ORDER BY id")],
                             [2, 3] if db == dbs[0] else [6, 7])
            tasks.append(n_tasks)
        # The two cycles ran the same steps: the second session saw as many kernels as the first.
        self.assertEqual(tasks[0], tasks[1], f"kernels per cycle differ: {tasks}")

    def test_kernel_replay_is_declined_with_the_reason_and_the_profile_still_records(self):
        # Not started by `gpuprof replay --from-script`: the warning says why (the C API's message:
        # no CUDA driver, no kernel to replay; with a driver, how to start the program) and the
        # profile records as usual. Replaying from the script: GpuRunTest.TrainProfiledReplay.
        _, dbs = self.run_script("""
            import warnings
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with gpuprof.profile(on_trace_ready=gpuprof.db_handler(OUT),
                                     kernel_replay=gpuprof.KernelReplay(passes=3, kernel="regex:gemm")) as prof:
                    torch.relu(torch.randn(4))
                    print("replaying:", prof.replaying)
            print("warned:", [str(w.message) for w in caught])
        """)
        self.assertEqual(len(dbs), 1)
        self.assertIn("replaying: False", self.script_output)
        self.assertIn("kernel replay declined", self.script_output)
        self.assertRegex(self.script_output, "no kernel to replay|start the program with `gpuprof replay --from-script")
        self.assertIn("aten::relu", op_names(dbs[0]))

    def test_activities_without_cuda_turn_device_collection_off(self):
        import gpuprof
        def device_setting(**kwargs):
            prof = gpuprof.profile(**kwargs)
            config = prof._config()
            os.unlink(prof._result_file)
            return config.get("device", "unset")
        self.assertEqual(device_setting(activities=[gpuprof.ProfilerActivity.CPU]), False)
        self.assertEqual(device_setting(activities=[gpuprof.ProfilerActivity.CPU, gpuprof.ProfilerActivity.CUDA]),
                         "unset", "the session's default (GPUPROF_DEVICE, else on) decides")
        self.assertEqual(device_setting(), "unset", "default activities include CUDA, as torch.profiler's")

    @unittest.skipUnless(HAVE_TORCH and torch.cuda.is_available(), "needs a CUDA GPU (run by tools/gpu_check.sh)")
    def test_a_cpu_only_profile_on_the_gpu_records_ops_and_no_kernels(self):
        _, dbs = self.run_script("""
            x = torch.randn(64, 64, device="cuda")
            with gpuprof.profile(activities=[gpuprof.ProfilerActivity.CPU], on_trace_ready=gpuprof.db_handler(OUT)):
                for _ in range(3):
                    torch.mm(x, x).sum().item()
        """)
        self.assertEqual(len(dbs), 1)
        self.assertIn("aten::mm", op_names(dbs[0]))
        tables = {name for (name,) in rows(dbs[0], "SELECT name FROM sqlite_master WHERE type = 'table'")}
        tasks = rows(dbs[0], "SELECT COUNT(*) FROM TASK")[0][0] if "TASK" in tables else 0
        self.assertEqual(tasks, 0, "CPU-only: no kernels recorded")

    def test_mstx_without_the_native_libraries_warns_once_and_the_program_runs_on(self):
        # The marks of examples/train_ddp.py raised NativeLibraryError and stopped the program when
        # libgpuprof_torch.so was not built (seen on the GPU machine).
        empty = tempfile.mkdtemp(prefix="gpuprof_nolib_")
        script = textwrap.dedent("""
            import gpuprof._native as native
            native._BUILD_DIRS = ()
            from gpuprof import mstx
            print(mstx.mark("a"), mstx.range_start("b"), mstx.range_end(7), mstx.mark("c"))
        """)
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, GPUPROF_LIB_DIR=empty, PYTHONPATH=os.path.join(REPO_ROOT, "python")))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.strip(), "False 0 False False")
        self.assertEqual(done.stderr.count("mstx marks and ranges are off"), 1, done.stderr)
        self.assertIn("were not found in " + empty, done.stderr)

    def test_bad_arguments_name_the_problem(self):
        import gpuprof
        with self.assertRaisesRegex(TypeError, "activities"):
            gpuprof.profile(activities=["cpu"])
        with self.assertRaisesRegex(ValueError, "gc_detect_threshold"):
            gpuprof.profile(gc_detect_threshold=-1)
        with self.assertRaisesRegex(TypeError, "on_trace_ready"):
            gpuprof.profile(on_trace_ready="dir")
        with self.assertRaisesRegex(ValueError, "dir_name"):
            gpuprof.db_handler("")
        with self.assertRaisesRegex(ValueError, "message"):
            gpuprof.mstx.mark("")
        with self.assertRaisesRegex(RuntimeError, "step\\(\\) before start"):
            gpuprof.profile().step()
        with self.assertRaisesRegex(TypeError, "kernel_replay"):
            gpuprof.profile(kernel_replay={"passes": 3})
        with self.assertRaisesRegex(ValueError, "passes"):
            gpuprof.KernelReplay(passes=1)
        with self.assertRaisesRegex(ValueError, "not a valid regular expression"):
            gpuprof.KernelReplay(kernel="regex:(")
        with self.assertRaisesRegex(ValueError, "cache_control"):
            gpuprof.KernelReplay(cache_control="some")
        with self.assertRaisesRegex(ValueError, "restore"):
            gpuprof.KernelReplay(restore="partial")
        with self.assertRaisesRegex(ValueError, "count"):
            gpuprof.KernelReplay(count=-1)
        with self.assertRaisesRegex(ValueError, "printf_kernels"):
            gpuprof.KernelReplay(printf_kernels="sometimes")

    def test_kernel_replay_side_effect_arguments_are_the_declared_settings(self):
        # Rule C2: device printf is replayed by default, device malloc and live CUDA arrays declined;
        # each has its own argument, the setting of the same name (replay_printf_kernels ...).
        import gpuprof
        replay = gpuprof.KernelReplay()
        self.assertEqual((replay.printf_kernels, replay.malloc_kernels, replay.with_live_arrays),
                         (True, False, False))
        replay = gpuprof.KernelReplay(printf_kernels=False, malloc_kernels="on", with_live_arrays=1)
        self.assertEqual((replay.printf_kernels, replay.malloc_kernels, replay.with_live_arrays),
                         (False, True, True))
        self.assertIn("printf_kernels=False, malloc_kernels=True, with_live_arrays=True", repr(replay))

    def test_kernel_replay_counter_arguments_are_the_declared_settings(self):
        # Issue 19: metrics, section and set are replay_metrics, replay_section and replay_set, held to
        # what `gpuprof replay --metrics/--section/--set` accepts; none by default.
        import gpuprof
        replay = gpuprof.KernelReplay()
        self.assertEqual((replay.metrics, replay.section, replay.set), ("", "", "none"))
        replay = gpuprof.KernelReplay(metrics=["dram__bytes_read.sum", "gpu__time_duration.sum"],
                                      section="SpeedOfLight,Occupancy", set="basic")
        self.assertEqual(replay.metrics, "dram__bytes_read.sum,gpu__time_duration.sum")
        self.assertEqual(replay.section, "SpeedOfLight,Occupancy")
        self.assertEqual(replay.set, "basic")
        self.assertIn("metrics='dram__bytes_read.sum,gpu__time_duration.sum'", repr(replay))
        self.assertEqual(gpuprof.KernelReplay(section=["LaunchStats"]).section, "LaunchStats")
        with self.assertRaisesRegex(ValueError, "metrics.*not a metric name"):
            gpuprof.KernelReplay(metrics="dram bytes")
        with self.assertRaisesRegex(ValueError, "section.*SpeedOfDark"):
            gpuprof.KernelReplay(section=["SpeedOfDark"])
        with self.assertRaisesRegex(ValueError, "set.*none, basic, full"):
            gpuprof.KernelReplay(set="detailed")
        with self.assertRaisesRegex(ValueError, "metrics must be a str or a list of str"):
            gpuprof.KernelReplay(metrics=[1])

    def test_kernel_replay_clock_control_is_the_declared_setting(self):
        # C3: clock_control is replay_clock_control; "none" (clocks untouched) unless "base" is asked.
        import gpuprof
        self.assertEqual(gpuprof.KernelReplay().clock_control, "none")
        self.assertEqual(gpuprof.KernelReplay(clock_control="base").clock_control, "base")
        self.assertIn("clock_control='base'", repr(gpuprof.KernelReplay(clock_control="base")))
        with self.assertRaisesRegex(ValueError, "clock_control.*none, base|clock_control.*none\\|base"):
            gpuprof.KernelReplay(clock_control="locked")


class ProfileArgumentsTest(unittest.TestCase):
    """Arguments refused when the profile is made (no native library needed)."""

    def test_gc_detect_threshold_refuses_nan_and_infinity(self):
        # Issue 21 defect 15b: nan passed the `< 0` check and every pause compared false against it,
        # so nothing was recorded and nothing said so; infinity records nothing either.
        import gpuprof
        for bad in (float("nan"), float("inf"), -float("inf"), -1, "1", True):
            with self.assertRaisesRegex(ValueError, "gc_detect_threshold must be a finite number of ms >= 0"):
                gpuprof.profile(gc_detect_threshold=bad)
        for good in (0, 0.5, 1e9, None):
            self.assertEqual(gpuprof.profile(gc_detect_threshold=good).gc_detect_threshold, good)


class ReadmeExampleTest(unittest.TestCase):
    def test_the_readme_marks_inside_the_profile(self):
        # A mark outside every profile records nothing: the README's example made one.
        with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        python_blocks = [b.split("```", 1)[0] for b in readme.split("```python\n")[1:]]
        example = next(b for b in python_blocks if "gpuprof.profile(" in b)
        lines = example.splitlines()
        start = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("with gpuprof.profile("))
        with_indent = len(lines[start]) - len(lines[start].lstrip())
        header_end = next(i for i in range(start, len(lines)) if lines[i].rstrip().endswith(":"))
        inside = set()
        for i in range(header_end + 1, len(lines)):
            if lines[i].strip() and len(lines[i]) - len(lines[i].lstrip()) <= with_indent:
                break
            inside.add(i)
        marks = [i for i, ln in enumerate(lines) if "gpuprof.mstx.mark(" in ln]
        self.assertTrue(marks, "the README's example has no gpuprof.mstx.mark")
        for i in marks:
            self.assertIn(i, inside, f"README: {lines[i].strip()!r} is outside the `with gpuprof.profile` block")


def torch_version():
    import torch
    return tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])


if __name__ == "__main__":
    unittest.main()
