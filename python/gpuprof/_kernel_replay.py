"""gpuprof.KernelReplay: the kernel replay a profile asks for (gpuprof replay's flags, chosen by the
program), each argument a declared setting (src/base/settings.h): checked against its row here, and
handed to the session by its name (gpuprof_configure_replay_settings_v1), which parses it with the
same table, so every replay setting is the program's to set without a translator of its own."""

__all__ = ["KernelReplay"]


class KernelReplay:
    """Kernel replay for a profile (gpuprof's `replay` flags, chosen by the program).

    While the profile records, each CUDA kernel launch the selector picks runs `passes` times on
    identical inputs (device memory snapshotted before the first pass and restored before each
    later one); the passes' times go to GPUPROF_REPLAY_KERNEL / GPUPROF_REPLAY_PASS. `kernel` is a
    function name, "regex:PATTERN" or None (every kernel); `skip` matching launches run unreplayed
    first; at most `count` launches are replayed per recording (0: no limit); `cache_control`
    "all" flushes L2 before each pass, "none" does not; `restore` "auto" writes back only what a
    pass changed (by chunk hash), "exact" what differs byte for byte, "full" everything; `strict`
    declines launches while kernel-writable untracked memory is live. Side effects replay would
    repeat (rule C2): `printf_kernels` replays kernels that use device printf (the default; what
    they print repeats once per pass, and one warning says so), `malloc_kernels` kernels that use
    device malloc/free, and `with_live_arrays` launches while CUDA arrays exist (writes to arrays
    are not undone); each declined otherwise.

    Hardware counters (Nsight Compute's names, docs/metrics.md): `metrics` (a list of metric names
    or one comma-separated str, e.g. ["dram__bytes_read.sum"]), `section` (section names, e.g.
    "SpeedOfLight" or ["SpeedOfLight", "Occupancy"]) and `set` ("none", "basic" or "full") are
    collected over extra counter passes of each replayed launch; none by default. `clock_control`
    "base" locks the SM and memory clocks at base for the passes and restores them after (NVML lets
    only root do it; otherwise one warning and the clocks stay as they are); "none", the default,
    never touches them.

    Any other replay setting is a keyword too, named as the setting's JSON key without "replay_"
    (`graph="graph"`), as its `gpuprof replay` option with "_" for "-" (`graph_replay="graph"`,
    `counter_range="user"`, `storage="pinned"`) or by its key (`replay_graph="graph"`); a misspelt
    name or a value the setting refuses raises ValueError with the settings table's message. A
    setting left out keeps what the process started with (`gpuprof replay --from-script
    --graph-replay graph ...`, else its default), except the fourteen arguments above, which are
    always sent (their defaults when not given). Settings read only when the process starts
    (replay_device_reserve_mib) are refused when the profile starts, with a RuntimeWarning.
    `graph_replay` "graph" replays a selected CUDA graph launch as one unit, "node" node by node
    (docs/replay_rules.md); `counter_range` "user" counts the whole counter pass, "auto" the kernel.

    Range replay (Nsight Compute's --replay-mode range; ours still reports every kernel): `replay_mode`
    "range" replays whole ranges of one device's work, each pass re-issuing the range, and `skip` /
    `count` then count ranges. `range` says what delimits one: "profiler" (cudaProfilerStart/Stop, the
    default), "nvtx" (the NVTX range `nvtx_include` names) or "step" (one training step: optimizer
    step to optimizer step, or gpuprof.profile's step() to step() when the script calls it).
    `range="step"` or `nvtx_include="NAME"` alone asks for range replay; `replay_mode="kernel"` beside
    them, or `nvtx_include` with `range="step"`, is refused when the profile starts (a RuntimeWarning
    says why, naming both).
    `max_range_operations` and `max_range_host_mib` cap a range's recording (a larger range is
    declined whole and runs as it did). E.g. `gpuprof.KernelReplay(range="step", count=2)`.

    Replay needs device memory tracked from the start of the process: run the program with
    `gpuprof replay --from-script -- python3 script.py`. Otherwise the profile records without
    replay and a RuntimeWarning says why.
    """

    # Each argument is a declared setting (src/base/settings.h): its default and its check come from
    # the table, so the program is held to what `gpuprof replay` accepts.
    _SETTINGS = (("passes", "replay_passes"), ("kernel", "replay_kernel"), ("skip", "replay_skip"),
                 ("count", "replay_count"), ("cache_control", "replay_cache_control"),
                 ("restore", "replay_restore"), ("strict", "replay_strict"),
                 ("printf_kernels", "replay_printf_kernels"), ("malloc_kernels", "replay_malloc_kernels"),
                 ("with_live_arrays", "replay_with_live_arrays"), ("metrics", "replay_metrics"),
                 ("section", "replay_section"), ("set", "replay_set"), ("clock_control", "replay_clock_control"))

    def __init__(self, passes=None, kernel=None, skip=None, count=None, cache_control=None, restore=None,
                 strict=None, printf_kernels=None, malloc_kernels=None, with_live_arrays=None, metrics=None,
                 section=None, set=None, clock_control=None, **settings):  # noqa: A002  (ncu's --set)
        from . import _settings

        def comma_list(name, value):
            # A list of names or one comma-separated str, as the command line takes it.
            if isinstance(value, (list, tuple)):
                if not all(isinstance(v, str) for v in value):
                    raise ValueError(f"gpuprof.KernelReplay: {name} must be a str or a list of str, got {value!r}")
                return ",".join(value)
            return value

        given = {"passes": passes, "kernel": kernel, "skip": skip, "count": count,
                 "cache_control": cache_control, "restore": restore, "strict": strict,
                 "printf_kernels": printf_kernels, "malloc_kernels": malloc_kernels,
                 "with_live_arrays": with_live_arrays, "metrics": comma_list("metrics", metrics),
                 "section": comma_list("section", section), "set": set, "clock_control": clock_control}
        # {json key: canonical text}: what the profile hands the session (profiler.py _begin_replay).
        self.settings = {}
        self._extra = []
        named = [(name, key, given[name]) for name, key in self._SETTINGS]
        for name, value in settings.items():
            named.append((name, _replay_key(name), comma_list(name, value)))
            self._extra.append(name)
        for name, key, value in named:
            if key in self.settings:
                raise ValueError(f"gpuprof.KernelReplay: {name} sets {key}, which another argument sets too")
            if key not in _settings.table():
                _settings.check(key, "" if value is None else value, f"gpuprof.KernelReplay: {name}")  # raises
            if value is None:
                value = _settings.default(key)
            kind = _settings.table()[key]["type"]
            if kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"gpuprof.KernelReplay: {name} must be an int, got {value!r}")
            if kind in ("string", "choice", "list") and not isinstance(value, str):
                raise ValueError(f"gpuprof.KernelReplay: {name} must be a str, got {value!r}")
            if name == "kernel" and ("\0" in value or (kernel is not None and not value)):
                raise ValueError("gpuprof.KernelReplay: kernel must be a function name, 'regex:PATTERN' or None "
                                 f"(every kernel), got {kernel!r}")
            canonical = _settings.check(key, value, f"gpuprof.KernelReplay: {name}")
            self.settings[key] = canonical
            if kind == "int":
                value = int(canonical)
            elif kind == "bool":
                value = canonical == "1"
            else:
                value = canonical
            setattr(self, name, value)
        self.kernel = self.kernel or None

    def __repr__(self):
        return (f"KernelReplay(passes={self.passes}, kernel={self.kernel!r}, skip={self.skip}, count={self.count}, "
                f"cache_control={self.cache_control!r}, restore={self.restore!r}, strict={self.strict}, "
                f"printf_kernels={self.printf_kernels}, malloc_kernels={self.malloc_kernels}, "
                f"with_live_arrays={self.with_live_arrays}, metrics={self.metrics!r}, section={self.section!r}, "
                f"set={self.set!r}, clock_control={self.clock_control!r}"
                + "".join(f", {name}={getattr(self, name)!r}" for name in self._extra) + ")")


def _replay_key(name):
    """The JSON key of the replay setting a keyword names: the key itself, the key without "replay_", or
    the setting's `gpuprof replay` option with "_" for "-" (graph_replay for --graph-replay). Any other
    name is taken as a key without "replay_", so the settings table's message (with its "did you mean")
    answers it."""
    from . import _settings
    for key, row in _settings.table().items():
        if not key.startswith("replay_"):
            continue
        options = [o.lstrip("-").replace("-", "_") for o in row["cli"].split(",") if o.startswith("--")]
        if name in [key, key[len("replay_"):]] + options:
            return key
    return name if name.startswith("replay_") else "replay_" + name
